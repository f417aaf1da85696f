// Refreshes the pinned BTCPay Server Greenfield document (test/fixtures/providers/btcpay/openapi.json).
//
// BTCPay Server does not publish one document file: the server merges ~30 partial files
// (BTCPayServer/wwwroot/swagger/v1/swagger.template*.json) at run time. This script does the same merge from a
// local clone (bare or not) at a pinned commit, keeps only the operations and webhook events the adapter and the
// fake use plus the closure of their $refs, applies the few documented relaxations where the document contradicts
// what the server really sends, and writes the fixture and its source.json.
//
//   npx tsx test/fakes/btcpay/extract-openapi.ts [git-dir] [commit]
//
// The default commit is tag v2.3.9: the last release whose document still names the store-scoped invoice routes
// (/api/v1/stores/{storeId}/invoices/{invoiceId}...) that every server from 1.x to 2.4.x serves; v2.4.0's document
// lists only the store-less aliases added in 2.4.0 (commit ad6fa344c), which older servers lack.
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'prettier';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const repo = 'btcpayserver/btcpayserver';
const folder = 'BTCPayServer/wwwroot/swagger/v1';
const gitDir = process.argv[2] ?? '/work/.mirror/btcpayserver+btcpayserver/repo';
const ref = process.argv[3] ?? 'v2.3.9';
const outDir = join(__dirname, '..', '..', 'fixtures', 'providers', 'btcpay');

/** The operations the adapter calls and the fake serves. */
const keptOperations: Record<string, string[]> = {
  '/api/v1/stores/{storeId}': ['get'],
  '/api/v1/stores/{storeId}/invoices': ['get', 'post'],
  '/api/v1/stores/{storeId}/invoices/{invoiceId}': ['get'],
  '/api/v1/stores/{storeId}/invoices/{invoiceId}/payment-methods': ['get'],
  '/api/v1/stores/{storeId}/invoices/{invoiceId}/refund': ['post'],
  '/api/v1/stores/{storeId}/pull-payments': ['get'],
};

/** The webhook events the fake sends (x-webhooks, the document's own extension). */
const keptWebhooks = [
  'InvoiceCreated',
  'InvoiceReceivedPayment',
  'InvoicePaymentSettled',
  'InvoiceProcessing',
  'InvoiceSettled',
  'InvoiceExpired',
  'InvoiceInvalid',
];

function git(...args: string[]): string {
  return execFileSync('git', ['--git-dir', gitDir, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Newtonsoft's JObject.Merge as the server uses it: objects merge key by key, arrays concatenate. */
function merge(target: JsonObject, source: JsonObject): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isObject(existing) && isObject(value)) merge(existing, value);
    else if (Array.isArray(existing) && Array.isArray(value)) existing.push(...value);
    else target[key] = value;
  }
}

function collectRefs(node: Json, into: Set<string>): void {
  if (Array.isArray(node)) node.forEach((item) => collectRefs(item, into));
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') into.add(value);
      else collectRefs(value, into);
    }
  }
}

function resolvePointer(doc: JsonObject, ref: string): Json {
  let node: Json = doc;
  for (const part of ref.replace(/^#\//, '').split('/')) {
    if (!isObject(node)) throw new Error(`unresolvable ${ref}`);
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')] ?? null;
  }
  return node;
}

async function main(): Promise<void> {
  const commit = git('rev-parse', `${ref}^{commit}`).trim();
  const date = git('log', '-1', '--format=%cI', commit).trim();
  const listing = git('ls-tree', commit, `${folder}/`)
    .trim()
    .split('\n')
    .map((line) => {
      const [meta, path] = line.split('\t') as [string, string];
      return { blob: meta.split(/\s+/)[2]!, path };
    })
    .filter((file) => /\/swagger\.template[^/]*\.json$/.test(file.path));

  // The base (swagger.template.json) first, then the parts in name order, as the server's loader does.
  listing.sort((a, b) =>
    a.path.endsWith('/swagger.template.json')
      ? -1
      : b.path.endsWith('/swagger.template.json')
        ? 1
        : a.path.localeCompare(b.path),
  );
  const merged: JsonObject = {};
  for (const file of listing) merge(merged, JSON.parse(git('cat-file', 'blob', file.blob)) as JsonObject);

  const paths = merged.paths as JsonObject;
  const keptPaths: JsonObject = {};
  for (const [path, methods] of Object.entries(keptOperations)) {
    const item = paths[path];
    if (!isObject(item)) throw new Error(`${path} is not in the document at ${commit}`);
    const kept: JsonObject = {};
    if (item.parameters) kept.parameters = item.parameters;
    for (const method of methods) {
      if (!item[method]) throw new Error(`${method} ${path} is not in the document at ${commit}`);
      kept[method] = item[method]!;
    }
    keptPaths[path] = kept;
  }
  const webhooks = merged['x-webhooks'] as JsonObject;
  const keptHooks: JsonObject = {};
  for (const name of keptWebhooks) {
    if (!webhooks[name]) throw new Error(`webhook ${name} is not in the document at ${commit}`);
    keptHooks[name] = webhooks[name]!;
  }

  const info = merged.info as JsonObject;
  const out: JsonObject = {
    openapi: merged.openapi!,
    info: {
      title: info.title!,
      version: info.version!,
      description: `Subset of ${repo}@${commit} (${folder}), see source.json.`,
    },
    servers: merged.servers!,
    security: merged.security!,
    paths: keptPaths,
    'x-webhooks': keptHooks,
    components: {},
  };

  // The $ref closure, walked to a fixed point.
  const refs = new Set<string>();
  collectRefs(out, refs);
  const components = out.components as JsonObject;
  const done = new Set<string>();
  let pending = [...refs];
  while (pending.length > 0) {
    const next: string[] = [];
    for (const ref of pending) {
      if (done.has(ref)) continue;
      done.add(ref);
      const [, , section, name] = ref.split('/') as [string, string, string, string];
      const target = resolvePointer(merged, ref);
      if (target === null) throw new Error(`unresolvable ${ref}`);
      const bucket = (components[section] ??= {}) as JsonObject;
      bucket[name] = structuredClone(target);
      const inner = new Set<string>();
      collectRefs(target, inner);
      next.push(...inner);
    }
    pending = next;
  }
  components.securitySchemes = (merged.components as JsonObject).securitySchemes!;
  for (const section of Object.values(components)) {
    if (isObject(section)) {
      const sorted = Object.fromEntries(Object.entries(section).sort(([a], [b]) => a.localeCompare(b)));
      for (const key of Object.keys(section)) delete section[key];
      Object.assign(section, sorted);
    }
  }

  const relaxed = relax(out);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'openapi.json'), await formatted(out));
  const source = {
    repo,
    commit,
    tag: ref,
    date,
    path: `${folder}/swagger.template*.json`,
    note: 'BTCPay Server serves one document merged at run time from these partial files; blob lists each one (git hash-object of the whole file).',
    blob: Object.fromEntries(listing.map((file) => [file.path.slice(folder.length + 1), file.blob])),
    kept: {
      operations: Object.entries(keptOperations).flatMap(([path, methods]) =>
        methods.map((m) => `${m.toUpperCase()} ${path}`),
      ),
      webhooks: keptWebhooks,
      components: [...done].sort(),
    },
    relaxed,
    script: 'test/fakes/btcpay/extract-openapi.ts',
  };
  writeFileSync(join(outDir, 'source.json'), await formatted(source));
  process.stdout.write(`wrote ${outDir} from ${repo}@${commit} (${ref})\n`);
}

/**
 * Where the document contradicts what the server sends, the fixture follows the server. Every change is listed
 * (and returned for source.json) so a reader can check it against the controller code named.
 */
function relax(doc: JsonObject): string[] {
  const notes: string[] = [];
  const schemas = (doc.components as JsonObject).schemas as JsonObject;

  // additionalProperties: false on one member of an allOf forbids the properties the other members declare
  // (JSON Schema does not merge allOf members), so real invoices (metadata, checkout, receipt next to id, status),
  // stores (id next to name) and webhook events (storeId, invoiceId next to deliveryId) all fail it.
  const allOfMembers = new Set<string>();
  const walk = (node: Json, path: string): void => {
    if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${path}/${i}`));
    else if (isObject(node)) {
      // A lone member with no sibling properties is not affected: it stays strict.
      if (Array.isArray(node.allOf) && (node.allOf.length > 1 || isObject(node.properties ?? null))) {
        node.allOf.forEach((member, i) => {
          if (isObject(member) && typeof member.$ref === 'string') allOfMembers.add(member.$ref);
          else if (isObject(member) && member.additionalProperties === false) {
            delete member.additionalProperties;
            notes.push(
              `${path}/allOf/${i}: dropped additionalProperties:false (an allOf member cannot see its siblings' properties)`,
            );
          }
        });
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${path}/${key}`);
    }
  };
  walk(doc, '#');
  for (const ref of [...allOfMembers].sort()) {
    const name = ref.split('/').pop()!;
    const schema = schemas[name];
    if (isObject(schema) && schema.additionalProperties === false) {
      delete schema.additionalProperties;
      notes.push(
        `${ref}: dropped additionalProperties:false (an allOf member next to others: its siblings' properties were forbidden)`,
      );
    }
  }

  // Errors the server answers on every Greenfield route but the document lists on few: GreenfieldAuthenticationHandler
  // writes 401 {code: "unauthenticated", message} and 403 {code: "missing-permission", message, ...};
  // CreateValidationError answers 422 with the ValidationProblemDetails array (the document says 400);
  // CreateAPIError(code, message) answers 400 with ProblemDetails (refund: "non-refundable"); InvoiceNotFound and
  // the store filter answer 404 with ProblemDetails.
  const problem = {
    description: 'Greenfield error',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
  };
  const validation = {
    description: 'Validation errors',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationProblemDetails' } } },
  };
  for (const [path, item] of Object.entries(doc.paths as JsonObject)) {
    for (const [method, operation] of Object.entries(item as JsonObject)) {
      if (method === 'parameters' || !isObject(operation)) continue;
      const responses = operation.responses as JsonObject;
      const label = `${method.toUpperCase()} ${path}`;
      for (const status of ['401', '403', '404']) {
        const existing = responses[status];
        if (!existing) {
          responses[status] = structuredClone(problem);
          notes.push(`${label}: added ${status} ProblemDetails`);
        } else if (isObject(existing) && !existing.content) {
          existing.content = structuredClone(problem.content);
          notes.push(`${label}: ${status} given its ProblemDetails body`);
        }
      }
      if (method === 'post') {
        const bad = responses['400'];
        if (isObject(bad) && JSON.stringify(bad).includes('ValidationProblemDetails')) {
          responses['400'] = structuredClone(problem);
          notes.push(`${label}: 400 is ProblemDetails (CreateAPIError), validation errors are 422`);
        }
        if (!responses['422']) {
          responses['422'] = structuredClone(validation);
          notes.push(
            `${label}: added 422 ValidationProblemDetails (CreateValidationError answers UnprocessableEntity)`,
          );
        }
      }
    }
  }
  return notes;
}

/** As the repository's prettier writes it, so `npm run lint` holds after a refresh. */
function formatted(value: unknown): Promise<string> {
  return format(JSON.stringify(value), { parser: 'json', printWidth: 120 });
}

void main();
