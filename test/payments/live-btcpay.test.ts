// Live payments through BTCPay Server, end to end (issue 37): our API and worker against the local BTCPay fake over
// real HTTP, the fake posting its signed webhooks to our listening server. Every BTCPay webhook is a "look again"
// notice: the worker reads the invoice. What each case changes is asserted, and that nothing else changed (a
// snapshot of every table); the fake's violations of BTCPay's pinned Greenfield document are asserted empty at the end.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Decimal from 'decimal.js';
import { createBtcpayProvider } from '../../src/integrations/btcpay';
import { createStripeProvider } from '../../src/integrations/stripe';
import { createPayPalProvider } from '../../src/integrations/paypal';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { createBtcpayFake, type BtcpayFake } from '../fakes/btcpay';
import { snapshotTables } from '../helpers/db-snapshot';
import { attemptsOfOrder, eventCount } from '../helpers/order-rows';
import request from 'supertest';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

// The app's and the worker's clock: it moves only when a case moves it (the reconciler's 3 minutes).
const clock = new ManualClock('2026-11-28T10:00:00Z');
// A shorter timeout than the default 10 s so the 'timeout' fault answers in 3 s (not shorter: the fake checks its first
// requests against the pinned document, which takes a while to compile).
const providers = [createStripeProvider(), createPayPalProvider(), createBtcpayProvider({ timeoutMs: 3000 })];

let t: TestApp;
let server: Server;
let base: string;
let fake: BtcpayFake;
let worker: Worker;
let shop: string;
let key: string;
let credentials: Record<string, string>;

const webhookRoute = (shopId: string, code = 'btcpay') => `${base}/webhooks/gateways/${code}/${shopId}`;

async function connect(shopId: string, livemode: boolean): Promise<Record<string, string>> {
  const creds = fake.createAccount({ livemode, webhookUrl: webhookRoute(shopId) });
  await connectShopGateway(
    t.db,
    t.config,
    clock,
    {
      shopId,
      code: 'BTCPAY',
      fields: {
        url: creds.BTCPAY_URL!,
        api_key: creds.BTCPAY_API_KEY!,
        store_id: creds.BTCPAY_STORE_ID!,
        webhook_secret: creds.BTCPAY_WEBHOOK_SECRET!,
      },
    },
    providers,
  );
  return creds;
}

const pay = (body: Record<string, unknown>, apiKey = key) =>
  t.http
    .post('/dev/v1/payments')
    .set(bearer(apiKey))
    .send({
      title: 'Pro License',
      value: 19.99,
      currency: 'USD',
      email: 'buyer@example.com',
      gateway: 'BTCPAY',
      ...body,
    });

async function orderOf(uniqid: string) {
  return t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();
}
const attemptsOf = (orderId: string) => attemptsOfOrder(t.db, orderId);
const eventsOf = (type: string, uniqid: string) => eventCount(t.db, type, uniqid);
async function gatewayEventRows(shopId: string) {
  return t.db.selectFrom('gateway_events').select(['event_id', 'status']).where('shop_id', '=', shopId).execute();
}
/** Every table, as comparable text: "nothing was written" is two equal snapshots. */
const snapshot = () => snapshotTables(t.db);

/** A BTCPAY payment opened through the API: its invoice and the fake's invoice id. */
async function opened(body: Record<string, unknown> = {}) {
  const res = await pay(body);
  expect(res.status).toBe(201);
  const order = await orderOf(res.body.data.uniqid as string);
  return { res, order, sessionId: res.body.data.session_id as string };
}

beforeAll(async () => {
  fake = await createBtcpayFake();
  t = await startTestApp({ clock, gatewayProviders: providers });
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  worker = await createWorker(t.db, t.config, t.logger, clock, providers);
  shop = await t.createShop({ mode: 'test', plan: 'pro' });
  key = (await t.createKey(shop, ['*'])).key;
  credentials = await connect(shop, false);
});
afterAll(async () => {
  await fake?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await t?.close();
});
afterEach(async () => {
  await fake.idle();
  expect(fake.violations).toEqual([]);
});

test('1. a BTCPAY payment opens a BTCPay invoice on BTC-LN; paid, its webhooks and a drain complete the invoice once', async () => {
  const { res, order, sessionId } = await opened({ crypto_gateway: 'BTC-LN' });
  expect(res.body.data.checkout_url).toBe(`${fake.baseUrl}/i/${sessionId}`);
  const session = fake.session(sessionId)!;
  expect(session).toMatchObject({ amount: '19.99', currency: 'USD', state: 'open', livemode: false });
  const [attempt] = await attemptsOf(order.id);
  expect(attempt).toMatchObject({ gateway: 'BTCPAY', session_id: sessionId, status: 'PENDING' });
  expect(session.attemptId).toBe(attempt!.id);
  expect(order.status).toBe('PENDING');
  const created = fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/invoices'));
  expect(created.length).toBeGreaterThan(0);

  await fake.pay(sessionId);
  // The webhooks are queued, not applied: the order is still pending until the worker runs.
  expect((await orderOf(order.uniqid)).status).toBe('PENDING');
  const queued = await gatewayEventRows(shop);
  const sent = fake.webhooks().filter((w) => w.body.includes(sessionId));
  expect(sent.map((w) => w.type)).toEqual([
    'InvoiceCreated',
    'InvoiceReceivedPayment',
    'InvoicePaymentSettled',
    'InvoiceSettled',
  ]);
  for (const w of sent) expect(queued.map((q) => q.event_id)).toContain(w.eventId);
  // The invoice opened on the coin asked for: the payment came over Lightning.
  expect((JSON.parse(sent[1]!.body) as { paymentMethodId: string }).paymentMethodId).toBe('BTC-LN');

  await worker.drain();
  const paid = await orderOf(order.uniqid);
  expect(paid).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID', gateway: 'BTCPAY' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
  const after = await attemptsOf(order.id);
  expect(after).toHaveLength(1);
  expect(after[0]).toMatchObject({ status: 'PAID', payment_ref: sessionId, flag: null, return_status: null });

  // A second drain changes nothing.
  const before = await snapshot();
  await worker.drain();
  expect(await snapshot()).toEqual(before);
  const read = await t.http.get(`/dev/v1/payments/${order.uniqid}`).set(bearer(key));
  expect(read.status).toBe(200);
  expect(read.body.data.status).toBe('PAID');
});

test('2. one webhook resent 5 times out of order and 10 times at once: one completion, one inbox row per event', async () => {
  const { order, sessionId } = await opened();
  await fake.pay(sessionId);
  const sent = fake.webhooks().filter((w) => w.body.includes(sessionId));
  expect(sent).toHaveLength(4); // created, received, payment settled, settled
  const settled = sent.find((w) => w.type === 'InvoiceSettled')!;
  // Out of order: the settling event first, then the earlier ones, five rounds.
  for (let i = 0; i < 5; i++) {
    for (const w of [...sent].reverse()) expect(await fake.resend(w.eventId)).toBe(200);
  }
  const statuses = await Promise.all(Array.from({ length: 10 }, () => fake.resend(settled.eventId)));
  expect(statuses).toEqual(Array(10).fill(200));
  await worker.drain();
  await Promise.all([worker.drain(), worker.drain()]);

  expect(await orderOf(order.uniqid)).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
  expect(await eventsOf('order:created', order.uniqid)).toBeLessThanOrEqual(1);
  const rows = await gatewayEventRows(shop);
  for (const w of sent) expect(rows.filter((r) => r.event_id === w.eventId)).toHaveLength(1);
  expect((await attemptsOf(order.id)).map((a) => a.status)).toEqual(['PAID']);
});

test('3. the webhooks lost: 3 minutes later on the clock, the reconciler reads the invoice and completes it, once', async () => {
  const { order, sessionId } = await opened();
  const inboxBefore = (await gatewayEventRows(shop)).length;
  await fake.pay(sessionId, { webhooks: false });
  expect(fake.session(sessionId)!.state).toBe('paid');
  await worker.drain();
  // Not yet due: the session is younger than 3 minutes.
  expect((await orderOf(order.uniqid)).status).toBe('PENDING');
  clock.advance(3 * 60_000 + 1_000);
  await worker.drain();
  expect(await orderOf(order.uniqid)).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
  expect((await attemptsOf(order.id)).map((a) => a.status)).toEqual(['PAID']);
  expect((await gatewayEventRows(shop)).length).toBe(inboxBefore);
  clock.advance(60 * 60_000);
  await worker.drain();
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
});

test('5. a partial payment leaves the invoice PENDING and payable; the attempt records what arrived', async () => {
  const { order, sessionId } = await opened();
  await fake.pay(sessionId, { amount: '5.00' });
  expect(fake.session(sessionId)!.state).toBe('partial');
  await worker.drain();
  expect(await orderOf(order.uniqid)).toMatchObject({ status: 'PENDING', payment_status: 'PENDING' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(0);
  const [attempt] = await attemptsOf(order.id);
  expect(attempt).toMatchObject({ status: 'PENDING', paid_currency: 'USD' });
  expect(Number(attempt!.paid_amount)).toBe(5);
  // The rest paid: it completes.
  await fake.pay(sessionId);
  await worker.drain();
  expect(await orderOf(order.uniqid)).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
});

describe('6. BTCPay down when the session starts', () => {
  // What the core answers, checked without the contract client (see the next test for why).
  test.each(['server-error', 'timeout'] as const)(
    'POST /payments (%s): 502 GATEWAY_UNAVAILABLE with Retry-After, nothing written',
    async (fault) => {
      const before = await snapshot();
      const invoicesBefore = fake.sessions().length;
      fake.failNext(fault);
      const res = await request(t.app)
        .post('/dev/v1/payments')
        .set(bearer(key))
        .send({ title: 'Pro License', value: 19.99, currency: 'USD', email: 'buyer@example.com', gateway: 'BTCPAY' });
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('GATEWAY_UNAVAILABLE');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.stringify(res.body)).not.toContain(credentials.BTCPAY_API_KEY!);
      expect(await snapshot()).toEqual(before);
      expect(fake.sessions().length).toBe(invoicesBefore);
    },
  );

  // The contract declares the 502 (GatewayUnavailableWrite): the contract client checks the answer against it.
  it('POST /payments with BTCPay down: the 502 answer matches openapi.yaml', async () => {
    fake.failNext('server-error');
    const res = await pay({});
    expect(res.status).toBe(502);
  });

  test('the hosted checkout form: a 502 page, no attempt', async () => {
    const invoice = await pay({ gateway: undefined });
    expect(invoice.status).toBe(201);
    const order = await orderOf(invoice.body.data.uniqid as string);
    const before = await snapshot();
    fake.failNext('server-error');
    const res = await fetch(`${base}/invoice/${order.uniqid}/pay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'gateway=BTCPAY',
      redirect: 'manual',
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await snapshot()).toEqual(before);
    expect(await attemptsOf(order.id)).toEqual([]);
    // BTCPay back: the same form opens the invoice at the fake.
    const again = await fetch(`${base}/invoice/${order.uniqid}/pay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'gateway=BTCPAY',
      redirect: 'manual',
    });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toMatch(new RegExp(`^${fake.baseUrl}/i/`));
    expect(await attemptsOf(order.id)).toHaveLength(1);
  });
});

describe('7. webhooks that are not BTCPay’s for this shop change nothing', () => {
  let sessionId: string;
  let eventId: string;
  let other: string;
  beforeAll(async () => {
    ({ sessionId } = await opened());
    fake.holdWebhooks(true);
    await fake.pay(sessionId, { webhooks: true });
    eventId = fake.webhooks().find((w) => w.body.includes(sessionId) && w.type === 'InvoiceSettled')!.eventId;
    other = await t.createShop({ mode: 'test', plan: 'pro' });
    await connect(other, false);
  });
  afterAll(() => {
    fake.holdWebhooks(false);
  });

  test('a bad signature: 400, nothing written', async () => {
    const before = await snapshot();
    expect(await fake.resend(eventId, { tamper: 'bad-signature' })).toBe(400);
    expect(await snapshot()).toEqual(before);
  });

  test('an exact replay of signed bytes: accepted once, the replay deduplicated', async () => {
    expect(await fake.resend(eventId)).toBe(200);
    const after = await snapshot();
    expect(await fake.resend(eventId, { tamper: 'stale' })).toBe(200);
    expect(await snapshot()).toEqual(after);
    expect((await gatewayEventRows(shop)).filter((r) => r.event_id === eventId)).toHaveLength(1);
  });

  test("a genuine webhook posted to another shop's route: 400 (its secret does not verify it), nothing written", async () => {
    const w = fake.webhooks().find((x) => x.eventId === eventId)!;
    const before = await snapshot();
    const res = await fetch(webhookRoute(other), { method: 'POST', headers: w.headers, body: w.body });
    expect(res.status).toBe(400);
    expect(await snapshot()).toEqual(before);
  });

  test('an unknown provider code or shop: 404, nothing written', async () => {
    const w = fake.webhooks().find((x) => x.eventId === eventId)!;
    const before = await snapshot();
    for (const url of [webhookRoute(shop, 'acmepay'), webhookRoute('shop_nope'), webhookRoute(shop, 'stripe')]) {
      const res = await fetch(url, { method: 'POST', headers: w.headers, body: w.body });
      expect(res.status).toBe(404);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('8. mode walls', () => {
  test("BTCPay has no test/live keys: a test shop's webhook sent to the live shop's route is refused, nothing changes", async () => {
    const live = (
      await t.db.selectFrom('shops').select('live_shop_id').where('id', '=', shop).executeTakeFirstOrThrow()
    ).live_shop_id!;
    const liveCreds = await connect(live, true);
    expect(liveCreds.BTCPAY_STORE_ID).not.toBe(credentials.BTCPAY_STORE_ID);
    const { sessionId } = await opened();
    await fake.pay(sessionId);
    const w = fake.webhooks().find((x) => x.body.includes(sessionId) && x.type === 'InvoiceSettled')!;
    const before = await snapshot();
    const res = await fetch(webhookRoute(live), { method: 'POST', headers: w.headers, body: w.body });
    expect(res.status).toBe(400);
    expect(await snapshot()).toEqual(before);
    await worker.drain();
  });
});

/** The hosted checkout's BTCPAY button: 303 to the fake's invoice page, whose id is returned. */
async function checkoutForm(uniqid: string): Promise<string> {
  const res = await fetch(`${base}/invoice/${uniqid}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'gateway=BTCPAY',
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  const m = new RegExp(`^${fake.baseUrl}/i/([A-Za-z0-9]+)$`).exec(res.headers.get('location') ?? '');
  expect(m).not.toBeNull();
  return m![1]!;
}

test('1b. an order of a SERIALS product paid through the hosted checkout form: one serial delivered, once', async () => {
  const { products } = await t.seed(shop, {
    products: [{ title: 'Serial game', type: 'SERIALS', price: '4.99', serials: ['SER-A', 'SER-B', 'SER-C'] }],
  });
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', title: 'Serial order', items: [{ product_id: products[0]!, quantity: 1 }] });
  expect(created.status).toBe(201);
  const uniqid = created.body.data.uniqid as string;
  const sessionId = await checkoutForm(uniqid);
  expect(fake.session(sessionId)).toMatchObject({ amount: '4.99', currency: 'USD', state: 'open' });
  await fake.pay(sessionId);
  await worker.drain();
  const order = await orderOf(uniqid);
  expect(order).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID', gateway: 'BTCPAY' });
  const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
  expect(items).toHaveLength(1);
  expect(items[0]!.delivery_status).toBe('DELIVERED');
  const raw: unknown = items[0]!.delivered_items;
  const deliveredText = typeof raw === 'string' ? raw : JSON.stringify(raw);
  // Exactly one of the product's serials went to this buyer.
  expect(['SER-A', 'SER-B', 'SER-C'].filter((serial) => deliveredText.includes(serial))).toHaveLength(1);
  expect(await eventsOf('order:paid', uniqid)).toBe(1);

  // The settling webhook again, and a drain: nothing more is delivered.
  const settled = fake.webhooks().find((w) => w.body.includes(sessionId) && w.type === 'InvoiceSettled')!;
  expect(await fake.resend(settled.eventId)).toBe(200);
  await worker.drain();
  const after = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
  expect(after).toEqual(items);
  expect(await eventsOf('order:paid', uniqid)).toBe(1);
  expect(await orderOf(uniqid)).toEqual(order);
});

test('4. two BTCPay invoices of one order both paid: one completion; the second flagged DUPLICATE and refunded once', async () => {
  const { order, sessionId: first } = await opened();
  const second = await checkoutForm(order.uniqid);
  expect(second).not.toBe(first);
  await fake.pay(first);
  await fake.pay(second);
  await worker.drain();
  expect(await orderOf(order.uniqid)).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
  const rows = await attemptsOf(order.id);
  expect(rows).toHaveLength(2);
  const winner = rows.find((a) => a.flag === null)!;
  const loser = rows.find((a) => a.flag !== null)!;
  expect(winner).toMatchObject({ status: 'PAID', return_status: null });
  expect(loser).toMatchObject({ flag: 'DUPLICATE' });
  // The drain above already gave the money back, or the next one does.
  await worker.drain();
  const returned = (await attemptsOf(order.id)).find((a) => a.id === loser.id)!;
  expect(returned.return_status).toBe('REFUNDED');
  const refunds = fake.refunds(loser.payment_ref!);
  expect(refunds).toHaveLength(1);
  expect(refunds[0]!.currency).toBe('USD');
  expect(new Decimal(refunds[0]!.amount).equals('19.99')).toBe(true);
  expect(fake.refunds(winner.payment_ref!)).toEqual([]);
  // BTCPay has no idempotency header: our attempt-derived refund id travels in the pull payment's description, so a
  // later pass finds it instead of making a second one.
  const pulls = fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pull-payments'));
  clock.advance(60 * 60_000);
  await worker.drain();
  expect(fake.refunds(loser.payment_ref!)).toHaveLength(1);
  expect(fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pull-payments'))).toEqual(pulls);
  expect(await eventsOf('order:paid', order.uniqid)).toBe(1);
});

/** An order paid in full through BTCPay, settled by a drain: its row and its BTCPay invoice (the refunds' ref). */
async function paidOrder(value = 19.99) {
  const { order, sessionId } = await opened({ value });
  await fake.pay(sessionId);
  await worker.drain();
  const paid = await orderOf(order.uniqid);
  expect(paid).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
  return { order: paid, invoiceId: sessionId };
}
const refund = (orderId: string, body: Record<string, string>, idempotencyKey: string) =>
  t.http.post(`/dev/v1/orders/${orderId}/refund`).set(bearer(key)).set('Idempotency-Key', idempotencyKey).send(body);
const refundRows = (orderId: string) =>
  t.db.selectFrom('refunds').selectAll().where('order_id', '=', orderId).orderBy('created_at').orderBy('id').execute();
/** Refunds asked of BTCPay (POST …/invoices/{id}/refund makes a pull payment). */
const refundCalls = () => fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/refund')).length;

interface PullPayment {
  id: string;
  name: string;
  description: string;
  amount: string;
  currency: string;
}
/** The store's pull payments as BTCPay's own API lists them: the name and description our refund id travels in. */
async function pullPayments(): Promise<PullPayment[]> {
  const res = await fetch(
    `${fake.baseUrl}/api/v1/stores/${credentials.BTCPAY_STORE_ID}/pull-payments?includeArchived=true`,
    { headers: { Authorization: `token ${credentials.BTCPAY_API_KEY}` } },
  );
  expect(res.status).toBe(200);
  return (await res.json()) as PullPayment[];
}

describe('9. refunds through BTCPay (a pull payment the buyer claims)', () => {
  test('partial then full through POST /orders/{id}/refund; a replay makes no second pull payment; too much is refused', async () => {
    const { order, invoiceId } = await paidOrder();
    const [attempt] = await attemptsOf(order.id);

    const partial = await refund(order.id, { amount: '5.00', reason: 'Changed mind' }, 'btc-refund-1');
    expect(partial.status).toBe(200);
    expect(partial.headers['idempotency-status']).toBe('created');
    expect(partial.body.data.message).toBe('Refunded 5.00 USD; 14.99 USD remains refundable.');
    expect(await orderOf(order.uniqid)).toMatchObject({
      status: 'PARTIALLY_REFUNDED',
      payment_status: 'PARTIALLY_REFUNDED',
    });
    expect(new Decimal((await orderOf(order.uniqid)).refunded).equals('5')).toBe(true);
    // A payment made through POST /payments is read back through GET /payments/{uniqid}: its status is the order's.
    const read = await t.http.get(`/dev/v1/payments/${order.uniqid}`).set(bearer(key));
    expect(read.status).toBe(200);
    expect(read.body.data.status).toBe('PARTIALLY_REFUNDED');

    // The same request again (same key, same body): the stored answer, and BTCPay is not asked again.
    const calls = refundCalls();
    const replay = await refund(order.id, { amount: '5.00', reason: 'Changed mind' }, 'btc-refund-1');
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.body).toEqual(partial.body);
    expect(refundCalls()).toBe(calls);
    expect(fake.refunds(invoiceId)).toHaveLength(1);

    // More than the 14.99 that remains: refused before BTCPay is asked. Only bookkeeping is written: the refusal's
    // audit line and, under its Idempotency-Key, the stored 400 a retry gets back.
    const bookkeeping = (table: string) => table === 'audit_entries' || table === 'idempotency_keys';
    const before = await snapshotTables(t.db, { skipTables: bookkeeping });
    const requestsBefore = fake.requests.length;
    const over = await refund(order.id, { amount: '15.00' }, 'btc-refund-over');
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('REFUND_EXCEEDS_REMAINING');
    expect(await snapshotTables(t.db, { skipTables: bookkeeping })).toEqual(before);
    expect(fake.requests.length).toBe(requestsBefore);

    // No amount: everything that remains.
    const full = await refund(order.id, {}, 'btc-refund-2');
    expect(full.status).toBe(200);
    expect(full.body.data.message).toBe('Refunded 14.99 USD; the order is fully refunded.');
    const refunded = await orderOf(order.uniqid);
    expect(refunded).toMatchObject({ status: 'REFUNDED', payment_status: 'REFUNDED' });
    expect(new Decimal(refunded.refunded).equals('19.99')).toBe(true);
    expect(await eventsOf('order:refunded', order.uniqid)).toBe(2);
    const readFull = await t.http.get(`/dev/v1/payments/${order.uniqid}`).set(bearer(key));
    expect(readFull.body.data.status).toBe('REFUNDED');

    // BTCPay holds exactly those two pull payments, in the invoice's currency, each naming our refund id and the
    // invoice in its description, under BTCPay's own default name for a refund.
    const atBtcpay = fake.refunds(invoiceId);
    expect(atBtcpay.map((r) => [new Decimal(r.amount).toFixed(2), r.currency])).toEqual([
      ['5.00', 'USD'],
      ['14.99', 'USD'],
    ]);
    const rows = await refundRows(order.id);
    expect(rows).toHaveLength(2);
    const byAmount = [...rows].sort((x, y) => new Decimal(x.amount).comparedTo(y.amount));
    expect(byAmount.map((r) => [new Decimal(r.amount).toFixed(2), r.gateway, r.attempt_id])).toEqual([
      ['5.00', 'BTCPAY', attempt!.id],
      ['14.99', 'BTCPAY', attempt!.id],
    ]);
    expect(byAmount.map((r) => r.provider_refund_id)).toEqual(atBtcpay.map((r) => r.providerRefundId));
    expect(byAmount[0]!.reason).toBe('Changed mind');
    const listed = await pullPayments();
    for (const row of byAmount) {
      const pp = listed.find((p) => p.id === row.provider_refund_id)!;
      expect(pp.name).toBe(`Refund ${invoiceId}`);
      expect(pp.description.startsWith(`Refund ${row.id} of invoice ${invoiceId}`)).toBe(true);
    }
    expect(listed.find((p) => p.id === byAmount[0]!.provider_refund_id)!.description).toBe(
      `Refund ${byAmount[0]!.id} of invoice ${invoiceId}: Changed mind`,
    );
  });

  // BTCPay's timeout takes the adapter's 3 s.
  test.each(['timeout', 'server-error', 'garbage'] as const)(
    'BTCPay down at refund (%s): 502 GATEWAY_UNAVAILABLE with Retry-After, nothing written, nothing at BTCPay; then once',
    async (fault) => {
      const { order, invoiceId } = await paidOrder(7.5);
      const before = await snapshot();
      fake.failNext(fault);
      const down = await refund(order.id, { amount: '3.00' }, `btc-down-${fault}`);
      expect(down.status).toBe(502);
      expect(down.body.error.code).toBe('GATEWAY_UNAVAILABLE');
      expect(down.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.stringify(down.body)).not.toContain(credentials.BTCPAY_API_KEY!);
      expect(await snapshot()).toEqual(before);
      expect(fake.refunds(invoiceId)).toEqual([]);

      // BTCPay back: the same request (its key was released with the 502) refunds, once.
      const ok = await refund(order.id, { amount: '3.00' }, `btc-down-${fault}`);
      expect(ok.status).toBe(200);
      expect(ok.headers['idempotency-status']).toBe('created');
      const again = await refund(order.id, { amount: '3.00' }, `btc-down-${fault}`);
      expect(again.headers['idempotency-status']).toBe('cached');
      expect(fake.refunds(invoiceId).map((r) => new Decimal(r.amount).toFixed(2))).toEqual(['3.00']);
      expect((await refundRows(order.id)).map((r) => r.provider_refund_id)).toEqual(
        fake.refunds(invoiceId).map((r) => r.providerRefundId),
      );
      expect(await orderOf(order.uniqid)).toMatchObject({ status: 'PARTIALLY_REFUNDED' });
    },
  );
});

describe('10. races', () => {
  // KNOWN BUG (reported, not fixed here): both requests ask BTCPay before either records its refund (the provider
  // call runs outside the transaction, src/domain/orders/provider-refunds.ts), and BTCPay has no idempotency key and
  // no bound of its own, so both list no earlier refund and both make a pull payment of 19.99: the buyer can claim
  // 39.98 of a 19.99 order. Ours records one (the other answers 400), so the order looks right while BTCPay does not.
  // BTCPay bounds nothing itself: only our refund lease (src/domain/orders/provider-refunds.ts) keeps the second
  // refund from being made there too.
  test('two refunds of everything that remains, at once: one wins; BTCPay holds one pull payment', async () => {
    const { order, invoiceId } = await paidOrder();
    const answers = await Promise.all([
      refund(order.id, { amount: '19.99' }, 'btc-race-a'),
      refund(order.id, { amount: '19.99' }, 'btc-race-b'),
    ]);
    const statuses = answers.map((a) => a.status).sort();
    // The loser either met the lease (409, retry) or came after the winner had finished (400: nothing remains).
    expect([
      [200, 400],
      [200, 409],
    ]).toContainEqual(statuses);
    const loser = answers.find((a) => a.status !== 200)!;
    expect(['CONCURRENT_UPDATE', 'ORDER_NOT_REFUNDABLE', 'REFUND_EXCEEDS_REMAINING']).toContain(loser.body.error.code);
    if (loser.status === 409) expect(loser.headers['retry-after']).toMatch(/^\d+$/);
    const after = await orderOf(order.uniqid);
    expect(after.status).toBe('REFUNDED');
    expect(new Decimal(after.refunded).equals('19.99')).toBe(true);
    expect(await refundRows(order.id)).toHaveLength(1);
    expect(fake.refunds(invoiceId)).toHaveLength(1);
    expect(await eventsOf('order:refunded', order.uniqid)).toBe(1);
  });

  test('two hosted-checkout starts of one invoice at once, both paid: one completion; the second DUPLICATE, refunded once', async () => {
    const invoice = await pay({ gateway: undefined });
    expect(invoice.status).toBe(201);
    const uniqid = invoice.body.data.uniqid as string;
    const [one, two] = await Promise.all([checkoutForm(uniqid), checkoutForm(uniqid)]);
    expect(one).not.toBe(two);
    const order = await orderOf(uniqid);
    expect((await attemptsOf(order.id)).map((a) => a.session_id).sort()).toEqual([one, two].sort());
    await fake.pay(one);
    await fake.pay(two);
    await worker.drain();
    await worker.drain();
    expect(await orderOf(uniqid)).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID' });
    expect(await eventsOf('order:paid', uniqid)).toBe(1);
    const rows = await attemptsOf(order.id);
    expect(rows.map((a) => a.status)).toEqual(['PAID', 'PAID']);
    const winner = rows.filter((a) => a.flag === null);
    const loser = rows.filter((a) => a.flag !== null);
    expect(winner).toHaveLength(1);
    expect(loser).toHaveLength(1);
    expect(loser[0]).toMatchObject({ flag: 'DUPLICATE', return_status: 'REFUNDED' });
    const back = fake.refunds(loser[0]!.payment_ref!);
    expect(back).toHaveLength(1);
    expect(new Decimal(back[0]!.amount).equals('19.99')).toBe(true);
    expect(fake.refunds(winner[0]!.payment_ref!)).toEqual([]);
  });
});
