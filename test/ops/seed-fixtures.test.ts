// What seedFixtures (src/ops/fixtures/fixtures.ts) writes for a fixture file: the defaults of every product, variant and
// customer field the file leaves out, slugs made from titles, serials in claim order, referrals. And the cross-field
// rules of parseFixtures that test/ops/fixtures.test.ts does not reach.
import { sql } from 'kysely';
import { customerById } from '../../db/queries/customers';
import * as admin from '../../src/ops/admin';
import { FixtureError, parseFixtures, seedFixtures, type Fixtures } from '../../src/ops/fixtures/fixtures';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { systemClock } from '../../src/platform/clock';

let database: TestDatabase;
let shop: { id: string; currency: string; livemode: boolean };
beforeAll(async () => {
  database = await createTestDatabase();
  shop = await admin.createShop(database.db, { name: 'Seeds', currency: 'EUR' });
});
afterAll(() => database?.close());

const seed = (fixtures: Fixtures) =>
  database.db.transaction().execute((trx) => seedFixtures(trx, shop, fixtures, systemClock));
const productRow = (id: string) =>
  database.db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

test('a product with only a title and a price: every other field at its default', async () => {
  const { products } = await seed({ products: [{ title: 'Plain', price: '3.50' }] });
  expect(products[0]).toMatch(/^prod_/);
  const row = await productRow(products[0]!);
  expect(row).toMatchObject({
    shop_id: shop.id,
    type: 'SERVICE',
    subtype: null,
    title: 'Plain',
    currency: 'EUR',
    description: '',
    price: '3.50000000',
    price_display: '3.50000000',
    description_tabs: [],
    gateways: [],
    custom_fields: [],
    delivery_instructions: null,
    quantity_min: 1,
    quantity_max: -1,
    quantity_warning: 0,
    stock: -1,
    stock_delimiter: ',',
    unlisted: false,
    private: false,
    on_hold: false,
    block_vpn_proxies: false,
    watermark_enabled: false,
    sort_priority: 0,
    crypto_confirmations: 1,
    max_risk_level: 100,
    delivery_text: '',
    service_text: '',
    delivery_time: null,
    dynamic_webhook: null,
    image_id: null,
    image_url: null,
  });
  expect(row.uniqid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
});

test('the fields a product gives are kept', async () => {
  const { products } = await seed({
    products: [
      {
        title: 'Full',
        slug: 'full',
        type: 'FILE',
        description: 'Everything',
        price: '10',
        currency: 'USD',
        stock: 4,
        gateways: ['STRIPE', 'PAYPAL'],
        unlisted: true,
        description_tabs: [{ title: 'Info', content: '<p>x</p>' }],
      },
    ],
  });
  expect(await productRow(products[0]!)).toMatchObject({
    slug: 'full',
    type: 'FILE',
    description: 'Everything',
    currency: 'USD',
    stock: 4,
    gateways: ['STRIPE', 'PAYPAL'],
    unlisted: true,
    description_tabs: [{ title: 'Info', content: '<p>x</p>' }],
  });
});

test('stock: the serial count, else as given, else 0 for SERIALS and unlimited (-1) for the rest', async () => {
  const { products } = await seed({
    products: [
      { title: 'With serials', type: 'SERIALS', price: '1', serials: ['A', 'B', 'C'] },
      { title: 'Serials, none yet', type: 'SERIALS', price: '1' },
      { title: 'Counted', type: 'FILE', price: '1', stock: 0 },
      { title: 'Unlimited', type: 'FILE', price: '1' },
    ],
  });
  const stocks = await Promise.all(products.map(async (id) => (await productRow(id)).stock));
  expect(stocks).toEqual([3, 0, 0, -1]);
});

test('a slug from the title when none is given: lower case, runs of other characters one dash, a random suffix', async () => {
  const { products } = await seed({
    products: [
      { title: '  Hello, World!! 2  ', price: '1' },
      { title: '***', price: '1' },
      { title: 'x'.repeat(80), price: '1' },
      { title: 'Hello, World!! 2', price: '1' },
    ],
  });
  const slugs = await Promise.all(products.map(async (id) => (await productRow(id)).slug));
  expect(slugs[0]).toMatch(/^hello-world-2-[0-9a-f]{8}$/);
  expect(slugs[1]).toMatch(/^product-[0-9a-f]{8}$/);
  expect(slugs[2]).toMatch(new RegExp(`^${'x'.repeat(60)}-[0-9a-f]{8}$`));
  expect(slugs[3]).toMatch(/^hello-world-2-[0-9a-f]{8}$/);
  expect(slugs[3]).not.toBe(slugs[0]);
});

test('variants: in file order, unlimited stock unless given, their ids returned', async () => {
  const created = await seed({
    products: [
      {
        title: 'Sizes',
        price: '5',
        variants: [
          { title: 'S', price: '5' },
          { title: 'M', price: '6.5', stock: 2 },
        ],
      },
    ],
  });
  expect(created.variants).toHaveLength(2);
  for (const id of created.variants) expect(id).toMatch(/^var_/);
  const rows = await database.db
    .selectFrom('product_variants')
    .select(['id', 'title', 'price', 'price_display', 'stock', 'sort_priority', 'product_id', 'shop_id'])
    .where('product_id', '=', created.products[0]!)
    .orderBy('sort_priority')
    .execute();
  expect(rows).toEqual([
    {
      id: created.variants[0],
      title: 'S',
      price: '5.00000000',
      price_display: '5.00000000',
      stock: -1,
      sort_priority: 0,
      product_id: created.products[0],
      shop_id: shop.id,
    },
    {
      id: created.variants[1],
      title: 'M',
      price: '6.50000000',
      price_display: '6.50000000',
      stock: 2,
      sort_priority: 1,
      product_id: created.products[0],
      shop_id: shop.id,
    },
  ]);
});

test('serials: counted, available, one microsecond apart in file order (the claim order)', async () => {
  const values = ['Z-1', 'A-2', 'M-3', 'B-4'];
  const created = await seed({
    products: [
      { title: 'Keys 1', type: 'SERIALS', price: '1', serials: values },
      { title: 'Keys 2', type: 'SERIALS', price: '1', serials: ['Q'] },
    ],
  });
  expect(created.serials).toBe(5);
  const rows = (
    await sql<{ serial: string; status: string; micros: string }>`
      select serial, status, (extract(epoch from created_at) * 1000000)::bigint::text as micros
      from product_serials where product_id = ${created.products[0]!} order by created_at, id`.execute(database.db)
  ).rows;
  expect(rows.map((r) => r.serial)).toEqual(values);
  expect(rows.every((r) => r.status === 'available')).toBe(true);
  const micros = rows.map((r) => BigInt(r.micros));
  for (let i = 1; i < micros.length; i++) expect(micros[i]! - micros[i - 1]!).toBe(1n);
  // The first serial is created now (to the millisecond), not at some other time.
  expect(Math.abs(Number(micros[0]! / 1000n) - Date.now())).toBeLessThan(60_000);
});

test('customers: their ids returned, the referrals of the file set within the shop', async () => {
  const created = await seed({
    customers: [
      { email: 'Aff@Example.com', affiliate: { code: 'AFF' } },
      { email: 'ref@example.com', referred_by: 'aff@EXAMPLE.com' },
      { email: 'plain@example.com' },
    ],
  });
  expect(created.customers).toHaveLength(3);
  const [aff, ref, plain] = await Promise.all(created.customers.map((id) => customerById(database.db, shop.id, id)));
  expect(aff).toMatchObject({ email: 'aff@example.com', is_affiliate: true, referred_by_customer_id: null });
  expect(ref).toMatchObject({ email: 'ref@example.com', referred_by_customer_id: aff!.id });
  expect(plain).toMatchObject({ email: 'plain@example.com', referred_by_customer_id: null });
  for (const c of [aff, ref, plain]) expect(c).toMatchObject({ shop_id: shop.id, wallet_currency: 'EUR' });
});

test('an empty file writes nothing and says so', async () => {
  expect(await seed({})).toEqual({
    products: [],
    variants: [],
    serials: 0,
    customers: [],
    affiliateApplications: [],
    webhooks: [],
    gateways: [],
    coupons: [],
    attachments: [],
    blacklist: [],
    subscriptions: [],
    licenses: [],
    variant_fields: [],
    quantity_deals: [],
    addons: [],
    reviews: [],
    tickets: [],
    disputes: [],
    resellerTiers: [],
    resellers: [],
    themes: [],
    storeDomains: [],
    analyticsReports: [],
    emailMarketingSettings: [],
    messagingBots: [],
    messagingBotUsers: [],
  });
});

describe('parseFixtures, cross-field rules', () => {
  test('serials without a stock, or a stock without serials, are fine', () => {
    const ok = {
      products: [
        { title: 'K', type: 'SERIALS', price: '1', serials: ['A', 'B'] },
        { title: 'F', type: 'FILE', price: '1', stock: 5 },
        { title: 'S', type: 'SERIALS', price: '1', stock: 0 },
      ],
    };
    expect(parseFixtures(ok, new Date())).toBe(ok);
  });

  test('a customer referred by itself', () => {
    const value = { customers: [{ email: 'a@b.co', affiliate: { code: 'A' }, referred_by: 'A@b.co' }] };
    expect(() => parseFixtures(value, new Date())).toThrow(FixtureError);
    expect(() => parseFixtures(value, new Date())).toThrow('/customers/0/referred_by names the customer itself');
  });

  test('the message lists every problem, one a line, under one heading', () => {
    expect(() =>
      parseFixtures(
        {
          products: [{ title: 'K', type: 'SERIALS', price: '1', serials: ['A'], stock: 3 }],
          customers: [{ email: 'a@b.co' }, { email: 'A@B.co' }],
        },
        new Date(),
      ),
    ).toThrow(
      'The fixture file is not valid:\n' +
        '  /products/0/stock must equal the number of serials (1) or be omitted\n' +
        '  /customers/1/email duplicates /customers/0/email',
    );
    expect(() => parseFixtures({ products: [{ price: '1' }] }, new Date())).toThrow(
      'The fixture file is not valid:\n  /products/0/title is required',
    );
    expect(() => parseFixtures([], new Date())).toThrow('The fixture file is not valid:\n  / must be an object');
  });
});
