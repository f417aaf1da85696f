// Live payments through Stripe, end to end (issue 37): the server, its worker and the local Stripe fake
// (test/fakes/stripe/) talking over real HTTP, the fake's webhooks posted to our listening server. Each case says
// what changed and what did not; every API answer is held to openapi.yaml (t.http) and every request the fake saw
// to Stripe's pinned document (fake.violations).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import request from 'supertest';
import type { Database } from '../../db/tables';
import { gatewayWebhookUrl } from '../../src/domain/payments/connect';
import { createStripeProvider } from '../../src/integrations/stripe';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { startStripeFake, type StripeFake } from '../fakes/stripe';
import { rowCounts } from '../helpers/counts';
import { assertEventPayloads } from '../helpers/webhook-payloads';
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
/** A Stripe account whose endpoint is registered at the shop's route under PUBLIC_URL (connect checks it) and
 *  delivers to this test's server. */
const stripeAccount = (livemode: boolean, shopId: string) =>
  fake.createAccount({
    livemode,
    webhookUrl: webhookUrl(shopId),
    endpointUrl: gatewayWebhookUrl(t.config.publicUrl, 'STRIPE', shopId),
  });

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
  testCreds = stripeAccount(false, testShop);
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
const flaggedEvents = async (uniqid: string) =>
  (
    await t.db
      .selectFrom('events')
      .select(['data'])
      .where('shop_id', '=', testShop)
      .where('type', '=', 'payment:flagged')
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  )
    .map((e) => JSON.parse(e.data) as Record<string, unknown>)
    .filter((d) => d.uniqid === uniqid);
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
    // The merchant is told once what became of the second payment's money.
    expect(await flaggedEvents(uniqid)).toEqual([
      {
        uniqid,
        attempt_id: flagged[0]!.id,
        gateway: 'STRIPE',
        flag: 'DUPLICATE',
        amount: '9.99',
        currency: 'USD',
        return_status: 'REFUNDED',
        provider_refund_id: refunds[0]!.providerRefundId,
      },
    ]);
    expect(await assertEventPayloads(t.db, testShop, ['payment:flagged'])).toBeGreaterThanOrEqual(1);
  });
});

describe('case 4b: a second payment the merchant refunds in Stripe’s dashboard before our return succeeds', () => {
  /** Two sessions of one payment, the first paid and completed, the second paid while Stripe fails our return. */
  async function duplicateAwaitingReturn() {
    const { uniqid, session_id, order } = await openPayment(9.99);
    const form = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
    expect(form.status).toBe(303);
    await fake.pay(session_id);
    await settle();
    const second = (await attemptsOf(order.id)).find((a) => a.session_id !== session_id)!;
    // stripe-node tries a refund twice: both fail, so the return waits for the reconciler's next look.
    fake.failNext('server-error', 2);
    await fake.pay(second.session_id!);
    await settle();
    const waiting = (await attemptsOf(order.id)).find((a) => a.id === second.id)!;
    expect(waiting).toMatchObject({ flag: 'DUPLICATE', return_status: 'PENDING' });
    expect(waiting.last_error).not.toBeNull();
    expect(await flaggedEvents(uniqid)).toEqual([]);
    return { uniqid, order, attempt: waiting, ref: waiting.payment_ref! };
  }

  test('its refund webhook settles the return: told once as REFUNDED; the reconciler asks Stripe nothing more', async () => {
    const { uniqid, order, attempt, ref } = await duplicateAwaitingReturn();
    await fake.dashboardRefund(ref, '9.99');
    await settle();
    const [made] = fake.refunds(ref);
    expect(await flaggedEvents(uniqid)).toEqual([
      expect.objectContaining({
        attempt_id: attempt.id,
        return_status: 'REFUNDED',
        provider_refund_id: made!.providerRefundId,
      }),
    ]);
    clock.advance(2 * 60 * 60_000);
    await settle();
    expect(fake.refunds(ref)).toHaveLength(1);
    expect(await flaggedEvents(uniqid)).toHaveLength(1);
    // Not a refund of the order, which stays paid.
    expect(await refundRows(order.id)).toEqual([]);
    expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');
  });

  test('its webhook held: Stripe declines our return, told once as FAILED; the late webhook changes nothing', async () => {
    const { uniqid, order, attempt, ref } = await duplicateAwaitingReturn();
    fake.holdWebhooks(true);
    try {
      await fake.dashboardRefund(ref, '9.99');
      clock.advance(2 * 60 * 60_000);
      await worker.drain();
    } finally {
      fake.holdWebhooks(false);
    }
    const declined = (await attemptsOf(order.id)).find((a) => a.id === attempt.id)!;
    expect(declined).toMatchObject({ return_status: 'FAILED', reconcile_at: null });
    expect(await flaggedEvents(uniqid)).toEqual([
      expect.objectContaining({ attempt_id: attempt.id, return_status: 'FAILED', provider_refund_id: null }),
    ]);
    await settle();
    clock.advance(2 * 60 * 60_000);
    await settle();
    expect(await flaggedEvents(uniqid)).toHaveLength(1);
    expect((await attemptsOf(order.id)).find((a) => a.id === attempt.id)!.return_status).toBe('FAILED');
    expect(fake.refunds(ref)).toHaveLength(1);
    expect(await refundRows(order.id)).toEqual([]);
    expect(await assertEventPayloads(t.db, testShop, ['payment:flagged'])).toBeGreaterThanOrEqual(3);
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
    const liveCreds = stripeAccount(true, liveShop);
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

// ---- money moved after payment: refunds through our API and through Stripe's dashboard, disputes ----

/** A Stripe payment of `value` USD, paid and completed: its order row and the payment intent a refund names. */
async function paidOrder(value: number) {
  const payment = await openPayment(value);
  await fake.pay(payment.session_id);
  await worker.drain();
  const order = await orderByUniqid(payment.uniqid);
  expect(order.status).toBe('COMPLETED');
  return { ...payment, order, ref: fake.session(payment.session_id)!.paymentRef! };
}

const refundVia = (orderId: string, body: Record<string, string>, idempotencyKey?: string) => {
  const req = t.http.post(`/dev/v1/orders/${orderId}/refund`).set(bearer(testKey));
  return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(body);
};
const refundRows = (orderId: string) =>
  t.db
    .selectFrom('refunds')
    .select(['id', 'amount', 'gateway', 'provider_refund_id', 'attempt_id', 'reason'])
    .where('order_id', '=', orderId)
    .orderBy('amount')
    .execute();
/** The shop's events of `type` about this order, their data parsed. */
const eventsAbout = async (type: string, uniqid: string) =>
  (
    await t.db
      .selectFrom('events')
      .select(['data'])
      .where('shop_id', '=', testShop)
      .where('type', '=', type)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  )
    .map((e) => JSON.parse(e.data) as Record<string, unknown>)
    .filter((d) => d.uniqid === uniqid || d.order_uniqid === uniqid);
const amountOf = (row: { amount: string }) => Number(row.amount).toFixed(2);

/** Drains until the fake has no webhook under way (a refund's charge.refunded follows Stripe's answer). */
async function settle(): Promise<void> {
  await fake.settled();
  await worker.drain();
}

/** The worker applied each of these Stripe events once and fully: none failed and waits to be tried again. */
async function expectApplied(webhooks: { eventId: string }[]): Promise<void> {
  expect(webhooks.length).toBeGreaterThan(0);
  const rows = await t.db
    .selectFrom('gateway_events')
    .select(['event_id', 'status', 'last_error'])
    .where(
      'event_id',
      'in',
      webhooks.map((w) => w.eventId),
    )
    .execute();
  expect(rows.map((r) => [r.status, r.last_error])).toEqual(webhooks.map(() => ['SUCCEEDED', null]));
}

/**
 * Refused by a business rule: everything as before but the request's own audit entry (every state-changing request
 * is audited, accepted or refused: DESIGN.md section 5).
 */
async function expectOnlyAudited(before: Record<string, number>): Promise<void> {
  const after = await allCounts();
  expect(after.audit_entries).toBe(before.audit_entries! + 1);
  expect({ ...after, audit_entries: 0 }).toEqual({ ...before, audit_entries: 0 });
}

describe('case 9: refunds through POST /orders/{id}/refund of a Stripe payment', () => {
  test('partial then full: two refunds at Stripe keyed by our refund ids; replays and excess refund nothing', async () => {
    const { order, ref, uniqid } = await paidOrder(10);
    const first = await refundVia(order.id, { amount: '4.00', reason: 'requested_by_customer' }, 'stripe-r-1');
    expect(first.status).toBe(200);
    expect(first.headers['idempotency-status']).toBe('created');
    expect(first.body.data.message).toContain('6.00 USD remains refundable');
    expect((await orderByUniqid(uniqid)).status).toBe('PARTIALLY_REFUNDED');
    await settle();

    // More than the 6.00 that remains: refused before Stripe is asked.
    const calls = fake.requests.length;
    const before = await allCounts();
    const over = await refundVia(order.id, { amount: '6.01' });
    expect([over.status, over.body.error.code]).toEqual([400, 'REFUND_EXCEEDS_REMAINING']);
    expect(fake.requests.length).toBe(calls);
    await expectOnlyAudited(before);

    const second = await refundVia(order.id, {}, 'stripe-r-2');
    expect(second.status).toBe(200);
    expect(second.body.data.message).toContain('fully refunded');
    expect((await orderByUniqid(uniqid)).status).toBe('REFUNDED');

    const atStripe = fake.refunds(ref);
    expect(atStripe.map((r) => [r.amount, r.currency])).toEqual([
      ['4.00', 'USD'],
      ['6.00', 'USD'],
    ]);
    const ours = await refundRows(order.id);
    const [attempt] = await attemptsOf(order.id);
    expect(ours.map((r) => [amountOf(r), r.gateway, r.attempt_id])).toEqual([
      ['4.00', 'STRIPE', attempt!.id],
      ['6.00', 'STRIPE', attempt!.id],
    ]);
    // Each Stripe refund is one of ours: its id recorded here, its idempotency key derived from our refund id.
    expect(ours.map((r) => [r.provider_refund_id, `refund_${r.id}`])).toEqual(
      atStripe.map((r) => [r.providerRefundId, r.idempotencyKey]),
    );
    const refunded = await eventsAbout('order:refunded', uniqid);
    expect(refunded.map((d) => [d.amount, d.currency, d.fully_refunded])).toEqual([
      ['4.00', 'USD', false],
      ['6.00', 'USD', true],
    ]);

    // Stripe's charge.refunded for each came back: recognised as ours, nothing recorded twice.
    await settle();
    const announced = fake.webhooks().filter((w) => w.type === 'charge.refunded' && w.body.includes(ref));
    expect(announced.map((w) => w.sends)).toEqual([[200], [200]]);
    await expectApplied(announced);
    expect(await refundRows(order.id)).toEqual(ours);
    expect(await eventsAbout('order:refunded', uniqid)).toHaveLength(2);

    // The first request again, same Idempotency-Key: the stored answer, and Stripe is not asked again.
    const afterAll = await allCounts();
    const replay = await refundVia(order.id, { amount: '4.00', reason: 'requested_by_customer' }, 'stripe-r-1');
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.body).toEqual(first.body);
    expect(fake.refunds(ref)).toHaveLength(2);
    // Only the replay's own audit entry.
    await expectOnlyAudited(afterAll);
  });
});

describe('case 9b: Stripe down or refusing at refund', () => {
  // stripe-node retries a keyed create once on no answer and on a 5xx, not on a 429 nor on a 200 it cannot parse.
  test.each([
    ['timeout', 2],
    ['server-error', 2],
    ['rate-limited', 1],
    ['garbage', 1],
  ] as const)(
    '%s: 502 GATEWAY_UNAVAILABLE with Retry-After, nothing written or refunded; the same request then refunds once',
    async (fault, tries) => {
      const { order, ref, uniqid } = await paidOrder(5);
      const before = await allCounts();
      const calls = fake.requests.length;
      fake.failNext(fault, tries);
      const down = await refundVia(order.id, { amount: '2.00' }, `stripe-down-${fault}`);
      expect(down.status).toBe(502);
      expect(down.body.error.code).toBe('GATEWAY_UNAVAILABLE');
      // A 429's own Retry-After (the fake's 2 s) is passed on; otherwise our default.
      expect(down.headers['retry-after']).toBe(fault === 'rate-limited' ? '2' : '5');
      expect(JSON.stringify(down.body)).not.toContain(testCreds.STRIPE_SECRET_KEY);
      expect(fake.requests.slice(calls).map((r) => r.path)).toEqual(Array(tries).fill('/v1/refunds'));
      expect(await allCounts()).toEqual(before);
      expect(fake.refunds(ref)).toEqual([]);
      expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');

      const again = await refundVia(order.id, { amount: '2.00' }, `stripe-down-${fault}`);
      expect(again.status).toBe(200);
      expect(again.headers['idempotency-status']).toBe('created');
      const [made] = fake.refunds(ref);
      expect(fake.refunds(ref)).toHaveLength(1);
      expect(made!.amount).toBe('2.00');
      const rows = await refundRows(order.id);
      expect(rows.map((r) => [amountOf(r), r.provider_refund_id])).toEqual([['2.00', made!.providerRefundId]]);
      expect(made!.idempotencyKey).toBe(`refund_${rows[0]!.id}`);
      expect((await orderByUniqid(uniqid)).status).toBe('PARTIALLY_REFUNDED');
      expect(await eventsAbout('order:refunded', uniqid)).toHaveLength(1);
      await settle();
      expect(await refundRows(order.id)).toHaveLength(1);
      await expectApplied(fake.webhooks().filter((w) => w.type === 'charge.refunded' && w.body.includes(ref)));
    },
  );

  test('Stripe refuses (its dashboard refunded part already, not yet told to us): 400 GATEWAY_REFUSED, nothing written', async () => {
    const { order, ref, uniqid } = await paidOrder(10);
    // Refunded in Stripe's dashboard; its webhook reached our route and waits in the queue, unapplied.
    await fake.dashboardRefund(ref, '7.00');
    const before = await allCounts();
    const refused = await refundVia(order.id, { amount: '5.00' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('GATEWAY_REFUSED');
    // Stripe's reason is passed on: a merchant can act on it.
    expect(refused.body.error.message).toContain('greater than unrefunded amount');
    await expectOnlyAudited(before);
    expect(fake.refunds(ref).map((r) => r.amount)).toEqual(['7.00']);
    expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');

    // The queued webhook applied: the dashboard's refund is ours now, and what remains (3.00) can be refunded.
    await settle();
    expect((await refundRows(order.id)).map(amountOf)).toEqual(['7.00']);
    await expectApplied(fake.webhooks().filter((w) => w.type === 'charge.refunded' && w.body.includes(ref)));
    const rest = await refundVia(order.id, {});
    expect(rest.status).toBe(200);
    expect(fake.refunds(ref).map((r) => r.amount)).toEqual(['7.00', '3.00']);
    expect((await orderByUniqid(uniqid)).status).toBe('REFUNDED');
  });
});

describe("case 10: money moved in Stripe's dashboard and by the buyer's bank", () => {
  test('a dashboard refund reaches us by charge.refunded and is recorded once, under resends too', async () => {
    const { order, ref, uniqid } = await paidOrder(10);
    await fake.dashboardRefund(ref, '3.00');
    const hook = fake.webhooks().at(-1)!;
    expect([hook.type, hook.sends]).toEqual(['charge.refunded', [200]]);
    await settle();
    const [made] = fake.refunds(ref);
    // Made by hand at Stripe: no idempotency key of ours.
    expect(made!.idempotencyKey).toBeUndefined();
    const [attempt] = await attemptsOf(order.id);
    const rows = await refundRows(order.id);
    expect(rows.map((r) => [amountOf(r), r.gateway, r.provider_refund_id, r.attempt_id])).toEqual([
      ['3.00', 'STRIPE', made!.providerRefundId, attempt!.id],
    ]);
    expect(rows[0]!.reason).toContain(made!.providerRefundId);
    expect((await orderByUniqid(uniqid)).status).toBe('PARTIALLY_REFUNDED');
    expect((await eventsAbout('order:refunded', uniqid)).map((d) => [d.amount, d.currency, d.fully_refunded])).toEqual([
      ['3.00', 'USD', false],
    ]);

    const before = await allCounts();
    expect(await fake.resend(hook.eventId)).toBe(200);
    expect(await Promise.all([1, 2, 3].map(() => fake.resend(hook.eventId)))).toEqual([200, 200, 200]);
    await settle();
    expect(await allCounts()).toEqual(before);
    expect(await eventsAbout('order:refunded', uniqid)).toHaveLength(1);
    await expectApplied([hook]);
  });

  test('a dispute opened then won at Stripe opens and closes ours once each, under resends too', async () => {
    const { order, ref, uniqid } = await paidOrder(10);
    const disputeId = await fake.openDispute(ref);
    await settle();
    const disputeRows = () =>
      t.db
        .selectFrom('disputes')
        .select(['id', 'status', 'gateway', 'reason', 'amount', 'provider_dispute_id', 'closed_at'])
        .where('order_id', '=', order.id)
        .execute();
    const opened = await disputeRows();
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({
      status: 'OPEN',
      gateway: 'STRIPE',
      reason: 'FRAUDULENT',
      provider_dispute_id: disputeId,
      closed_at: null,
    });
    expect(amountOf(opened[0]!)).toBe('10.00');
    expect((await orderByUniqid(uniqid)).status).toBe('DISPUTED');
    expect((await eventsAbout('dispute:opened', uniqid)).map((d) => [d.id, d.status])).toEqual([
      [opened[0]!.id, 'OPEN'],
    ]);
    const listed = await t.http
      .get('/dev/v1/disputes')
      .query({ filters: `order_id:${order.id}` })
      .set(bearer(testKey));
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((d: { id: string; gateway: string }) => [d.id, d.gateway])).toEqual([
      [opened[0]!.id, 'STRIPE'],
    ]);

    // While it is open the order cannot be refunded (as Stripe refuses to refund a disputed charge): Stripe not asked.
    const calls = fake.requests.length;
    const refused = await refundVia(order.id, {});
    expect([refused.status, refused.body.error.code]).toEqual([400, 'ORDER_NOT_REFUNDABLE']);
    expect(fake.requests.length).toBe(calls);

    const created = fake.webhooks().find((w) => w.type === 'charge.dispute.created' && w.body.includes(disputeId))!;
    const beforeResend = await allCounts();
    expect(await Promise.all([1, 2, 3].map(() => fake.resend(created.eventId)))).toEqual([200, 200, 200]);
    await settle();
    expect(await allCounts()).toEqual(beforeResend);

    await fake.closeDispute(disputeId, 'won');
    await settle();
    const closed = await disputeRows();
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ id: opened[0]!.id, status: 'WON', provider_dispute_id: disputeId });
    expect(closed[0]!.closed_at).not.toBeNull();
    expect((await orderByUniqid(uniqid)).status).toBe('COMPLETED');
    expect((await eventsAbout('dispute:closed', uniqid)).map((d) => [d.id, d.status])).toEqual([
      [opened[0]!.id, 'WON'],
    ]);

    const closedHook = fake.webhooks().find((w) => w.type === 'charge.dispute.closed' && w.body.includes(disputeId))!;
    const beforeClosedResend = await allCounts();
    for (const id of [closedHook.eventId, created.eventId, closedHook.eventId]) expect(await fake.resend(id)).toBe(200);
    await settle();
    expect(await allCounts()).toEqual(beforeClosedResend);
    expect(await eventsAbout('dispute:opened', uniqid)).toHaveLength(1);
    expect(await eventsAbout('dispute:closed', uniqid)).toHaveLength(1);
    await expectApplied([created, closedHook]);
    // Won: nothing given back, here or at Stripe.
    expect(await refundRows(order.id)).toEqual([]);
    expect(fake.refunds(ref)).toEqual([]);
    expect(await eventsAbout('order:refunded', uniqid)).toEqual([]);
  });

  test('a dispute lost at Stripe refunds what remains here as the chargeback, and asks Stripe for nothing', async () => {
    const { order, ref, uniqid } = await paidOrder(10);
    expect((await refundVia(order.id, { amount: '2.50' })).status).toBe(200);
    await settle();
    const disputeId = await fake.openDispute(ref, { reason: 'product_not_received' });
    await settle();
    const calls = fake.requests.length;
    await fake.closeDispute(disputeId, 'lost');
    await settle();
    const [dispute] = await t.db.selectFrom('disputes').selectAll().where('order_id', '=', order.id).execute();
    expect(dispute).toMatchObject({ status: 'LOST', reason: 'PRODUCT_NOT_RECEIVED', provider_dispute_id: disputeId });
    expect(amountOf(dispute!)).toBe('7.50');
    expect((await orderByUniqid(uniqid)).status).toBe('REFUNDED');
    const rows = await refundRows(order.id);
    expect(rows.map((r) => [amountOf(r), r.reason])).toEqual([
      ['2.50', null],
      ['7.50', `Chargeback: dispute ${dispute!.id} lost`],
    ]);
    expect((await eventsAbout('order:refunded', uniqid)).map((d) => [d.amount, d.fully_refunded])).toEqual([
      ['2.50', false],
      ['7.50', true],
    ]);
    // The bank took the money back: no refund asked of Stripe on top of it.
    expect(fake.requests.slice(calls).filter((r) => r.path === '/v1/refunds')).toEqual([]);
    expect(fake.refunds(ref).map((r) => r.amount)).toEqual(['2.50']);
    await expectApplied(fake.webhooks().filter((w) => w.body.includes(ref) || w.body.includes(disputeId)));
  });
});
