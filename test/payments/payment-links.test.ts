// POST /payment-links and POST /payment-links/{id}/toggle: a link sells a product (or a variant of it) or a fixed
// amount, exactly one; references stay inside the shop; toggling flips `enabled`; refusals write nothing.
import { ManualClock } from '../../src/platform/clock';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let product: string;
let variant: string;
let otherProduct: string;
let otherVariant: string;
let productOfB: string;

beforeAll(async () => {
  clock = new ManualClock('2026-11-22T10:00:00Z');
  t = await startTestApp({ clock, env: { CHECKOUT_BASE_URL: 'https://pay.example.com' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', currency: 'GBP', scopes: ['payment_links.write'] },
    b: { name: 'B' },
  }));
  const seeded = await t.seed(shopA, {
    products: [
      {
        title: 'Pro License',
        price: '49.00',
        currency: 'EUR',
        variants: [{ title: 'Personal', price: '49.00' }],
      },
      { title: 'Other', price: '5.00', variants: [{ title: 'Other variant', price: '5.00' }] },
    ],
  });
  [product, otherProduct] = seeded.products as [string, string];
  [variant, otherVariant] = seeded.variants as [string, string];
  productOfB = (await t.seed(shopB, { products: [{ title: 'B product', price: '1.00' }] })).products[0]!;
});
afterAll(() => t.close());

const create = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/payment-links')
    .set(bearer(key))
    .send(body as object);
const toggle = (id: string, key = keyA) => t.http.post(`/dev/v1/payment-links/${id}/toggle`).set(bearer(key));

const counts = () => rowCounts(t.db, ['payment_links', 'orders', 'events']);
const now = Date.parse('2026-11-22T10:00:00Z') / 1000;

test('a product link (with a variant) sells in the product currency', async () => {
  const res = await create({ title: 'Buy Pro', product_id: product, variant_id: variant, quantity: 2, max_uses: 5 });
  expect(res.status).toBe(201);
  expect(res.body.data).toEqual({
    id: expect.stringMatching(/^plk_/),
    uniqid: expect.any(String),
    title: 'Buy Pro',
    url: `https://pay.example.com/link/${res.body.data.uniqid}`,
    product_id: product,
    variant_id: variant,
    amount: null,
    currency: 'EUR',
    quantity: 2,
    enabled: true,
    uses: 0,
    max_uses: 5,
    expires_at: null,
    created_at: now,
    updated_at: now,
  });
  const row = await t.db
    .selectFrom('payment_links')
    .selectAll()
    .where('id', '=', res.body.data.id)
    .executeTakeFirstOrThrow();
  expect(row.shop_id).toBe(shopA);
  // The product's own currency may be repeated.
  expect((await create({ title: 'Same', product_id: product, currency: 'EUR' })).status).toBe(201);
});

test('an amount link sells in the shop currency by default, or the given one, exactly', async () => {
  const res = await create({ title: 'Tip', amount: 12.5, expires_at: now + 3600 });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({
    product_id: null,
    variant_id: null,
    amount: 12.5,
    currency: 'GBP',
    quantity: 1,
    max_uses: null,
    expires_at: now + 3600,
  });
  const yen = await create({ title: 'Yen', amount: 1500, currency: 'JPY' });
  expect(yen.status).toBe(201);
  expect(yen.body.data).toMatchObject({ amount: 1500, currency: 'JPY' });
});

test('exactly one of product_id and amount; variant_id needs product_id; amounts within the minor unit', async () => {
  const before = await counts();
  const cases: [Record<string, unknown>, string[]][] = [
    [{ title: 'Neither' }, ['product_id', 'amount']],
    [{ title: 'Both', product_id: product, amount: 5 }, ['product_id', 'amount']],
    [{ title: 'Variant only', variant_id: variant, amount: 5 }, ['variant_id']],
    [{ title: 'Cents', amount: 1.234 }, ['amount']],
    [{ title: 'Yen', amount: 1.5, currency: 'JPY' }, ['amount']],
    [{ title: 'Currency', product_id: product, currency: 'USD' }, ['currency']],
    [{ title: 'Past', amount: 5, expires_at: now }, ['expires_at']],
  ];
  for (const [body, fields] of cases) {
    const res = await create(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(fields);
  }
  for (const body of [
    { amount: 5 },
    { title: '', amount: 5 },
    { title: 'x', amount: 0 },
    { title: 'x', amount: 5, quantity: 0 },
  ]) {
    expect((await create(body)).status).toBe(422);
  }
  expect(await counts()).toEqual(before);
});

test('PRODUCT_NOT_FOUND for an unknown product or another shop’s; VARIANT_NOT_FOUND for a variant not of it', async () => {
  const before = await counts();
  for (const product_id of ['prod_nope', productOfB]) {
    const res = await create({ title: 'x', product_id });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('PRODUCT_NOT_FOUND');
  }
  for (const variant_id of [otherVariant, 'var_nope']) {
    const res = await create({ title: 'x', product_id: product, variant_id });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('VARIANT_NOT_FOUND');
  }
  // Shop B cannot sell shop A's product either.
  const cross = await create({ title: 'x', product_id: otherProduct }, keyB);
  expect(cross.status).toBe(404);
  expect(cross.body.error.code).toBe('PRODUCT_NOT_FOUND');
  expect(await counts()).toEqual(before);
});

test('toggle flips enabled each time and touches updated_at', async () => {
  const link = (await create({ title: 'Flip', amount: 3 })).body.data;
  clock.advance(60_000);
  const off = await toggle(link.id);
  expect(off.status).toBe(200);
  expect(off.body.data).toEqual({ ...link, enabled: false, updated_at: link.updated_at + 60 });
  const on = await toggle(link.id);
  expect(on.status).toBe(200);
  expect(on.body.data.enabled).toBe(true);
  const row = await t.db
    .selectFrom('payment_links')
    .select('enabled')
    .where('id', '=', link.id)
    .executeTakeFirstOrThrow();
  expect(row.enabled).toBe(true);
});

test('toggle: PAYMENT_LINK_NOT_FOUND for an unknown link or another shop’s, which stays as it was', async () => {
  const link = (await create({ title: 'Mine', amount: 3 })).body.data;
  const before = await counts();
  for (const [id, key] of [
    ['plk_nope', keyA],
    [link.id, keyB],
  ] as const) {
    const res = await toggle(id, key);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('PAYMENT_LINK_NOT_FOUND');
  }
  const row = await t.db
    .selectFrom('payment_links')
    .select(['enabled', 'updated_at'])
    .where('id', '=', link.id)
    .executeTakeFirstOrThrow();
  expect(row.enabled).toBe(true);
  expect(Math.floor(row.updated_at.getTime() / 1000)).toBe(link.updated_at);
  expect(await counts()).toEqual(before);
});

test('needs payment_links.write', async () => {
  const key = (await t.createKey(shopA, ['payments.write', 'payment_links.read'])).key;
  const link = (await create({ title: 'Scoped', amount: 3 })).body.data;
  const before = await counts();
  expect((await create({ title: 'x', amount: 1 }, key)).status).toBe(403);
  expect((await toggle(link.id, key)).status).toBe(403);
  expect(await counts()).toEqual(before);
});

(process.env.DATABASE_URL ? test : test.skip)('concurrent toggles each flip once', async () => {
  const link = (await create({ title: 'Race', amount: 3 })).body.data;
  const results = await Promise.all(Array.from({ length: 10 }, () => toggle(link.id)));
  expect(results.every((r) => r.status === 200)).toBe(true);
  const row = await t.db
    .selectFrom('payment_links')
    .select('enabled')
    .where('id', '=', link.id)
    .executeTakeFirstOrThrow();
  expect(row.enabled).toBe(true); // an even number of flips
  expect(results.filter((r) => r.body.data.enabled === false)).toHaveLength(5);
});
