// GET/POST /products/{id}/variants/fields and POST …/fields/{fieldId}/options: every rule and error code, each
// refusal checked for what it did not write; cross-shop 404s; and their effect on POST /orders (the chosen options
// are required, checked, priced and shown on the item, to the cent in the raw body). Races on real PostgreSQL.
import { sql } from 'kysely';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let readOnlyA: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t));
  readOnlyA = (await t.createKey(shopA, ['products.read'])).key;
});
afterAll(() => t.close());

async function product(shopId: string, fixture: Record<string, unknown> = {}) {
  return (await t.seed(shopId, { products: [{ title: 'Shirt', price: '10.00', ...fixture } as never] })).products[0]!;
}

const fieldsUrl = (productId: string) => `/dev/v1/products/${productId}/variants/fields`;
const optionsUrl = (productId: string, fieldId: string) =>
  `/dev/v1/products/${productId}/variants/fields/${fieldId}/options`;
const listFields = (productId: string, key = keyA) => t.http.get(fieldsUrl(productId)).set(bearer(key));
const addField = (productId: string, body: unknown, key = keyA) =>
  t.http
    .post(fieldsUrl(productId))
    .set(bearer(key))
    .send(body as object);
const addOption = (productId: string, fieldId: string, body: unknown, key = keyA) =>
  t.http
    .post(optionsUrl(productId, fieldId))
    .set(bearer(key))
    .send(body as object);
const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);

const count = async (table: string) =>
  Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);

/** What a refused request must leave alone. */
async function world() {
  return {
    fields: await count('product_variant_fields'),
    options: await count('product_variant_field_options'),
    fieldRows: (
      await sql<{ s: string | null }>`select string_agg(id || name || sort_order || updated_at::text, ',' order by id)
        as s from product_variant_fields`.execute(t.db)
    ).rows[0]!.s,
    orders: await count('orders'),
    items: await count('order_items'),
    customers: await count('customers'),
    events: await count('events'),
    stock: (await t.db.selectFrom('products').select('stock').orderBy('id').execute()).map((r) => r.stock),
  };
}

describe('POST /products/{id}/variants/fields', () => {
  test('creates a field with its options, in order, sort orders after the last when not sent', async () => {
    const p = await product(shopA);
    const res = await addField(p, {
      name: 'Size',
      options: [{ value: 'M' }, { value: 'XL', price_adjustment: 2.5 }, { value: 'XS', price_adjustment: -1.25 }],
    });
    expect(res.status).toBe(201);
    const f = res.body.data;
    expect(f).toMatchObject({ product_id: p, name: 'Size', sort_order: 0 });
    expect(f.id).toMatch(/^vfd_/);
    expect(f.options.map((o: { value: string; sort_order: number }) => [o.value, o.sort_order])).toEqual([
      ['M', 0],
      ['XL', 1],
      ['XS', 2],
    ]);
    expect(f.options.every((o: { field_id: string; id: string }) => o.field_id === f.id && /^vfo_/.test(o.id))).toBe(
      true,
    );
    expect(res.text).toContain('"value":"XL","price_adjustment":2.5,');
    expect(res.text).toContain('"value":"XS","price_adjustment":-1.25,');
    const rows = await t.db
      .selectFrom('product_variant_field_options')
      .select(['value', 'price_adjustment'])
      .where('field_id', '=', f.id)
      .orderBy('sort_order')
      .execute();
    expect(rows).toEqual([
      { value: 'M', price_adjustment: '0.00000000' },
      { value: 'XL', price_adjustment: '2.50000000' },
      { value: 'XS', price_adjustment: '-1.25000000' },
    ]);

    const second = await addField(p, { name: 'Color' });
    expect(second.status).toBe(201);
    expect(second.body.data).toMatchObject({ name: 'Color', sort_order: 1, options: [] });
    const placed = await addField(p, { name: 'Print', sort_order: 0 });
    expect(placed.body.data.sort_order).toBe(0);

    const list = await listFields(p);
    expect(list.status).toBe(200);
    // sort_order, then creation: Size (0), Print (0, newer), Color (1)
    expect(list.body.data.fields.map((x: { name: string }) => x.name)).toEqual(['Size', 'Print', 'Color']);
    expect(list.body.data.fields[0]).toEqual(f);
  });

  test('a name the product already has (ignoring case) is 409 CONFLICT and writes nothing', async () => {
    const p = await product(shopA);
    expect((await addField(p, { name: 'Size', options: [{ value: 'M' }] })).status).toBe(201);
    const before = await world();
    for (const name of ['Size', 'size', 'SIZE']) {
      const res = await addField(p, { name, options: [{ value: 'L' }] });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
      expect(res.body.error.details).toEqual([{ field: 'name', message: 'is already taken' }]);
    }
    expect(await world()).toEqual(before);
    // The same name on another product is fine.
    expect((await addField(await product(shopA), { name: 'Size' })).status).toBe(201);
  });

  test('two initial options with the same value (ignoring case): 409, and not even the field is written', async () => {
    const p = await product(shopA);
    const before = await world();
    const res = await addField(p, { name: 'Size', options: [{ value: 'Large' }, { value: 'large' }] });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'CONFLICT', details: [{ field: 'value' }] });
    expect(await world()).toEqual(before);
  });

  test('price_adjustment: at most the minor unit of the product currency; within ±1000000', async () => {
    const yen = await product(shopA, { currency: 'JPY', price: '1000' });
    const usd = await product(shopA);
    const before = await world();
    const res = await addField(yen, { name: 'Size', options: [{ value: 'L', price_adjustment: 0.5 }] });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([
      { field: 'options[0].price_adjustment', message: 'must have at most 0 decimals (the minor unit of JPY)' },
    ]);
    const tooPrecise = await addField(usd, { name: 'Size', options: [{ value: 'L', price_adjustment: 0.001 }] });
    expect(tooPrecise.status).toBe(422);
    const tooBig = await addField(usd, { name: 'Size', options: [{ value: 'L', price_adjustment: -1000001 }] });
    expect(tooBig.status).toBe(422);
    expect(await world()).toEqual(before);
    expect((await addField(yen, { name: 'Size', options: [{ value: 'L', price_adjustment: -300 }] })).status).toBe(201);
  });

  test('bad bodies: 422 with the field, nothing written', async () => {
    const p = await product(shopA);
    const before = await world();
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{ name: 'Size', sort_order: -1 }, 'sort_order'],
      [{ name: 'Size', options: [{ price_adjustment: 1 }] }, 'options[0].value'],
      [{ name: 'Size', extra: true }, 'extra'],
    ] as const) {
      const res = await addField(p, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(res.body.error.details)).toContain(field);
    }
    expect(await world()).toEqual(before);
  });

  test('a read-only key: 403; nothing written', async () => {
    const p = await product(shopA);
    const before = await world();
    const res = await addField(p, { name: 'Size' }, readOnlyA);
    expect(res.status).toBe(403);
    expect(await world()).toEqual(before);
    expect((await listFields(p, readOnlyA)).status).toBe(200);
  });
});

describe('POST /products/{id}/variants/fields/{fieldId}/options', () => {
  test('adds an option after the last one; a value the field has (ignoring case) is 409 and writes nothing', async () => {
    const p = await product(shopA);
    const field = (await addField(p, { name: 'Size', options: [{ value: 'S', sort_order: 5 }] })).body.data;
    const res = await addOption(p, field.id, { value: 'M', price_adjustment: 1.1 });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ field_id: field.id, value: 'M', sort_order: 6 });
    expect(res.text).toContain('"price_adjustment":1.1,');
    const before = await world();
    for (const value of ['M', 'm', 's']) {
      const dup = await addOption(p, field.id, { value });
      expect(dup.status).toBe(409);
      expect(dup.body.error).toMatchObject({
        code: 'CONFLICT',
        details: [{ field: 'value', message: 'is already taken' }],
      });
    }
    expect(await world()).toEqual(before);
    // The same value in another field is fine.
    const other = (await addField(p, { name: 'Color' })).body.data;
    expect((await addOption(p, other.id, { value: 'M' })).status).toBe(201);
    const list = (await listFields(p)).body.data.fields;
    expect(list[0].options.map((o: { value: string }) => o.value)).toEqual(['S', 'M']);
  });

  test('a field of another product, or no such field: 404 VARIANT_FIELD_NOT_FOUND; no such product: 404 PRODUCT_NOT_FOUND', async () => {
    const p = await product(shopA);
    const q = await product(shopA);
    const field = (await addField(p, { name: 'Size' })).body.data;
    const before = await world();
    const wrong = await addOption(q, field.id, { value: 'L' });
    expect(wrong.status).toBe(404);
    expect(wrong.body.error.code).toBe('VARIANT_FIELD_NOT_FOUND');
    const none = await addOption(p, 'vfd_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', { value: 'L' });
    expect(none.body.error.code).toBe('VARIANT_FIELD_NOT_FOUND');
    const noProduct = await addOption('prod_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', field.id, { value: 'L' });
    expect(noProduct.status).toBe(404);
    expect(noProduct.body.error.code).toBe('PRODUCT_NOT_FOUND');
    expect(await world()).toEqual(before);
  });
});

describe('another shop', () => {
  test("every route with another shop's product or field is 404 and changes nothing", async () => {
    const pa = await product(shopA);
    const fa = (await addField(pa, { name: 'Size', options: [{ value: 'S' }] })).body.data;
    const pb = await product(shopB);
    const before = await world();
    const list = await listFields(pa, keyB);
    expect(list.status).toBe(404);
    expect(list.body.error.code).toBe('PRODUCT_NOT_FOUND');
    const add = await addField(pa, { name: 'Color' }, keyB);
    expect([add.status, add.body.error.code]).toEqual([404, 'PRODUCT_NOT_FOUND']);
    const opt = await addOption(pa, fa.id, { value: 'L' }, keyB);
    expect([opt.status, opt.body.error.code]).toEqual([404, 'PRODUCT_NOT_FOUND']);
    // B's own product with A's field: not a field of that product.
    const mixed = await addOption(pb, fa.id, { value: 'L' }, keyB);
    expect([mixed.status, mixed.body.error.code]).toEqual([404, 'VARIANT_FIELD_NOT_FOUND']);
    expect(await world()).toEqual(before);
    expect((await listFields(pb, keyB)).body.data.fields).toEqual([]);
  });
});

describe('POST /orders with variant fields', () => {
  type Field = { id: string; options: { id: string; value: string }[] };

  /** A product with fields Size (S, XL +5), Color (Red, Blue -1.50) and Engraving (no options yet). */
  async function hoodie(): Promise<{ p: string; size: Field; color: Field }> {
    const p = await product(shopA, { title: 'Hoodie', price: '10.00', stock: 50 });
    const size = (
      await addField(p, {
        name: 'Size',
        options: [{ value: 'S' }, { value: 'XL', price_adjustment: 5 }],
      })
    ).body.data;
    const color = (
      await addField(p, {
        name: 'Color',
        options: [{ value: 'Red' }, { value: 'Blue', price_adjustment: -1.5 }],
      })
    ).body.data;
    // A field without options is not offered: not required, and cannot be chosen.
    await addField(p, { name: 'Engraving' });
    return { p, size, color };
  }

  test('the chosen options are priced, stored and shown, to the cent', async () => {
    const { p, size, color } = await hoodie();
    const res = await createOrder({
      email: 'opt@example.com',
      items: [{ product_id: p, quantity: 2, options: { Size: 'XL', Color: 'Blue' } }],
    });
    expect(res.status).toBe(201);
    // 10.00 + 5.00 - 1.50 = 13.50 a unit; x 2 = 27.00
    expect(res.text).toContain('"unit_price":13.5,"total":27,');
    expect(res.text).toContain('"subtotal":27,');
    expect(res.text).toContain('"total":27,"total_display":27');
    const item = res.body.data.items[0];
    expect(item.variant_options).toEqual([
      { field_id: size.id, name: 'Size', option_id: size.options[1]!.id, value: 'XL', price_adjustment: 5 },
      { field_id: color.id, name: 'Color', option_id: color.options[1]!.id, value: 'Blue', price_adjustment: -1.5 },
    ]);
    expect(item).not.toHaveProperty('addons');
    expect(item).not.toHaveProperty('quantity_discount');
    const row = await t.db
      .selectFrom('order_items')
      .select(['unit_price', 'total', 'variant_options'])
      .where('id', '=', item.id)
      .executeTakeFirstOrThrow();
    expect(row.unit_price).toBe('13.50000000');
    expect(row.total).toBe('27.00000000');
    expect(row.variant_options).toEqual([
      { field_id: size.id, name: 'Size', option_id: size.options[1]!.id, value: 'XL', price_adjustment: '5.00000000' },
      {
        field_id: color.id,
        name: 'Color',
        option_id: color.options[1]!.id,
        value: 'Blue',
        price_adjustment: '-1.50000000',
      },
    ]);
    // The order list shows the same item.
    const list = await t.http.get('/dev/v1/orders?limit=1').set(bearer(keyA));
    expect(list.body.data[0].items[0]).toEqual(item);
    // What was bought stays as bought when the catalog changes later.
    await addOption(p, size.id, { value: 'XXL', price_adjustment: 9 });
    expect((await t.http.get('/dev/v1/orders?limit=1').set(bearer(keyA))).body.data[0].items[0]).toEqual(item);
  });

  test('every field with options needs a valid choice: 422 on items[i].options.<name>, nothing written', async () => {
    const plain = await product(shopA, { title: 'Plain' });
    const { p } = await hoodie();
    const before = await world();
    const cases: [unknown, { field: string; message: string }[]][] = [
      [{ Size: 'S' }, [{ field: 'items[1].options.Color', message: 'is required: choose one of Red, Blue' }]],
      [
        undefined,
        [
          { field: 'items[1].options.Size', message: 'is required: choose one of S, XL' },
          { field: 'items[1].options.Color', message: 'is required: choose one of Red, Blue' },
        ],
      ],
      [{ Size: 'M', Color: 'Red' }, [{ field: 'items[1].options.Size', message: 'must be one of S, XL' }]],
      [{ Size: 'xl', Color: 'Red' }, [{ field: 'items[1].options.Size', message: 'must be one of S, XL' }]],
      [
        { Size: 'S', Color: 'Red', Flavor: 'Mint' },
        [
          {
            field: 'items[1].options.Flavor',
            message: 'is not a variant field of this product (its fields: Size, Color, Engraving)',
          },
        ],
      ],
      [
        { Size: 'S', Color: 'Red', Engraving: 'Ada' },
        [{ field: 'items[1].options.Engraving', message: 'has no options to choose from yet' }],
      ],
    ];
    for (const [options, details] of cases) {
      const res = await createOrder({
        email: 'refused@example.com',
        items: [
          { product_id: plain, quantity: 1 },
          { product_id: p, quantity: 1, ...(options === undefined ? {} : { options }) },
        ],
      });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details).toEqual(details);
    }
    const onPlain = await createOrder({
      email: 'refused@example.com',
      items: [{ product_id: plain, quantity: 1, options: { Size: 'S' } }],
    });
    expect(onPlain.status).toBe(422);
    expect(onPlain.body.error.details).toEqual([
      { field: 'items[0].options.Size', message: 'is not a variant field of this product (it has none)' },
    ]);
    const badShape = await createOrder({
      email: 'refused@example.com',
      items: [{ product_id: p, quantity: 1, options: { Size: '', Color: 'Red' } }],
    });
    expect(badShape.status).toBe(422);
    expect(await world()).toEqual(before);
  });

  test('a unit price the adjustments take below zero counts as 0', async () => {
    const cheap = await product(shopA, { title: 'Cheap', price: '1.00' });
    await addField(cheap, { name: 'Deal', options: [{ value: 'Free', price_adjustment: -3 }] });
    const res = await createOrder({
      email: 'free@example.com',
      items: [{ product_id: cheap, quantity: 3, options: { Deal: 'Free' } }],
    });
    expect(res.status).toBe(201);
    expect(res.text).toContain('"unit_price":0,"total":0,');
    expect(res.body.data.total).toBe(0);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('10 concurrent creations of one name: exactly one 201, the rest 409, one row', async () => {
    const p = await product(shopA);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => addField(p, { name: i % 2 ? 'Size' : 'size', options: [{ value: 'S' }] })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, ...Array(9).fill(409)]);
    expect(
      await t.db.selectFrom('product_variant_fields').select('id').where('product_id', '=', p).execute(),
    ).toHaveLength(1);
    const field = results.find((r) => r.status === 201)!.body.data;
    expect(
      await t.db.selectFrom('product_variant_field_options').select('id').where('field_id', '=', field.id).execute(),
    ).toHaveLength(1);
  });

  pgOnly('10 concurrent additions of one option value: exactly one 201, the rest 409', async () => {
    const p = await product(shopA);
    const field = (await addField(p, { name: 'Size' })).body.data;
    const results = await Promise.all(Array.from({ length: 10 }, () => addOption(p, field.id, { value: 'L' })));
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)]);
    expect(
      await t.db.selectFrom('product_variant_field_options').select('id').where('field_id', '=', field.id).execute(),
    ).toHaveLength(1);
  });
});
