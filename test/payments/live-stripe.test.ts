// Live payments through Stripe, end to end (issue 37): the server, its worker and the local Stripe fake
// (test/fakes/stripe/) talking over real HTTP, the fake's webhooks posted to our listening server. Each case says
// what changed and what did not; every API answer is held to openapi.yaml (t.http) and every request the fake saw
// to Stripe's pinned document (fake.violations).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import request from 'supertest';
import type { Database } from '../../db/tables';
import { createStripeProvider } from '../../src/integrations/stripe';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { startStripeFake, type StripeFake } from '../fakes/stripe';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

// Real time at the start: the fake signs webhooks on real time, and our verification holds them to it.
const clock = new ManualClock(new Date());
// A short timeout so the 'timeout' fault costs half a second, not ten.
const providers = [createStripeProvider({ timeoutMs: 500 })];
let fake: StripeFake;
let t: TestApp;
let server: Server;
let base: string;
let worker: Worker;
let testShop: string;
let liveShop: string;
let testKey: string;
let testCreds: Record<string, string>;
let serialProduct: string;

const webhookUrl = (shopId: string, code = 'stripe') => `${base}/webhooks/gateways/${code}/${shopId}`;

async function connect(shopId: string, creds: Record<string, string>) {
  return connectShopGateway(
    t.db,
    t.config,
    clock,
    {
      shopId,
      code: 'STRIPE',
      fields: { secret_key: creds.STRIPE_SECRET_KEY!, webhook_secret: creds.STRIPE_WEBHOOK_SECRET! },
    },
    providers,
  );
}

beforeAll(async () => {
  fake = await startStripeFake({ webhookRetryDelayMs: 20 });
  t = await startTestApp({
    clock,
    gatewayProviders: providers,
    env: { GATEWAY_BASE_URLS: `STRIPE=${fake.baseUrl}`, CHECKOUT_BASE_URL: 'https://pay.example.com' },
  });
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  worker = await createWorker(t.db, t.config, t.logger, clock, providers);
  testShop = await t.createShop({ mode: 'test', name: 'Stripe Test Shop', currency: 'USD' });
  liveShop = (
    await t.db.selectFrom('shops').select('live_shop_id').where('id', '=', testShop).executeTakeFirstOrThrow()
  ).live_shop_id!;
  testKey = (await t.createKey(testShop, ['*'])).key;
  testCreds = fake.createAccount({ livemode: false, webhookUrl: webhookUrl(testShop) });
  const connection = await connect(testShop, testCreds);
  expect(connection).toMatchObject({ gateway: 'STRIPE', mode: 'test' });
  serialProduct = (
    await t.seed(testShop, {
      products: [{ title: 'Game Key', type: 'SERIALS', price: '9.99', serials: ['KEY-0001', 'KEY-0002', 'KEY-0003'] }],
    })
  ).products[0]!;
}, 60_000);

afterAll(async () => {
  await fake?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await t?.close();
});

afterEach(() => {
  expect(fake.violations).toEqual([]);
});

/** Every table of this file's database, by row count: a refusal must leave all of them as they were. */
async function allCounts(): Promise<Record<string, number>> {
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(t.db);
  return rowCounts(
    t.db,
    tables.rows.map((r) => r.table_name as keyof Database),
  );
}

const payViaApi = (body: Record<string, unknown>, key = testKey) =>
  t.http.post('/dev/v1/payments').set(bearer(key)).send(body);

async function openPayment(value = 12.5) {
  const res = await payViaApi({
    title: 'Pro License',
    value,
    currency: 'USD',
    gateway: 'STRIPE',
    email: 'buyer@example.com',
  });
  expect(res.status).toBe(201);
  const data = res.body.data as { uniqid: string; checkout_url: string; session_id: string };
  const order = await orderByUniqid(data.uniqid);
  return { ...data, order };
}

const orderByUniqid = (uniqid: string) =>
  t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();
const attemptsOf = (orderId: string) =>
  t.db.selectFrom('payment_attempts').selectAll().where('order_id', '=', orderId).orderBy('created_at').execute();
const paidEvents = async (uniqid: string) =>
  (
    await t.db
      .selectFrom('events')
      .select(['data'])
      .where('shop_id', '=', testShop)
      .where('type', '=', 'order:paid')
      .execute()
  ).filter((e) => e.data.includes(uniqid)).length;
const gatewayEventRows = (eventId: string) =>
  t.db.selectFrom('gateway_events').selectAll().where('event_id', '=', eventId).execute();
const lastWebhookOf = (sessionId: string, type = 'checkout.session.completed') =>
  fake
    .webhooks()
    .filter((w) => w.type === type && w.body.includes(sessionId))
    .at(-1)!;

describe('case 1: a test shop pays through Stripe', () => {
  test('POST /payments opens a Stripe session; pay -> webhook -> drain completes it once', async () => {
    const { session_id, checkout_url, order } = await openPayment(12.5);
    expect(session_id).toMatch(/^cs_test_/);
    expect(checkout_url.startsWith(fake.baseUrl)).toBe(true);
    expect(fake.session(session_id)).toMatchObject({
      amount: '12.50',
      currency: 'USD',
      state: 'open',
      livemode: false,
    });
    const [attempt] = await attemptsOf(order.id);
    expect(attempt).toMatchObject({ gateway: 'STRIPE', session_id, status: 'PENDING' });
    expect(fake.session(session_id)!.attemptId).toBe(attempt!.id);

    await fake.pay(session_id);
    const hook = lastWebhookOf(session_id);
    expect(hook.sends).toEqual([200]);
    // Queued, not applied: the route completes nothing by itself.
    expect((await orderByUniqid(order.uniqid)).status).toBe('PENDING');
    expect(await gatewayEventRows(hook.eventId)).toHaveLength(1);

    await worker.drain();
    const after = await orderByUniqid(order.uniqid);
    expect(after.status).toBe('COMPLETED');
    expect(await paidEvents(order.uniqid)).toBe(1);
    const [paid] = await attemptsOf(order.id);
    expect(paid).toMatchObject({ status: 'PAID', flag: null, paid_currency: 'USD' });
    expect(paid!.payment_ref).toBe(fake.session(session_id)!.paymentRef);
    expect(Number(paid!.paid_amount)).toBe(12.5);
    // Nothing more to do, and nothing given back.
    expect(await worker.drain()).toBe(0);
    expect(fake.refunds()).toEqual([]);
  });

  test('an order of a SERIALS product paid through the hosted checkout form delivers its serial once', async () => {
    const created = await t.http
      .post('/dev/v1/orders')
      .set(bearer(testKey))
      .send({ email: 'buyer@example.com', items: [{ product_id: serialProduct, quantity: 1 }] });
    expect(created.status).toBe(201);
    const uniqid = created.body.data.uniqid as string;
    const form = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
    expect(form.status).toBe(303);
    const order = await orderByUniqid(uniqid);
    const [attempt] = await attemptsOf(order.id);
    expect(attempt).toMatchObject({ gateway: 'STRIPE', status: 'PENDING' });
    expect(form.headers.location).toBe(attempt!.session_url);
    expect(String(form.headers.location).startsWith(fake.baseUrl)).toBe(true);

    await fake.pay(attempt!.session_id!);
    await worker.drain();
    // The same webhook again after completion: nothing delivered twice.
    expect(await fake.resend(lastWebhookOf(attempt!.session_id!).eventId)).toBe(200);
    await worker.drain();
    expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');
    expect(await paidEvents(order.uniqid)).toBe(1);
    const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
    expect(items).toHaveLength(1);
    expect(items[0]!.delivery_status).toBe('DELIVERED');
    const delivered = JSON.stringify(items[0]!.delivered_items);
    const keys = ['KEY-0001', 'KEY-0002', 'KEY-0003'].filter((k) => delivered.includes(k));
    expect(keys).toHaveLength(1);
  });
});

describe('case 2: redelivered, out-of-order and concurrent webhooks', () => {
  test('5 redeliveries out of order and 10 concurrent ones: one completion, one row per event id', async () => {
    const first = await openPayment(20);
    const second = await openPayment(21);
    await fake.pay(first.session_id);
    await fake.pay(second.session_id);
    const a = lastWebhookOf(first.session_id);
    const b = lastWebhookOf(second.session_id);
    // Out of order: b's event before a's again, interleaved, each several times.
    for (const id of [b.eventId, a.eventId, b.eventId, a.eventId, a.eventId, b.eventId, a.eventId, a.eventId]) {
      expect(await fake.resend(id)).toBe(200);
    }
    const statuses = await Promise.all(Array.from({ length: 10 }, () => fake.resend(a.eventId)));
    expect(statuses).toEqual(Array(10).fill(200));
    expect(await gatewayEventRows(a.eventId)).toHaveLength(1);
    expect(await gatewayEventRows(b.eventId)).toHaveLength(1);
    await worker.drain();
    // And concurrently again after it was applied.
    expect(await Promise.all(Array.from({ length: 10 }, () => fake.resend(a.eventId)))).toEqual(Array(10).fill(200));
    await worker.drain();
    for (const p of [first, second]) {
      expect((await orderByUniqid(p.uniqid)).status).toBe('COMPLETED');
      expect(await paidEvents(p.uniqid)).toBe(1);
      const attempts = await attemptsOf(p.order.id);
      expect(attempts.map((x) => [x.status, x.flag])).toEqual([['PAID', null]]);
    }
    expect(await gatewayEventRows(a.eventId)).toHaveLength(1);
    expect(fake.refunds()).toEqual([]);
  });
});

describe('case 3: a lost webhook', () => {
  test('the reconciler completes it, once, after 3 minutes on the shop clock', async () => {
    const { session_id, order } = await openPayment(7);
    await fake.pay(session_id, { webhooks: false });
    await worker.drain();
    // Not yet due: nothing read, nothing completed.
    expect((await orderByUniqid(order.uniqid)).status).toBe('PENDING');
    clock.advance(3 * 60_000 + 1000);
    await worker.drain();
    expect((await orderByUniqid(order.uniqid)).status).toBe('COMPLETED');
    expect(await paidEvents(order.uniqid)).toBe(1);
    clock.advance(10 * 60_000);
    await worker.drain();
    expect(await paidEvents(order.uniqid)).toBe(1);
    expect((await attemptsOf(order.id)).map((x) => [x.status, x.flag])).toEqual([['PAID', null]]);
  });

  test('webhooks held while the endpoint is down, then released: completed once with the reconciler too', async () => {
    const { session_id, order } = await openPayment(8);
    fake.holdWebhooks(true);
    await fake.pay(session_id);
    clock.advance(3 * 60_000 + 1000);
    await worker.drain();
    expect((await orderByUniqid(order.uniqid)).status).toBe('COMPLETED');
    fake.holdWebhooks(false);
    // The held delivery arrives (with the fake's retries) and changes nothing.
    await new Promise((r) => setTimeout(r, 300));
    await worker.drain();
    expect(await paidEvents(order.uniqid)).toBe(1);
    expect(lastWebhookOf(session_id).sends).toContain(200);
  });
});

describe('case 4: two sessions of one invoice both paid', () => {
  test('one completion; the second is flagged DUPLICATE and refunded at Stripe with our key', async () => {
    const created = await t.http
      .post('/dev/v1/orders')
      .set(bearer(testKey))
      .send({ email: 'twice@example.com', items: [{ product_id: serialProduct, quantity: 1 }] });
    expect(created.status).toBe(201);
    const uniqid = created.body.data.uniqid as string;
    for (let i = 0; i < 2; i++) {
      const form = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
      expect(form.status).toBe(303);
    }
    const order = await orderByUniqid(uniqid);
    const [one, two] = await attemptsOf(order.id);
    expect(one!.session_id).not.toBe(two!.session_id);
    await fake.pay(one!.session_id!);
    await fake.pay(two!.session_id!);
    await worker.drain();
    expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');
    expect(await paidEvents(order.uniqid)).toBe(1);
    const after = await attemptsOf(order.id);
    const flagged = after.filter((a) => a.flag !== null);
    expect(flagged).toHaveLength(1);
    expect(flagged[0]).toMatchObject({ flag: 'DUPLICATE', status: 'PAID', return_status: 'REFUNDED' });
    const refunds = fake.refunds(flagged[0]!.payment_ref!);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ amount: '9.99', currency: 'USD' });
    expect(refunds[0]!.idempotencyKey).toContain(flagged[0]!.id);
    const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
    expect(items.map((i) => i.delivery_status)).toEqual(['DELIVERED']);
  });
});

describe('case 5: a short payment (a promotion code at Stripe)', () => {
  test('flagged SHORT and refunded; the invoice stays PENDING and payable', async () => {
    const { session_id, order } = await openPayment(30);
    await fake.pay(session_id, { amount: '25.00' });
    await worker.drain();
    const after = await orderByUniqid(order.uniqid);
    expect(after.status).toBe('PENDING');
    expect(await paidEvents(order.uniqid)).toBe(0);
    const [attempt] = await attemptsOf(order.id);
    expect(attempt).toMatchObject({ flag: 'SHORT', return_status: 'REFUNDED' });
    expect(Number(attempt!.paid_amount)).toBe(25);
    expect(fake.refunds(attempt!.payment_ref!)).toEqual([expect.objectContaining({ amount: '25.00' })]);
    // Still payable: a new session for the whole amount pays it.
    const page = await request(t.app).post(`/invoice/${order.uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
    expect(page.status).toBe(303);
    const second = (await attemptsOf(order.id)).find((a) => a.id !== attempt!.id)!;
    await fake.pay(second.session_id!);
    await worker.drain();
    expect((await orderByUniqid(order.uniqid)).status).toBe('COMPLETED');
    expect(await paidEvents(order.uniqid)).toBe(1);
  });
});

describe('case 6: Stripe down when a session starts', () => {
  test.each(['server-error', 'timeout'] as const)(
    '%s: POST /payments answers 502 GATEWAY_UNAVAILABLE with Retry-After and writes nothing',
    async (fault) => {
      const before = await allCounts();
      const calls = fake.requests.length;
      fake.failNext(fault, 2); // stripe-node retries the idempotent create once: both tries fail
      const res = await payViaApi({ title: 'Down', value: 5, currency: 'USD', gateway: 'STRIPE' });
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('GATEWAY_UNAVAILABLE');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(res.body)).not.toContain(testCreds.STRIPE_SECRET_KEY);
      expect(await allCounts()).toEqual(before);
      // The fault was spent on this call (stripe-node's one retry of the idempotent create then also failed, or was
      // not made): the next call works.
      expect(fake.requests.length).toBeGreaterThan(calls);
      expect((await openPayment(5)).session_id).toMatch(/^cs_test_/);
    },
  );

  test('the hosted checkout form answers a 502 page and leaves no attempt', async () => {
    const created = await payViaApi({ title: 'Form', value: 6, currency: 'USD', email: 'form@example.com' });
    expect(created.status).toBe(201);
    const uniqid = created.body.data.uniqid as string;
    const before = await allCounts();
    fake.failNext('server-error', 2);
    const page = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
    expect(page.status).toBe(502);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(await allCounts()).toEqual(before);
    expect((await orderByUniqid(uniqid)).status).toBe('PENDING');
  });
});

describe('case 7: webhooks that are not verifiably Stripe’s for this shop', () => {
  test('bad and stale signatures: 400; an exact replay: 200 and deduped; other routes: 404; nothing changes', async () => {
    const { session_id, order } = await openPayment(9);
    await fake.pay(session_id, { webhooks: false });
    const hook = lastWebhookOf(session_id);
    const before = await allCounts();
    expect(await fake.resend(hook.eventId, { tamper: 'bad-signature' })).toBe(400);
    expect(await fake.resend(hook.eventId, { tamper: 'stale' })).toBe(400);
    const post = (url: string) =>
      fetch(url, { method: 'POST', headers: hook.headers, body: hook.body }).then((r) => r.status);
    // Another shop's route (the live shop has no Stripe connection), and a provider code we do not have.
    expect(await post(webhookUrl(liveShop))).toBe(404);
    expect(await post(webhookUrl('shop_nope'))).toBe(404);
    expect(await post(webhookUrl(testShop, 'acmepay'))).toBe(404);
    expect(await post(webhookUrl(testShop, 'sandbox'))).toBe(404);
    expect(await allCounts()).toEqual(before);
    await worker.drain();
    expect((await orderByUniqid(order.uniqid)).status).toBe('PENDING');

    // The genuine delivery, then the exact same bytes and signature again (a replay within tolerance).
    expect(await fake.resend(hook.eventId)).toBe(200);
    expect(await post(webhookUrl(testShop))).toBe(200);
    expect(await gatewayEventRows(hook.eventId)).toHaveLength(1);
    await worker.drain();
    expect(await paidEvents(order.uniqid)).toBe(1);
  });
});

describe('case 8: mode walls', () => {
  test('a live key is refused for a test shop, a test key for a live shop; nothing written', async () => {
    const before = await allCounts();
    const live = fake.createAccount({ livemode: true });
    await expect(connect(testShop, live)).rejects.toThrow(/test shop needs a test Stripe key/);
    await expect(connect(liveShop, fake.createAccount({ livemode: false }))).rejects.toThrow(
      /live shop needs a live Stripe key/,
    );
    expect(await allCounts()).toEqual(before);
  });

  test('a test-mode webhook sent to the live shop’s route is refused', async () => {
    const liveCreds = fake.createAccount({ livemode: true, webhookUrl: webhookUrl(liveShop) });
    await connect(liveShop, liveCreds);
    const { session_id, order } = await openPayment(4);
    await fake.pay(session_id, { webhooks: false });
    const hook = lastWebhookOf(session_id);
    const before = await allCounts();
    const status = await fetch(webhookUrl(liveShop), { method: 'POST', headers: hook.headers, body: hook.body }).then(
      (r) => r.status,
    );
    expect(status).toBe(400);
    expect(await allCounts()).toEqual(before);
    await worker.drain();
    expect((await orderByUniqid(order.uniqid)).status).toBe('PENDING');
  });
});
