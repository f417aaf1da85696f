// openapi-backend's router rebuilds its list of operations (spreading every operation object) and a RegExp per
// path on every match: about 280 us per match for 85 operations, paid several times per request. The document
// never changes after start, so the list is computed once and the path patterns are compiled once. Matching
// semantics are openapi-backend's own: an exact path first, then templates by specificity; anything unusual
// (404, 405, outside the API root) is left to the original implementation.
//
// Its request parser runs four times per request (before and after routing, in validation, after coercion), and
// each time it builds a RegExp for the operation's path template, deep-clones the query with lodash and serialises
// it through URLSearchParams only to drop the result: about 40 us a call. speedUpParsing keeps its semantics (same
// object shapes, same copies, same parsing of path parameters) with the templates compiled once.
import { createRequire } from 'node:module';
import type { OpenAPIRouter, Operation, ParsedRequest, Request as RoutedRequest } from 'openapi-backend';

function pattern(path: string): RegExp {
  const escaped = path
    .replace(/\{[^}]+\}/g, '\0')
    .split('\0')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${escaped}$`);
}

export function speedUpRouter(router: OpenAPIRouter): void {
  const operations = router.getOperations();
  router.getOperations = () => operations;
  const exact = new Map(operations.map((op) => [`${op.method} ${op.path}`, op]));
  const templates = operations
    .map((op) => ({ op, re: pattern(op.path), specificity: op.path.replace(/\{.*?\}/g, '').length }))
    .sort((a, b) => b.specificity - a.specificity);
  const original = router.matchOperation.bind(router) as (req: unknown, strict?: boolean) => Operation | undefined;
  const internals = router as unknown as {
    normalizeRequest(req: unknown): { method: string; path: string };
    normalizePath(path: string): string;
    isUnderApiRoot(path: string): boolean;
  };
  router.matchOperation = ((req: unknown, strict?: boolean) => {
    const normalized = internals.normalizeRequest(req);
    if (internals.isUnderApiRoot(normalized.path)) {
      const path = internals.normalizePath(normalized.path);
      const found = exact.get(`${normalized.method} ${path}`);
      if (found) return found;
      for (const t of templates) if (t.op.method === normalized.method && t.re.test(path)) return t.op;
    }
    return original(req, strict);
  }) as OpenAPIRouter['matchOperation'];
}

// The parsers openapi-backend itself uses, so path and cookie parsing are exactly its own.
const fromBackend = createRequire(require.resolve('openapi-backend'));
const bath = (fromBackend('bath-es5') as { default: (template: string) => { params(path: string): object | null } })
  .default;
const cookie = fromBackend('cookie') as { parse(header: string): Record<string, string> };
// Loaded on first use, which a query of strings never makes: lodash outside the bundle was ~10 ms of every start.
let cloneDeep: (<T>(value: T) => T) | undefined;

/**
 * A copy of a parsed query string (strings and arrays of strings) as lodash's cloneDeep makes it (a plain object,
 * whatever the original's prototype); anything else is deep-cloned as before.
 */
function copyQuery(query: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (typeof value === 'string' || value === undefined) copy[key] = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) copy[key] = value.slice();
    else return (cloneDeep ??= (fromBackend('lodash') as { cloneDeep<T>(value: T): T }).cloneDeep)(query);
  }
  return copy;
}

export function speedUpParsing(router: OpenAPIRouter): void {
  const templates = new Map<string, ReturnType<typeof bath>>();
  const original = router.parseRequest.bind(router);
  const internals = router as unknown as {
    normalizeRequest(req: RoutedRequest): RoutedRequest & { path: string; method: string };
    normalizePath(path: string): string;
  };
  router.parseRequest = (req: RoutedRequest, operation?: Operation): ParsedRequest => {
    // A query string (not an object) and a body still in text are left to the original.
    if (typeof req.query !== 'object' || (req.body && typeof req.body !== 'object')) return original(req, operation);
    const headers: Record<string, string | string[]> = {};
    for (const name of Object.keys(req.headers ?? {})) headers[name.toLowerCase()] = req.headers[name]!;
    const cookies = cookie.parse([headers.cookie].flat().join('; '));
    const query = copyQuery(req.query as Record<string, unknown>);
    const normalized = internals.normalizeRequest(req);
    let params = {};
    if (operation) {
      let template = templates.get(operation.path);
      if (!template) templates.set(operation.path, (template = bath(operation.path)));
      params = template.params(internals.normalizePath(normalized.path)) ?? {};
      for (const name in query) {
        if (!query[name]) continue;
        const parameter = operation.parameters?.find((p) => !('$ref' in p) && p?.in === 'query' && p?.name === name) as
          { content?: Record<string, unknown>; explode?: boolean; style?: string } | undefined;
        if (!parameter) continue;
        if (parameter.content?.['application/json']) {
          const raw = query[name];
          if (typeof raw === 'string') {
            try {
              query[name] = JSON.parse(raw);
            } catch {
              // left as is: validation reports the malformed JSON
            }
          }
        } else if (parameter.explode === false) {
          const raw = query[name];
          if (Array.isArray(raw) && raw.length > 1) continue;
          const value: unknown = Array.isArray(raw) ? raw[0] : raw;
          if (typeof value !== 'string') continue;
          let decoded = value.replace(/%2C/g, ',');
          if (parameter.style === 'spaceDelimited') decoded = decoded.replace(/ /g, ',').replace(/%20/g, ',');
          if (parameter.style === 'pipeDelimited') decoded = decoded.replace(/\|/g, ',').replace(/%7C/g, ',');
          query[name] = decoded.split(',');
        }
      }
    }
    return { ...normalized, params, headers, query, cookies, requestBody: req.body } as ParsedRequest;
  };
}
