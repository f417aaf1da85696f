// Every route the express app answers, read from its own router stack (express 5 / router 2), so a page added to any
// router is fuzzed without anyone listing it. router 2 keeps, per layer: `route` (a Route: `path`, `methods`) for
// app.get/router.post..., or `handle` (a nested Router has its own `stack`) for app.use; `rawPath` is the path the
// layer was mounted or declared at. Paths are path-to-regexp 8 syntax (`:name`, `*name`, `{optional}`), parsed here by
// the very copy of path-to-regexp router uses, so a URL is built exactly as express will match it.
import { dirname } from 'node:path';
import type { Express } from 'express';

type Token =
  { type: 'text'; value: string } | { type: 'param' | 'wildcard'; name: string } | { type: 'group'; tokens: Token[] };
interface PathToRegexp {
  parse(path: string): { tokens: Token[] };
}
const pathToRegexp = require(
  require.resolve('path-to-regexp', { paths: [dirname(require.resolve('router'))] }),
) as PathToRegexp;

export interface AppRoute {
  /** An HTTP method in capitals, or `ALL` for app.all / a handler mounted with app.use at a path. */
  method: string;
  /** The full path template (mount paths joined), as declared. */
  path: string;
  /** Its parameters, in path order (wildcards included). */
  params: string[];
  /** A handler mounted with app.use at this path (it answers the path and everything under it). */
  mount: boolean;
  tokens: Token[];
}

interface Layer {
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: unknown };
  rawPath?: unknown;
  slash?: boolean;
}

function paramsOf(tokens: Token[]): string[] {
  return tokens.flatMap((t) => (t.type === 'group' ? paramsOf(t.tokens) : t.type === 'text' ? [] : [t.name]));
}

/** A mount path and a path under it ('/' under a mount is the mount path itself). */
function join(prefix: string, path: string): string {
  if (path === '/' || path === '') return prefix || '/';
  return `${prefix}${path}`;
}

function walk(stack: Layer[], prefix: string, out: AppRoute[]): void {
  for (const layer of stack) {
    if (layer.rawPath === undefined) throw new Error('a router layer without rawPath: not router 2.3+?');
    if (typeof layer.rawPath !== 'string') {
      // A RegExp or an array of paths: the URL builder below would not know what to send.
      throw new Error(`a layer mounted at ${String(layer.rawPath)}: teach test/fuzz/hosted-routes.ts its syntax`);
    }
    if (layer.route) {
      if (typeof layer.route.path !== 'string') throw new Error(`a route at ${String(layer.route.path)}`);
      const path = join(prefix, layer.route.path);
      const tokens = pathToRegexp.parse(path).tokens;
      for (const [name, on] of Object.entries(layer.route.methods)) {
        if (!on) continue;
        const method = name === '_all' ? 'ALL' : name.toUpperCase();
        out.push({ method, path, params: paramsOf(tokens), mount: false, tokens });
      }
      continue;
    }
    const mountedAt = layer.rawPath === '/' ? '' : layer.rawPath;
    const nested = layer.handle?.stack;
    if (Array.isArray(nested)) {
      walk(nested as Layer[], `${prefix}${mountedAt}`, out);
    } else if (mountedAt !== '') {
      const path = join(prefix, mountedAt);
      const tokens = pathToRegexp.parse(path).tokens;
      out.push({ method: 'ALL', path, params: paramsOf(tokens), mount: true, tokens });
    }
    // A handler at '/' with no stack is middleware (request id, logs, the final 404 and error handlers): no route.
  }
}

/** Every route of the app: method + full path template, nested routers walked. */
export function appRoutes(app: Express): AppRoute[] {
  const router = (app as unknown as { router: { stack: Layer[] } }).router;
  const out: AppRoute[] = [];
  walk(router.stack, '', out);
  return out;
}

/**
 * The URL path of a route with each parameter replaced by its raw text (sent as it is: already %-encoded, or
 * deliberately not). Optional groups are kept when `withGroups` says so; a wildcard takes its value as one or more
 * segments.
 */
export function buildPath(route: Pick<AppRoute, 'tokens'>, values: Record<string, string>, withGroups = true): string {
  const render = (tokens: Token[]): string =>
    tokens
      .map((t) => {
        if (t.type === 'text') return t.value;
        if (t.type === 'group') return withGroups ? render(t.tokens) : '';
        const v = values[t.name];
        if (v === undefined) throw new Error(`no value for :${t.name}`);
        return v;
      })
      .join('');
  return render(route.tokens);
}
