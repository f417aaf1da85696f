// fast-check arbitraries derived from openapi.yaml: for every operation, requests whose parameters and body follow
// the contract's JSON Schemas (the "valid" family), and requests broken in one deliberate way (the "mutated" family:
// wrong types, missing or extra properties, huge or hostile strings, boundary numbers, malformed ids, bodies that are
// not JSON, media types the operation does not take). The schemas are read as the server reads them (OpenAPI 3.1:
// type arrays, const, allOf/oneOf/anyOf, formats, patterns), so a generator follows the contract when it changes.
import fc from 'fast-check';
import type { SpecDocument } from '../../src/spec';

type Schema = any;
type Json = unknown;

/** Follows a chain of local `$ref`s. */
export function deref(spec: SpecDocument, node: any): any {
  let value = node;
  for (let i = 0; value && typeof value.$ref === 'string' && i < 20; i++) {
    const path = (value.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    value = path.reduce((o: any, k) => o?.[k], spec);
  }
  return value;
}

/** allOf folded into one schema: properties and required united, the strictest additionalProperties kept. */
function mergeAllOf(spec: SpecDocument, schema: Schema): Schema {
  const { allOf, ...rest } = schema;
  let merged: Schema = { ...rest };
  for (const part of allOf as Schema[]) {
    let s = deref(spec, part);
    if (s?.allOf) s = mergeAllOf(spec, s);
    const properties = { ...(merged.properties ?? {}) };
    for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) {
      properties[k] = properties[k] ? { allOf: [properties[k], v] } : v;
    }
    merged = {
      ...s,
      ...merged,
      properties: Object.keys(properties).length ? properties : undefined,
      required: [...new Set([...(merged.required ?? []), ...(s.required ?? [])])],
      additionalProperties:
        merged.additionalProperties === false || s.additionalProperties === false
          ? false
          : (merged.additionalProperties ?? s.additionalProperties),
    };
  }
  return merged;
}

/** The schema with its `$ref` and `allOf` resolved (what the generators look at). */
export function normalize(spec: SpecDocument, node: Schema): Schema {
  let s = deref(spec, node);
  if (s && typeof s === 'object' && s.allOf) s = mergeAllOf(spec, s);
  return s ?? {};
}

function typesOf(s: Schema): string[] {
  if (Array.isArray(s.type)) return s.type as string[];
  if (typeof s.type === 'string') return [s.type];
  if (s.properties || s.additionalProperties !== undefined || s.required) return ['object'];
  if (s.items) return ['array'];
  return ['string', 'integer', 'boolean', 'object'];
}

const smallJson: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 2 });

/** Hostile text: NUL and other controls, lone surrogates, bidi overrides, combining marks, emoji, SQL and markup. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\u202eevil\u202c',
    'e\u0301\u0301\u0301',
    '👩‍👩‍👧‍👦🏳️‍🌈',
    '\ufeffbom',
    "'; DROP TABLE customers; --",
    '" OR 1=1 --',
    '<script>alert(1)</script>',
    '{{7*7}}${7*7}',
    '../../../etc/passwd',
    '%00%2e%2e%2f',
    '\r\nX-Injected: 1',
    ' ',
    '',
    '\\',
    '"',
    'null',
    'NaN',
    '-0',
    '1e400',
    'ｆｕｌｌｗｉｄｔｈ',
    'İıſ\u0130\u212a',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);

/** A string of `n` characters (huge payloads are made by repetition, not generation). */
export const hugeString = fc
  .tuple(fc.constantFrom(70, 1_000, 70_000, 300_000), fc.constantFrom('a', 'é', '😀', '\u0000', '9'))
  .map(([n, c]) => c.repeat(n));

function fitLength(s: string, schema: Schema, fallback: string): string {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Infinity;
  const len = [...s].length;
  if (len >= min && len <= max) return s;
  if (len > max) {
    const cut = [...s].slice(0, max).join('');
    if (!schema.pattern || new RegExp(schema.pattern, 'u').test(cut)) return cut;
  }
  return fallback;
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const max = Math.min(schema.maxLength ?? 60, 60);
  const min = Math.min(schema.minLength ?? 0, max);
  const example = typeof schema.example === 'string' ? schema.example : undefined;
  const fallback = example ?? (schema.pattern ? '' : 'x'.repeat(Math.max(min, 1)));
  let base: fc.Arbitrary<string>;
  if (schema.contentMediaType === 'application/json') {
    base = smallJson.map((v) => JSON.stringify(v));
  } else if (schema.format === 'email') {
    base = fc
      .tuple(fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.stringMatching(/^[a-z]{1,10}$/), fc.constantFrom('com', 'org'))
      .map(([l, d, tld]) => `${l}@${d}.${tld}`);
  } else if (schema.format === 'uri') {
    const https = schema.pattern && /https/i.test(schema.pattern) && !/\?/.test(schema.pattern);
    base = fc.webUrl({ validSchemes: https ? ['https'] : ['https', 'http'] });
  } else if (schema.format === 'uuid') {
    base = fc.uuid();
  } else if (schema.format === 'date-time') {
    base = fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true })
      .map((d) => d.toISOString());
  } else if (schema.format === 'hostname') {
    base = fc.domain();
  } else if (typeof schema.pattern === 'string') {
    let re: RegExp | undefined;
    try {
      re = new RegExp(schema.pattern);
      fc.sample(fc.stringMatching(re), 1);
    } catch {
      re = undefined;
    }
    base = re ? fc.stringMatching(re) : fc.constant(fallback);
  } else {
    base = fc.oneof(
      { weight: 3, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength: max }) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: max }) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength: max }) },
    );
  }
  return base.map((s) => fitLength(s, schema, fallback));
}

function numberArbitrary(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const limit = integer ? Number.MAX_SAFE_INTEGER : 1e15;
  let min: number = schema.minimum ?? (schema.format === 'int32' ? -(2 ** 31) : -limit);
  let max: number = schema.maximum ?? (schema.format === 'int32' ? 2 ** 31 - 1 : limit);
  if (typeof schema.exclusiveMinimum === 'number') min = Math.max(min, schema.exclusiveMinimum + (integer ? 1 : 1e-6));
  if (typeof schema.exclusiveMaximum === 'number') max = Math.min(max, schema.exclusiveMaximum - (integer ? 1 : 1e-6));
  min = Math.max(min, -limit);
  max = Math.min(max, limit);
  if (typeof schema.multipleOf === 'number') {
    const step = schema.multipleOf as number;
    return fc
      .integer({ min: Math.ceil(min / step), max: Math.floor(max / step) })
      .map((k) => Number((k * step).toPrecision(12)));
  }
  if (integer) {
    return fc.oneof(
      fc.integer({ min, max }),
      fc.constantFrom(min, max),
      fc.integer({ min: Math.max(min, -1000), max: Math.min(max, 1000) }),
    );
  }
  return fc.oneof(
    fc.double({ min, max, noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
    fc.integer({ min: Math.ceil(Math.max(min, -1000)), max: Math.floor(Math.min(max, 1000)) }),
  );
}

/**
 * Values a body property of this name takes when it refers to the test's data (an id, a license key, a revision), at
 * any depth of the body: shop A's (mostly), shop B's, a value generated from the schema, or (optional properties) none.
 */
export interface ReferencePool {
  own: Json[];
  foreign?: Json[];
  /** Weight of leaving an optional property out (against 8 for shop A's values). */
  omit?: number;
}
export type References = Readonly<Record<string, ReferencePool>>;

const OMIT = Symbol('omit');

function referenceArbitrary(pool: ReferencePool, random: fc.Arbitrary<Json>, required: boolean) {
  const options: { weight: number; arbitrary: fc.Arbitrary<Json | typeof OMIT> }[] = [{ weight: 1, arbitrary: random }];
  if (pool.own.length) options.push({ weight: 8, arbitrary: fc.constantFrom(...pool.own) });
  if (pool.foreign?.length) options.push({ weight: 2, arbitrary: fc.constantFrom(...pool.foreign) });
  if (!required && pool.omit) options.push({ weight: pool.omit, arbitrary: fc.constant(OMIT) });
  return fc.oneof(...options);
}

/** Values valid per `schema` (best effort: a value may still break a rule the generator does not model). */
export function validValue(spec: SpecDocument, node: Schema, depth = 0, refs: References = {}): fc.Arbitrary<Json> {
  if (node === true || node === undefined) return smallJson;
  const schema = normalize(spec, node);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as Json[]));
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(alternatives)) {
    const { oneOf: _o, anyOf: _a, ...rest } = schema;
    return fc.oneof(
      ...alternatives.map((alt: Schema) => {
        const branch = normalize(spec, alt);
        const merged = normalize(spec, { allOf: [rest, branch] });
        return validValue(spec, merged, depth + 1, refs);
      }),
    );
  }
  const types = typesOf(schema);
  const arbs = types.map((t) => typeArbitrary(spec, schema, t, depth, refs));
  return arbs.length === 1 ? arbs[0]! : fc.oneof(...arbs);
}

function typeArbitrary(
  spec: SpecDocument,
  schema: Schema,
  type: string,
  depth: number,
  refs: References,
): fc.Arbitrary<Json> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return numberArbitrary(schema, true);
    case 'number':
      return numberArbitrary(schema, false);
    case 'string':
      return stringArbitrary(schema);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.min(schema.maxItems ?? minLength + 4, minLength + (depth > 4 ? 0 : 4));
      const items = validValue(spec, schema.items ?? {}, depth + 1, refs);
      return schema.uniqueItems
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength });
    }
    default:
      return objectArbitrary(spec, schema, depth, refs);
  }
}

function objectArbitrary(spec: SpecDocument, schema: Schema, depth: number, refs: References): fc.Arbitrary<Json> {
  const props: Record<string, Schema> = schema.properties ?? {};
  const required: string[] = (schema.required ?? []).filter((k: string) => k in props || !schema.properties);
  const keys = Object.keys(props).filter((k) => depth < 5 || required.includes(k));
  const valueOf = (k: string) => {
    const random = validValue(spec, props[k], depth + 1, refs);
    const pool = Object.hasOwn(refs, k) ? refs[k] : undefined;
    return pool ? referenceArbitrary(pool, random, required.includes(k)) : random;
  };
  // A referenced property is always drawn: its pool says how often it is left out (OMIT, removed below).
  const record = fc
    .record(Object.fromEntries(keys.map((k) => [k, valueOf(k)])), {
      requiredKeys: keys.filter((k) => required.includes(k) || Object.hasOwn(refs, k)),
    })
    .map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== OMIT)) as Record<string, Json>);
  const additional = schema.additionalProperties;
  const maxProps = schema.maxProperties ?? Infinity;
  const minProps = schema.minProperties ?? 0;
  let arb: fc.Arbitrary<Record<string, Json>> = record;
  if (additional && additional !== false && depth < 5) {
    const key = schema.propertyNames
      ? (stringArbitrary(normalize(spec, schema.propertyNames)) as fc.Arbitrary<string>)
      : fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/);
    const extra = fc.dictionary(key, validValue(spec, additional === true ? {} : additional, depth + 1, refs), {
      minKeys: keys.length === 0 ? minProps : 0,
      maxKeys: Math.min(4, Math.max(0, maxProps - required.length)),
    });
    arb = fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r }) as Record<string, Json>);
  }
  return arb
    .map((o) => {
      const entries = Object.entries(o);
      if (entries.length > maxProps) return Object.fromEntries(entries.slice(0, maxProps));
      return o;
    })
    .filter((o) => Object.keys(o).length >= Math.min(minProps, keys.length || minProps));
}

/** A value of the wrong JSON type for `schema`. */
export function wrongType(spec: SpecDocument, node: Schema): fc.Arbitrary<Json> {
  const schema = normalize(spec, node ?? {});
  const allowed = new Set(typesOf(schema));
  if (allowed.has('integer')) allowed.add('number');
  const all: [string, fc.Arbitrary<Json>][] = [
    ['string', fc.oneof(fc.constantFrom('', '12', 'true', 'null', '1.5'), nastyString)],
    ['number', fc.constantFrom(0, -1, 1.5, 1e308, -1e308, 2 ** 63, 5e-324)],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.constantFrom([], [1], ['a', null], [{}])],
    ['object', fc.constantFrom({}, { a: 1 }, { $ref: '#/x' }, { __proto__: { polluted: true } })],
  ];
  const picks = all.filter(([t]) => !allowed.has(t) && !(t === 'integer' && allowed.has('number')));
  return fc.oneof(...(picks.length ? picks : all).map(([, a]) => a));
}

/** Out-of-bounds and awkward values for `schema`: one past each limit, huge and hostile strings, extreme numbers. */
export function boundaryValue(spec: SpecDocument, node: Schema): fc.Arbitrary<Json> {
  const schema = normalize(spec, node ?? {});
  const out: fc.Arbitrary<Json>[] = [];
  const types = typesOf(schema);
  if (types.includes('string')) {
    out.push(nastyString, hugeString);
    if (typeof schema.maxLength === 'number') out.push(fc.constant('z'.repeat(schema.maxLength + 1)));
    if (typeof schema.minLength === 'number' && schema.minLength > 0)
      out.push(fc.constant('z'.repeat(schema.minLength - 1)));
    if (schema.pattern) out.push(fc.constantFrom('999999999999999999999.999999999', '-0.000000001', '1e5', '0x1F'));
  }
  if (types.includes('integer') || types.includes('number')) {
    const values: number[] = [
      2 ** 53,
      2 ** 63,
      -(2 ** 63),
      1e308,
      -1e308,
      0.5,
      -0.000001,
      5e-324,
      2 ** 31,
      -(2 ** 31) - 1,
    ];
    if (typeof schema.minimum === 'number') values.push(schema.minimum - 1, schema.minimum - 0.5);
    if (typeof schema.maximum === 'number') values.push(schema.maximum + 1, schema.maximum + 0.5);
    out.push(fc.constantFrom(...values));
  }
  if (types.includes('array')) {
    out.push(fc.constant(Array.from({ length: (schema.maxItems ?? 1000) + 1 }, () => 'x')));
  }
  if (Array.isArray(schema.enum)) out.push(fc.constantFrom('UNKNOWN', '', String(schema.enum[0]).toLowerCase()));
  if (out.length === 0) out.push(nastyString);
  return fc.oneof(...out);
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

export type Body =
  | { kind: 'json'; value: Json }
  | { kind: 'raw'; contentType: string | undefined; text: string }
  | { kind: 'form'; fields: Record<string, string> }
  | { kind: 'multipart'; fields: Record<string, string>; file?: boolean };

/** One request of the fuzz: data only, so fast-check can print and shrink it. */
export class FuzzRequest {
  constructor(
    readonly operationId: string,
    readonly family: 'valid' | 'mutated',
    readonly mutation: string,
    readonly method: string,
    readonly path: string,
    readonly query: [string, string][],
    readonly headers: Record<string, string>,
    readonly body: Body | undefined,
  ) {}

  get url(): string {
    // A lone surrogate has no UTF-8 form: it goes as U+FFFD, as any client would have to send it.
    const enc = (x: string) => encodeURIComponent(wellFormed(x));
    const qs = this.query.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
    return qs ? `${this.path}?${qs}` : this.path;
  }

  /** Everything the request carries, as text: what a response may echo back without leaking anything. */
  get text(): string {
    const body = this.body;
    let b = '';
    if (body?.kind === 'json') b = JSON.stringify(body.value) ?? '';
    else if (body?.kind === 'raw') b = body.text;
    else if (body) b = JSON.stringify(body.fields);
    return `${this.url}\n${decodeSafe(this.url)}\n${JSON.stringify(this.headers)}\n${b}`;
  }

  /** Short, printable (huge strings cut), for counterexamples and the report. */
  toJSON(): Record<string, unknown> {
    return clip({
      operationId: this.operationId,
      family: this.family,
      mutation: this.mutation,
      method: this.method,
      url: this.url,
      headers: this.headers,
      body: this.body,
    }) as Record<string, unknown>;
  }

  [fc.toStringMethod](): string {
    return JSON.stringify(this.toJSON());
  }
}

/** Lone surrogates replaced by U+FFFD (String.prototype.toWellFormed, which the ES2023 lib lacks). */
export function wellFormed(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function clip(v: unknown): unknown {
  if (typeof v === 'string') return v.length > 200 ? `${v.slice(0, 120)}…(${v.length} chars)` : v;
  if (Array.isArray(v)) return v.length > 20 ? [...v.slice(0, 20).map(clip), `…(${v.length} items)`] : v.map(clip);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clip(x)]));
  return v;
}

/** Ids a path parameter may take: the right kind in the caller's shop, any other of its ids, the other shop's. */
export interface IdPool {
  own: string[];
  ownOther: string[];
  foreign: string[];
}

export interface OperationModel {
  operationId: string;
  method: string;
  path: string;
  isPublic: boolean;
  /** `ref`: the components/parameters name, when the parameter is one. */
  pathParams: { name: string; schema: Schema; ref?: string }[];
  queryParams: { name: string; schema: Schema; required: boolean }[];
  headerParams: { name: string; schema: Schema }[];
  body?: { required: boolean; contentTypes: string[]; schema: Schema };
}

export function operationModels(spec: SpecDocument): OperationModel[] {
  const out: OperationModel[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => ({
        ...deref(spec, p),
        ref: typeof p.$ref === 'string' ? (p.$ref as string).split('/').pop() : undefined,
      }));
      const rb = op.requestBody ? deref(spec, op.requestBody) : undefined;
      const contentTypes = rb ? Object.keys(rb.content ?? {}) : [];
      out.push({
        operationId: op.operationId,
        method,
        path: `/dev/v1${path}`,
        isPublic: Array.isArray(op.security) && op.security.length === 0,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema, ref: p.ref })),
        queryParams: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema, required: !!p.required })),
        headerParams: params.filter((p) => p.in === 'header').map((p) => ({ name: p.name, schema: p.schema })),
        body: rb
          ? {
              required: !!rb.required,
              contentTypes,
              schema: rb.content?.['application/json']?.schema ?? rb.content?.[contentTypes[0]!]?.schema,
            }
          : undefined,
      });
    }
  }
  return out;
}

/** Malformed path segments, already URL-encoded as they go on the wire. */
export const malformedSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '%00',
    '%zz',
    '%',
    '..',
    '%2e%2e',
    '%2F',
    'a%2Fb',
    '%C0%AF',
    '%ED%A0%80',
    '%F0%9F%98%80',
    "x'%20OR%20'1'%3D'1",
    '-1',
    '0',
    'null',
    'undefined',
    '__proto__',
    'constructor',
    'cus_',
    'cus_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f',
    '00000000-0000-0000-0000-000000000000',
    'x'.repeat(64),
    'x'.repeat(65),
    'y'.repeat(5000),
  ),
  nastyString.filter((s) => s.length > 0).map((s) => encodeURIComponent(wellFormed(s))),
  fc.stringMatching(/^[a-z]{2,4}_[0-9a-f]{32}$/),
);

function pathArbitrary(model: OperationModel, ids: (param: string) => IdPool, mutated: boolean) {
  if (model.pathParams.length === 0) return fc.constant({ path: model.path, note: '' });
  const perParam = model.pathParams.map((p) => {
    const pool = ids(p.name);
    const options: { weight: number; arbitrary: fc.Arbitrary<[string, string]> }[] = [];
    const tag = (label: string, a: fc.Arbitrary<string>) =>
      a.map((v) => [encodeURIComponent(v), label] as [string, string]);
    if (pool.own.length) options.push({ weight: mutated ? 3 : 8, arbitrary: tag('own', fc.constantFrom(...pool.own)) });
    if (pool.foreign.length) options.push({ weight: 2, arbitrary: tag('shopB', fc.constantFrom(...pool.foreign)) });
    if (pool.ownOther.length)
      options.push({ weight: 1, arbitrary: tag('ownOtherKind', fc.constantFrom(...pool.ownOther)) });
    options.push({ weight: 1, arbitrary: tag('random', stringArbitrary(normalize({} as SpecDocument, p.schema))) });
    if (mutated) {
      options.push({
        weight: 4,
        arbitrary: malformedSegment.map((v) => [v, 'malformed'] as [string, string]),
      });
    }
    return fc.oneof(...options);
  });
  return fc.tuple(...perParam).map((values) => {
    let path = model.path;
    const notes: string[] = [];
    model.pathParams.forEach((p, i) => {
      path = path.replace(`{${p.name}}`, values[i]![0]);
      notes.push(`${p.name}:${values[i]![1]}`);
    });
    return { path, note: notes.join(',') };
  });
}

function paramText(v: Json): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function queryArbitrary(spec: SpecDocument, model: OperationModel, pinned: Record<string, fc.Arbitrary<string>>) {
  const entries = model.queryParams.map((q) => {
    const value = pinned[q.name] ?? validValue(spec, q.schema).map(paramText);
    return q.required
      ? value.map((v) => [q.name, v] as [string, string])
      : fc.option(
          value.map((v) => [q.name, v] as [string, string]),
          { freq: 2 },
        );
  });
  return fc.tuple(...entries).map((pairs) => pairs.filter((p): p is [string, string] => p !== null));
}

/** One field per property, as form and multipart bodies carry them (non-strings as JSON text). */
function asFields(value: Json): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? v : (JSON.stringify(v) ?? '')]),
  );
}

function validBody(spec: SpecDocument, model: OperationModel, refs: References): fc.Arbitrary<Body | undefined> {
  const body = model.body;
  if (!body) return fc.constant(undefined);
  const value = validValue(spec, body.schema, 0, refs);
  const options: { weight: number; arbitrary: fc.Arbitrary<Body | undefined> }[] = [
    { weight: 8, arbitrary: value.map((v) => ({ kind: 'json', value: v }) as Body) },
  ];
  if (body.contentTypes.includes('multipart/form-data'))
    options.push({ weight: 1, arbitrary: value.map((v) => ({ kind: 'multipart', fields: asFields(v) }) as Body) });
  if (body.contentTypes.includes('text/plain'))
    options.push({
      weight: 1,
      arbitrary: value.map((v) => ({ kind: 'raw', contentType: 'text/plain', text: JSON.stringify(v) }) as Body),
    });
  if (body.contentTypes.includes('application/x-www-form-urlencoded'))
    options.push({ weight: 3, arbitrary: value.map((v) => ({ kind: 'form', fields: asFields(v) }) as Body) });
  if (!body.required) options.push({ weight: 1, arbitrary: fc.constant(undefined) });
  return fc.oneof(...options);
}

const idempotencyKey = fc.option(fc.stringMatching(/^[A-Za-z0-9-]{8,40}$/), { freq: 3 });

export interface RequestInputs {
  valid: fc.Arbitrary<FuzzRequest>;
  mutated: fc.Arbitrary<FuzzRequest>;
}

/** Where in an object a property mutation goes: the body's top level or one level down. */
function propertyPaths(spec: SpecDocument, node: Schema): { path: string[]; schema: Schema; required: boolean }[] {
  const out: { path: string[]; schema: Schema; required: boolean }[] = [];
  const walk = (n: Schema, at: string[], depth: number) => {
    const s = normalize(spec, n);
    for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) {
      out.push({ path: [...at, k], schema: v, required: (s.required ?? []).includes(k) });
      if (depth < 1) walk(v, [...at, k], depth + 1);
    }
  };
  if (node) walk(node, [], 0);
  return out;
}

function setAt(value: Json, path: string[], next: Json | typeof REMOVE): Json {
  if (path.length === 0) return next === REMOVE ? undefined : next;
  const base = value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as object) } : {};
  const [head, ...rest] = path as [string, ...string[]];
  const child = setAt((base as Record<string, Json>)[head], rest, next);
  if (child === undefined && rest.length === 0) delete (base as Record<string, Json>)[head];
  else Object.defineProperty(base, head, { value: child, enumerable: true, writable: true, configurable: true });
  return base;
}
const REMOVE = Symbol('remove');

/** The request arbitraries of one operation. `ids` gives the id pool of each path parameter. */
export function requestInputs(
  spec: SpecDocument,
  model: OperationModel,
  options: {
    ids: (param: string) => IdPool;
    /** Authorization etc. for every request (empty for public operations). */
    headers: Record<string, string>;
    /** Query parameters whose values must come from the test's data (an OAuth client id, say). */
    pinnedQuery?: Record<string, fc.Arbitrary<string>>;
    /** Body properties that refer to the test's data, by name at any depth, so requests get past their look-ups. */
    references?: References;
  },
): RequestInputs {
  const pinned = options.pinnedQuery ?? {};
  const hasIdempotency = model.headerParams.some((h) => h.name === 'Idempotency-Key');
  const make = (
    family: 'valid' | 'mutated',
    mutation: string,
    path: string,
    query: [string, string][],
    headers: Record<string, string>,
    body: Body | undefined,
  ) => new FuzzRequest(model.operationId, family, mutation, model.method, path, query, headers, body);

  const base = fc.record({
    path: pathArbitrary(model, options.ids, false),
    query: queryArbitrary(spec, model, pinned),
    key: hasIdempotency ? idempotencyKey : fc.constant(null),
    body: validBody(spec, model, options.references ?? {}),
  });
  const headersOf = (key: string | null) => ({ ...options.headers, ...(key ? { 'Idempotency-Key': key } : {}) });

  const valid = base.map((b) =>
    make('valid', b.path.note ? `ids ${b.path.note}` : '', b.path.path, b.query, headersOf(b.key), b.body),
  );

  // Each mutation: a label and a way to break the valid base request.
  type Mutator = fc.Arbitrary<
    (b: { path: string; query: [string, string][]; key: string | null; body: Body | undefined }) => FuzzRequest
  >;
  const mutators: { weight: number; arbitrary: Mutator }[] = [];

  if (model.pathParams.length) {
    mutators.push({
      weight: 3,
      arbitrary: pathArbitrary(model, options.ids, true).map(
        (p) => (b) => make('mutated', `path ${p.note}`, p.path, b.query, headersOf(b.key), b.body),
      ),
    });
  }
  if (model.queryParams.length) {
    const bad = fc.oneof(
      ...model.queryParams.map((q) =>
        fc
          .oneof(wrongType(spec, q.schema), boundaryValue(spec, q.schema))
          .map((v) => [q.name, paramText(v)] as [string, string]),
      ),
    );
    mutators.push({
      weight: 3,
      arbitrary: bad.map(
        ([name, v]) =>
          (b) =>
            make(
              'mutated',
              `query ${name} bad`,
              b.path,
              [...b.query.filter(([k]) => k !== name), [name, v]],
              headersOf(b.key),
              b.body,
            ),
      ),
    });
    mutators.push({
      weight: 1,
      arbitrary: fc
        .constantFrom(...model.queryParams.map((q) => q.name))
        .map(
          (name) => (b) =>
            make(
              'mutated',
              `query ${name} repeated`,
              b.path,
              [...b.query, [name, '1'], [name, 'x']],
              headersOf(b.key),
              b.body,
            ),
        ),
    });
    const required = model.queryParams.filter((q) => q.required).map((q) => q.name);
    if (required.length) {
      mutators.push({
        weight: 1,
        arbitrary: fc.constantFrom(...required).map(
          (name) => (b) =>
            make(
              'mutated',
              `query ${name} missing`,
              b.path,
              b.query.filter(([k]) => k !== name),
              headersOf(b.key),
              b.body,
            ),
        ),
      });
    }
  }
  mutators.push({
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('unknown', 'limit[]', '__proto__[x]', 'a'.repeat(300), ''), nastyString).map(
      ([name, v]) =>
        (b) =>
          make(
            'mutated',
            `query extra ${name.slice(0, 10)}`,
            b.path,
            [...b.query, [name, v]],
            headersOf(b.key),
            b.body,
          ),
    ),
  });
  if (hasIdempotency) {
    mutators.push({
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom('', ' ', 'k'.repeat(129), 'k'.repeat(5000), 'a,b', '\t'),
          // Node refuses control characters in a header value before sending: keep what can reach the server.
          fc
            .string({ unit: 'binary-ascii', minLength: 1, maxLength: 40 })
            .map((s) => [...s].filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f')).join('')),
        )
        .map(
          (key) => (b) =>
            make(
              'mutated',
              'idempotency key',
              b.path,
              b.query,
              { ...options.headers, 'Idempotency-Key': key, 'X-Idempotency-Key': `${key}x` },
              b.body,
            ),
        ),
    });
  }

  const bodySchema = model.body?.schema;
  const json = (label: string, f: (v: Json) => Json): Mutator =>
    fc.constant((b) =>
      make('mutated', label, b.path, b.query, headersOf(b.key), {
        kind: 'json',
        value: f(b.body?.kind === 'json' ? b.body.value : {}),
      }),
    );
  if (bodySchema) {
    const props = propertyPaths(spec, bodySchema);
    mutators.push({
      weight: 1,
      arbitrary: wrongType(spec, bodySchema).map(
        (v) => (b) =>
          make('mutated', 'body wrong root type', b.path, b.query, headersOf(b.key), { kind: 'json', value: v }),
      ),
    });
    const required = props.filter((p) => p.required);
    if (required.length) {
      mutators.push({
        weight: 2,
        arbitrary: fc
          .constantFrom(...required)
          .chain((p) => json(`body missing ${p.path.join('.')}`, (v) => setAt(v, p.path, REMOVE))),
      });
    }
    if (props.length) {
      mutators.push({
        weight: 4,
        arbitrary: fc
          .constantFrom(...props)
          .chain((p) =>
            fc
              .oneof(wrongType(spec, p.schema), boundaryValue(spec, p.schema))
              .chain((bad) => json(`body ${p.path.join('.')} bad`, (v) => setAt(v, p.path, bad))),
          ),
      });
    }
    mutators.push({
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('unexpected', '__proto__', 'constructor', 'shop_id', 'id', ''), smallJson)
        .chain(([name, extra]) => json(`body extra ${name}`, (v) => setAt(v, [name], extra))),
    });
    mutators.push({
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '{',
          '{"a":}',
          '[1,]',
          '{"amount": 1e400}',
          '{"amount": 123456789012345678901234567890}',
          '\ufeff{}',
          'null',
          '"str"',
          '',
          `${'['.repeat(5000)}${']'.repeat(5000)}`,
          '{"a":"\\ud800"}',
          '{"a":"\\u0000"}',
          '{"__proto__":{"admin":true}}',
          '{"x":1,"x":2}',
        )
        .map(
          (text) => (b) =>
            make('mutated', 'body bad JSON', b.path, b.query, headersOf(b.key), {
              kind: 'raw',
              contentType: 'application/json',
              text,
            }),
        ),
    });
    mutators.push({
      weight: 2,
      arbitrary: fc
        .constantFrom(
          'application/xml',
          'text/html',
          'application/octet-stream',
          'application/x-www-form-urlencoded',
          'application/json; charset=utf-16',
          'multipart/form-data',
          'multipart/form-data; boundary=',
          'application/vnd.api+json',
          'text/plain; charset=latin1',
          'x',
          undefined,
        )
        .map((contentType) => (b) => {
          const text = b.body?.kind === 'json' ? (JSON.stringify(b.body.value) ?? '') : '{"a":1}';
          return make('mutated', `content-type ${contentType ?? '(none)'}`, b.path, b.query, headersOf(b.key), {
            kind: 'raw',
            contentType,
            text,
          });
        }),
    });
    if (model.body?.contentTypes.includes('multipart/form-data')) {
      mutators.push({
        weight: 1,
        arbitrary: fc.boolean().map(
          (file) => (b) =>
            make(
              'mutated',
              file ? 'multipart with a file' : 'multipart with hostile fields',
              b.path,
              b.query,
              headersOf(b.key),
              {
                kind: 'multipart',
                fields: { ...asFields(b.body?.kind === 'json' ? b.body.value : {}), '': 'x', 'a\u0000b': '\u0000' },
                file,
              },
            ),
        ),
      });
    }
  } else {
    // An operation without a body, sent one anyway: small or over the limit, JSON or not.
    mutators.push({
      weight: 1,
      arbitrary: fc
        .constantFrom<[string, string | undefined]>(
          ['{"a":1}', 'application/json'],
          ['{}', 'application/json'],
          ['{', 'application/json'],
          ['<a/>', 'application/xml'],
          ['a=1', 'application/x-www-form-urlencoded'],
          ['x', undefined],
          ['[1]', 'text/plain'],
          ['--x--', 'multipart/form-data; boundary=x'],
          // Over the 1 MiB limit: rarer, since the client keeps writing after the server has answered.
          ['x'.repeat(1_100_000), 'application/json'],
        )
        .map(
          ([text, contentType]) =>
            (b) =>
              make(
                'mutated',
                `unexpected body (${contentType ?? 'no type'}, ${text.length} bytes)`,
                b.path,
                b.query,
                headersOf(b.key),
                {
                  kind: 'raw',
                  contentType,
                  text,
                },
              ),
        ),
    });
  }

  const mutated = fc
    .tuple(base, fc.oneof(...mutators))
    .map(([b, mutate]) => mutate({ path: b.path.path, query: b.query, key: b.key, body: b.body }));
  return { valid, mutated };
}
