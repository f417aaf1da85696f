// A payment link's hosted page (/link/:uniqid): a buyer enters an email and gets an invoice of what the link sells
// (the product and quantity, or the amount), which then pays like any other. A disabled, expired or exhausted link
// refuses (410) and writes nothing; an invoice that expires unpaid gives its use back; buyers racing for the last
// uses of a link never take more than max_uses.
import Decimal from 'decimal.js';
import request from 'supertest';
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { orderExpiryJob } from '../../src/worker/order-expiry';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock('2026-11-22T10:00:00Z');
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let gameKey: string;
let pro: string;
let personal: string;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { CHECKOUT_BASE_URL: 'https://pay.example.com' } });
  // A's invoices are paid through SANDBOX, which only test mode offers: a test-mode shop.
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'Link Shop', mode: 'test' },
    b: { name: 'Other Shop' },
  }));
  const seeded = await t.seed(shopA, {
    products: [
      { title: 'Game Key', type: 'SERIALS', price: '12.50', serials: ['K-1', 'K-2', 'K-3'] },
      { title: 'Pro <b>License</b>', price: '49.00', variants: [{ title: 'Personal', price: '39.99' }] },
    ],
  } as never);
  [gameKey, pro] = seeded.products as [string, string];
  [personal] = seeded.variants as [string];
  await t.seed(shopA, {
    blacklist: [
      { type: 'EMAIL', value: 'mallory@example.com' },
      { type: 'EMAIL_DOMAIN', value: 'spam.example' },
    ],
  } as never);
});
afterAll(() => t.close());
afterEach(() => {
  const failures = t.logs.filter((l) => l.level === 'error');
  if (failures.length) console.log(JSON.stringify(failures, null, 1));
});

const page = (uniqid: string) => request(t.app).get(`/link/${uniqid}`);
const buy = (uniqid: string, email = 'Buyer@Example.com') =>
  request(t.app).post(`/link/${uniqid}`).type('form').send({ email });

async function createLink(body: Record<string, unknown>, key = keyA): Promise<{ id: string; uniqid: string }> {
  const res = await t.http
    .post('/dev/v1/payment-links')
    .set(bearer(key))
    .send({ title: 'Buy now', ...body });
  expect(res.status).toBe(201);
  return res.body.data;
}

const uses = async (id: string) =>
  (await t.db.selectFrom('payment_links').select('uses').where('id', '=', id).executeTakeFirstOrThrow()).uses;
const world = () => rowCounts(t.db, ['orders', 'order_items', 'customers', 'events', 'outbound_emails']);
const uniqidOf = (location: string | undefined) => String(location).split('/invoice/')[1]!;

describe('a product link', () => {
  test('shows what it sells and, with an email, opens an invoice of it', async () => {
    const link = await createLink({ product_id: pro, variant_id: personal, quantity: 2, title: 'Pro for two' });
    const shown = await page(link.uniqid);
    expect(shown.status).toBe(200);
    expect(shown.headers['content-security-policy']).toContain("default-src 'none'");
    expect(shown.text).toContain('Pro for two');
    // Merchant text is escaped, the variant named, the unit price exact.
    expect(shown.text).toContain('Pro &lt;b&gt;License&lt;/b&gt; (Personal) × 2');
    expect(shown.text).toContain('(39.99 USD each)');
    expect(shown.text).toContain('Total <strong id="price">79.98 USD</strong>');
    expect(shown.text).toContain('name="email"');

    const res = await buy(link.uniqid);
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^https:\/\/pay\.example\.com\/invoice\/[0-9a-f-]{36}$/);
    const order = await t.db
      .selectFrom('orders')
      .selectAll()
      .where('uniqid', '=', uniqidOf(res.headers.location))
      .executeTakeFirstOrThrow();
    expect(order).toMatchObject({
      shop_id: shopA,
      kind: 'ORDER',
      status: 'PENDING',
      payment_link_id: link.id,
      customer_email: 'buyer@example.com',
      developer_title: 'Pro for two',
    });
    expect(order.total).toMatch(/^79\.98/);
    const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ product_id: pro, variant_id: personal, quantity: 2 });
    expect(await uses(link.id)).toBe(1);
    // The events any order has.
    const events = await t.db
      .selectFrom('events')
      .select('type')
      .where('shop_id', '=', shopA)
      .where(sql<boolean>`data::text like ${`%${order.uniqid}%`}`)
      .execute();
    expect(events.map((e) => e.type)).toContain('order:created');

    // The invoice page of the new order is the ordinary checkout.
    const invoice = await request(t.app).get(`/invoice/${order.uniqid}`);
    expect(invoice.status).toBe(200);
    expect(invoice.text).toContain('79.98');
  });

  test('the invoice pays through SANDBOX and delivers like any order', async () => {
    const link = await createLink({ product_id: gameKey });
    const opened = await buy(link.uniqid, 'gamer@example.com');
    const uniqid = uniqidOf(opened.headers.location);
    const started = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'SANDBOX' });
    expect(started.status).toBe(303);
    const session = new URL(String(started.headers.location)).pathname;
    const paid = await request(t.app).post(`${session}/pay`).type('form').send({});
    expect(paid.status).toBe(303);
    const after = await request(t.app).get(`/invoice/${uniqid}`);
    expect(after.text).toContain('COMPLETED');
    expect(after.text).toMatch(/<code>K-\d<\/code>/);
  });

  test('a refusal of the order itself (out of stock) is shown and writes nothing', async () => {
    const link = await createLink({ product_id: gameKey, quantity: 4 });
    const before = await world();
    const res = await buy(link.uniqid);
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/only \d serials of Game Key left/);
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });
});

describe('a product with variant fields', () => {
  let shirt: string;
  beforeAll(async () => {
    shirt = (await t.seed(shopA, { products: [{ title: 'Shirt', price: '10.00' }] } as never)).products[0]!;
    const field = await t.http
      .post(`/dev/v1/products/${shirt}/variants/fields`)
      .set(bearer(keyA))
      .send({ name: 'Size', options: [{ value: 'M' }, { value: 'XL', price_adjustment: 2.5 }] });
    expect(field.status).toBe(201);
    // A field with no options yet is not offered (POST /orders does not ask for it either).
    expect(
      (await t.http.post(`/dev/v1/products/${shirt}/variants/fields`).set(bearer(keyA)).send({ name: 'Colour' }))
        .status,
    ).toBe(201);
  });
  const choose = (uniqid: string, form: Record<string, string>) =>
    request(t.app)
      .post(`/link/${uniqid}`)
      .type('form')
      .send({ email: 'shirt@example.com', ...form });

  test('the page asks for an option of each field, priced; the chosen one is ordered and recorded', async () => {
    const link = await createLink({ product_id: shirt, title: 'Shirt sale' });
    const shown = await page(link.uniqid);
    expect(shown.status).toBe(200);
    expect(shown.text).toMatch(
      /<label for="choice-0">Size<\/label>\s*<select id="choice-0" name="option:Size" required>/,
    );
    expect(shown.text).toContain('<option value="M">M</option>');
    expect(shown.text).toContain('<option value="XL">XL (+2.50 USD per unit)</option>');
    expect(shown.text).not.toContain('Colour');
    // The cheapest choice's total, said to be the lowest.
    expect(shown.text).toContain('Total from <strong id="price">10.00 USD</strong>');

    const res = await choose(link.uniqid, { 'option:Size': 'XL' });
    expect(res.status).toBe(303);
    const order = await t.db
      .selectFrom('orders')
      .selectAll()
      .where('uniqid', '=', uniqidOf(res.headers.location))
      .executeTakeFirstOrThrow();
    expect(order.total).toMatch(/^12\.50*$/);
    const item = await t.db
      .selectFrom('order_items')
      .select('variant_options')
      .where('order_id', '=', order.id)
      .executeTakeFirstOrThrow();
    expect(item.variant_options).toEqual([
      expect.objectContaining({ name: 'Size', value: 'XL', price_adjustment: expect.stringMatching(/^2\.50*$/) }),
    ]);
    expect(await uses(link.id)).toBe(1);
  });

  test.each([
    ['no choice', {}, 'Size is required: choose one of M, XL'],
    ['the empty "Choose…" entry', { 'option:Size': '' }, 'Size is required: choose one of M, XL'],
    ['an option the field has not', { 'option:Size': 'XXL' }, 'Size must be one of M, XL'],
    [
      'a field the product has not',
      { 'option:Size': 'M', 'option:Fit': 'Slim' },
      'Fit is not a variant field of this product',
    ],
  ])('%s: the page again (422) saying what to choose, and nothing written', async (_, form, says) => {
    const link = await createLink({ product_id: shirt });
    const before = await world();
    const res = await choose(link.uniqid, form);
    expect(res.status).toBe(422);
    expect(res.text).toContain('id="problems" role="alert"');
    expect(res.text).toContain(says);
    // The form is there again, with the email kept.
    expect(res.text).toContain('name="option:Size"');
    expect(res.text).toContain('value="shirt@example.com"');
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });
});

describe('a product with variants, on a link that names none', () => {
  let game: string;
  let standard: string;
  let gold: string;
  beforeAll(async () => {
    const seeded = await t.seed(shopA, {
      products: [
        {
          title: 'Game',
          price: '10.00',
          variants: [
            { title: 'Standard', price: '10.00' },
            { title: 'Gold', price: '15.00' },
          ],
        },
      ],
    } as never);
    game = seeded.products[0]!;
    [standard, gold] = seeded.variants as [string, string];
  });
  const orderOf = async (location: string | undefined) => {
    const order = await t.db
      .selectFrom('orders')
      .select(['id', 'total'])
      .where('uniqid', '=', uniqidOf(location))
      .executeTakeFirstOrThrow();
    const item = await t.db
      .selectFrom('order_items')
      .select('variant_id')
      .where('order_id', '=', order.id)
      .executeTakeFirstOrThrow();
    return { total: new Decimal(order.total).toFixed(2), variant: item.variant_id };
  };

  test('the page asks which variant, priced; the chosen one is ordered', async () => {
    const link = await createLink({ product_id: game });
    const shown = await page(link.uniqid);
    expect(shown.text).toContain('<label for="variant">Variant</label>');
    expect(shown.text).toContain(`<option value="${gold}">Gold (15.00 USD per unit)</option>`);
    expect(shown.text).toContain('Total from <strong id="price">10.00 USD</strong>');
    const res = await request(t.app)
      .post(`/link/${link.uniqid}`)
      .type('form')
      .send({ email: 'gold@example.com', variant: gold });
    expect(res.status).toBe(303);
    expect(await orderOf(res.headers.location)).toEqual({ total: '15.00', variant: gold });
  });

  test.each([
    ['no variant', false],
    ['a variant of another product', true],
  ])('%s: the page again (422) asking for one, and nothing written', async (_, foreign) => {
    const link = await createLink({ product_id: game });
    const before = await world();
    const res = await request(t.app)
      .post(`/link/${link.uniqid}`)
      .type('form')
      .send({ email: 'gold@example.com', ...(foreign ? { variant: personal } : {}) });
    expect(res.status).toBe(422);
    expect(res.text).toContain('Variant: choose one of the variants listed.');
    expect(res.text).toContain('name="variant"');
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });

  test('a link that names a variant sells that one, whatever the form says', async () => {
    const link = await createLink({ product_id: game, variant_id: standard });
    expect((await page(link.uniqid)).text).not.toContain('name="variant"');
    const res = await request(t.app)
      .post(`/link/${link.uniqid}`)
      .type('form')
      .send({ email: 'gold@example.com', variant: gold });
    expect(res.status).toBe(303);
    expect(await orderOf(res.headers.location)).toEqual({ total: '10.00', variant: standard });
  });
});

describe('the price a product link shows is the one its invoice charges', () => {
  test.each([
    // 14.99 + 20% = 17.988, rounded to the cent by the order pricing.
    ['added on top', false, 'Total <strong id="price">17.99 USD</strong>', '14.99 USD + 3.00 USD tax (20%)', '17.99'],
    ['included', true, 'Total <strong id="price">14.99 USD</strong>', 'including 2.50 USD tax (20%)', '14.99'],
  ])('tax %s', async (_, inclusive, total, tax, charged) => {
    const shopId = await t.createShop({ name: `Taxed ${inclusive}`, mode: 'test' });
    const { key } = await t.createKey(shopId, ['*']);
    const { products } = await t.seed(shopId, {
      products: [{ title: 'Ebook', price: '14.99' }],
      tax: { rate: '20', inclusive },
    } as never);
    const link = await createLink({ product_id: products[0] }, key);
    const shown = await page(link.uniqid);
    expect(shown.text).toContain(total);
    expect(shown.text).toContain(tax);
    expect(shown.text).not.toContain(' each');
    const res = await buy(link.uniqid);
    const order = await t.db
      .selectFrom('orders')
      .select(['total', 'tax'])
      .where('uniqid', '=', uniqidOf(res.headers.location))
      .executeTakeFirstOrThrow();
    expect(new Decimal(order.total).toFixed(2)).toBe(charged);
  });
});

describe('an amount link', () => {
  test('opens a payment invoice of exactly its amount', async () => {
    const link = await createLink({ amount: 19.99, currency: 'EUR', title: 'Donation' });
    const shown = await page(link.uniqid);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('19.99 EUR');
    const res = await buy(link.uniqid, 'donor@example.com');
    expect(res.status).toBe(303);
    const order = await t.db
      .selectFrom('orders')
      .selectAll()
      .where('uniqid', '=', uniqidOf(res.headers.location))
      .executeTakeFirstOrThrow();
    expect(order).toMatchObject({ kind: 'PAYMENT', currency: 'EUR', payment_link_id: link.id });
    expect(order.customer_email).toBe('donor@example.com');
    expect(Number(order.total)).toBe(19.99);
    const types = (
      await t.db.selectFrom('events').select('type').where('shop_id', '=', shopA).orderBy('created_at').execute()
    ).map((e) => e.type);
    expect(types).toContain('payment:created');
    expect(await uses(link.id)).toBe(1);
  });
});

describe('refusals write nothing', () => {
  test('a disabled link: 410 on the page and on use', async () => {
    const link = await createLink({ amount: 5 });
    expect((await t.http.post(`/dev/v1/payment-links/${link.id}/toggle`).set(bearer(keyA))).status).toBe(200);
    const shown = await page(link.uniqid);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain('turned off');
    expect(shown.text).not.toContain('name="email"');
    const before = await world();
    const res = await buy(link.uniqid);
    expect(res.status).toBe(410);
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });

  test('an expired link: 410', async () => {
    const link = await createLink({ amount: 5, expires_at: Math.floor(clock.now().getTime() / 1000) + 60 });
    expect((await page(link.uniqid)).status).toBe(200);
    clock.advance(61_000);
    expect((await page(link.uniqid)).text).toContain('expired');
    const before = await world();
    expect((await buy(link.uniqid)).status).toBe(410);
    expect(await world()).toEqual(before);
  });

  test('an exhausted link refuses until an unpaid invoice of it expires and gives its use back', async () => {
    const link = await createLink({ amount: 5, max_uses: 1 });
    expect((await buy(link.uniqid, 'first@example.com')).status).toBe(303);
    const before = await world();
    const second = await buy(link.uniqid, 'second@example.com');
    expect(second.status).toBe(410);
    expect(second.text).toContain('used as many times');
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(1);

    clock.advance(t.config.orderTtlMinutes * 60_000 + 1000);
    const job = orderExpiryJob(t.db, { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl });
    while ((await job.runOnce()) > 0);
    expect(await uses(link.id)).toBe(0);
    expect((await buy(link.uniqid, 'second@example.com')).status).toBe(303);
    expect(await uses(link.id)).toBe(1);
  });

  test.each([
    ['no email', {}],
    ['not an email', { email: 'nobody' }],
    ['too long', { email: `${'a'.repeat(250)}@example.com` }],
  ])('%s: 400, asked again', async (_, form) => {
    const link = await createLink({ amount: 5 });
    const before = await world();
    const res = await request(t.app).post(`/link/${link.uniqid}`).type('form').send(form);
    expect(res.status).toBe(400);
    expect(res.text).toContain('Enter the email');
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });

  test.each([
    ['a blacklisted email', 'product', 'mallory@example.com'],
    ['a blacklisted email domain', 'amount', 'eve@spam.example'],
  ])('%s is refused (400) on a link, and nothing is written', async (_, sells, email) => {
    const link = await createLink(sells === 'product' ? { product_id: gameKey } : { amount: 5 });
    const before = await world();
    const res = await buy(link.uniqid, email);
    expect(res.status).toBe(400);
    expect(res.text).toContain('does not accept orders from this buyer');
    expect(await world()).toEqual(before);
    expect(await uses(link.id)).toBe(0);
  });

  test("the buyer's browser address is checked against the shop's IP entries", async () => {
    const link = await createLink({ amount: 5 });
    await t.seed(shopA, {
      blacklist: [
        { type: 'IP', value: '127.0.0.0/8' },
        { type: 'IP', value: '::1' },
      ],
    } as never);
    try {
      const before = await world();
      const res = await buy(link.uniqid, 'innocent@example.com');
      expect(res.status).toBe(400);
      expect(await world()).toEqual(before);
    } finally {
      await t.db.deleteFrom('blacklist_entries').where('shop_id', '=', shopA).where('type', '=', 'IP').execute();
    }
    expect((await buy(link.uniqid, 'innocent@example.com')).status).toBe(303);
  });

  test.each(['00000000-0000-4000-8000-000000000000', 'not-a-uuid'])('unknown link %s: 404', async (uniqid) => {
    expect((await page(uniqid)).status).toBe(404);
    const before = await world();
    expect((await buy(uniqid)).status).toBe(404);
    expect(await world()).toEqual(before);
  });

  test("another shop's link opens an invoice of that shop", async () => {
    const link = await createLink({ amount: 7 }, keyB);
    const res = await buy(link.uniqid, 'x@example.com');
    const order = await t.db
      .selectFrom('orders')
      .select(['shop_id'])
      .where('uniqid', '=', uniqidOf(res.headers.location))
      .executeTakeFirstOrThrow();
    expect(order.shop_id).toBe(shopB);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

pgOnly('12 buyers racing for the last 3 uses of a link: exactly 3 invoices', async () => {
  const link = await createLink({ amount: 3, max_uses: 3 });
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => buy(link.uniqid, `racer${i}@example.com`)));
  const statuses = results.map((r) => r.status).sort();
  expect(statuses.filter((s) => s === 303)).toHaveLength(3);
  expect(statuses.filter((s) => s === 410)).toHaveLength(9);
  expect(await uses(link.id)).toBe(3);
  const orders = await t.db.selectFrom('orders').select('id').where('payment_link_id', '=', link.id).execute();
  expect(orders).toHaveLength(3);
});
