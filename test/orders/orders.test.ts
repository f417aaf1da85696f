// POST /orders, POST /orders/{id}/complete, POST /orders/{id}/fulfill: every rule of creation and of the completion
// pipeline through HTTP; each refusal checked for what it did not change (orders, items, customers, stock, serials,
// coupon uses, events, mail); the money table to the cent and satoshi; races on real PostgreSQL.
import { sql } from 'kysely';
import { customerFigures } from '../../db/queries/customers';
import { newId } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { orderExpiryJob } from '../../src/worker/order-expiry';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2026-11-23T12:00:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { ORDER_TTL_MINUTES: '30' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t));
});
afterAll(() => t.close());

const serials = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

async function product(shopId: string, fixture: Record<string, unknown>, set: Record<string, unknown> = {}) {
  const id = (await t.seed(shopId, { products: [{ title: 'P', price: '10.00', ...fixture } as never] })).products[0]!;
  if (Object.keys(set).length > 0) await t.db.updateTable('products').set(set).where('id', '=', id).execute();
  return id;
}

const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);
const complete = (id: string, body: unknown = {}, key = keyA) =>
  t.http
    .post(`/dev/v1/orders/${id}/complete`)
    .set(bearer(key))
    .send(body as object);

/** Everything a refused request must leave alone. */
async function world() {
  const count = async (table: string) =>
    Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);
  return {
    orders: await count('orders'),
    items: await count('order_items'),
    customers: await count('customers'),
    events: await count('events'),
    mail: await count('outbound_emails'),
    attempts: await count('payment_attempts'),
    stock: (await t.db.selectFrom('products').select(['id', 'stock']).orderBy('id').execute()).map((r) => r.stock),
    variantStock: (await t.db.selectFrom('product_variants').select('stock').orderBy('id').execute()).map(
      (r) => r.stock,
    ),
    serials: (
      await sql<{ s: string }>`select string_agg(status || coalesce(order_item_id, ''), ',' order by id) as s
        from product_serials`.execute(t.db)
    ).rows[0]!.s,
    coupons: (await t.db.selectFrom('coupons').select('uses').orderBy('id').execute()).map((r) => r.uses),
    orderRows: (
      await sql<{
        s: string;
      }>`select string_agg(id || status || payment_status || updated_at::text, ',' order by id) as s
        from orders`.execute(t.db)
    ).rows[0]!.s,
  };
}

async function coupon(shopId: string, row: Record<string, unknown>, productIds: string[] = []) {
  const id = newId('cpn');
  await t.db
    .insertInto('coupons')
    .values({ id, shop_id: shopId, type: 'PERCENTAGE', value: '10', ...row } as never)
    .execute();
  for (const p of productIds)
    await t.db.insertInto('coupon_products').values({ shop_id: shopId, coupon_id: id, product_id: p }).execute();
  return id;
}

async function gateway(shopId: string, code: string, kind = 'HOSTED', active = true) {
  await t.db
    .insertInto('gateways')
    .values({ id: newId('gw'), shop_id: shopId, code, kind: kind as never, active })
    .onConflict((oc) => oc.columns(['shop_id', 'code']).doUpdateSet({ active }))
    .execute();
}

const eventsOf = async (type: string) =>
  (
    await t.db
      .selectFrom('events')
      .select(['data', 'shop_id'])
      .where('type', '=', type)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((e) => ({ shop: e.shop_id, data: JSON.parse(e.data) as Record<string, unknown>, raw: e.data }));

describe('POST /orders', () => {
  test('creates a PENDING order priced from the catalog, reserves its stock and creates the buyer', async () => {
    const p = await product(shopA, { title: 'Counted', type: 'SERVICE', price: '19.99', stock: 5 });
    const before = await eventsOf('customer:created');
    const res = await createOrder({
      email: 'Ada@Example.com',
      title: 'Order #1',
      custom_fields: { discord: 'ada#1' },
      items: [{ product_id: p, quantity: 2, delivery_instructions: 'asap' }],
    });
    expect(res.status).toBe(201);
    const o = res.body.data;
    expect(o).toMatchObject({
      status: 'PENDING',
      payment_status: 'PENDING',
      customer_email: 'ada@example.com',
      currency: 'USD',
      subtotal: 39.98,
      total: 39.98,
      discount: 0,
      tax: 0,
      is_developer_invoice: true,
      developer_title: 'Order #1',
      custom_fields: { discord: 'ada#1' },
      checkout_url: `http://api.test/invoice/${o.uniqid}`,
    });
    expect(o.items).toEqual([
      expect.objectContaining({
        product_id: p,
        product_title: 'Counted',
        product_type: 'SERVICE',
        quantity: 2,
        unit_price: 19.99,
        total: 39.98,
        delivery_status: 'PENDING',
        delivered_at: null,
        delivery_instructions: 'asap',
      }),
    ]);
    expect(o.customer_id).toMatch(/^cus_/);
    expect((await eventsOf('customer:created')).length).toBe(before.length + 1);
    const created = (await eventsOf('order:created')).filter((e) => e.data.id === o.id);
    expect(created).toHaveLength(1);
  });

  test('counted stock is reserved at creation and an order beyond it is OUT_OF_STOCK, changing nothing', async () => {
    const p = await product(shopA, { type: 'SERVICE', stock: 3 });
    const res = await createOrder({ email: 'b@example.com', items: [{ product_id: p, quantity: 2 }] });
    expect(res.status).toBe(201);
    expect(
      (await t.db.selectFrom('products').select('stock').where('id', '=', p).executeTakeFirstOrThrow()).stock,
    ).toBe(1);
    const before = await world();
    const refused = await createOrder({
      email: 'b@example.com',
      items: [
        { product_id: p, quantity: 1 },
        { product_id: p, quantity: 1 },
      ],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('OUT_OF_STOCK');
    expect(await world()).toEqual(before);
  });

  test.each([
    ['an unknown product', () => ({ items: [{ product_id: 'prod_nope', quantity: 1 }] }), 404, 'PRODUCT_NOT_FOUND'],
    [
      'no email',
      () => ({ items: [{ product_id: 'prod_nope', quantity: 1 }], email: undefined }),
      422,
      'VALIDATION_ERROR',
    ],
    ['quantity 0', () => ({ items: [{ product_id: 'prod_nope', quantity: 0 }] }), 422, 'VALIDATION_ERROR'],
    ['no items', () => ({ items: [] }), 422, 'VALIDATION_ERROR'],
  ])('%s is refused and changes nothing', async (_name, body, status, code) => {
    const before = await world();
    const res = await createOrder({ email: 'x@example.com', ...body() });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(await world()).toEqual(before);
  });

  test("another shop's product is PRODUCT_NOT_FOUND and changes nothing", async () => {
    const inB = await product(shopB, { type: 'SERVICE', stock: 5 });
    const before = await world();
    const res = await createOrder({ email: 'x@example.com', items: [{ product_id: inB, quantity: 1 }] });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('PRODUCT_NOT_FOUND');
    expect(await world()).toEqual(before);
  });

  test('variants: required exactly when the product has them, and only its own', async () => {
    const withVariants = await product(shopA, {
      type: 'SERVICE',
      variants: [
        { title: 'Monthly', price: '5.00', stock: 2 },
        { title: 'Yearly', price: '50.00' },
      ],
    });
    const plain = await product(shopA, { type: 'SERVICE' });
    const variants = await t.db
      .selectFrom('product_variants')
      .select(['id', 'title'])
      .where('product_id', '=', withVariants)
      .orderBy('title')
      .execute();
    const monthly = variants.find((v) => v.title === 'Monthly')!.id;
    const before = await world();
    const missing = await createOrder({ email: 'v@example.com', items: [{ product_id: withVariants, quantity: 1 }] });
    expect([missing.status, missing.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(missing.body.error.details[0].field).toBe('items[0].variant_id');
    const foreign = await createOrder({
      email: 'v@example.com',
      items: [{ product_id: plain, variant_id: monthly, quantity: 1 }],
    });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'VARIANT_NOT_FOUND']);
    const unknown = await createOrder({
      email: 'v@example.com',
      items: [{ product_id: withVariants, variant_id: 'var_nope', quantity: 1 }],
    });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'VARIANT_NOT_FOUND']);
    const tooMany = await createOrder({
      email: 'v@example.com',
      items: [{ product_id: withVariants, variant_id: monthly, quantity: 3 }],
    });
    expect([tooMany.status, tooMany.body.error.code]).toEqual([400, 'OUT_OF_STOCK']);
    expect(await world()).toEqual(before);
    const ok = await createOrder({
      email: 'v@example.com',
      items: [{ product_id: withVariants, variant_id: monthly, quantity: 2 }],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.data.items[0]).toMatchObject({ variant_title: 'Monthly', unit_price: 5, total: 10 });
    const stock = await t.db
      .selectFrom('product_variants')
      .select('stock')
      .where('id', '=', monthly)
      .executeTakeFirst();
    expect(stock?.stock).toBe(0);
  });

  test('on hold is PRODUCT_UNAVAILABLE; quantities outside min/max are QUANTITY_OUT_OF_RANGE', async () => {
    const held = await product(shopA, { type: 'SERVICE' }, { on_hold: true });
    const ranged = await product(shopA, { type: 'SERVICE' }, { quantity_min: 2, quantity_max: 4 });
    const before = await world();
    const r1 = await createOrder({ email: 'h@example.com', items: [{ product_id: held, quantity: 1 }] });
    expect([r1.status, r1.body.error.code]).toEqual([400, 'PRODUCT_UNAVAILABLE']);
    for (const quantity of [1, 5]) {
      const r = await createOrder({ email: 'h@example.com', items: [{ product_id: ranged, quantity }] });
      expect([r.status, r.body.error.code]).toEqual([400, 'QUANTITY_OUT_OF_RANGE']);
    }
    expect(await world()).toEqual(before);
    for (const quantity of [2, 4])
      expect((await createOrder({ email: 'h@example.com', items: [{ product_id: ranged, quantity }] })).status).toBe(
        201,
      );
  });

  test('a gateway must be an active gateway of the shop', async () => {
    const p = await product(shopA, { type: 'SERVICE' });
    await gateway(shopA, 'OFFLINE', 'HOSTED', false);
    await gateway(shopB, 'ONLYB');
    const before = await world();
    for (const code of ['NOPE', 'OFFLINE', 'ONLYB']) {
      const r = await createOrder({ email: 'g@example.com', gateway: code, items: [{ product_id: p, quantity: 1 }] });
      expect([r.status, r.body.error.code]).toEqual([400, 'GATEWAY_NOT_AVAILABLE']);
    }
    expect(await world()).toEqual(before);
    await gateway(shopA, 'CARDS');
    const ok = await createOrder({ email: 'g@example.com', gateway: 'CARDS', items: [{ product_id: p, quantity: 1 }] });
    expect(ok.status).toBe(201);
    expect(ok.body.data.gateway).toBe('CARDS');
  });

  test('coupons: unknown, disabled, expired and used up are refused; a pending order holds a use', async () => {
    const p = await product(shopA, { type: 'SERVICE', price: '20.00' });
    await coupon(shopA, { code: 'old', expires_at: new Date(clock.now().getTime() - 1000) });
    await coupon(shopA, { code: 'off', enabled: false });
    const once = await coupon(shopA, { code: 'once', max_uses: 1 });
    await coupon(shopB, { code: 'bonly' });
    const before = await world();
    const cases: [string, number, string][] = [
      ['nope', 404, 'COUPON_NOT_FOUND'],
      ['off', 404, 'COUPON_NOT_FOUND'],
      ['bonly', 404, 'COUPON_NOT_FOUND'],
      ['OLD', 400, 'COUPON_EXPIRED'],
    ];
    for (const [code, status, error] of cases) {
      const r = await createOrder({
        email: 'c@example.com',
        coupon_code: code,
        items: [{ product_id: p, quantity: 1 }],
      });
      expect([code, r.status, r.body.error.code]).toEqual([code, status, error]);
    }
    expect(await world()).toEqual(before);
    const first = await createOrder({
      email: 'c@example.com',
      coupon_code: 'ONCE',
      items: [{ product_id: p, quantity: 1 }],
    });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ coupon_id: once, discount: 2, total: 18 });
    const after = await world();
    const second = await createOrder({
      email: 'c@example.com',
      coupon_code: 'once',
      items: [{ product_id: p, quantity: 1 }],
    });
    expect([second.status, second.body.error.code]).toEqual([400, 'COUPON_MAX_USES_REACHED']);
    expect(await world()).toEqual(after);
  });

  test('a blacklisted buyer is refused', async () => {
    const p = await product(shopA, { type: 'SERVICE' });
    await t.seed(shopA, { customers: [{ email: 'banned@example.com', blacklisted: true }] });
    const before = await world();
    const r = await createOrder({ email: 'BANNED@example.com', items: [{ product_id: p, quantity: 1 }] });
    expect([r.status, r.body.error.code]).toEqual([400, 'BUYER_BLOCKED']);
    expect(await world()).toEqual(before);
  });
});

describe('money, to the cent and satoshi', () => {
  const cases: {
    name: string;
    currency: string;
    prices: [string, number][];
    coupon?: Record<string, unknown>;
    tax?: [string, boolean];
    expect: Record<string, number>;
  }[] = [
    {
      name: '0.1 + 0.2',
      currency: 'USD',
      prices: [
        ['0.10', 1],
        ['0.20', 1],
      ],
      expect: { subtotal: 0.3, total: 0.3 },
    },
    {
      name: 'percentage coupon rounds half up',
      currency: 'USD',
      prices: [['9.99', 1]],
      coupon: { type: 'PERCENTAGE', value: '15' },
      expect: { subtotal: 9.99, discount: 1.5, total: 8.49 },
    },
    {
      name: 'fixed coupon never exceeds the subtotal',
      currency: 'USD',
      prices: [['3.00', 1]],
      coupon: { type: 'FIXED', value: '5', currency: 'USD' },
      expect: { discount: 3, total: 0 },
    },
    {
      name: 'exclusive tax is added',
      currency: 'USD',
      prices: [['19.99', 3]],
      tax: ['8.25', false],
      expect: { subtotal: 59.97, tax: 4.95, total: 64.92, tax_percentage: 8.25 },
    },
    {
      name: 'inclusive tax is contained',
      currency: 'EUR',
      prices: [['119.00', 1]],
      tax: ['19', true],
      expect: { subtotal: 119, tax: 19, total: 119 },
    },
    {
      name: 'JPY has no minor unit',
      currency: 'JPY',
      prices: [['1999', 1]],
      coupon: { type: 'PERCENTAGE', value: '12.5' },
      tax: ['10', false],
      expect: { subtotal: 1999, discount: 250, tax: 175, total: 1924 },
    },
    {
      name: 'BTC to the satoshi',
      currency: 'BTC',
      prices: [['0.00012345', 3]],
      coupon: { type: 'PERCENTAGE', value: '33.333' },
      expect: { subtotal: 0.00037035, discount: 0.00012345, total: 0.0002469 },
    },
  ];

  test.each(cases)('$name', async (c) => {
    const shop = await t.createShop({ name: `Money ${c.name}`, currency: c.currency });
    const key = (await t.createKey(shop, ['*'])).key;
    if (c.tax)
      await t.db
        .updateTable('shops')
        .set({ tax_rate: c.tax[0], tax_inclusive: c.tax[1] } as never)
        .where('id', '=', shop)
        .execute();
    const items = [];
    for (const [price, quantity] of c.prices)
      items.push({ product_id: await product(shop, { type: 'SERVICE', price, currency: c.currency }), quantity });
    const couponCode = c.coupon ? `m${Math.random().toString(36).slice(2, 8)}` : undefined;
    if (c.coupon) await coupon(shop, { code: couponCode, ...c.coupon });
    const res = await createOrder({ email: 'm@example.com', coupon_code: couponCode, items }, key);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ currency: c.currency, ...c.expect });
    // The exact digits travel as written: no float ever touched them.
    for (const [field, value] of Object.entries(c.expect)) expect(res.text).toContain(`"${field}":${value}`);
  });
});

describe('POST /orders/{id}/complete', () => {
  test('completes, delivers serials, mails receipt and goods, emits order:paid exactly as specified', async () => {
    const p = await product(shopA, { title: 'Game key', price: '12.50', type: 'SERIALS', serials: serials(4, 'GK') });
    const c = await coupon(shopA, { code: 'cmp10', max_uses: 5 });
    const created = await createOrder({
      email: 'buyer@example.com',
      coupon_code: 'CMP10',
      items: [{ product_id: p, quantity: 2 }],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const mailBefore = await t.db.selectFrom('outbound_emails').select('id').execute();
    const res = await complete(id, { note: 'paid by wire' });
    expect(res.status).toBe(200);
    const o = res.body.data;
    expect(o).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID', total: 22.5, gateway: 'MANUAL' });
    expect(o.items[0]).toMatchObject({ delivery_status: 'DELIVERED', delivered_items: { codes: ['GK-0', 'GK-1'] } });
    expect(o.items[0].delivered_at).toBe(clock.now().toISOString());
    const paid = (await eventsOf('order:paid')).filter((e) => e.data.uniqid === o.uniqid);
    expect(paid.map((e) => e.raw)).toEqual([
      `{"uniqid":"${o.uniqid}","customer_email":"buyer@example.com","total":22.5,"currency":"USD"}`,
    ]);
    expect((await eventsOf('order:completed')).filter((e) => e.data.id === id)).toHaveLength(1);
    const mail = await t.db
      .selectFrom('outbound_emails')
      .select(['template', 'to_address', 'text'])
      .where('id', 'not in', mailBefore.length ? mailBefore.map((m) => m.id) : ['-'])
      .orderBy('template')
      .execute();
    expect(mail.map((m) => [m.template, m.to_address])).toEqual([
      ['delivery', 'buyer@example.com'],
      ['receipt', 'buyer@example.com'],
    ]);
    expect(mail[0]!.text).toContain('GK-0');
    const row = await t.db
      .selectFrom('orders')
      .select(['note', 'completed_at'])
      .where('id', '=', id)
      .executeTakeFirst();
    expect(row?.note).toBe('paid by wire');
    // The customer's figures are computed from its paid orders (db/queries/customers.ts).
    const cust = (await customerFigures(t.db, shopA, o.customer_id))!;
    expect([Number(cust.total_spent), cust.total_orders]).toEqual([22.5, 1]);
    expect((await t.db.selectFrom('coupons').select('uses').where('id', '=', c).executeTakeFirst())?.uses).toBe(1);
    const serialRows = await t.db
      .selectFrom('product_serials')
      .select(['serial', 'status'])
      .where('product_id', '=', p)
      .orderBy('serial')
      .execute();
    expect(serialRows.map((s) => s.status)).toEqual(['claimed', 'claimed', 'available', 'available']);

    // Completing again: 400, and nothing moves.
    const before = await world();
    const again = await complete(id);
    expect([again.status, again.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
    expect(await world()).toEqual(before);
  });

  test('suppress_emails sends no mail; SERVICE and product-less FILE items await fulfillment', async () => {
    const svc = await product(shopA, { type: 'SERVICE' });
    const file = await product(shopA, { type: 'FILE' });
    const created = await createOrder({
      email: 'quiet@example.com',
      items: [
        { product_id: svc, quantity: 1 },
        { product_id: file, quantity: 1 },
      ],
    });
    const mail = (await world()).mail;
    const res = await complete(created.body.data.id, { suppress_emails: true });
    expect(res.status).toBe(200);
    expect(res.body.data.items.map((i: { delivery_status: string }) => i.delivery_status)).toEqual([
      'AWAITING_FULFILLMENT',
      'AWAITING_FULFILLMENT',
    ]);
    expect((await world()).mail).toBe(mail);
  });

  test('FILE products deliver their attachments', async () => {
    const file = await product(shopA, { type: 'FILE', title: 'Ebook' });
    const att = newId('att');
    await t.db
      .insertInto('attachments')
      .values({
        id: att,
        shop_id: shopA,
        filename: 'book.pdf',
        content_type: 'application/pdf',
        content: Buffer.from('%PDF'),
      })
      .execute();
    await t.db.insertInto('product_files').values({ shop_id: shopA, product_id: file, attachment_id: att }).execute();
    const created = await createOrder({ email: 'reader@example.com', items: [{ product_id: file, quantity: 1 }] });
    const res = await complete(created.body.data.id);
    expect(res.body.data.items[0]).toMatchObject({
      delivery_status: 'DELIVERED',
      delivered_items: { files: [{ attachment_id: att, filename: 'book.pdf' }] },
    });
  });

  test("another shop's order is INVOICE_NOT_FOUND and stays pending", async () => {
    const p = await product(shopA, { type: 'SERVICE' });
    const created = await createOrder({ email: 'x@example.com', items: [{ product_id: p, quantity: 1 }] });
    const before = await world();
    const res = await complete(created.body.data.id, {}, keyB);
    expect([res.status, res.body.error.code]).toEqual([404, 'INVOICE_NOT_FOUND']);
    const fulfil = await t.http.post(`/dev/v1/orders/${created.body.data.id}/fulfill`).set(bearer(keyB)).send({});
    expect([fulfil.status, fulfil.body.error.code]).toEqual([404, 'INVOICE_NOT_FOUND']);
    expect(await world()).toEqual(before);
  });

  test('POST /orders/{id}/fulfill runs the same pipeline; notify_customer false sends no mail', async () => {
    const p = await product(shopA, { title: 'Key', type: 'SERIALS', serials: serials(1, 'FF') });
    const created = await createOrder({ email: 'f@example.com', items: [{ product_id: p, quantity: 1 }] });
    const mail = (await world()).mail;
    const res = await t.http
      .post(`/dev/v1/orders/${created.body.data.id}/fulfill`)
      .set(bearer(keyA))
      .send({ notify_customer: false, note: 'paid in store' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
    expect(res.body.data.items[0].delivered_items).toEqual({ codes: ['FF-0'] });
    expect((await world()).mail).toBe(mail);
    const again = await t.http.post(`/dev/v1/orders/${created.body.data.id}/fulfill`).set(bearer(keyA)).send({});
    expect([again.status, again.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
  });

  test('an affiliate referral accrues commission', async () => {
    const p = await product(shopA, { type: 'SERVICE', price: '33.33' });
    await t.seed(shopA, {
      customers: [{ email: 'aff@example.com', affiliate: { code: 'AFF1', commission_percent: '15' } }],
    });
    const affiliate = await t.db
      .selectFrom('customers')
      .select('id')
      .where('email', '=', 'aff@example.com')
      .executeTakeFirstOrThrow();
    const created = await createOrder({
      email: 'ref@example.com',
      items: [{ product_id: p, quantity: 1 }],
      affiliate_code: 'AFF1',
    });
    expect([created.body.data.affiliate_customer_id, created.body.data.affiliate_code]).toEqual([affiliate.id, 'AFF1']);
    expect((await complete(created.body.data.id)).status).toBe(200);
    // One ACCRUAL entry of the commission ledger (test/affiliates/affiliates.test.ts covers the rest).
    const entries = await t.db
      .selectFrom('affiliate_commissions')
      .select(['kind', 'amount', 'order_id'])
      .where('affiliate_customer_id', '=', affiliate.id)
      .execute();
    // 15% of 33.33 = 4.9995 -> 5.00
    expect(entries.map((e) => [e.kind, Number(e.amount), e.order_id])).toEqual([['ACCRUAL', 5, created.body.data.id]]);
    const summary = await t.http.get(`/dev/v1/customers/${affiliate.id}?include_affiliate=true`).set(bearer(keyA));
    expect(summary.body.data.affiliate).toMatchObject({ balance: 5, lifetime_earnings: 5, referred_orders: 1 });
  });
});

describe('expiry', () => {
  test('a pending order past ORDER_TTL_MINUTES is voided and gives back its stock, serials and coupon use', async () => {
    const counted = await product(shopA, { type: 'SERVICE', stock: 4 });
    const keys = await product(shopA, { type: 'SERIALS', serials: serials(3, 'EX') });
    const c = await coupon(shopA, { code: 'exp1', max_uses: 1 });
    const stockOf = async (id: string) =>
      (await t.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock;
    const created = await createOrder({
      email: 'late@example.com',
      coupon_code: 'exp1',
      items: [
        { product_id: counted, quantity: 3 },
        { product_id: keys, quantity: 2 },
      ],
    });
    expect(created.status).toBe(201);
    expect([await stockOf(counted), await stockOf(keys)]).toEqual([1, 1]);
    const job = orderExpiryJob(t.db, { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl });
    clock.advance(29 * 60_000);
    expect(await job.runOnce()).toBe(0);
    clock.advance(60_000);
    expect(await job.runOnce()).toBeGreaterThanOrEqual(1);
    const row = await t.db
      .selectFrom('orders')
      .select(['status', 'payment_status'])
      .where('id', '=', created.body.data.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'VOIDED', payment_status: 'CANCELLED' });
    expect([await stockOf(counted), await stockOf(keys)]).toEqual([4, 3]);
    const serialRows = await t.db
      .selectFrom('product_serials')
      .select('status')
      .where('product_id', '=', keys)
      .execute();
    expect(serialRows.every((r) => r.status === 'available')).toBe(true);
    expect((await t.db.selectFrom('coupons').select('uses').where('id', '=', c).executeTakeFirst())?.uses).toBe(0);
    expect((await eventsOf('order:voided')).filter((e) => e.data.id === created.body.data.id)).toHaveLength(1);
    const late = await complete(created.body.data.id);
    expect([late.status, late.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
    // Voiding twice does nothing: the order is no longer pending.
    expect(await job.runOnce()).toBe(0);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('two completions of one order: exactly one wins', async () => {
    const p = await product(shopA, { title: 'Race', type: 'SERIALS', serials: serials(2, 'RC') });
    const created = await createOrder({ email: 'race@example.com', items: [{ product_id: p, quantity: 1 }] });
    const id = created.body.data.id;
    const results = await Promise.all([complete(id), complete(id), complete(id)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    const uniqid = created.body.data.uniqid;
    expect((await eventsOf('order:paid')).filter((e) => e.data.uniqid === uniqid)).toHaveLength(1);
    const attempts = await t.db.selectFrom('payment_attempts').select('id').where('order_id', '=', id).execute();
    expect(attempts).toHaveLength(1);
  });

  pgOnly('completion against refund: a refund never lands on an unpaid order', async () => {
    for (let round = 0; round < 5; round++) {
      const p = await product(shopA, { type: 'SERVICE', price: '8.00' });
      const created = await createOrder({ email: 'cr@example.com', items: [{ product_id: p, quantity: 1 }] });
      const id = created.body.data.id;
      const [done, refund] = await Promise.all([
        complete(id),
        t.http.post(`/dev/v1/orders/${id}/refund`).set(bearer(keyA)).send({}),
      ]);
      expect(done.status).toBe(200);
      const row = await t.db
        .selectFrom('orders')
        .select(['status', 'refunded'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      if (refund.status === 200) expect([row.status, Number(row.refunded)]).toEqual(['REFUNDED', 8]);
      else {
        expect([refund.status, refund.body.error.code]).toEqual([400, 'ORDER_NOT_REFUNDABLE']);
        expect([row.status, Number(row.refunded)]).toEqual(['COMPLETED', 0]);
      }
    }
  });

  pgOnly(
    '40 buyers race for the last units of a counted stock, a variant and both in one order: never oversold',
    async () => {
      // Nothing holds the product while an order is checked: the stock is taken by one conditional update at the
      // end, so this race is decided there, and must be decided the same way as when the row was locked throughout.
      // A shop of its own: 40 more requests would take shop A past its plan's rate limit.
      const shop = await t.createShop();
      const { key } = await t.createKey(shop, ['*']);
      const p = await product(shop, { title: 'Counted', type: 'SERVICE', stock: 10 });
      const v = await product(shop, {
        title: 'Sized',
        type: 'SERVICE',
        variants: [{ title: 'L', price: '3.00', stock: 6 }],
      });
      const large = (
        await t.db.selectFrom('product_variants').select('id').where('product_id', '=', v).executeTakeFirstOrThrow()
      ).id;
      const before = await world();
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          createOrder(
            {
              email: `counted${i}@race.example`,
              items:
                i % 3 === 0
                  ? [
                      { product_id: p, quantity: 1 },
                      { product_id: v, variant_id: large, quantity: 1 },
                    ]
                  : i % 3 === 1
                    ? [{ product_id: p, quantity: 2 }]
                    : [{ product_id: v, variant_id: large, quantity: 1 }],
            },
            key,
          ),
        ),
      );
      const ok = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status !== 201);
      expect(refused.every((r) => r.status === 400 && r.body.error.code === 'OUT_OF_STOCK')).toBe(true);
      // What the created orders hold, as stored (the item view names the variant by title only).
      const held = await t.db
        .selectFrom('order_items')
        .select(['product_id', 'variant_id', 'quantity'])
        .where(
          'order_id',
          'in',
          ok.map((r) => r.body.data.id as string),
        )
        .execute();
      const taken = (id: string, variant?: string) =>
        held
          .filter((i) => i.product_id === id && (variant === undefined || i.variant_id === variant))
          .reduce((n, i) => n + i.quantity, 0);
      const stock = await t.db.selectFrom('products').select('stock').where('id', '=', p).executeTakeFirstOrThrow();
      const variantStock = await t.db
        .selectFrom('product_variants')
        .select('stock')
        .where('id', '=', large)
        .executeTakeFirstOrThrow();
      // Every unit sold is a unit gone, none twice, and a refusal took nothing: what was sold plus what is left is
      // what there was; and the race ran the stock down (a refused buyer was refused because too little was left).
      expect([taken(p) + stock.stock, taken(v, large) + variantStock.stock]).toEqual([10, 6]);
      expect([0, 1]).toContain(stock.stock);
      expect(variantStock.stock).toBe(0);
      const after = await world();
      expect(after.orders - before.orders).toBe(ok.length);
    },
  );

  pgOnly('30 buyers race for the last 10 serials: at most 10 orders, no serial delivered twice', async () => {
    const p = await product(shopA, { title: 'Last ten', type: 'SERIALS', serials: serials(10, 'LT') });
    const buyers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        createOrder({ email: `buyer${i}@race.example`, items: [{ product_id: p, quantity: 1 }] }),
      ),
    );
    const ok = buyers.filter((r) => r.status === 201);
    expect(ok.length).toBe(10);
    expect(buyers.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.error?.code}`)).toEqual(
      Array.from({ length: 20 }, () => '400 OUT_OF_STOCK'),
    );
    const completed = await Promise.all(ok.map((r) => complete(r.body.data.id)));
    expect(completed.every((r) => r.status === 200)).toBe(true);
    const delivered = completed.flatMap((r) => r.body.data.items[0].delivered_items.codes as string[]);
    expect(delivered).toHaveLength(10);
    expect(new Set(delivered).size).toBe(10);
    const stock = await t.db.selectFrom('products').select('stock').where('id', '=', p).executeTakeFirstOrThrow();
    expect(stock.stock).toBe(0);
  });
});
