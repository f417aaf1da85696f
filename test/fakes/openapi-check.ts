// Holds a provider fake to the provider's published OpenAPI document (a pinned subset under
// test/fixtures/providers/): every request our server sends it and every response it gives are checked against the
// operation's schemas, so a fake cannot drift from the real API unnoticed. The providers publish OpenAPI 3.0
// (`nullable`), which Ajv does not know: schemas are rewritten to JSON Schema first (`nullable: true` -> a null
// alternative). Unknown formats (PayPal's `ppaas_*`) are accepted, not guessed at.
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: Json };

interface Operation {
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> } | { $ref: string }>;
}

export interface OpenApiCheck {
  /** Violations of the request: unknown operation, a body or query that the operation's schema refuses. */
  request(method: string, path: string, input: { query?: Record<string, unknown>; body?: unknown }): string[];
  /** Violations of the response: a status the operation does not declare, or a body its schema refuses. */
  response(method: string, path: string, status: number, body: unknown): string[];
  /** Violations of a value against a named component schema (a webhook event, the resource it carries). */
  schema(name: string, value: unknown): string[];
}

export interface OpenApiCheckOptions {
  /** Coerce strings to the schema's types in request bodies (Stripe's form-encoded bodies arrive as strings). */
  coerceRequestBodies?: boolean;
  /** Extra schemas for operations the provider's document lacks (PayPal's /v1/oauth2/token), by `METHOD /path`. */
  extraOperations?: Record<string, Operation>;
  /** Ajv's unicodeRegExp (PayPal's patterns are not valid under the `u` flag). */
  unicodeRegExp?: boolean;
}

/** OpenAPI 3.0 -> JSON Schema: `nullable` becomes a null alternative; `example(s)`, `x-*` are dropped. */
function toJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'nullable' || key === 'example' || key === 'examples' || key.startsWith('x-')) continue;
    // `properties` maps names to schemas: its keys are property names, not keywords to drop.
    out[key] =
      key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonSchema(v)]))
        : toJsonSchema(value);
  }
  if (node.nullable !== true) return out;
  // With an allOf (BTCPay: `{ type: string, nullable: true, allOf: [{ $ref: PaymentMethodId }] }`) the members
  // would still refuse null: only a null alternative around the whole schema keeps 3.0's meaning.
  if (typeof out.type === 'string' && out.$ref === undefined && out.enum === undefined && out.allOf === undefined) {
    return { ...out, type: [out.type, 'null'] };
  }
  return { anyOf: [out, { type: 'null' }] };
}

/** `/v1/checkout/sessions/{session}` -> a matcher of concrete paths, more literal segments first. */
function pathMatcher(template: string): { template: string; regex: RegExp; literals: number } {
  const parts = template.split('/');
  const regex = new RegExp(
    '^' + parts.map((p) => (/^\{.+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/') + '$',
  );
  return { template, regex, literals: parts.filter((p) => !/^\{.+\}$/.test(p)).length };
}

export function createOpenApiCheck(document: unknown, options: OpenApiCheckOptions = {}): OpenApiCheck {
  const doc = document as { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Schema } };
  const components = toJsonSchema((doc.components ?? {}) as Json) as Schema;
  const makeAjv = (coerce: boolean | 'array') => {
    const ajv = new Ajv({
      strict: false,
      allErrors: true,
      coerceTypes: coerce,
      unicodeRegExp: options.unicodeRegExp ?? true,
      logger: false,
      validateFormats: true,
    });
    addFormats(ajv);
    // The document's components, addressable by the `#/components/...` refs its schemas use.
    ajv.addSchema({ $id: 'doc', components } as never);
    return ajv;
  };
  const plain = makeAjv(false);
  const coercing = options.coerceRequestBodies ? makeAjv(true) : plain;
  // Query values arrive as text (`includeArchived=true`) and a repeated name as one or many (`orderId=a`): always
  // coerced to the parameter's type, a lone value to a one-item array where the schema wants an array.
  const querying = makeAjv('array');
  // Formats the validator does not know (ppaas_*, unix-time, ...) are the provider's own words: accepted as is.
  for (const ajv of new Set([plain, coercing, querying])) {
    const known = new Set(Object.keys((ajv as unknown as { formats: Record<string, unknown> }).formats));
    const seen = new Set<string>();
    JSON.stringify(document, (key, value: unknown) => {
      if (key === 'format' && typeof value === 'string' && !known.has(value)) seen.add(value);
      return value;
    });
    for (const f of seen) ajv.addFormat(f, true);
  }
  const rewriteRefs = (schema: Json): Json =>
    JSON.parse(JSON.stringify(schema).replace(/"\$ref":"#\//g, '"$ref":"doc#/')) as Json;
  const cache = new Map<string, ValidateFunction>();
  const compile = (ajv: Ajv, key: string, schema: Json): ValidateFunction => {
    const cacheKey = `${ajv === plain ? 'p' : ajv === querying ? 'q' : 'c'}:${key}`;
    let fn = cache.get(cacheKey);
    if (!fn) {
      fn = ajv.compile(rewriteRefs(toJsonSchema(schema)) as object);
      cache.set(cacheKey, fn);
    }
    return fn;
  };
  const errors = (fn: ValidateFunction, value: unknown, where: string): string[] =>
    fn(value) ? [] : (fn.errors ?? []).slice(0, 5).map((e) => `${where}${e.instancePath} ${e.message ?? 'invalid'}`);

  const operations = Object.entries({ ...doc.paths }).map(([template, ops]) => ({ ...pathMatcher(template), ops }));
  const extra = options.extraOperations ?? {};
  const find = (method: string, path: string): { op: Operation; key: string } | undefined => {
    const m = method.toLowerCase();
    const bare = path.split('?')[0]!;
    const extraOp = extra[`${method.toUpperCase()} ${bare}`];
    if (extraOp) return { op: extraOp, key: `${method.toUpperCase()} ${bare}` };
    const match = operations
      .filter((o) => o.regex.test(bare) && o.ops[m] !== undefined)
      .sort((a, b) => b.literals - a.literals)[0];
    return match ? { op: match.ops[m]!, key: `${method.toUpperCase()} ${match.template}` } : undefined;
  };
  const resolveRef = (value: unknown): unknown => {
    let v = value as { $ref?: string } | undefined;
    while (v && typeof v.$ref === 'string') {
      const names = v.$ref.replace(/^#\//, '').split('/');
      v = names.reduce<unknown>((acc, n) => (acc as Record<string, unknown>)?.[n], doc) as { $ref?: string };
    }
    return v;
  };
  const jsonSchemaOf = (content: Record<string, { schema?: Schema }> | undefined): Schema | undefined => {
    if (!content) return undefined;
    const type = Object.keys(content).find((t) => t.includes('json') || t.includes('form')) ?? Object.keys(content)[0];
    return type === undefined ? undefined : content[type]?.schema;
  };

  return {
    request(method, path, input) {
      const found = find(method, path);
      if (!found) return [`${method.toUpperCase()} ${path}: no such operation in the document`];
      const { op, key } = found;
      const out: string[] = [];
      const bodySchema = jsonSchemaOf(op.requestBody?.content);
      if (bodySchema && input.body !== undefined) {
        out.push(...errors(compile(coercing, `${key} body`, bodySchema), input.body, `${key} request body`));
      }
      for (const p of op.parameters ?? []) {
        const param = resolveRef(p) as { name: string; in: string; required?: boolean; schema?: Schema };
        if (param.in !== 'query') continue;
        const value = input.query?.[param.name];
        if (value === undefined) {
          if (param.required) out.push(`${key} query: ${param.name} is required`);
          continue;
        }
        if (param.schema) {
          // Wrapped in an object: Ajv coerces a value in place, which it cannot do to the root.
          const fn = compile(querying, `${key} query ${param.name}`, {
            type: 'object',
            properties: { value: param.schema },
          });
          out.push(...errors(fn, { value }, `${key} query ${param.name}`).map((e) => e.replace('/value', '')));
        }
      }
      return out;
    },
    response(method, path, status, body) {
      const found = find(method, path);
      if (!found) return [`${method.toUpperCase()} ${path}: no such operation in the document`];
      const { op, key } = found;
      const responses = op.responses ?? {};
      const declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
      if (!declared) return [`${key}: status ${status} is not declared`];
      const resolved = resolveRef(declared) as { content?: Record<string, { schema?: Schema }> };
      const schema = jsonSchemaOf(resolved.content);
      if (!schema) return [];
      return errors(compile(plain, `${key} ${status}`, schema), body, `${key} ${status} response`);
    },
    schema(name, value) {
      const schema = doc.components?.schemas?.[name];
      if (!schema) return [`no schema ${name} in the document`];
      return errors(compile(plain, `schema ${name}`, { $ref: `#/components/schemas/${name}` }), value, name);
    },
  };
}
