// Live payments through PayPal, end to end: our server (listening, so the fake's webhooks reach it), its worker, and
// the PayPal fake (test/fakes/paypal/) over real HTTP. A buyer's Pay APPROVES the order; CHECKOUT.ORDER.APPROVED
// reaches our route, the worker reads the session (which CAPTURES it), and PAYMENT.CAPTURE.COMPLETED follows and is
// deduplicated. Each case asserts what changed and what did not; every test ends with the fake holding nothing
// against PayPal's published document. Runs on PGlite by default and on PostgreSQL with DATABASE_URL.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Decimal from 'decimal.js';
import request from 'supertest';
import { createPayPalProvider } from '../../src/integrations/paypal';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { startPayPalFake, type PayPalFake } from '../fakes/paypal/fake';
import { snapshotTables } from '../helpers/db-snapshot';
import { assertEventPayloads } from '../helpers/webhook-payloads';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const provider = createPayPalProvider({ timeoutMs: 3_000 });
// Real time at the start, so the fake's signatures (on real time) and ours agree; moved by hand for the reconciler.
const clock = new ManualClock(Date.now());
let fake: PayPalFake;
let t: TestApp;
let server: Server;
let origin: string;
let worker: Worker;

beforeAll(async () => {
  fake = await startPayPalFake({ webhookRetryDelayMs: 20 });
  // The port first: PUBLIC_URL is this server's address, the webhook URL connect requires each PayPal account's
  // webhook to post to.
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({
    clock,
    gatewayProviders: [provider],
    env: { PUBLIC_URL: origin, GATEWAY_BASE_URLS: fake.gatewayBaseUrls },
  });
  server.on('request', t.app);
  worker = await createWorker(t.db, t.config, t.logger, clock, [provider]);
});

afterAll(async () => {
  await fake.settled();
  await fake.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

afterEach(async () => {
  await fake.settled();
  expect(fake.violations).toEqual([]);
});

interface PayPalShop {
  shop: string;
  key: string;
  credentials: Record<string, string>;
  webhookUrl: string;
}

const fieldsOf = (c: Record<string, string>) => ({
  client_id: c.PAYPAL_CLIENT_ID!,
  client_secret: c.PAYPAL_CLIENT_SECRET!,
  webhook_id: c.PAYPAL_WEBHOOK_ID!,
});

/** A shop of that mode connected to a new PayPal account of the same mode, its webhooks pointed at our route. */
async function paypalShop(mode: 'test' | 'live' = 'test'): Promise<PayPalShop> {
  const shop = await t.createShop({ mode, name: `PayPal ${mode}` });
  const key = (await t.createKey(shop, ['*'])).key;
  const webhookUrl = `${origin}/webhooks/gateways/paypal/${shop}`;
  const credentials = fake.createAccount({ livemode: mode === 'live', webhookUrl });
  const connection = await connectShopGateway(
    t.db,
    t.config,
    clock,
    { shopId: shop, code: 'PAYPAL', fields: fieldsOf(credentials) },
    [provider],
  );
  expect(connection).toMatchObject({ gateway: 'PAYPAL', mode });
  return { shop, key, credentials, webhookUrl };
}

async function createPayment(s: PayPalShop, value = 10) {
  const res = await t.http
    .post('/dev/v1/payments')
    .set(bearer(s.key))
    .send({ title: 'Pro License', value, currency: 'USD', email: 'ada@example.com', gateway: 'PAYPAL' });
  expect(res.status).toBe(201);
  return res.body.data as { uniqid: string; checkout_url: string; session_id: string; status: string };
}

const flaggedEvents = async (shop: string) =>
  (
    await t.db
      .selectFrom('events')
      .select('data')
      .where('shop_id', '=', shop)
      .where('type', '=', 'payment:flagged')
      .orderBy('created_at')
      .execute()
  ).map((e) => JSON.parse(e.data) as Record<string, unknown>);
const orderOf = (uniqid: string) =>
  t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();
const attemptsOf = async (uniqid: string) => {
  const order = await orderOf(uniqid);
  return t.db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('order_id', '=', order.id)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
};
const eventsOf = (shop: string, type: string) =>
  t.db.selectFrom('events').select(['data']).where('shop_id', '=', shop).where('type', '=', type).execute();
const gatewayEventsOf = (shop: string) =>
  t.db.selectFrom('gateway_events').select(['event_id', 'status']).where('shop_id', '=', shop).execute();
const refundsOf = async (uniqid: string) => {
  const order = await orderOf(uniqid);
  return t.db
    .selectFrom('refunds')
    .select(['amount', 'gateway', 'provider_refund_id', 'attempt_id'])
    .where('order_id', '=', order.id)
    .execute();
};
const hooksOf = (s: PayPalShop) => fake.webhooks().filter((h) => h.url === s.webhookUrl);

/** Drains the worker until the fake has nothing more under way (a capture's webhook follows the worker's read). */
async function drainAll(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await worker.drain();
    await fake.settled();
  }
  await worker.drain();
}

/**
 * Every table of the database, as comparable text: "nothing written" is two of these being equal. A key's
 * last_used_at is bookkeeping of the request itself, not something the request wrote.
 */
const snapshot = () => snapshotTables(t.db, { skipColumns: { credentials: ['last_used_at'] } });

async function expectPaidOnce(s: PayPalShop, uniqid: string): Promise<void> {
  const order = await orderOf(uniqid);
  expect(order.status).toBe('COMPLETED');
  expect(await eventsOf(s.shop, 'order:paid')).toHaveLength(1);
  const paid = (await attemptsOf(uniqid)).filter((a) => a.status === 'PAID' && a.flag === null);
  expect(paid).toHaveLength(1);
}

describe('1. a test shop pays through PayPal', () => {
  test('POST /payments opens a PayPal order; approve -> webhook -> worker captures -> COMPLETED once', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    expect(payment.checkout_url).toBe(`${fake.sandboxBaseUrl}/checkoutnow?token=${payment.session_id}`);
    const session = fake.session(payment.session_id)!;
    const [attempt] = await attemptsOf(payment.uniqid);
    expect(session).toMatchObject({ attemptId: attempt!.id, amount: '10.00', currency: 'USD', livemode: false });
    expect(attempt).toMatchObject({ gateway: 'PAYPAL', session_id: payment.session_id, status: 'PENDING' });

    await fake.pay(payment.session_id);
    // The route queued the approval; nothing is paid until the worker reads (captures) the order.
    expect(hooksOf(s).map((h) => [h.type, h.sends])).toEqual([['CHECKOUT.ORDER.APPROVED', [200]]]);
    expect((await orderOf(payment.uniqid)).status).toBe('PENDING');
    expect(fake.session(payment.session_id)!.state).toBe('approved');

    await drainAll();
    expect(fake.session(payment.session_id)!.state).toBe('paid');
    expect(hooksOf(s).map((h) => h.type)).toEqual(['CHECKOUT.ORDER.APPROVED', 'PAYMENT.CAPTURE.COMPLETED']);
    await expectPaidOnce(s, payment.uniqid);
    const [paid] = await attemptsOf(payment.uniqid);
    expect(paid).toMatchObject({
      status: 'PAID',
      payment_ref: fake.session(payment.session_id)!.paymentRef,
      flag: null,
    });
    // One capture call, keyed by the session: the capture webhook applied nothing twice.
    expect(fake.requests.filter((r) => r.path === `/v2/checkout/orders/${payment.session_id}/capture`)).toHaveLength(1);
    expect((await gatewayEventsOf(s.shop)).map((e) => e.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
  });

  test('a SERIAL product through the hosted checkout form: one serial delivered, once', async () => {
    const s = await paypalShop('test');
    const product = (
      await t.seed(s.shop, {
        products: [{ title: 'Game Key', type: 'SERIALS', price: '9.99', serials: ['K-1', 'K-2', 'K-3'] }],
      })
    ).products[0]!;
    const created = await t.http
      .post('/dev/v1/orders')
      .set(bearer(s.key))
      .send({ email: 'buyer@example.com', items: [{ product_id: product, quantity: 1 }] });
    expect(created.status).toBe(201);
    const uniqid = created.body.data.uniqid as string;

    const form = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'PAYPAL' });
    expect(form.status).toBe(303);
    const location = new URL(form.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe(`${fake.sandboxBaseUrl}/checkoutnow`);
    const sessionId = location.searchParams.get('token')!;
    expect(fake.session(sessionId)).toMatchObject({ amount: '9.99', state: 'open' });

    await fake.pay(sessionId);
    await drainAll();
    await expectPaidOnce(s, uniqid);
    const order = await orderOf(uniqid);
    const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
    expect(items).toHaveLength(1);
    expect(JSON.stringify(items[0]!.delivered_items)).toMatch(/K-[123]/);
    const claimed = () =>
      t.db
        .selectFrom('product_serials')
        .select(['serial', 'order_item_id'])
        .where('shop_id', '=', s.shop)
        .where('status', '=', 'claimed')
        .execute();
    const sold = await claimed();
    expect(sold).toEqual([{ serial: expect.stringMatching(/^K-[123]$/), order_item_id: items[0]!.id }]);
    expect(JSON.stringify(items[0]!.delivered_items)).toContain(sold[0]!.serial);
    // A second drain and a redelivery of both webhooks deliver nothing more.
    for (const h of hooksOf(s)) expect(await fake.resend(h.eventId)).toBe(200);
    await drainAll();
    expect(await claimed()).toEqual(sold);
    expect(await eventsOf(s.shop, 'order:paid')).toHaveLength(1);
  });
});

describe('2. redeliveries', () => {
  test('5 out-of-order redeliveries and 10 concurrent ones: one completion, one inbox row per event id', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    await fake.pay(payment.session_id);
    await drainAll();
    const [approved, captured] = hooksOf(s);
    expect([approved!.type, captured!.type]).toEqual(['CHECKOUT.ORDER.APPROVED', 'PAYMENT.CAPTURE.COMPLETED']);
    const before = await snapshot();

    // Out of order: the capture first, the approval after, five times each.
    for (let i = 0; i < 5; i++) {
      expect(await fake.resend(captured!.eventId)).toBe(200);
      expect(await fake.resend(approved!.eventId)).toBe(200);
    }
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, (_, i) => fake.resend((i % 2 ? approved : captured)!.eventId)),
    );
    expect(concurrent).toEqual(Array(10).fill(200));
    await drainAll();

    expect(await snapshot()).toEqual(before);
    await expectPaidOnce(s, payment.uniqid);
    const rows = await gatewayEventsOf(s.shop);
    expect(rows.map((r) => r.event_id).sort()).toEqual([approved!.eventId, captured!.eventId].sort());
  });
});

describe('3. webhooks lost', () => {
  test('the reconciler reads the session 3+ minutes later, captures it and completes the invoice once', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    await fake.pay(payment.session_id, { webhooks: false });
    await drainAll();
    // Nothing came, nothing was read: too early for the reconciler.
    expect((await orderOf(payment.uniqid)).status).toBe('PENDING');
    expect(fake.session(payment.session_id)!.state).toBe('approved');
    expect(await gatewayEventsOf(s.shop)).toEqual([]);

    clock.advance(4 * 60_000);
    await drainAll();
    await expectPaidOnce(s, payment.uniqid);
    expect(fake.session(payment.session_id)!.state).toBe('paid');
    // The capture's own webhook came (the account's endpoint is up) and changed nothing.
    clock.advance(10 * 60_000);
    await drainAll();
    await expectPaidOnce(s, payment.uniqid);
    expect(fake.requests.filter((r) => r.path === `/v2/checkout/orders/${payment.session_id}/capture`)).toHaveLength(1);
  });
});

describe('4. two sessions of one invoice both paid', () => {
  test('one completion; the second is flagged DUPLICATE and refunded at PayPal with our attempt-derived key', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    const form = await request(t.app).post(`/invoice/${payment.uniqid}/pay`).type('form').send({ gateway: 'PAYPAL' });
    expect(form.status).toBe(303);
    const second = new URL(form.headers.location as string).searchParams.get('token')!;
    expect(second).not.toBe(payment.session_id);

    await fake.pay(payment.session_id);
    await drainAll();
    await fake.pay(second);
    await drainAll();

    await expectPaidOnce(s, payment.uniqid);
    const attempts = await attemptsOf(payment.uniqid);
    expect(attempts).toHaveLength(2);
    const duplicate = attempts.find((a) => a.session_id === second)!;
    expect(duplicate).toMatchObject({ status: 'PAID', flag: 'DUPLICATE' });
    const ref = fake.session(second)!.paymentRef!;
    // Refunded by the reconciler, once, keyed by the attempt.
    clock.advance(60_000);
    await drainAll();
    const refunds = fake.refunds(ref);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ amount: '10.00', currency: 'USD' });
    expect(refunds[0]!.idempotencyKey).toEqual(expect.stringContaining(duplicate.id));
    expect((await attemptsOf(payment.uniqid)).find((a) => a.id === duplicate.id)!.return_status).toBe('REFUNDED');
    // The merchant is told once, with the refund PayPal made.
    expect(await flaggedEvents(s.shop)).toEqual([
      expect.objectContaining({
        uniqid: payment.uniqid,
        attempt_id: duplicate.id,
        gateway: 'PAYPAL',
        flag: 'DUPLICATE',
        amount: '10.00',
        currency: 'USD',
        return_status: 'REFUNDED',
        provider_refund_id: refunds[0]!.providerRefundId,
      }),
    ]);
    expect(await assertEventPayloads(t.db, s.shop, ['payment:flagged'])).toBe(1);
    // The first payment was not touched.
    expect(fake.refunds(fake.session(payment.session_id)!.paymentRef!)).toEqual([]);
    clock.advance(10 * 60_000);
    await drainAll();
    expect(fake.refunds(ref)).toHaveLength(1);
  });
});

describe('5. short payment', () => {
  test('a capture smaller than the order leaves the invoice PENDING and payable', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    await fake.pay(payment.session_id, { amount: '4.00' });
    await drainAll();
    const order = await orderOf(payment.uniqid);
    expect(order.status).toBe('PENDING');
    expect(await eventsOf(s.shop, 'order:paid')).toHaveLength(0);
    const [attempt] = await attemptsOf(payment.uniqid);
    expect(attempt).toMatchObject({ flag: 'SHORT', paid_currency: 'USD' });
    expect(new Decimal(attempt!.paid_amount!).equals('4.00')).toBe(true);
    // Still payable: the hosted checkout opens a new PayPal session.
    const form = await request(t.app).post(`/invoice/${payment.uniqid}/pay`).type('form').send({ gateway: 'PAYPAL' });
    expect(form.status).toBe(303);
    expect(form.headers.location).toContain(`${fake.sandboxBaseUrl}/checkoutnow?token=`);
  });
});

describe('6. PayPal down at session start', () => {
  const body = { title: 'Pro License', value: 10, currency: 'USD', email: 'ada@example.com', gateway: 'PAYPAL' };

  async function refusedAtStart(fault: 'server-error' | 'timeout', post: (key: string) => Promise<request.Response>) {
    const s = await paypalShop('test');
    const before = await snapshot();
    const ordersBefore = fake.sessions().length;
    fake.failNext(fault);
    const res = await post(s.key);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('GATEWAY_UNAVAILABLE');
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.stringify(res.body)).not.toContain(s.credentials.PAYPAL_CLIENT_SECRET);
    expect(await snapshot()).toEqual(before);
    expect(fake.sessions()).toHaveLength(ordersBefore);
  }

  test.each(['server-error', 'timeout'] as const)(
    '%s: POST /payments answers 502 GATEWAY_UNAVAILABLE with Retry-After and writes nothing',
    (fault) => refusedAtStart(fault, (key) => t.http.post('/dev/v1/payments').set(bearer(key)).send(body)),
  );

  test('the hosted checkout form answers a 502 page and leaves no attempt', async () => {
    const s = await paypalShop('test');
    const created = await t.http
      .post('/dev/v1/payments')
      .set(bearer(s.key))
      .send({ title: 'Pro License', value: 10, currency: 'USD', email: 'ada@example.com' });
    expect(created.status).toBe(201);
    const uniqid = created.body.data.uniqid as string;
    const before = await snapshot();
    fake.failNext('server-error');
    const res = await request(t.app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'PAYPAL' });
    expect(res.status).toBe(502);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).not.toContain(s.credentials.PAYPAL_CLIENT_SECRET);
    expect(await attemptsOf(uniqid)).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });
});

describe('7. webhooks that are not verifiably ours to take', () => {
  test('bad and stale signatures, another shop route, an unknown code: refused, nothing changes', async () => {
    const s = await paypalShop('test');
    const other = await paypalShop('test');
    const payment = await createPayment(s);
    await fake.pay(payment.session_id);
    await drainAll();
    const [approved] = hooksOf(s);
    const before = await snapshot();

    expect(await fake.resend(approved!.eventId, { tamper: 'bad-signature' })).toBe(400);
    // PayPal documents no age limit on transmission_time (src/integrations/paypal/webhook-verify.ts): an old but
    // genuine signature verifies, and the event id already in the inbox makes it change nothing (checked below).
    expect(await fake.resend(approved!.eventId, { tamper: 'stale' })).toBe(200);
    // The exact bytes and headers PayPal sent, at another shop's route: that shop's webhook id does not verify them.
    const replay = (path: string) =>
      request(t.app).post(path).set(approved!.headers).set('Content-Type', 'application/json').send(approved!.body);
    expect((await replay(`/webhooks/gateways/paypal/${other.shop}`)).status).toBe(400);
    expect((await replay(`/webhooks/gateways/acmepay/${s.shop}`)).status).toBe(404);
    expect((await replay(`/webhooks/gateways/paypal/shop_nope`)).status).toBe(404);
    expect(await snapshot()).toEqual(before);
    // The exact replay at the right route: accepted, and the inbox already has it.
    expect(await fake.resend(approved!.eventId)).toBe(200);
    await drainAll();
    expect(await snapshot()).toEqual(before);
    await expectPaidOnce(s, payment.uniqid);
  });

  test('PayPal unreachable to verify a webhook: 502 GATEWAY_UNAVAILABLE with Retry-After, nothing written; its resend is applied once', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    fake.holdWebhooks(true);
    try {
      await fake.pay(payment.session_id);
      const [approved] = hooksOf(s);
      const before = await snapshot();
      // Sent by PayPal (a fresh signature) while its verify call fails, then the same bytes again to read our answer.
      fake.failNext('server-error', 2);
      expect(await fake.resend(approved!.eventId)).toBe(502);
      const answer = await request(t.app)
        .post(`/webhooks/gateways/paypal/${s.shop}`)
        .set(approved!.headers)
        .set('Content-Type', 'application/json')
        .send(approved!.body);
      expect(answer.status).toBe(502);
      expect(answer.body.error.code).toBe('GATEWAY_UNAVAILABLE');
      expect(answer.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.stringify(answer.body)).not.toContain(s.credentials.PAYPAL_CLIENT_SECRET!);
      expect(await snapshot()).toEqual(before);
    } finally {
      fake.holdWebhooks(false);
    }
    // PayPal sends it again (the held sends, released): verified then, applied once.
    await drainAll();
    await expectPaidOnce(s, payment.uniqid);
  });
});

describe('8. mode walls', () => {
  test('sandbox credentials for a live shop are refused by the verify call at the live address; nothing written', async () => {
    const shop = await t.createShop({ name: 'Live PayPal' });
    const sandbox = fake.createAccount({ livemode: false });
    const before = await snapshot();
    await expect(
      connectShopGateway(t.db, t.config, clock, { shopId: shop, code: 'PAYPAL', fields: fieldsOf(sandbox) }, [
        provider,
      ]),
    ).rejects.toThrow(/refused these credentials \(live mode\)/);
    expect(await snapshot()).toEqual(before);
  });

  test('a webhook_id PayPal does not know, a webhook posting elsewhere, PayPal down at that read: refused at connect, nothing written', async () => {
    const shop = await t.createShop({ mode: 'test', name: 'PayPal webhook check' });
    const route = `${origin}/webhooks/gateways/paypal/${shop}`;
    const good = fake.createAccount({ livemode: false, webhookUrl: route });
    const id = good.PAYPAL_WEBHOOK_ID!;
    const typo = { ...good, PAYPAL_WEBHOOK_ID: `${id.slice(0, -1)}${id.endsWith('X') ? 'Y' : 'X'}` };
    const oldServer = `https://old-server.example/webhooks/gateways/paypal/${shop}`;
    const elsewhere = fake.createAccount({ livemode: false, webhookUrl: oldServer });
    const connect = (credentials: Record<string, string>) =>
      connectShopGateway(t.db, t.config, clock, { shopId: shop, code: 'PAYPAL', fields: fieldsOf(credentials) }, [
        provider,
      ]).then(
        (made) => `connected, webhooks at ${made.webhook_url}`,
        (e: unknown) => (e as Error).message,
      );
    const before = await snapshot();
    const unknown = await connect(typo);
    const posted = await connect(elsewhere);
    fake.failAt(`/v1/notifications/webhooks/${id}`, 'server-error');
    const down = await connect(good);
    expect(unknown).toContain(
      `PAYPAL refused this connection (test mode): PayPal has no webhook ${typo.PAYPAL_WEBHOOK_ID}`,
    );
    expect(unknown).toContain('PAYPAL_WEBHOOK_ID ("webhook_id" on stdin)');
    expect(posted).toContain(`posts to ${oldServer}, not to this shop's ${route}`);
    expect(down).toContain('PAYPAL could not check these credentials: PayPal failed (HTTP 500');
    expect(await snapshot()).toEqual(before);
    for (const message of [unknown, posted, down]) {
      expect(message).not.toContain(good.PAYPAL_CLIENT_SECRET!);
      expect(message).not.toContain(elsewhere.PAYPAL_CLIENT_SECRET!);
    }
    // Fixed, the same connect goes through: one connection row, the route printed is the one PayPal posts to.
    expect(await connect(good)).toBe(`connected, webhooks at ${route}`);
    const rows = await t.db.selectFrom('gateway_connections').select('gateway').where('shop_id', '=', shop).execute();
    expect(rows).toEqual([{ gateway: 'PAYPAL' }]);
  });

  test("a test-mode webhook sent to the live shop's route is refused; nothing changes", async () => {
    const live = await paypalShop('live');
    const testShop = await paypalShop('test');
    const payment = await createPayment(testShop);
    await fake.pay(payment.session_id);
    await drainAll();
    const [approved] = hooksOf(testShop);
    const before = await snapshot();
    const res = await request(t.app)
      .post(`/webhooks/gateways/paypal/${live.shop}`)
      .set(approved!.headers)
      .set('Content-Type', 'application/json')
      .send(approved!.body);
    expect(res.status).toBe(400);
    expect(await snapshot()).toEqual(before);
  });
});

describe('9. money moved at PayPal', () => {
  async function paidPayment(value = 10) {
    const s = await paypalShop('test');
    const payment = await createPayment(s, value);
    await fake.pay(payment.session_id);
    await drainAll();
    await expectPaidOnce(s, payment.uniqid);
    return { s, payment, ref: fake.session(payment.session_id)!.paymentRef! };
  }

  test("a refund made in PayPal's dashboard reaches us by webhook and is recorded once", async () => {
    const { s, payment, ref } = await paidPayment();
    await fake.dashboardRefund(ref, '3.00');
    await drainAll();
    const [made] = fake.refunds(ref);
    const [attempt] = await attemptsOf(payment.uniqid);
    const recorded = await refundsOf(payment.uniqid);
    expect(recorded).toHaveLength(1);
    expect(new Decimal(recorded[0]!.amount).equals('3.00')).toBe(true);
    expect(recorded[0]).toMatchObject({
      gateway: 'PAYPAL',
      provider_refund_id: made!.providerRefundId,
      attempt_id: attempt!.id,
    });
    expect((await orderOf(payment.uniqid)).status).toBe('PARTIALLY_REFUNDED');
    // Its webhook again, and again concurrently: recorded once.
    const hook = hooksOf(s).find((h) => h.type === 'PAYMENT.CAPTURE.REFUNDED')!;
    const before = await snapshot();
    expect(await Promise.all([1, 2, 3].map(() => fake.resend(hook.eventId)))).toEqual([200, 200, 200]);
    await drainAll();
    expect(await snapshot()).toEqual(before);
  });

  test('a dispute opened and closed at PayPal opens and closes ours', async () => {
    const { s, payment, ref } = await paidPayment();
    const disputeId = await fake.openDispute(ref);
    await drainAll();
    const disputesOf = () =>
      t.db
        .selectFrom('disputes')
        .select(['status', 'provider_dispute_id', 'gateway', 'amount', 'reason'])
        .where('shop_id', '=', s.shop)
        .execute();
    const opened = await disputesOf();
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({
      provider_dispute_id: disputeId,
      gateway: 'PAYPAL',
      reason: 'PRODUCT_NOT_RECEIVED',
    });
    expect(new Decimal(opened[0]!.amount).equals('10.00')).toBe(true);
    expect(opened[0]!.status).not.toMatch(/^(WON|LOST|CLOSED)$/);
    expect((await orderOf(payment.uniqid)).status).toBe('DISPUTED');

    await fake.closeDispute(disputeId, 'won');
    await drainAll();
    const closed = await disputesOf();
    expect(closed).toHaveLength(1);
    expect(closed[0]!.status).toBe('WON');
    expect((await orderOf(payment.uniqid)).status).toBe('COMPLETED');
    expect(await eventsOf(s.shop, 'order:paid')).toHaveLength(1);
  });
});

describe('9b. refunds through PayPal', () => {
  test('partial then full through POST /orders/{id}/refund; an outage at refund writes nothing', async () => {
    const s = await paypalShop('test');
    const payment = await createPayment(s);
    await fake.pay(payment.session_id);
    await drainAll();
    const order = await orderOf(payment.uniqid);
    const ref = fake.session(payment.session_id)!.paymentRef!;
    const refund = (body: Record<string, string>, idem: string) =>
      t.http.post(`/dev/v1/orders/${order.id}/refund`).set(bearer(s.key)).set('Idempotency-Key', idem).send(body);
    const recorded = () =>
      t.db
        .selectFrom('refunds')
        .select(['amount', 'provider_refund_id', 'gateway'])
        .where('order_id', '=', order.id)
        .orderBy('created_at')
        .orderBy('id')
        .execute();

    // PayPal down: 502, nothing written here, nothing refunded there.
    const before = await snapshot();
    fake.failNext('server-error');
    const down = await refund({ amount: '4.00' }, 'r-down');
    expect(down.status).toBe(502);
    expect(down.body.error.code).toBe('GATEWAY_UNAVAILABLE');
    expect(down.headers['retry-after']).toMatch(/^\d+$/);
    expect(await snapshot()).toEqual(before);
    expect(fake.refunds(ref)).toEqual([]);

    expect((await refund({ amount: '4.00' }, 'r-1')).status).toBe(200);
    expect((await orderOf(payment.uniqid)).status).toBe('PARTIALLY_REFUNDED');
    expect((await refund({}, 'r-2')).status).toBe(200);
    expect((await orderOf(payment.uniqid)).status).toBe('REFUNDED');
    await drainAll();

    const atPayPal = fake.refunds(ref);
    expect(atPayPal.map((r) => r.amount)).toEqual(['4.00', '6.00']);
    // Both made at one instant of the test clock: compared by amount, not by insertion order.
    const ours = (await recorded()).sort((x, y) => new Decimal(x.amount).comparedTo(y.amount));
    expect(ours.map((r) => [new Decimal(r.amount).toFixed(2), r.provider_refund_id, r.gateway])).toEqual(
      atPayPal.map((r) => [r.amount, r.providerRefundId, 'PAYPAL']),
    );
    // The refunds' own webhooks came back and were recognised as ours: nothing recorded twice.
    expect(hooksOf(s).filter((h) => h.type === 'PAYMENT.CAPTURE.REFUNDED')).toHaveLength(2);
    expect(await recorded()).toHaveLength(2);
  });
});
