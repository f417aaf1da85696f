// Coupons: GET /coupons (cursor list) and GET /coupons/code/{code} (shop-wide, one product, a cart), every rule and
// error code of the check, the same rules refusing POST /orders (COUPON_NOT_APPLICABLE), and checks and refusals that
// write nothing (orders, coupon uses, events, customers).
import { sql } from 'kysely';
import { newId } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2026-11-23T12:00:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let p: { plain: string; other: string; variants: string; euro: string; b: string };
let variant: string;
let deluxe: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { currency: 'USD' }, b: { currency: 'USD' } }));
  const a = await t.seed(shopA, {
    products: [
      { title: 'Plain', price: '10.00' },
      { title: 'Other', price: '3.33' },
      {
        title: 'Variants',
        price: '1.00',
        variants: [
          { title: 'Std', price: '20.00' },
          { title: 'Deluxe', price: '40.00' },
        ],
      },
      { title: 'Euro', price: '7.00', currency: 'EUR' },
    ],
  });
  const b = await t.seed(shopB, { products: [{ title: 'Plain', price: '10.00' }] });
  p = {
    plain: a.products[0]!,
    other: a.products[1]!,
    variants: a.products[2]!,
    euro: a.products[3]!,
    b: b.products[0]!,
  };
  [variant, deluxe] = [a.variants[0]!, a.variants[1]!];
});
afterAll(() => t.close());

async function coupon(shopId: string, row: Record<string, unknown>, productIds: string[] = []) {
  const id = newId('cpn');
  await t.db
    .insertInto('coupons')
    .values({ id, shop_id: shopId, type: 'PERCENTAGE', value: '10', ...row } as never)
    .execute();
  for (const productId of productIds)
    await t.db
      .insertInto('coupon_products')
      .values({ shop_id: shopId, coupon_id: id, product_id: productId })
      .execute();
  return id;
}

const check = (code: string, query: Record<string, string> = {}, key = keyA) =>
  t.http
    .get(`/dev/v1/coupons/code/${encodeURIComponent(code)}`)
    .query(query)
    .set(bearer(key));
const cart = (items: unknown) => ({ cart: JSON.stringify(items) });
const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);

/** Everything a check, or a refused order, must leave alone. */
async function world() {
  const count = async (table: string) =>
    Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);
  return {
    orders: await count('orders'),
    items: await count('order_items'),
    customers: await count('customers'),
    events: await count('events'),
    audit: await count('audit_entries'),
    coupons: (await t.db.selectFrom('coupons').select(['id', 'uses', 'updated_at']).orderBy('id').execute()).map(
      (r) => `${r.id}:${r.uses}:${r.updated_at.toISOString()}`,
    ),
  };
}

describe('GET /coupons', () => {
  test('newest first, every field, codes in lower case; only the shop own coupons; a cursor walk', async () => {
    const s = await t.createShop({ name: 'List', currency: 'USD' });
    const key = (await t.createKey(s, ['coupons.read'])).key;
    const seeded = await t.seed(s, {
      products: [{ title: 'X', price: '1' }],
      coupons: [
        { code: 'First', type: 'PERCENTAGE', value: '12.5', max_uses: 3, uses: 1, products: ['X'] },
        {
          code: 'SECOND',
          type: 'FIXED',
          value: '5',
          currency: 'EUR',
          expires_at: '2027-01-01T00:00:00Z',
          enabled: false,
        },
        { code: 'third', type: 'PERCENTAGE', value: '33.333' },
      ],
    });
    // Another shop's coupon is never listed.
    await coupon(shopB, { code: 'notmine' });
    // Three distinct creation times (oldest first: first, second, third).
    for (const [i, id] of seeded.coupons.entries())
      await sql`update coupons set created_at = ${new Date(Date.UTC(2026, 0, 1 + i)).toISOString()}::timestamptz where id = ${id}`.execute(
        t.db,
      );
    const all = await t.http.get('/dev/v1/coupons').set(bearer(key));
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(all.body.data.map((c: { code: string }) => c.code)).toEqual(['third', 'second', 'first']);
    expect(all.body.data[2]).toEqual({
      id: seeded.coupons[0],
      code: 'first',
      type: 'PERCENTAGE',
      value: '12.50',
      currency: null,
      product_ids: [seeded.products[0]],
      max_uses: 3,
      uses: 1,
      expires_at: null,
      enabled: true,
      created_at: Date.UTC(2026, 0, 1) / 1000,
      updated_at: expect.any(Number),
    });
    expect(all.body.data[1]).toMatchObject({
      code: 'second',
      type: 'FIXED',
      value: '5.00',
      currency: 'EUR',
      product_ids: [],
      max_uses: null,
      expires_at: Date.UTC(2027, 0, 1) / 1000,
      enabled: false,
    });
    expect(all.body.data[0]).toMatchObject({ value: '33.333' });

    const walked: string[] = [];
    let cursor: string | null | undefined;
    do {
      const res = await t.http
        .get('/dev/v1/coupons')
        .query({ limit: 1, ...(cursor ? { cursor } : {}) })
        .set(bearer(key));
      expect(res.status).toBe(200);
      walked.push(...res.body.data.map((c: { code: string }) => c.code));
      cursor = res.body.pagination.next_cursor;
      expect(res.body.pagination.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(walked).toEqual(['third', 'second', 'first']);

    // A cursor of another list, a tampered cursor, a bad limit: 422.
    const first = await t.http.get('/dev/v1/coupons?limit=1').set(bearer(key));
    const customers = await t.http
      .get('/dev/v1/blacklist')
      .query({ cursor: first.body.pagination.next_cursor })
      .set(bearer((await t.createKey(s, ['*'])).key));
    expect([customers.status, customers.body.error.details[0].field]).toEqual([422, 'query.cursor']);
    expect((await t.http.get('/dev/v1/coupons?limit=0').set(bearer(key))).status).toBe(422);
  });

  test('needs coupons.read: another scope is 403, no key 401', async () => {
    const key = (await t.createKey(shopA, ['orders.read'])).key;
    expect((await t.http.get('/dev/v1/coupons').set(bearer(key))).status).toBe(403);
    expect((await check('anything', {}, key)).status).toBe(403);
    expect((await t.http.get('/dev/v1/coupons')).status).toBe(401);
  });
});

describe('GET /coupons/code/{code}', () => {
  test('shop-wide: found in any case, returned in lower case, no discount', async () => {
    await coupon(shopA, { code: 'spring10', value: '10' });
    for (const code of ['SPRING10', 'spring10', 'Spring10']) {
      const res = await check(code);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: {
          coupon: { code: 'spring10', type: 'PERCENTAGE', value: '10.00', currency: null, product_ids: [] },
          discount: null,
        },
      });
    }
  });

  test('unknown, disabled and another shop own codes are 404 COUPON_NOT_FOUND', async () => {
    await coupon(shopA, { code: 'off', enabled: false });
    await coupon(shopB, { code: 'bonly' });
    for (const code of ['nope', 'off', 'OFF', 'bonly']) {
      const res = await check(code);
      expect([res.status, res.body.error.code]).toEqual([404, 'COUPON_NOT_FOUND']);
      const withProduct = await check(code, { product_id: p.plain });
      expect([withProduct.status, withProduct.body.error.code]).toEqual([404, 'COUPON_NOT_FOUND']);
    }
    // Shop B finds its own.
    expect((await check('bonly', {}, keyB)).status).toBe(200);
  });

  test('expired at expires_at (400 COUPON_EXPIRED), fine just before', async () => {
    const at = new Date(clock.now().getTime() + 60_000);
    await coupon(shopA, { code: 'soon', expires_at: at });
    expect((await check('soon')).status).toBe(200);
    clock.set(at);
    try {
      const res = await check('soon', { product_id: p.plain });
      expect([res.status, res.body.error.code]).toEqual([400, 'COUPON_EXPIRED']);
      expect((await check('soon', cart([{ product_id: p.plain, quantity: 1 }]))).body.error.code).toBe(
        'COUPON_EXPIRED',
      );
    } finally {
      clock.set(new Date('2026-11-23T12:00:00Z'));
    }
  });

  test('used up (400 COUPON_MAX_USES_REACHED), a pending order holding the last use', async () => {
    const id = await coupon(shopA, { code: 'twice', max_uses: 2, uses: 1 });
    expect((await check('twice', { product_id: p.plain })).status).toBe(200);
    const order = await createOrder({
      email: 'use@example.com',
      coupon_code: 'TWICE',
      items: [{ product_id: p.plain, quantity: 1 }],
    });
    expect(order.status).toBe(201);
    expect((await t.db.selectFrom('coupons').select('uses').where('id', '=', id).executeTakeFirst())?.uses).toBe(2);
    const res = await check('twice');
    expect([res.status, res.body.error.code]).toEqual([400, 'COUPON_MAX_USES_REACHED']);
    expect((await check('twice', { product_id: p.plain })).body.error.code).toBe('COUPON_MAX_USES_REACHED');
  });

  test('one product: the discount on one unit at its price; a product it is not limited to is COUPON_NOT_APPLICABLE', async () => {
    await coupon(shopA, { code: 'plainonly', value: '15' }, [p.plain]);
    const ok = await check('plainonly', { product_id: p.plain });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({
      coupon: { code: 'plainonly', type: 'PERCENTAGE', value: '15.00', currency: null, product_ids: [p.plain] },
      discount: { amount: 1.5, currency: 'USD' },
    });
    const no = await check('plainonly', { product_id: p.other });
    expect([no.status, no.body.error.code]).toEqual([400, 'COUPON_NOT_APPLICABLE']);
    // POST /orders says the same, and writes nothing.
    const before = await world();
    const order = await createOrder({
      email: 'na@example.com',
      coupon_code: 'plainonly',
      items: [{ product_id: p.other, quantity: 2 }],
    });
    expect([order.status, order.body.error.code]).toEqual([400, 'COUPON_NOT_APPLICABLE']);
    expect(await world()).toEqual({ ...before, audit: before.audit + 1 });
  });

  test('unknown product or variant: 404 PRODUCT_NOT_FOUND / VARIANT_NOT_FOUND (another shop product too)', async () => {
    await coupon(shopA, { code: 'any10' });
    for (const id of ['prod_missing', p.b]) {
      const res = await check('any10', { product_id: id });
      expect([res.status, res.body.error.code]).toEqual([404, 'PRODUCT_NOT_FOUND']);
      expect((await check('any10', cart([{ product_id: id, quantity: 1 }]))).body.error.code).toBe('PRODUCT_NOT_FOUND');
    }
    const v = await check('any10', cart([{ product_id: p.variants, variant_id: 'var_missing', quantity: 1 }]));
    expect([v.status, v.body.error.code]).toEqual([404, 'VARIANT_NOT_FOUND']);
    const novariants = await check('any10', cart([{ product_id: p.plain, variant_id: variant, quantity: 1 }]));
    expect(novariants.body.error.code).toBe('VARIANT_NOT_FOUND');
  });

  test('a cart: the discount POST /orders gives the same items, percentage and fixed (capped), limited to products', async () => {
    await coupon(shopA, { code: 'cart20', value: '20' }, [p.plain, p.variants]);
    await coupon(shopA, { code: 'five', type: 'FIXED', value: '5', currency: 'USD' }, [p.other]);
    await coupon(shopA, { code: 'euro5', type: 'FIXED', value: '5', currency: 'EUR' });
    const items = [
      { product_id: p.plain, quantity: 3 },
      { product_id: p.other, quantity: 1 },
      { product_id: p.variants, variant_id: deluxe, quantity: 1 },
    ];
    const res = await check('CART20', cart(items));
    expect(res.status).toBe(200);
    // 20% of (30.00 + 40.00): the Other line is not eligible.
    expect(res.body.data.discount).toEqual({ amount: 14, currency: 'USD' });
    const order = await createOrder({ email: 'cart@example.com', coupon_code: 'cart20', items });
    expect(order.status).toBe(201);
    expect(order.body.data.discount).toBe(14);

    // FIXED: never more than the eligible lines (one Other, 3.33).
    const fixed = await check('five', cart(items));
    expect(fixed.body.data.discount).toEqual({ amount: 3.33, currency: 'USD' });
    expect((await createOrder({ email: 'cart@example.com', coupon_code: 'five', items })).body.data.discount).toBe(
      3.33,
    );

    // A FIXED coupon in another currency than the items does not apply; in the items' currency it does.
    const usd = await check('euro5', cart(items));
    expect([usd.status, usd.body.error.code]).toEqual([400, 'COUPON_NOT_APPLICABLE']);
    expect((await check('euro5', { product_id: p.euro })).body.data.discount).toEqual({ amount: 5, currency: 'EUR' });
    const before = await world();
    const refused = await createOrder({ email: 'cart@example.com', coupon_code: 'euro5', items });
    expect([refused.status, refused.body.error.code]).toEqual([400, 'COUPON_NOT_APPLICABLE']);
    expect(await world()).toEqual({ ...before, audit: before.audit + 1 });

    // Quantity defaults to 1.
    const one = await check('cart20', cart([{ product_id: p.plain }]));
    expect(one.body.data.discount).toEqual({ amount: 2, currency: 'USD' });
  });

  test('a cart is priced as an order is: quantity deals, add-ons and options, then the coupon', async () => {
    const seeded = await t.seed(shopA, {
      products: [{ title: 'Bulk', price: '10.00' }],
      quantity_deals: [
        {
          title: 'Five',
          products: ['Bulk'],
          tiers: [{ min_quantity: 5, discount_type: 'PERCENTAGE', discount_value: '10' }],
        },
      ],
      addons: [{ title: 'Wrap', price: '2.50', products: ['Bulk'] }],
      variant_fields: [
        { product: 'Bulk', name: 'Size', options: [{ value: 'M' }, { value: 'XL', price_adjustment: '1.00' }] },
      ],
    });
    const bulk = seeded.products[0]!;
    const wrap = seeded.addons[0]!;
    await coupon(shopA, { code: 'bulk20', value: '20' }, [bulk]);
    const items = [{ product_id: bulk, quantity: 5, options: { Size: 'XL' }, addons: [wrap] }];
    // (11.00 x 5 = 55.00) - 10% (5.50) + 2.50 x 5 = 62.00; 20% of that is 12.40.
    const res = await check('bulk20', cart(items));
    expect([res.status, res.body.data?.discount]).toEqual([200, { amount: 12.4, currency: 'USD' }]);
    const order = await createOrder({ email: 'bulk@example.com', coupon_code: 'bulk20', items });
    expect([order.status, order.body.data.discount]).toEqual([201, 12.4]);
    // The option is required on an order, so on a cart too: a 422 on query.cart naming the item's field.
    const missing = await check('bulk20', cart([{ product_id: bulk, quantity: 1 }]));
    expect(missing.status).toBe(422);
    expect(missing.body.error.details).toEqual([
      { field: 'query.cart', message: expect.stringMatching(/^items\[0\]\.options\.Size is required/) },
    ]);
  });

  test.each([
    ['not JSON', 'nope'],
    ['not an array', '{"product_id":"x"}'],
    ['empty', '[]'],
    ['an item not an object', '[1]'],
    ['no product_id', '[{"quantity":1}]'],
    ['a product_id not a string', '[{"product_id":5,"quantity":1}]'],
    ['quantity 0', '[{"product_id":"prod_x","quantity":0}]'],
    ['quantity not whole', '[{"product_id":"prod_x","quantity":1.5}]'],
    ['an unknown field', '[{"product_id":"prod_x","quantity":1,"price":0}]'],
    ['101 items', JSON.stringify(Array.from({ length: 101 }, () => ({ product_id: 'prod_x', quantity: 1 })))],
  ])('a malformed cart (%s) is 422 with a detail on query.cart', async (_label, text) => {
    await coupon(shopA, { code: `bad${Math.random().toString(36).slice(2, 8)}` });
    const res = await check('spring10', { cart: text });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['query.cart']);
  });

  test('a cart missing a needed variant, mixing currencies, or sent with product_id: 422 on query.cart', async () => {
    for (const query of [
      cart([{ product_id: p.variants, quantity: 1 }]),
      cart([
        { product_id: p.plain, quantity: 1 },
        { product_id: p.euro, quantity: 1 },
      ]),
      { ...cart([{ product_id: p.plain, quantity: 1 }]), product_id: p.plain },
    ]) {
      const res = await check('spring10', query);
      expect([res.status, res.body.error.details[0].field]).toEqual([422, 'query.cart']);
    }
  });

  test('a check writes nothing: no order, no coupon use, no event, no customer, no audit entry', async () => {
    await coupon(shopA, { code: 'quiet', max_uses: 1 });
    const before = await world();
    expect((await check('quiet')).status).toBe(200);
    expect((await check('quiet', { product_id: p.plain })).status).toBe(200);
    expect((await check('quiet', cart([{ product_id: p.plain, quantity: 2 }]))).status).toBe(200);
    expect((await check('missing')).status).toBe(404);
    expect(await world()).toEqual(before);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('20 orders race for a coupon with 5 uses left: exactly 5 take one, the rest are refused', async () => {
    const id = await coupon(shopA, { code: 'race5', max_uses: 7, uses: 2 });
    const before = await world();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        createOrder({
          email: `racer${i}@example.com`,
          coupon_code: 'RACE5',
          items: [{ product_id: p.plain, quantity: 1 }],
        }),
      ),
    );
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status !== 201);
    expect(ok).toHaveLength(5);
    expect(refused.map((r) => [r.status, r.body.error.code])).toEqual(
      Array.from({ length: 15 }, () => [400, 'COUPON_MAX_USES_REACHED']),
    );
    const row = await t.db.selectFrom('coupons').select('uses').where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.uses).toBe(7);
    const after = await world();
    expect(after.orders - before.orders).toBe(5);
    // Now used up, for the check too.
    expect((await check('race5')).body.error.code).toBe('COUPON_MAX_USES_REACHED');
  });
});
