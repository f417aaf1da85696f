// Pins the part of Stripe's published OpenAPI document (github.com/stripe/openapi) that the Stripe adapter and its
// fake touch, so the fake is held to Stripe's own words and the pin can be refreshed by running this again:
//
//   npx tsx test/fakes/stripe/extract-openapi.ts --git-dir /work/.mirror/stripe+openapi/repo \
//     --commit 63a674638635c68de26b9f3add13e58198f4df44 [--path openapi/spec3.yaml]
//   npx tsx test/fakes/stripe/extract-openapi.ts --file spec3.yaml --repo stripe/openapi --commit <sha> --date <iso>
//
// Kept: the operations below with the closure of their $refs, plus the resources Stripe's webhooks carry (event and
// the objects in its data). Dropped: every other path and schema, and the prose `description` of schemas and
// parameters (descriptions of responses stay: OpenAPI requires them). Nothing else is changed.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { parse } from 'yaml';

/** The operations the adapter calls (and the fake serves). */
export const keptOperations: readonly (readonly [path: string, method: string])[] = [
  ['/v1/checkout/sessions', 'post'],
  ['/v1/checkout/sessions/{session}', 'get'],
  ['/v1/refunds', 'post'],
  ['/v1/refunds', 'get'],
  ['/v1/balance', 'get'],
  ['/v1/webhook_endpoints', 'get'],
];
/** The resources webhook events carry in data.object, and the event envelope itself. */
export const keptSchemas = ['event', 'checkout.session', 'charge', 'dispute', 'refund', 'error'] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Names of the component schemas reachable from `node` through $ref. */
function refClosure(schemas: JsonObject, roots: Json[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isObject(node)) {
      const ref = node.$ref;
      if (typeof ref === 'string') {
        const name = ref.replace('#/components/schemas/', '');
        if (!seen.has(name)) {
          if (!(name in schemas)) throw new Error(`dangling $ref ${ref}`);
          seen.add(name);
          stack.push(schemas[name]!);
        }
      }
      stack.push(...Object.values(node));
    }
  }
  return seen;
}

/** Drops prose: a `description` whose value is text (a property *named* description is a schema, an object). */
function withoutProse(node: Json, keepHere = false): Json {
  if (Array.isArray(node)) return node.map((n) => withoutProse(n));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' && typeof value === 'string' && !keepHere) continue;
    // Response objects must keep their description (OpenAPI 3.0 requires it).
    if (key === 'responses' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([code, r]) => [code, withoutProse(r, true)]));
      continue;
    }
    out[key] = withoutProse(value);
  }
  return out;
}

export function extract(document: JsonObject): JsonObject {
  const paths = document.paths as JsonObject;
  const schemas = (document.components as JsonObject).schemas as JsonObject;
  const keptPaths: JsonObject = {};
  for (const [path, method] of keptOperations) {
    const operation = (paths[path] as JsonObject | undefined)?.[method];
    if (!isObject(operation)) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
    keptPaths[path] = { ...(keptPaths[path] as JsonObject | undefined), [method]: operation };
  }
  const roots: Json[] = [keptPaths, ...keptSchemas.map((s) => ({ $ref: `#/components/schemas/${s}` }))];
  const names = [...refClosure(schemas, roots)].sort();
  const components = document.components as JsonObject;
  return withoutProse({
    openapi: document.openapi!,
    info: document.info!,
    servers: document.servers ?? [],
    security: document.security ?? [],
    paths: keptPaths,
    components: {
      securitySchemes: components.securitySchemes ?? {},
      schemas: Object.fromEntries(names.map((n) => [n, schemas[n]!])),
    },
  }) as JsonObject;
}

function gitBlobSha(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

async function main(argv: string[]): Promise<void> {
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const path = arg('path') ?? 'openapi/spec3.yaml';
  const gitDir = arg('git-dir');
  const commit = arg('commit');
  if (!commit) throw new Error('--commit <sha> is required (the pin must say where it came from)');
  let bytes: Buffer;
  let date = arg('date');
  if (gitDir) {
    bytes = execFileSync('git', ['--git-dir', gitDir, 'show', `${commit}:${path}`], { maxBuffer: 64 << 20 });
    date ??= execFileSync('git', ['--git-dir', gitDir, 'log', '-1', '--format=%aI', commit]).toString().trim();
  } else {
    const file = arg('file');
    if (!file) throw new Error('give --git-dir <dir> or --file <spec3.yaml|json>');
    bytes = readFileSync(file);
  }
  const text = bytes.toString('utf8');
  const document = (path.endsWith('.json') ? JSON.parse(text) : parse(text)) as JsonObject;
  const kept = extract(document);
  const out = join(__dirname, '../../fixtures/providers/stripe');
  // Written as the repository's prettier writes JSON, so `npm run lint` holds the pin as it holds any file.
  const write = async (name: string, value: unknown): Promise<void> => {
    const file = join(out, name);
    const options = (await resolveConfig(file)) ?? {};
    writeFileSync(file, await format(JSON.stringify(value), { ...options, filepath: file }));
  };
  await write('openapi.json', kept);
  const source = {
    repo: arg('repo') ?? 'stripe/openapi',
    commit,
    path,
    blob: gitBlobSha(bytes),
    date: date ?? null,
    apiVersion: (document.info as JsonObject).version,
    kept: {
      operations: keptOperations.map(([p, m]) => `${m.toUpperCase()} ${p}`),
      schemas: `${Object.keys((kept.components as JsonObject).schemas as JsonObject).length} component schemas: the $ref closure of those operations and of ${keptSchemas.join(', ')}`,
      dropped: 'all other paths and schemas; the prose `description` of schemas and parameters (not of responses)',
    },
    why: 'The newest spec3 blobs (>= 4 MiB) are absent from the fetched mirror; this is the newest commit whose openapi/spec3.yaml is present whole.',
  };
  await write('source.json', source);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
