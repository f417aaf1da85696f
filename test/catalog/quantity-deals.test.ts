// PATCH /products/quantity-deals/{uniqid}: every rule and error code, each refusal checked for what it did not
// change; cross-shop 404; and the effect on POST /orders: the best tier the quantity reaches, a coupon on the line
// totals after it, to the cent in the raw body. Races on real PostgreSQL.
import { sql } from 'kysely';
import { newId } from '../../src/ids';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t));
});
afterAll(() => t.close());

type Tier = { min_quantity: number; discount_type: 'PERCENTAGE' | 'FIXED'; discount_value: string };

/** A product (19.99 unless told) and a deal covering it; returns the product id and the deal's uniqid. */
async function dealOn(
  shopId: string,
  tiers: Tier[],
  product: Record<string, unknown> = {},
  deal: Record<string, unknown> = {},
): Promise<{ product: string; deal: string }> {
  const title = `Keys ${newId('prod')}`;
  const seeded = await t.seed(shopId, {
    products: [{ title, price: '19.99', ...product } as never],
    quantity_deals: [{ title: 'Bulk', products: [title], tiers, ...deal }],
  });
  return { product: seeded.products[0]!, deal: seeded.quantity_deals[0]! };
}

const patch = (uniqid: string, body: unknown, key = keyA) =>
  t.http
    .patch(`/dev/v1/products/quantity-deals/${uniqid}`)
    .set(bearer(key))
    .send(body as object);
const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);

/** The deal as stored: its row, its products and its tiers. */
async function stored(uniqid: string) {
  const deal = await t.db
    .selectFrom('quantity_deals')
    .select(['id', 'title', 'enabled', 'updated_at'])
    .where('uniqid', '=', uniqid)
    .executeTakeFirstOrThrow();
  const products = (
    await t.db
      .selectFrom('quantity_deal_products')
      .select('product_id')
      .where('deal_id', '=', deal.id)
      .orderBy('product_id')
      .execute()
  ).map((r) => r.product_id);
  const tiers = await t.db
    .selectFrom('quantity_deal_tiers')
    .select(['min_quantity', 'discount_type', 'discount_value'])
    .where('deal_id', '=', deal.id)
    .orderBy('min_quantity')
    .execute();
  return { title: deal.title, enabled: deal.enabled, updated_at: deal.updated_at.toISOString(), products, tiers };
}

const count = async (table: string) =>
  Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);

async function world() {
  return {
    deals: (
      await sql<{
        s: string | null;
      }>`select string_agg(id || title || enabled::text || updated_at::text, ',' order by id)
        as s from quantity_deals`.execute(t.db)
    ).rows[0]!.s,
    dealProducts: await count('quantity_deal_products'),
    tiers: (
      await sql<{ s: string | null }>`select string_agg(deal_id || min_quantity || discount_type || discount_value,
        ',' order by deal_id, min_quantity) as s from quantity_deal_tiers`.execute(t.db)
    ).rows[0]!.s,
    orders: await count('orders'),
    items: await count('order_items'),
    events: await count('events'),
  };
}

describe('PATCH /products/quantity-deals/{uniqid}', () => {
  test('fields not sent keep their value; product_ids and tiers replace what the deal had', async () => {
    const { product, deal } = await dealOn(shopA, [
      { min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '5' },
    ]);
    const other = (await t.seed(shopA, { products: [{ title: 'Other', price: '3.00' }] })).products[0]!;
    const start = await stored(deal);

    const renamed = await patch(deal, { title: 'Volume' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ data: {} });
    const afterRename = await stored(deal);
    expect(afterRename).toMatchObject({ title: 'Volume', enabled: true, products: [product], tiers: start.tiers });

    expect((await patch(deal, { enabled: false })).status).toBe(200);
    expect(await stored(deal)).toMatchObject({ title: 'Volume', enabled: false, products: [product] });

    const replaced = await patch(deal, {
      product_ids: [other, product, other],
      tiers: [
        { min_quantity: 10, discount_type: 'FIXED', discount_value: 2.5 },
        { min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: 12.5 },
      ],
    });
    expect(replaced.status).toBe(200);
    expect(await stored(deal)).toMatchObject({
      title: 'Volume',
      enabled: false,
      products: [other, product].sort(),
      tiers: [
        { min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: '12.50000000' },
        { min_quantity: 10, discount_type: 'FIXED', discount_value: '2.50000000' },
      ],
    });
    expect((await patch(deal, { product_ids: [] })).status).toBe(200);
    expect((await stored(deal)).products).toEqual([]);
    // Audited: one entry per accepted update.
    const audit = await t.db
      .selectFrom('audit_entries')
      .select(['status'])
      .where('shop_id', '=', shopA)
      .where('operation_id', '=', 'updateQuantityDeal')
      .execute();
    expect(audit.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  });

  test('unknown, or another shop’s, deal: 404 QUANTITY_DEAL_NOT_FOUND, nothing changed', async () => {
    const { deal } = await dealOn(shopA, [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '5' }]);
    const before = await world();
    const none = await patch('0195f3c1-a2b3-4c9d-8e4f-5a6b7c8d9e0f', { title: 'X' });
    expect([none.status, none.body.error.code]).toEqual([404, 'QUANTITY_DEAL_NOT_FOUND']);
    const cross = await patch(deal, { title: 'Stolen', enabled: false }, keyB);
    expect([cross.status, cross.body.error.code]).toEqual([404, 'QUANTITY_DEAL_NOT_FOUND']);
    expect(await world()).toEqual(before);
  });

  test('invalid bodies: 422 on the field, nothing changed', async () => {
    const { deal } = await dealOn(shopA, [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '5' }]);
    const foreign = (await t.seed(shopB, { products: [{ title: 'B product', price: '1.00' }] })).products[0]!;
    const before = await world();
    const cases: [unknown, string, string?][] = [
      [{}, 'body'],
      [{ product_ids: ['prod_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f'] }, 'product_ids[0]', 'is not a product of this shop'],
      [{ product_ids: [foreign] }, 'product_ids[0]', 'is not a product of this shop'],
      [
        {
          tiers: [
            { min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: 5 },
            { min_quantity: 2, discount_type: 'FIXED', discount_value: 1 },
          ],
        },
        'tiers[1].min_quantity',
        'repeats tiers[0].min_quantity',
      ],
      [
        { tiers: [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: 100.01 }] },
        'tiers[0].discount_value',
        'of a PERCENTAGE tier must be at most 100',
      ],
      [
        { tiers: [{ min_quantity: 2, discount_type: 'FIXED', discount_value: 0.000000001 }] },
        'tiers[0].discount_value',
      ],
      [{ tiers: [{ min_quantity: 1, discount_type: 'FIXED', discount_value: 1 }] }, 'min_quantity'],
      [{ tiers: [{ min_quantity: 2, discount_type: 'FIXED', discount_value: 0 }] }, 'discount_value'],
      [{ tiers: [] }, 'tiers'],
      [{ title: '' }, 'title'],
      [{ enabled: 'yes' }, 'enabled'],
    ];
    for (const [body, field, message] of cases) {
      const res = await patch(deal, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      const details = res.body.error.details as { field: string; message: string }[];
      expect(details.some((d) => d.field.includes(field) && (message === undefined || d.message === message))).toBe(
        true,
      );
    }
    expect(await world()).toEqual(before);
  });
});

describe('POST /orders with quantity deals', () => {
  test('the best tier the quantity reaches, to the cent in the raw body', async () => {
    const { product } = await dealOn(shopA, [
      { min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: '15' },
      { min_quantity: 10, discount_type: 'FIXED', discount_value: '4.00' },
    ]);
    const order = async (quantity: number) => {
      const res = await createOrder({ email: 'bulk@example.com', items: [{ product_id: product, quantity }] });
      expect(res.status).toBe(201);
      return res;
    };
    // 2 units: below every tier: 39.98, no quantity_discount key.
    const two = await order(2);
    expect(two.text).toContain('"unit_price":19.99,"total":39.98,');
    expect(two.body.data.items[0]).not.toHaveProperty('quantity_discount');
    // 3 units: 59.97; 15% = 8.9955 -> 9.00; 50.97
    const three = await order(3);
    expect(three.text).toContain('"unit_price":19.99,"total":50.97,');
    expect(three.text).toContain('"quantity_discount":9}');
    expect(three.text).toContain('"subtotal":50.97,"discount":0,');
    // 12 units: 239.88; 15% = 35.982 -> 35.98; FIXED 4.00 x 12 = 48.00 (best) -> 191.88
    const twelve = await order(12);
    expect(twelve.text).toContain('"unit_price":19.99,"total":191.88,');
    expect(twelve.text).toContain('"quantity_discount":48}');
    const row = await t.db
      .selectFrom('order_items as i')
      .innerJoin('quantity_deals as d', 'd.id', 'i.quantity_deal_id')
      .select(['i.quantity_discount', 'i.total', 'd.title'])
      .where('i.id', '=', twelve.body.data.items[0].id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ quantity_discount: '48.00000000', total: '191.88000000', title: 'Bulk' });
  });

  test('several deals on one product: the largest discount wins; a disabled deal or an uncovered product: none', async () => {
    const title = `Multi ${newId('prod')}`;
    const seeded = await t.seed(shopA, {
      products: [
        { title, price: '10.00' },
        { title: `${title} uncovered`, price: '10.00' },
      ],
      quantity_deals: [
        {
          title: 'Small',
          products: [title],
          tiers: [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '5' }],
        },
        {
          title: 'Big',
          products: [title],
          tiers: [{ min_quantity: 4, discount_type: 'FIXED', discount_value: '1.25' }],
        },
        {
          title: 'Off',
          enabled: false,
          products: [title, `${title} uncovered`],
          tiers: [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '90' }],
        },
      ],
    });
    const [covered, uncovered] = seeded.products as [string, string];
    const res = await createOrder({
      email: 'multi@example.com',
      items: [
        { product_id: covered, quantity: 3 }, // 30.00; 5% = 1.50 -> 28.50
        { product_id: covered, quantity: 4 }, // 40.00; 5% = 2.00, FIXED 1.25 x 4 = 5.00 -> 35.00
        { product_id: uncovered, quantity: 5 }, // 50.00: only the disabled deal covers it
      ],
    });
    expect(res.status).toBe(201);
    const totals = res.body.data.items.map((i: { total: number; quantity_discount?: number }) => [
      i.total,
      i.quantity_discount,
    ]);
    expect(totals).toEqual([
      [28.5, 1.5],
      [35, 5],
      [50, undefined],
    ]);
    expect(res.text).toContain('"subtotal":113.5,');
    // Enabling the deal takes effect on the next order, and the orders already made keep their prices.
    const off = seeded.quantity_deals[2]!;
    expect((await patch(off, { enabled: true })).status).toBe(200);
    const again = await createOrder({ email: 'multi@example.com', items: [{ product_id: uncovered, quantity: 5 }] });
    expect(again.text).toContain('"unit_price":10,"total":5,');
    const first = await t.db
      .selectFrom('order_items')
      .select('total')
      .where('order_id', '=', res.body.data.id)
      .orderBy('position')
      .execute();
    expect(first.map((r) => r.total)).toEqual(['28.50000000', '35.00000000', '50.00000000']);
  });

  test('with a coupon: tier first on the line, the coupon on the discounted line totals, tax last, to the cent', async () => {
    const { product } = await dealOn(shopA, [{ min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: '10' }]);
    const code = `bulk${Date.now()}`;
    await t.db
      .insertInto('coupons')
      .values({ id: newId('cpn'), shop_id: shopA, code, type: 'PERCENTAGE', value: '12.5' })
      .execute();
    await t.db.updateTable('shops').set({ tax_rate: '20' }).where('id', '=', shopA).execute();
    try {
      const res = await createOrder({
        email: 'coupon@example.com',
        coupon_code: code,
        items: [{ product_id: product, quantity: 7 }],
      });
      expect(res.status).toBe(201);
      // 19.99 x 7 = 139.93; tier 10% = 13.993 -> 13.99; line 125.94
      // coupon 12.5% of 125.94 = 15.7425 -> 15.74; net 110.20; tax 20% = 22.04; total 132.24
      expect(res.text).toContain('"unit_price":19.99,"total":125.94,');
      expect(res.text).toContain('"quantity_discount":13.99}');
      expect(res.text).toContain('"subtotal":125.94,"discount":15.74,"discount_display":15.74,"tax":22.04,');
      expect(res.text).toContain('"total":132.24,"total_display":132.24,');
    } finally {
      await t.db.updateTable('shops').set({ tax_rate: '0' }).where('id', '=', shopA).execute();
    }
  });

  test('JPY and BTC lines are rounded to their minor unit', async () => {
    const yen = await dealOn(shopA, [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '7.5' }], {
      price: '999',
      currency: 'JPY',
    });
    // 2997 x 7.5% = 224.775 -> 225; 2772
    const jpy = await createOrder({ email: 'yen@example.com', items: [{ product_id: yen.product, quantity: 3 }] });
    expect(jpy.status).toBe(201);
    expect(jpy.text).toContain('"unit_price":999,"total":2772,');
    expect(jpy.text).toContain('"quantity_discount":225}');
    const btc = await dealOn(shopA, [{ min_quantity: 5, discount_type: 'PERCENTAGE', discount_value: '12.5' }], {
      price: '0.00012345',
      currency: 'BTC',
    });
    // 0.00086415 x 12.5% = 0.00010801875 -> 0.00010802; 0.00075613
    const sat = await createOrder({ email: 'sat@example.com', items: [{ product_id: btc.product, quantity: 7 }] });
    expect(sat.status).toBe(201);
    expect(sat.text).toContain('"unit_price":0.00012345,"total":0.00075613,');
    expect(sat.text).toContain('"quantity_discount":0.00010802}');
  });

  test("another shop's deal never applies", async () => {
    const a = await dealOn(shopA, [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '50' }]);
    const b = (await t.seed(shopB, { products: [{ title: 'Same', price: '19.99' }] })).products[0]!;
    const res = await createOrder({ email: 'b@example.com', items: [{ product_id: b, quantity: 4 }] }, keyB);
    expect(res.status).toBe(201);
    expect(res.text).toContain('"unit_price":19.99,"total":79.96,');
    // And shop B cannot point A's deal at its product.
    const before = await world();
    const cross = await patch(a.deal, { product_ids: [b] }, keyB);
    expect(cross.status).toBe(404);
    const own = await patch(a.deal, { product_ids: [b] });
    expect(own.status).toBe(422);
    expect(await world()).toEqual(before);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly(
    '20 concurrent tier replacements: all succeed, and the deal ends with exactly one request’s tiers',
    async () => {
      const { deal } = await dealOn(shopA, [{ min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '5' }]);
      const bodies = Array.from({ length: 20 }, (_, i) => ({
        tiers: [
          { min_quantity: 2 + i, discount_type: 'PERCENTAGE', discount_value: 1 + i },
          { min_quantity: 50 + i, discount_type: 'FIXED', discount_value: 1 },
        ],
      }));
      const results = await Promise.all(bodies.map((b) => patch(deal, b)));
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
      const tiers = (await stored(deal)).tiers.map((x) => x.min_quantity);
      expect(tiers).toHaveLength(2);
      expect(tiers[1]! - tiers[0]!).toBe(48);
    },
  );
});
