// Every Ajv keyword that can fail a request, a theme document or a theme setting goes through
// validationDetails (src/platform/validation-details.ts): each must come out as a sentence a person wrote, on the
// field it is about, and none may leak Ajv's own wording ("must NOT have fewer than 1 items").
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import type { AnySchema, ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { schemaProblems, validationDetails } from '../../src/platform/validation-details';

// The options of the request validator and the theme validators (src/http/validators.ts, src/domain/themes/bases.ts).
const ajv2020 = new Ajv2020({ allErrors: true, strict: false, discriminator: true });
addFormats(ajv2020, { keywords: true });
// Keywords Ajv knows only in draft-07 (`additionalItems`, `dependencies`), in case a schema of that shape arrives.
const ajv07 = new Ajv({ allErrors: true, strict: false });

/** Ajv's errors for `data` under `schema`, placed in a request body as openapi-backend places them. */
function errorsOf(schema: AnySchema, data: unknown, ajv: Ajv | Ajv2020 = ajv2020): ErrorObject[] {
  const validate = ajv.compile({ type: 'object', properties: { requestBody: schema } });
  expect(validate({ requestBody: data })).toBe(false);
  return validate.errors ?? [];
}

const obj = (properties: Record<string, AnySchema>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});

// [keyword, schema, failing body, the detail expected for that keyword]
const cases: [string, AnySchema, unknown, { field: string; message: string }, (Ajv | Ajv2020)?][] = [
  ['required', obj({}, { required: ['email'] }), {}, { field: 'email', message: 'is required' }],
  [
    'dependentRequired',
    obj({}, { dependentRequired: { card: ['cvc'] } }),
    { card: '4242' },
    { field: 'cvc', message: 'is required when card is given' },
  ],
  [
    'dependencies',
    obj({}, { dependencies: { card: ['cvc'] } }),
    { card: '4242' },
    { field: 'cvc', message: 'is required when card is given' },
    ajv07,
  ],
  [
    'additionalProperties',
    obj({ a: {} }, { additionalProperties: false }),
    { b: 1 },
    { field: 'b', message: 'is not a known field' },
  ],
  [
    'unevaluatedProperties',
    obj({ a: {} }, { unevaluatedProperties: false }),
    { b: 1 },
    { field: 'b', message: 'is not a known field' },
  ],
  [
    'propertyNames',
    { type: 'object', propertyNames: { pattern: '^[a-z]+$' } },
    { Bad: 1 },
    { field: 'Bad', message: 'is not an allowed field name' },
  ],
  ['enum', obj({ s: { enum: ['A', 'B'] } }), { s: 'C' }, { field: 's', message: 'must be one of: A, B' }],
  ['const', obj({ s: { const: 'A' } }), { s: 'C' }, { field: 's', message: 'must be "A"' }],
  ['type', obj({ n: { type: 'integer' } }), { n: 'x' }, { field: 'n', message: 'must be an integer' }],
  ['type', obj({ n: { type: ['string', 'null'] } }), { n: 1 }, { field: 'n', message: 'must be a string or null' }],
  ['minimum', obj({ n: { minimum: 1 } }), { n: 0 }, { field: 'n', message: 'must be at least 1' }],
  ['maximum', obj({ n: { maximum: 100 } }), { n: 101 }, { field: 'n', message: 'must be at most 100' }],
  [
    'exclusiveMinimum',
    obj({ n: { exclusiveMinimum: 0 } }),
    { n: 0 },
    { field: 'n', message: 'must be greater than 0' },
  ],
  [
    'exclusiveMaximum',
    obj({ n: { exclusiveMaximum: 10 } }),
    { n: 10 },
    { field: 'n', message: 'must be less than 10' },
  ],
  ['multipleOf', obj({ n: { multipleOf: 5 } }), { n: 7 }, { field: 'n', message: 'must be a multiple of 5' }],
  ['minLength', obj({ s: { minLength: 1 } }), { s: '' }, { field: 's', message: 'must be at least 1 character long' }],
  [
    'maxLength',
    obj({ s: { maxLength: 3 } }),
    { s: 'abcd' },
    { field: 's', message: 'must be at most 3 characters long' },
  ],
  [
    'pattern',
    obj({ s: { pattern: '^evt_' } }),
    { s: 'x' },
    { field: 's', message: 'does not have the expected form (the pattern ^evt_)' },
  ],
  ['format', obj({ s: { format: 'email' } }), { s: 'nope' }, { field: 's', message: 'must be an email address' }],
  [
    'format',
    obj({ s: { format: 'date-time' } }),
    { s: 'yesterday' },
    { field: 's', message: 'must be a date and time in RFC 3339 form, such as 2026-01-31T09:30:00Z' },
  ],
  [
    'format',
    obj({ s: { format: 'uri' } }),
    { s: 'no scheme' },
    { field: 's', message: 'must be an absolute URL, such as https://example.com/path' },
  ],
  [
    'format',
    obj({ s: { format: 'int32' } }),
    { s: 2 ** 31 },
    { field: 's', message: 'must be a whole number that fits in 32 bits' },
  ],
  [
    'formatMinimum',
    obj({ s: { format: 'date', formatMinimum: '2026-01-01' } }),
    { s: '2025-12-31' },
    { field: 's', message: 'must be no earlier than 2026-01-01' },
  ],
  [
    'formatMaximum',
    obj({ s: { format: 'date', formatMaximum: '2026-01-01' } }),
    { s: '2026-01-02' },
    { field: 's', message: 'must be no later than 2026-01-01' },
  ],
  [
    'formatExclusiveMinimum',
    obj({ s: { format: 'date', formatExclusiveMinimum: '2026-01-01' } }),
    { s: '2026-01-01' },
    { field: 's', message: 'must be later than 2026-01-01' },
  ],
  [
    'formatExclusiveMaximum',
    obj({ s: { format: 'date', formatExclusiveMaximum: '2026-01-01' } }),
    { s: '2026-01-01' },
    { field: 's', message: 'must be earlier than 2026-01-01' },
  ],
  [
    'minItems',
    obj({ items: { type: 'array', minItems: 1 } }),
    { items: [] },
    { field: 'items', message: 'must contain at least 1 item' },
  ],
  [
    'maxItems',
    obj({ ids: { type: 'array', maxItems: 2 } }),
    { ids: [1, 2, 3] },
    { field: 'ids', message: 'must contain at most 2 items' },
  ],
  [
    'items',
    obj({ pair: { type: 'array', prefixItems: [{}, {}], items: false } }),
    { pair: [1, 2, 3] },
    { field: 'pair', message: 'must contain at most 2 items' },
  ],
  [
    'additionalItems',
    obj({ pair: { type: 'array', items: [{}], additionalItems: false } }),
    { pair: [1, 2] },
    { field: 'pair', message: 'must contain at most 1 item' },
    ajv07,
  ],
  [
    'unevaluatedItems',
    obj({ pair: { type: 'array', prefixItems: [{}], unevaluatedItems: false } }),
    { pair: [1, 2] },
    { field: 'pair', message: 'must contain at most 1 item' },
  ],
  [
    'uniqueItems',
    obj({ tags: { type: 'array', uniqueItems: true } }),
    { tags: ['a', 'b', 'a'] },
    { field: 'tags', message: 'must not contain the same item twice (items 0 and 2 are equal)' },
  ],
  [
    'contains',
    obj({ list: { type: 'array', contains: { const: 1 } } }),
    { list: [2] },
    { field: 'list', message: 'must contain at least 1 item of the expected kind' },
  ],
  [
    'contains',
    obj({ list: { type: 'array', contains: { const: 1 }, minContains: 2, maxContains: 3 } }),
    { list: [1] },
    { field: 'list', message: 'must contain between 2 and 3 items of the expected kind' },
  ],
  [
    'minProperties',
    obj({ m: { type: 'object', minProperties: 1 } }),
    { m: {} },
    { field: 'm', message: 'must have at least 1 field' },
  ],
  [
    'maxProperties',
    obj({ m: { type: 'object', maxProperties: 1 } }),
    { m: { a: 1, b: 2 } },
    { field: 'm', message: 'must have at most 1 field' },
  ],
  [
    'discriminator',
    {
      type: 'object',
      discriminator: { propertyName: 'kind' },
      oneOf: [
        obj({ kind: { const: 'a' } }, { required: ['kind'] }),
        obj({ kind: { const: 'b' } }, { required: ['kind'] }),
      ],
    },
    { kind: 'c' },
    { field: 'kind', message: 'is not one of the known types' },
  ],
  [
    'discriminator',
    {
      type: 'object',
      discriminator: { propertyName: 'kind' },
      oneOf: [
        obj({ kind: { const: 'a' } }, { required: ['kind'] }),
        obj({ kind: { const: 'b' } }, { required: ['kind'] }),
      ],
    },
    { kind: 1 },
    { field: 'kind', message: 'is required and must be a string' },
  ],
  [
    'oneOf',
    obj({ v: { oneOf: [{ type: 'integer' }, { type: 'number' }] } }),
    { v: 1 },
    { field: 'v', message: 'must match exactly one of the shapes this field allows' },
  ],
  [
    'anyOf',
    obj({ v: { anyOf: [{ type: 'integer' }, { type: 'boolean' }] } }),
    { v: 'x' },
    { field: 'v', message: 'must match one of the shapes this field allows' },
  ],
  ['not', obj({ v: { not: { const: 0 } } }), { v: 0 }, { field: 'v', message: 'is not allowed here' }],
  ['false schema', obj({ v: false }), { v: 1 }, { field: 'v', message: 'is not allowed here' }],
  [
    'if',
    obj({}, { if: obj({ a: { const: 1 } }, { required: ['a'] }), then: { required: ['b'] } }),
    { a: 1 },
    { field: 'body', message: 'does not meet the rule that applies with the values of its other fields' },
  ],
];

// Ajv's own phrasing, none of which may reach a detail.
const ajvWording =
  /must NOT|must have required property|must match (format|pattern|a schema|exactly one schema|")|must be equal to|must pass|boolean schema|property name must|must be (string|integer|number|object|array|boolean|null)\b|must be (>=|<=|>|<) |should be|must be multiple of|tag "|value of tag/;

describe.each(cases)('%s', (keyword, schema, data, expected, ajv) => {
  test(`words ${JSON.stringify(data)} as: ${expected.message}`, () => {
    const errors = errorsOf(schema, data, ajv);
    // The case really exercises its keyword: Ajv reported it.
    expect(errors.map((e) => e.keyword)).toContain(keyword);
    const details = validationDetails(errors);
    expect(details).toContainEqual(expected);
    for (const d of details) expect(d.message).not.toMatch(ajvWording);
  });
});

test("openapi-backend's JSON parse error does not echo the parser's message (nor the body it quotes)", () => {
  const parse = {
    keyword: 'parse',
    instancePath: '/query/filter',
    schemaPath: '#/parameters/filter',
    params: [],
    message: `Unexpected token 'x', "x{" is not valid JSON`,
  } as unknown as ErrorObject;
  expect(validationDetails([parse])).toEqual([{ field: 'query.filter', message: 'is not valid JSON' }]);
});

test('a keyword nobody wrote a sentence for says "is not valid", never the message Ajv or a plugin gave it', () => {
  const custom = {
    keyword: 'x-unheard-of',
    instancePath: '/requestBody/a',
    schemaPath: '#',
    params: {},
    message: 'must pass "x-unheard-of" keyword validation',
  } as ErrorObject;
  expect(validationDetails([custom])).toEqual([{ field: 'a', message: 'is not valid' }]);
});

test('a document that is not a request gets the same sentences, each led by its JSON pointer', () => {
  const validate = ajv2020.compile({
    type: 'object',
    properties: {
      products: { type: 'array', items: obj({ title: { type: 'string' } }, { required: ['title'] }) },
      'a/b': { type: 'integer' },
    },
  });
  expect(validate({ products: [{}], 'a/b': 'x' })).toBe(false);
  expect(schemaProblems(validate.errors ?? [])).toEqual(['/products/0/title is required', '/a~1b must be an integer']);
  const root = ajv2020.compile({ type: 'object' });
  root([]);
  expect(schemaProblems(root.errors ?? [])).toEqual(['/ must be an object']);
});
