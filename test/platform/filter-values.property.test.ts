// No `filters` value makes GET /customers fail: whatever the text — arbitrary, unicode, NUL bytes, invalid UTF-8,
// near-valid dates, huge integers, decimals with many digits — the answer is 200 (matching the contract, which the
// test client checks on every response) or 422 VALIDATION_ERROR whose details name the query parameter at fault.
// A 422 that comes from the database refusing a value (`request`) would mean a bad value got past parseValue.
import fc from 'fast-check';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const runs = Number(process.env.PROPERTY_RUNS ?? 150);

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '1000000' } });
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['customers.read'])).key;
  // Rows for the filters to find, so 200 responses carry customers for the contract check.
  await t.seed(shop, {
    customers: [
      { email: 'ada@example.com', country: 'US', total_spent: '99.99' },
      { email: 'bob@example.com', country: 'DE', total_spent: '0', blacklisted: true },
      { email: 'cy@example.com', total_spent: '999999999999.99999999' },
      { email: 'dee@example.com', affiliate: { code: 'DEE' } },
    ],
  });
});
afterAll(() => t.close());

/** Percent-encodes bytes, so invalid UTF-8 and NUL reach the server as sent. */
const percent = (bytes: Uint8Array) => Array.from(bytes, (b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const text = (s: string) => percent(Buffer.from(s, 'utf8'));

async function expectNoServerError(query: string): Promise<number> {
  const res = await t.http.get(`/dev/v1/customers?${query}`).set(bearer(key));
  if (res.status !== 200 && res.status !== 422) throw new Error(`${res.status} for ?${query}: ${res.text}`);
  if (res.status === 422) {
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect(fields.length).toBeGreaterThan(0);
    for (const f of fields) expect(f).toMatch(/^query\.(filters|sorts|cursor|limit)$/);
  }
  return res.status;
}

test('the issue example: an impossible date is a 422 on query.filters, not a 500', async () => {
  for (const value of [
    '2026-02-30T00:00:00Z',
    '2026-02-30',
    '2025-02-29',
    '2026-04-31T10:00:00Z',
    '2026-01-01T24:00:00Z',
  ]) {
    const res = await t.http.get(`/dev/v1/customers?filters=created_after:${value}`).set(bearer(key));
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([
      { field: 'query.filters', message: expect.stringMatching(/created_after/) },
    ]);
  }
  for (const value of ['2024-02-29', '2026-01-10T00:00:00.000001Z', '2026-01-10T01:00:00.000001%2B01:00']) {
    const res = await t.http.get(`/dev/v1/customers?filters=created_after:${value}&sorts=email`).set(bearer(key));
    expect(res.status).toBe(200);
  }
});

// ---- generators -----------------------------------------------------------------------------------------------

const fields = [
  'email',
  'country',
  'is_affiliate',
  'blacklisted',
  'created_after',
  'created_before',
  'min_total_spent',
];
const d2 = (n: number) => String(n).padStart(2, '0');
const nearDate = fc
  .record({
    year: fc.constantFrom(0, 70, 1969, 1970, 2024, 2025, 2026, 2099, 2100, 2101, 9999),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hour: fc.integer({ min: 0, max: 25 }),
    minute: fc.integer({ min: 0, max: 61 }),
    second: fc.integer({ min: 0, max: 61 }),
    fraction: fc.stringMatching(/^(\.\d{1,8})?$/),
    zone: fc.constantFrom('Z', '', '+00:00', '+14:00', '-14:00', '+14:01', '-1500', '+0060', '+05:30', '%2B01:00'),
    dateOnly: fc.boolean(),
  })
  .map((p) => {
    const date = `${String(p.year).padStart(4, '0')}-${d2(p.month)}-${d2(p.day)}`;
    return p.dateOnly ? date : `${date}T${d2(p.hour)}:${d2(p.minute)}:${d2(p.second)}${p.fraction}${p.zone}`;
  });
const digitString = (max: number) => fc.stringMatching(new RegExp(`^-?[0-9]{1,${max}}(\\.[0-9]{0,${max}})?$`));
const nastyBytes = fc.uint8Array({ minLength: 1, maxLength: 12 }).map(percent);
const nastyChars = fc
  .array(
    fc.constantFrom('%00', '%ED%A0%80', '%FF', '%C0%80', '%E2%80%8B', text('💳'), text('é'), '%0A', '%2C', '%3A'),
    {
      minLength: 1,
      maxLength: 3,
    },
  )
  .map((a) => a.join(''));
/** A value in URL form: near-valid for some type, or arbitrary text, with troublesome bytes mixed in. */
const valueArb = fc.oneof(
  nearDate,
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  digitString(30),
  fc.constantFrom('true', 'false', 'TRUE', '1', 'US', 'us', 'ÜS', 'ada@example.com', 'ADA@EXAMPLE.COM', '1e3'),
  fc.string({ unit: 'binary', minLength: 1 }).map(text),
  fc.string({ minLength: 1 }).map(text),
  nastyBytes,
  fc.tuple(fc.oneof(nearDate, fc.constant('a@b.co'), digitString(20)), nastyChars).map(([a, b]) => a + b),
);
/** Mostly valid pairs, so that many requests reach the database, among hostile ones. */
const validPairArb: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constantFrom('created_after', 'created_before'), fc.oneof(nearDate, fc.constantFrom('2026-01-10', '0'))),
  fc.tuple(fc.constant('min_total_spent'), fc.oneof(digitString(20), fc.constantFrom('99999999999999999999.99999999'))),
  fc.tuple(fc.constant('email'), fc.constantFrom('ada@example.com', 'ADA@EXAMPLE.COM', 'x@y.z', 'é@ü.com')),
  fc.tuple(fc.constant('country'), fc.constantFrom('US', 'DE', 'ZZ')),
  fc.tuple(fc.constantFrom('is_affiliate', 'blacklisted'), fc.constantFrom('true', 'false')),
);
const pairArb = fc.oneof(
  { weight: 3, arbitrary: validPairArb },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...fields), valueArb) },
  fc.tuple(fc.string(), valueArb),
);

// ---- properties -----------------------------------------------------------------------------------------------

test(`any filters text: 200 or 422, never a 5xx (${runs} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.string().map(text), fc.string({ unit: 'binary' }).map(text), nastyBytes, nastyChars),
      async (filters) => {
        await expectNoServerError(`filters=${filters}`);
      },
    ),
    { numRuns: runs },
  );
});

test(`field:value pairs with near-valid and hostile values: 200 or 422, never a 5xx (${runs} runs)`, async () => {
  let ok = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(pairArb, { minLength: 1, maxLength: 3 }),
      fc.constantFrom(undefined, 'email', '-created_at', 'total_spent'),
      async (pairs, sorts) => {
        const filters = pairs.map(([f, v]) => `${text(f)}:${v}`).join(',');
        const status = await expectNoServerError(`filters=${filters}${sorts ? `&sorts=${sorts}` : ''}`);
        if (status === 200) ok++;
      },
    ),
    { numRuns: runs },
  );
  // Some runs must get past validation to the database, or this proves nothing about it.
  expect(ok).toBeGreaterThan(runs / 20);
});

test(`one valid-looking filter per type with a value made for it: 200 or 422, never a 5xx (${runs} runs)`, async () => {
  const perField: [string, fc.Arbitrary<string>][] = [
    ['created_after', nearDate],
    ['created_before', fc.oneof(nearDate, fc.stringMatching(/^[0-9]{1,14}$/))],
    ['min_total_spent', fc.oneof(digitString(25), fc.constantFrom('99999999999999999999.99999999', '-0', '-0.0'))],
    ['email', fc.tuple(fc.string({ unit: 'binary', minLength: 1 }), nastyChars).map(([a, b]) => `${text(a)}${b}@x.co`)],
    ['country', fc.string({ unit: 'binary', minLength: 2, maxLength: 2 }).map(text)],
    ['is_affiliate', fc.constantFrom('true', 'false', 'tru%00', 'true%00')],
  ];
  let ok = 0;
  for (const [name, values] of perField) {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        if ((await expectNoServerError(`filters=${name}:${value}`)) === 200) ok++;
      }),
      { numRuns: Math.ceil(runs / 3) },
    );
  }
  expect(ok).toBeGreaterThan(runs / 10);
});
