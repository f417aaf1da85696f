// POST /payments: a generic invoice (kind PAYMENT) with its hosted checkout url, the crypto auto-start parameters
// (rule 1), a session at a forced SESSION gateway (rule 2), the customer found or created by email, and every
// refusal leaves orders, attempts, customers and events as they were.
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

beforeAll(async () => {
  clock = new ManualClock('2026-11-22T10:00:00Z');
  t = await startTestApp({ clock, env: { CHECKOUT_BASE_URL: 'https://pay.example.com', ORDER_TTL_MINUTES: '30' } });
  // pro: its plan has nativeCryptoCheckout, which rule 1 (crypto_gateway) needs (test/store/capabilities-gates.test.ts).
  // A is a test-mode shop (rule 2 pays through SANDBOX, which only test mode offers); B is a live shop.
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', currency: 'EUR', plan: 'pro', scopes: ['payments.write'], mode: 'test' },
    b: { name: 'B' },
  }));
  await t.seed(shopA, {
    gateways: [
      { code: 'CRYPTO', kind: 'CRYPTO', coins: ['BTC', 'USDT_TRC20'] },
      { code: 'STRIPE', kind: 'HOSTED' },
      { code: 'PAYPAL', kind: 'HOSTED', active: false },
      { code: 'ACMEPAY', kind: 'SESSION' },
    ],
  });
  // Shop B has the same gateways: a gateway is looked up in the paying shop only.
  await t.seed(shopB, { gateways: [{ code: 'STRIPE', kind: 'HOSTED' }] });
});
afterAll(() => t.close());

const pay = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/payments')
    .set(bearer(key))
    .send(body as object);

const tables = ['orders', 'order_items', 'payment_attempts', 'customers', 'events'] as const;
const counts = () => rowCounts(t.db, [...tables]);

async function orderOf(uniqid: string) {
  return t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();
}

async function eventsOf(shopId: string, type: string) {
  const rows = await t.db
    .selectFrom('events')
    .select(['data'])
    .where('shop_id', '=', shopId)
    .where('type', '=', type)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => JSON.parse(r.data) as Record<string, unknown>);
}

test('creates a PENDING developer invoice with its checkout urls and emits payment:created', async () => {
  const res = await pay({ title: 'Pro License', value: 19.99, currency: 'USD' });
  expect(res.status).toBe(201);
  const data = res.body.data;
  expect(data).toEqual({
    uniqid: expect.any(String),
    url: `https://pay.example.com/invoice/${data.uniqid}`,
    url_branded: `https://pay.example.com/invoice/${data.uniqid}?shop=${shopA}`,
    total: 19.99,
    currency: 'USD',
    status: 'PENDING',
    created_at: Date.parse('2026-11-22T10:00:00Z') / 1000,
  });
  expect(res.text).toContain('"total":19.99');
  const order = await orderOf(data.uniqid);
  expect(order).toMatchObject({
    shop_id: shopA,
    kind: 'PAYMENT',
    status: 'PENDING',
    payment_status: 'PENDING',
    is_developer_invoice: true,
    developer_title: 'Pro License',
    currency: 'USD',
    gateway: null,
    customer_id: null,
    customer_email: null,
  });
  expect(Number(order.total)).toBe(19.99);
  expect(Number(order.subtotal)).toBe(19.99);
  expect(order.expires_at?.toISOString()).toBe('2026-11-22T10:30:00.000Z');
  const items = await t.db.selectFrom('order_items').select('id').where('order_id', '=', order.id).execute();
  expect(items).toHaveLength(0);
  const events = await eventsOf(shopA, 'payment:created');
  expect(events.at(-1)).toEqual(data);
});

test('amounts are kept exactly; more decimals than the currency has are refused, not rounded', async () => {
  const jpy = await pay({ title: 'Yen', value: 1200, currency: 'JPY' });
  expect(jpy.status).toBe(201);
  expect(jpy.body.data.total).toBe(1200);
  const kwd = await pay({ title: 'Dinar', value: 1.234, currency: 'KWD' });
  expect(kwd.status).toBe(201);
  expect(kwd.text).toContain('"total":1.234');
  const big = await pay({ title: 'Big', value: 999999.99, currency: 'USD' });
  expect(big.status).toBe(201);
  expect(big.text).toContain('"total":999999.99');

  const before = await counts();
  for (const [value, currency] of [
    [19.999, 'USD'],
    [1.5, 'JPY'],
    [0.123456789, 'BTC'],
  ] as const) {
    const res = await pay({ title: 'Too precise', value, currency });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'value', message: expect.stringContaining('decimal') }]);
  }
  expect(await counts()).toEqual(before);
});

test('a value of 0, a negative value or one above the maximum is refused by the contract', async () => {
  const before = await counts();
  for (const value of [0, -1, 1000000.01]) {
    const res = await pay({ title: 'x', value, currency: 'USD' });
    expect(res.status).toBe(422);
  }
  expect(await counts()).toEqual(before);
});

test('with an email the customer is found or created (lower-cased), and customer:created is emitted once', async () => {
  const customersBefore = (await eventsOf(shopA, 'customer:created')).length;
  const first = await pay({ title: 'One', value: 5, currency: 'EUR', email: 'Grace@Example.com' });
  expect(first.status).toBe(201);
  const second = await pay({ title: 'Two', value: 6, currency: 'EUR', email: 'grace@example.com' });
  expect(second.status).toBe(201);
  const a = await orderOf(first.body.data.uniqid);
  const b = await orderOf(second.body.data.uniqid);
  expect(a.customer_email).toBe('grace@example.com');
  expect(a.customer_id).toMatch(/^cus_/);
  expect(b.customer_id).toBe(a.customer_id);
  const customer = await t.db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', a.customer_id!)
    .executeTakeFirstOrThrow();
  expect(customer).toMatchObject({ shop_id: shopA, email: 'grace@example.com', wallet_currency: 'EUR' });
  const created = await eventsOf(shopA, 'customer:created');
  expect(created).toHaveLength(customersBefore + 1);
  expect(created.at(-1)).toMatchObject({ id: a.customer_id, email: 'grace@example.com' });
  // The same email in shop B is another customer.
  const other = await pay({ title: 'B', value: 5, currency: 'USD', email: 'grace@example.com' }, keyB);
  expect(other.status).toBe(201);
  const c = await orderOf(other.body.data.uniqid);
  expect(c.customer_id).not.toBe(a.customer_id);
  expect(c.shop_id).toBe(shopB);
});

test('a forced HOSTED gateway is recorded on the invoice; url has no auto-start parameters', async () => {
  const res = await pay({ title: 'Card', value: 10, currency: 'USD', gateway: 'STRIPE' });
  expect(res.status).toBe(201);
  expect(res.body.data.url).toBe(`https://pay.example.com/invoice/${res.body.data.uniqid}`);
  expect(res.body.data).not.toHaveProperty('checkout_url');
  expect(res.body.data).not.toHaveProperty('session_id');
  expect((await orderOf(res.body.data.uniqid)).gateway).toBe('STRIPE');
});

test('rule 1: a CRYPTO gateway with one of its coins opens checkout on that coin', async () => {
  const res = await pay({ title: 'Coin', value: 25, currency: 'USD', gateway: 'CRYPTO', crypto_gateway: 'USDT_TRC20' });
  expect(res.status).toBe(201);
  const { uniqid } = res.body.data;
  const url = new URL(res.body.data.url);
  expect(`${url.origin}${url.pathname}`).toBe(`https://pay.example.com/invoice/${uniqid}`);
  expect(Object.fromEntries(url.searchParams)).toEqual({
    selected_gateway: 'USDT_TRC20',
    auto_start_gateway: '1',
    auto_start_crypto: '1',
  });
  const branded = new URL(res.body.data.url_branded);
  expect(Object.fromEntries(branded.searchParams)).toEqual({
    selected_gateway: 'USDT_TRC20',
    auto_start_gateway: '1',
    auto_start_crypto: '1',
    shop: shopA,
  });
  const order = await orderOf(uniqid);
  expect(order.gateway).toBe('CRYPTO');
  expect(order.blockchain).toBe('USDT_TRC20');
  // A CRYPTO gateway without crypto_gateway: the buyer picks the coin on the hosted page.
  const plain = await pay({ title: 'Coin', value: 25, currency: 'USD', gateway: 'CRYPTO' });
  expect(plain.status).toBe(201);
  expect(plain.body.data.url).toBe(`https://pay.example.com/invoice/${plain.body.data.uniqid}`);
});

test('rule 1 refusals: crypto_gateway without a crypto gateway, with another kind, or a coin it lacks', async () => {
  const before = await counts();
  for (const body of [
    { crypto_gateway: 'BTC' },
    { crypto_gateway: 'BTC', gateway: 'STRIPE' },
    { crypto_gateway: 'DOGE', gateway: 'CRYPTO' },
    { crypto_gateway: 'btc', gateway: 'CRYPTO' },
  ]) {
    const res = await pay({ title: 'x', value: 1, currency: 'USD', ...body });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'crypto_gateway', message: expect.any(String) }]);
  }
  expect(await counts()).toEqual(before);
});

test('rule 2: SANDBOX starts a session, records a payment attempt and returns checkout_url and session_id', async () => {
  const res = await pay({
    title: 'Session',
    value: 42.5,
    currency: 'USD',
    gateway: 'SANDBOX',
    email: 'sam@example.com',
  });
  expect(res.status).toBe(201);
  const data = res.body.data;
  expect(data.session_id).toMatch(/^sbx_[0-9a-f]{32}$/);
  expect(data.checkout_url).toBe(`${t.config.publicUrl}/sandbox/checkout/${data.session_id}`);
  expect(data.url).toBe(`https://pay.example.com/invoice/${data.uniqid}`);
  const order = await orderOf(data.uniqid);
  expect(order.gateway).toBe('SANDBOX');
  const attempts = await t.db.selectFrom('payment_attempts').selectAll().where('order_id', '=', order.id).execute();
  expect(attempts).toHaveLength(1);
  expect(attempts[0]).toMatchObject({
    shop_id: shopA,
    gateway: 'SANDBOX',
    session_id: data.session_id,
    status: 'PENDING',
    paid_at: null,
  });
  expect(Number(attempts[0]!.amount)).toBe(42.5);
  const event = (await eventsOf(shopA, 'payment:created')).at(-1);
  expect(event).toEqual(data);
  // Each payment gets its own session.
  const again = await pay({ title: 'Session', value: 42.5, currency: 'USD', gateway: 'SANDBOX' });
  expect(again.body.data.session_id).not.toBe(data.session_id);
});

test('GATEWAY_NOT_AVAILABLE: unknown, inactive, another shop’s, and a session gateway with no integration', async () => {
  const before = await counts();
  for (const [gateway, key] of [
    ['NOPE', keyA],
    ['PAYPAL', keyA],
    ['ACMEPAY', keyA],
    ['CRYPTO', keyB],
    ['sandbox', keyA],
  ] as const) {
    const res = await pay({ title: 'x', value: 1, currency: 'USD', gateway, email: 'new-buyer@example.com' }, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('GATEWAY_NOT_AVAILABLE');
    expect(res.body.error.message).toContain(gateway);
  }
  expect(await counts()).toEqual(before);
});

test('a live shop never offers SANDBOX: GATEWAY_NOT_AVAILABLE, nothing written', async () => {
  const before = await counts();
  const res = await pay({ title: 'x', value: 1, currency: 'USD', gateway: 'SANDBOX', email: 'live@example.com' }, keyB);
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('GATEWAY_NOT_AVAILABLE');
  expect(res.body.error.message).toContain('SANDBOX');
  expect(await counts()).toEqual(before);
});

test('a SANDBOX gateway switched off is not available', async () => {
  const shop = await t.createShop({ name: 'Off', mode: 'test' });
  const key = (await t.createKey(shop, ['payments.write'])).key;
  await t.seed(shop, { gateways: [{ code: 'SANDBOX', kind: 'SESSION', active: false }] });
  const before = await counts();
  const res = await pay({ title: 'x', value: 1, currency: 'USD', gateway: 'SANDBOX' }, key);
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('GATEWAY_NOT_AVAILABLE');
  expect(await counts()).toEqual(before);
});

test('needs payments.write; the body is validated against the contract', async () => {
  const readOnly = (await t.createKey(shopA, ['payments.read', 'orders.write'])).key;
  const before = await counts();
  const forbidden = await pay({ title: 'x', value: 1, currency: 'USD' }, readOnly);
  expect(forbidden.status).toBe(403);
  for (const body of [
    { value: 1, currency: 'USD' },
    { title: 'x', currency: 'USD' },
    { title: 'x', value: 1, currency: 'usd' },
    { title: 'x', value: '1', currency: 'USD' },
    { title: 'x', value: 1, currency: 'USD', email: 'not-an-email' },
    { title: 'x', value: 1, currency: 'USD', extra: true },
  ]) {
    expect((await pay(body)).status).toBe(422);
  }
  expect(await counts()).toEqual(before);
});

test('an Idempotency-Key replays the payment instead of creating a second one', async () => {
  const body = { title: 'Once', value: 3, currency: 'USD', gateway: 'SANDBOX' };
  const first = await t.http.post('/dev/v1/payments').set(bearer(keyA)).set('Idempotency-Key', 'pay-once').send(body);
  expect(first.status).toBe(201);
  const before = await counts();
  const second = await t.http.post('/dev/v1/payments').set(bearer(keyA)).set('Idempotency-Key', 'pay-once').send(body);
  expect(second.status).toBe(201);
  expect(second.body.data).toEqual(first.body.data);
  expect(await counts()).toEqual(before);
});
