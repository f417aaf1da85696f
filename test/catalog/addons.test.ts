// GET /products/addons (a cursor list) and add-ons in POST /orders: priced from the catalog per unit, added to the
// line, shown on the item; another product's or shop's add-on refused with nothing written. Also the fixture rules
// of the catalog extras, and one order with every extra at once, to the cent in the raw body.
import { sql } from 'kysely';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
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

const list = (query = '', key = keyA) => t.http.get(`/dev/v1/products/addons${query}`).set(bearer(key));
const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);

const count = async (table: string) =>
  Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);

async function world() {
  return {
    orders: await count('orders'),
    items: await count('order_items'),
    customers: await count('customers'),
    events: await count('events'),
    addons: await count('addons'),
    fields: await count('product_variant_fields'),
    deals: await count('quantity_deals'),
    products: await count('products'),
    stock: (await t.db.selectFrom('products').select('stock').orderBy('id').execute()).map((r) => r.stock),
  };
}

describe('GET /products/addons', () => {
  test("a shop's add-ons, newest first, with their products; a cursor walk sees each once; another shop's are not listed", async () => {
    const emptyB = await list('', keyB);
    expect(emptyB.status).toBe(200);
    expect(emptyB.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });

    const seeded = await t.seed(shopA, {
      products: [
        { title: 'Mug', price: '8.00' },
        { title: 'Cap', price: '12.00' },
      ],
      addons: [
        { title: 'Gift wrap', price: '2.50', products: ['Mug', 'Cap'] },
        { title: 'Warranty', description: 'One year.', price: '1.99', required: true, products: ['Cap'] },
        { title: 'Sticker', price: '0', enabled: false },
      ],
    });
    const [mug, cap] = seeded.products as [string, string];
    const [wrap, warranty, sticker] = seeded.addons as [string, string, string];
    expect(wrap).toMatch(/^add_/);

    const page = await list();
    expect(page.status).toBe(200);
    expect(page.body.pagination).toEqual({ next_cursor: null, has_more: false });
    // Seeded in one transaction (one created_at): newest first falls back to the id, newest id first.
    expect(page.body.data.map((a: { id: string }) => a.id)).toEqual([sticker, warranty, wrap]);
    expect(page.body.data[2]).toMatchObject({
      id: wrap,
      title: 'Gift wrap',
      description: null,
      price: 2.5,
      currency: 'USD',
      product_ids: [mug, cap].sort(),
      required: false,
      enabled: true,
    });
    expect(page.text).toContain('"price":1.99,');
    expect(page.body.data[1]).toMatchObject({ description: 'One year.', required: true, product_ids: [cap] });
    expect(page.body.data[0]).toMatchObject({ enabled: false, product_ids: [], price: 0 });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((a: { id: string }) => a.id));
      cursor = res.body.pagination.next_cursor;
      expect(res.body.pagination.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([sticker, warranty, wrap]);

    expect((await list('', keyB)).body.data).toEqual([]);
    const tampered = await list('?cursor=nope');
    expect(tampered.status).toBe(422);
    expect(tampered.body.error.details[0].field).toBe('query.cursor');
    expect((await list('?limit=0')).status).toBe(422);
  });
});

describe('POST /orders with add-ons', () => {
  /** A product with an optional add-on, a required one, a disabled one, and an add-on of another product. */
  async function catalog() {
    const title = `Lamp ${newId('prod')}`;
    const seeded = await t.seed(shopA, {
      products: [
        { title, price: '30.00', stock: 20 },
        { title: `${title} other`, price: '5.00' },
      ],
      addons: [
        { title: 'Bulb', price: '2.25', products: [title] },
        { title: 'Warranty', price: '1.10', required: true, products: [title] },
        { title: 'Off', price: '9.00', enabled: false, products: [title] },
        { title: 'Other', price: '4.00', products: [`${title} other`] },
      ],
    });
    const [lamp, other] = seeded.products as [string, string];
    const [bulb, warranty, off, foreign] = seeded.addons as [string, string, string, string];
    return { lamp, other, bulb, warranty, off, foreign };
  }

  test('taken add-ons are charged per unit from the catalog, required ones always; shown on the item, to the cent', async () => {
    const c = await catalog();
    const res = await createOrder({
      email: 'addons@example.com',
      items: [{ product_id: c.lamp, quantity: 3, addons: [c.bulb] }],
    });
    expect(res.status).toBe(201);
    // 30.00 x 3 = 90.00; Bulb 2.25 x 3 = 6.75; Warranty (required) 1.10 x 3 = 3.30; line 100.05
    expect(res.text).toContain('"unit_price":30,"total":100.05,');
    expect(res.text).toContain(
      `"addons":[{"id":"${c.bulb}","title":"Bulb","unit_price":2.25,"total":6.75},` +
        `{"id":"${c.warranty}","title":"Warranty","unit_price":1.1,"total":3.3}]`,
    );
    expect(res.text).toContain('"subtotal":100.05,');
    const row = await t.db
      .selectFrom('order_items')
      .select(['addons', 'total'])
      .where('id', '=', res.body.data.items[0].id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      total: '100.05000000',
      addons: [
        { id: c.bulb, title: 'Bulb', unit_price: '2.25000000', total: '6.75' },
        { id: c.warranty, title: 'Warranty', unit_price: '1.10000000', total: '3.3' },
      ],
    });
    // Sending the required one too changes nothing; the order they are sent in does not matter.
    const both = await createOrder({
      email: 'addons@example.com',
      items: [{ product_id: c.lamp, quantity: 1, addons: [c.warranty, c.bulb] }],
    });
    expect(both.status).toBe(201);
    expect(both.body.data.items[0].addons.map((a: { id: string }) => a.id)).toEqual([c.bulb, c.warranty]);
    expect(both.text).toContain('"unit_price":30,"total":33.35,');
    // Without any: the required one alone.
    const none = await createOrder({ email: 'addons@example.com', items: [{ product_id: c.lamp, quantity: 2 }] });
    expect(none.text).toContain('"unit_price":30,"total":62.2,');
  });

  test("another product's, another shop's, a disabled, an unknown or a repeated add-on: 422, nothing written", async () => {
    const c = await catalog();
    const b = (
      await t.seed(shopB, {
        products: [{ title: 'B lamp', price: '30.00' }],
        addons: [{ title: 'B bulb', price: '2.25', products: ['B lamp'] }],
      })
    ).addons[0]!;
    const before = await world();
    for (const id of [c.foreign, b, c.off, 'add_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f']) {
      const res = await createOrder({
        email: 'refused@example.com',
        items: [
          { product_id: c.other, quantity: 1 },
          { product_id: c.lamp, quantity: 1, addons: [c.bulb, id] },
        ],
      });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([
        { field: 'items[1].addons[1]', message: 'is not an add-on offered with this product' },
      ]);
    }
    const repeated = await createOrder({
      email: 'refused@example.com',
      items: [{ product_id: c.lamp, quantity: 1, addons: [c.bulb, c.bulb] }],
    });
    expect(repeated.status).toBe(422);
    expect(await world()).toEqual(before);
    // B cannot take A's add-on with its own product either.
    const cross = await createOrder(
      {
        email: 'b@example.com',
        items: [
          {
            product_id: (await t.seed(shopB, { products: [{ title: 'X', price: '1' }] })).products[0]!,
            quantity: 1,
            addons: [c.bulb],
          },
        ],
      },
      keyB,
    );
    expect(cross.status).toBe(422);
  });
});

describe('one order with every extra', () => {
  test('options, a quantity tier, add-ons, a coupon and tax, to the cent in the raw body', async () => {
    const seeded = await t.seed(shopA, {
      products: [{ title: 'Everything', price: '24.99' }],
      variant_fields: [
        { product: 'Everything', name: 'Size', options: [{ value: 'M' }, { value: 'XL', price_adjustment: '3.01' }] },
      ],
      quantity_deals: [
        {
          title: 'Four or more',
          products: ['Everything'],
          tiers: [{ min_quantity: 4, discount_type: 'PERCENTAGE', discount_value: '12.5' }],
        },
      ],
      addons: [{ title: 'Case', price: '4.49', products: ['Everything'] }],
    });
    const code = `all${Date.now()}`;
    await t.db
      .insertInto('coupons')
      .values({ id: newId('cpn'), shop_id: shopA, code, type: 'FIXED', value: '10', currency: 'USD' })
      .execute();
    await t.db.updateTable('shops').set({ tax_rate: '8.25' }).where('id', '=', shopA).execute();
    try {
      const res = await createOrder({
        email: 'everything@example.com',
        coupon_code: code,
        items: [{ product_id: seeded.products[0], quantity: 5, options: { Size: 'XL' }, addons: [seeded.addons[0]] }],
      });
      expect(res.status).toBe(201);
      // unit 24.99 + 3.01 = 28.00; x 5 = 140.00; tier 12.5% = 17.50; add-on 4.49 x 5 = 22.45; line 144.95
      // coupon FIXED 10.00; net 134.95; tax 8.25% = 11.133375 -> 11.13; total 146.08
      expect(res.text).toContain('"unit_price":28,"total":144.95,');
      expect(res.text).toContain('"quantity_discount":17.5}');
      expect(res.text).toContain('"price_adjustment":3.01}]');
      expect(res.text).toContain('"unit_price":4.49,"total":22.45}]');
      expect(res.text).toContain('"subtotal":144.95,"discount":10,"discount_display":10,"tax":11.13,');
      expect(res.text).toContain('"total":146.08,"total_display":146.08,');
    } finally {
      await t.db.updateTable('shops').set({ tax_rate: '0' }).where('id', '=', shopA).execute();
    }
  });
});

describe('fixtures of the catalog extras', () => {
  const problems = (f: unknown) => {
    try {
      parseFixtures(f, new Date());
      return '';
    } catch (err) {
      if (err instanceof FixtureError) return err.message;
      throw err;
    }
  };

  test('the cross-item rules, each reported with its path', () => {
    const message = problems({
      products: [
        { title: 'A', price: '1' },
        { title: 'Twice', price: '1' },
        { title: 'Twice', price: '2' },
      ],
      variant_fields: [
        { product: 'Missing', name: 'Size' },
        { product: 'A', name: 'Size', options: [{ value: 'L' }, { value: 'l' }] },
        { product: 'A', name: 'size' },
        { product: 'Twice', name: 'Color' },
        { product: 'A', name: 'Big', options: [{ value: 'X', price_adjustment: '-1000000.01' }] },
      ],
      quantity_deals: [
        {
          title: 'D',
          products: ['Nope'],
          tiers: [
            { min_quantity: 2, discount_type: 'PERCENTAGE', discount_value: '101' },
            { min_quantity: 2, discount_type: 'FIXED', discount_value: '0' },
          ],
        },
      ],
      addons: [{ title: 'W', price: '1', products: ['Ghost'] }],
    });
    for (const expected of [
      '/variant_fields/0/product names no product of this file',
      '/variant_fields/1/options/1/value is used twice in its field (ignoring case)',
      '/variant_fields/2/name is used twice on its product (ignoring case)',
      '/variant_fields/3/product names a title several products of this file have',
      '/variant_fields/4/options/0/price_adjustment must be between -1000000 and 1000000',
      '/quantity_deals/0/products/0 names no product of this file',
      '/quantity_deals/0/tiers/0/discount_value of a PERCENTAGE tier is at most 100',
      '/quantity_deals/0/tiers/1/min_quantity is used twice',
      '/quantity_deals/0/tiers/1/discount_value must be greater than 0',
      '/addons/0/products/0 names no product of this file',
    ])
      expect(message).toContain(expected);
    expect(problems({ quantity_deals: [{ title: 'No tiers', tiers: [] }] })).toContain('/quantity_deals/0/tiers');
    expect(problems({ addons: [{ title: 'x', price: '-1' }] })).toContain('/addons/0/price');
  });

  test('rules checked while writing roll the whole file back', async () => {
    const before = await world();
    for (const f of [
      // An add-on in EUR offered with a USD product.
      {
        products: [{ title: 'P', price: '1' }],
        addons: [{ title: 'A', price: '1', currency: 'EUR', products: ['P'] }],
      },
      // A JPY adjustment with decimals.
      {
        products: [{ title: 'Y', price: '100', currency: 'JPY' }],
        variant_fields: [{ product: 'Y', name: 'S', options: [{ value: 'L', price_adjustment: '0.5' }] }],
      },
      // A USD add-on price with 3 decimals.
      { products: [{ title: 'P', price: '1' }], addons: [{ title: 'A', price: '1.005', products: ['P'] }] },
    ]) {
      await expect(t.seed(shopA, parseFixtures(f, new Date()))).rejects.toThrow(FixtureError);
    }
    expect(await world()).toEqual(before);
  });
});
