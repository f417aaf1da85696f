// The Stripe adapter against the local Stripe fake over real HTTP: connect checks, sessions keyed by the attempt,
// every state a session reads as, refunds bounded by what was paid, every fault as the right ProviderError, and
// webhooks verified by stripe-node and translated to our notices. Every test ends with the fake's record of
// OpenAPI violations empty (and one proves the fake does catch a request that breaks Stripe's document).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import {
  type ProviderAccount,
  type ProviderNotice,
  ProviderError,
  type StartSessionInput,
  WebhookRejected,
} from '../../src/integrations/gateway-provider';
import { createStripeProvider } from '../../src/integrations/stripe';
import { startStripeFake, type StripeFake } from '../fakes/stripe';

const provider = createStripeProvider({ timeoutMs: 2000, maxNetworkRetries: 0 });

/** Our webhook route, reduced to what the adapter does in it: verify + translate, 400 when rejected. */
class Receiver {
  account: ProviderAccount | undefined;
  readonly notices: ProviderNotice[] = [];
  readonly rejections: string[] = [];
  /** Answer this status first this many times (the endpoint "down"). */
  failures = 0;
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.failures > 0) {
          this.failures -= 1;
          res.writeHead(503).end();
          return;
        }
        provider.parseWebhook(this.account!, Buffer.concat(chunks), req.headers).then(
          (notices) => {
            this.notices.push(...notices);
            res.writeHead(200).end();
          },
          (error: unknown) => {
            this.rejections.push(error instanceof WebhookRejected ? error.message : `unexpected: ${String(error)}`);
            res.writeHead(error instanceof WebhookRejected ? 400 : 500).end();
          },
        );
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks/gateways/stripe/shop`;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server!.close(() => r()));
  }
}

let fake: StripeFake;
const receiver = new Receiver();
let attemptSeq = 0;

function connect(livemode = false): { account: ProviderAccount; credentials: Record<string, string> } {
  const credentials = fake.createAccount({ livemode, webhookUrl: receiver.url });
  const account: ProviderAccount = {
    livemode,
    apiBase: fake.baseUrl,
    credentials: { secret_key: credentials.STRIPE_SECRET_KEY!, webhook_secret: credentials.STRIPE_WEBHOOK_SECRET! },
  };
  receiver.account = account;
  return { account, credentials };
}

function input(overrides: Partial<StartSessionInput> = {}): StartSessionInput {
  attemptSeq += 1;
  return {
    attemptId: `att_${Date.now()}_${attemptSeq}`,
    shopId: 'shop_1',
    orderUniqid: '6f1c2e1a-0000-4000-8000-000000000001',
    description: 'Ebook <Deluxe>',
    amount: '14.99',
    currency: 'USD',
    customerEmail: 'buyer@example.com',
    successUrl: 'https://shop.example/return?session={CHECKOUT_SESSION_ID}',
    cancelUrl: 'https://shop.example/checkout',
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

/** Waits for webhook deliveries that run after an API answer (charge.refunded). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(condition()).toBe(true);
}

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(async () => {
  fake = await startStripeFake({ webhookRetryDelayMs: 50 });
  receiver.notices.length = 0;
  receiver.rejections.length = 0;
  receiver.failures = 0;
});
afterEach(async () => {
  await fake.close();
  expect(fake.violations).toEqual([]);
});

describe('connect', () => {
  test('a good key passes two reads (its balance, its webhook endpoints); a wrong key is unauthorized', async () => {
    const { account } = connect();
    await expect(provider.verifyCredentials(account, { webhookUrl: receiver.url })).resolves.toBeUndefined();
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/balance', 'GET /v1/webhook_endpoints']);

    const wrong = { ...account, credentials: { ...account.credentials, secret_key: 'sk_test_notakeyatall1234567890' } };
    const error = await failure(provider.verifyCredentials(wrong, { webhookUrl: receiver.url }));
    expect(error.failure).toBe('unauthorized');
    expect(error.message).not.toContain('sk_test_');
  });

  test('mode mismatch: live keys only for live shops, test keys only for test shops, a whsec_ secret', () => {
    const test = { secret_key: 'sk_test_abc', webhook_secret: 'whsec_abc' };
    const live = { secret_key: 'sk_live_abc', webhook_secret: 'whsec_abc' };
    expect(provider.modeMismatch(test, false)).toBeNull();
    expect(provider.modeMismatch(live, true)).toBeNull();
    expect(provider.modeMismatch({ ...test, secret_key: 'rk_test_abc' }, false)).toBeNull();
    expect(provider.modeMismatch(test, true)).toMatch(/live shop/);
    expect(provider.modeMismatch(live, false)).toMatch(/test shop/);
    expect(provider.modeMismatch({ ...live, secret_key: 'rk_live_abc' }, false)).toMatch(/test shop/);
    expect(provider.modeMismatch({ ...test, secret_key: 'pk_test_abc' }, false)).toMatch(/secret or restricted/);
    expect(provider.modeMismatch({ ...test, webhook_secret: 'abc' }, false)).toMatch(/whsec_/);
    // No message ever repeats the key.
    expect(provider.modeMismatch(live, false)).not.toContain('sk_live_abc');
    expect(provider.defaultApiBase(true)).toBe('https://api.stripe.com');
    expect(provider.fields.map((f) => [f.name, f.env, f.secret])).toEqual([
      ['secret_key', 'STRIPE_SECRET_KEY', true],
      ['webhook_secret', 'STRIPE_WEBHOOK_SECRET', true],
    ]);
  });

  test('a live key against a shop that Stripe says is in test mode is refused', async () => {
    const { account } = connect(false);
    const error = await failure(
      provider.verifyCredentials({ ...account, livemode: true }, { webhookUrl: receiver.url }),
    );
    expect(error.failure).toBe('refused');
  });
});

describe('sessions', () => {
  test('a session carries the attempt, and the same attempt started twice is the same session', async () => {
    const { account } = connect();
    const start = input();
    const first = await provider.startSession(account, start);
    expect(first.sessionId).toMatch(/^cs_test_/);
    expect(first.checkoutUrl).toBe(`${fake.baseUrl}/pay/${first.sessionId}`);
    const again = await provider.startSession(account, start);
    expect(again).toEqual(first);
    expect(fake.sessions()).toHaveLength(1);
    expect(fake.session(first.sessionId)).toMatchObject({
      attemptId: start.attemptId,
      amount: '14.99',
      currency: 'USD',
      state: 'open',
      livemode: false,
    });
    expect(fake.requests.map((r) => r.idempotencyKey)).toEqual([
      `attempt_${start.attemptId}`,
      `attempt_${start.attemptId}`,
    ]);
  });

  test('the same attempt with another amount is Stripe idempotency_error: refused, nothing opened', async () => {
    const { account } = connect();
    const start = input();
    await provider.startSession(account, start);
    const error = await failure(provider.startSession(account, { ...start, amount: '20.00' }));
    expect(error.failure).toBe('refused');
    expect(error.message).toMatch(/same parameters/);
    expect(fake.sessions()).toHaveLength(1);
  });

  test('amounts go in Stripe units: 14.99 USD is 1499, 1000 JPY is 1000, and come back as our strings', async () => {
    const { account } = connect();
    const jpy = await provider.startSession(account, input({ amount: '1000', currency: 'JPY' }));
    await fake.pay(jpy.sessionId);
    expect(await provider.readSession(account, jpy.sessionId)).toMatchObject({ amount: '1000', currency: 'JPY' });
    const kwd = await provider.startSession(account, input({ amount: '1.250', currency: 'KWD' }));
    await fake.pay(kwd.sessionId);
    expect(await provider.readSession(account, kwd.sessionId)).toMatchObject({ amount: '1.250', currency: 'KWD' });
    const tooFine = await failure(provider.startSession(account, input({ amount: '1.999' })));
    expect(tooFine.failure).toBe('refused');
  });

  test('read: open, paid (with the payment intent), discounted, processing, failed, expired', async () => {
    const { account } = connect();
    const open = await provider.startSession(account, input());
    expect(await provider.readSession(account, open.sessionId)).toEqual({ status: 'OPEN' });

    await fake.pay(open.sessionId);
    const paid = await provider.readSession(account, open.sessionId);
    const paymentRef = fake.session(open.sessionId)!.paymentRef!;
    expect(paymentRef).toMatch(/^pi_/);
    expect(paid).toEqual({ status: 'PAID', amount: '14.99', currency: 'USD', paymentRef });

    // Stripe has no partial payment: a promotion code lowers amount_total, and that is what was paid.
    const short = await provider.startSession(account, input());
    await fake.pay(short.sessionId, { amount: '10.00' });
    expect(await provider.readSession(account, short.sessionId)).toMatchObject({ status: 'PAID', amount: '10.00' });

    // Adaptive pricing: the buyer paid in EUR; the session says so, and so do we.
    const converted = await provider.startSession(account, input());
    await fake.pay(converted.sessionId, { amount: '13.80', currency: 'EUR' });
    expect(await provider.readSession(account, converted.sessionId)).toMatchObject({
      status: 'PAID',
      amount: '13.80',
      currency: 'EUR',
    });

    const debit = await provider.startSession(account, input());
    await fake.startAsyncPayment(debit.sessionId);
    expect(await provider.readSession(account, debit.sessionId)).toEqual({ status: 'OPEN' });
    await fake.fail(debit.sessionId);
    expect(await provider.readSession(account, debit.sessionId)).toEqual({ status: 'FAILED' });

    const late = await provider.startSession(account, input());
    await fake.expire(late.sessionId);
    expect(await provider.readSession(account, late.sessionId)).toEqual({ status: 'EXPIRED' });
  });

  test("another account's session is not found: refused", async () => {
    const { account } = connect();
    const session = await provider.startSession(account, input());
    const other = connect().account;
    const error = await failure(provider.readSession(other, session.sessionId));
    expect(error.failure).toBe('refused');
  });

  test('the hosted page: Pay redirects to success_url with the session id, Fail too once the debit bounced', async () => {
    const { account } = connect();
    const session = await provider.startSession(account, input());
    const page = await fetch(session.checkoutUrl);
    const html = await page.text();
    expect(html).toContain('TEST MODE');
    expect(html).toContain('Ebook &lt;Deluxe&gt;');
    expect(html).toContain('14.99');
    const pay = await fetch(`${fake.baseUrl}/pay/${session.sessionId}/pay`, { method: 'POST', redirect: 'manual' });
    expect(pay.status).toBe(303);
    expect(pay.headers.get('location')).toBe(`https://shop.example/return?session=${session.sessionId}`);
    expect(fake.session(session.sessionId)!.state).toBe('paid');
    const again = await fetch(`${fake.baseUrl}/pay/${session.sessionId}/pay`, { method: 'POST', redirect: 'manual' });
    expect(again.status).toBe(409);

    const other = await provider.startSession(account, input());
    const fail = await fetch(`${fake.baseUrl}/pay/${other.sessionId}/fail`, { method: 'POST', redirect: 'manual' });
    expect(fail.status).toBe(303);
    expect(await provider.readSession(account, other.sessionId)).toEqual({ status: 'FAILED' });
  });
});

describe('refunds', () => {
  async function paidSession(account: ProviderAccount) {
    const session = await provider.startSession(account, input({ amount: '30.00' }));
    await fake.pay(session.sessionId);
    return { session, paymentRef: fake.session(session.sessionId)!.paymentRef! };
  }

  test('partial, then the rest, then more is refused; a retried refund is the same refund', async () => {
    const { account } = connect();
    const { session, paymentRef } = await paidSession(account);
    const base = { paymentRef, sessionId: session.sessionId, currency: 'USD' };
    const first = await provider.refund(account, {
      ...base,
      refundId: 'rf_1',
      amount: '10.00',
      reason: 'requested_by_customer',
    });
    expect(first).toEqual({ providerRefundId: expect.stringMatching(/^re_/), status: 'SUCCEEDED' });
    const retried = await provider.refund(account, {
      ...base,
      refundId: 'rf_1',
      amount: '10.00',
      reason: 'requested_by_customer',
    });
    expect(retried).toEqual(first);
    const rest = await provider.refund(account, {
      ...base,
      refundId: 'rf_2',
      amount: '20.00',
      reason: 'Buyer changed mind',
    });
    expect(rest.status).toBe('SUCCEEDED');
    const over = await failure(provider.refund(account, { ...base, refundId: 'rf_3', amount: '0.01' }));
    expect(over.failure).toBe('refused');
    expect(fake.refunds(paymentRef).map((r) => [r.amount, r.idempotencyKey])).toEqual([
      ['10.00', 'refund_rf_1'],
      ['20.00', 'refund_rf_2'],
    ]);
  });

  test("more than was paid at once is refused with Stripe's reason", async () => {
    const { account } = connect();
    const { session, paymentRef } = await paidSession(account);
    const error = await failure(
      provider.refund(account, {
        refundId: 'rf_x',
        paymentRef,
        sessionId: session.sessionId,
        amount: '30.01',
        currency: 'USD',
      }),
    );
    expect(error.failure).toBe('refused');
    expect(error.message).toMatch(/greater than unrefunded amount/);
    expect(fake.refunds(paymentRef)).toEqual([]);
  });
});

describe('faults', () => {
  test('a connection with no key or an API base that is not an origin fails before any call', async () => {
    const { account } = connect();
    const noKey = { ...account, credentials: { webhook_secret: 'whsec_x' } };
    expect((await failure(provider.readSession(noKey, 'cs_test_x'))).failure).toBe('unauthorized');
    const withPath = { ...account, apiBase: `${fake.baseUrl}/stripe` };
    expect((await failure(provider.readSession(withPath, 'cs_test_x'))).failure).toBe('unavailable');
    expect(fake.requests).toEqual([]);
  });

  test('no answer within the timeout is unavailable', async () => {
    const { account } = connect();
    fake.failNext('timeout');
    const quick = createStripeProvider({ timeoutMs: 200, maxNetworkRetries: 0 });
    const started = Date.now();
    const error = await failure(quick.readSession(account, 'cs_test_x'));
    expect(error.failure).toBe('unavailable');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('500 is unavailable, 429 is unavailable with Retry-After, garbage is unavailable', async () => {
    const { account } = connect();
    fake.failNext('server-error');
    expect((await failure(provider.verifyCredentials(account, { webhookUrl: receiver.url }))).failure).toBe(
      'unavailable',
    );
    fake.failNext('rate-limited');
    const limited = await failure(provider.startSession(account, input()));
    expect(limited.failure).toBe('unavailable');
    expect(limited.retryAfterSeconds).toBe(2);
    fake.failNext('garbage');
    expect((await failure(provider.readSession(account, 'cs_test_x'))).failure).toBe('unavailable');
    expect(fake.sessions()).toEqual([]);
  });

  test('a 500 on a create is retried with the same idempotency key: one session', async () => {
    const { account } = connect();
    const retrying = createStripeProvider({ timeoutMs: 2000, maxNetworkRetries: 1 });
    fake.failNext('server-error');
    const start = input();
    const session = await retrying.startSession(account, start);
    expect(fake.requests.map((r) => r.idempotencyKey)).toEqual([
      `attempt_${start.attemptId}`,
      `attempt_${start.attemptId}`,
    ]);
    expect(fake.sessions().map((s) => s.sessionId)).toEqual([session.sessionId]);
  });
});

describe('webhooks', () => {
  test('each checkout event becomes a SESSION notice with the attempt id', async () => {
    const { account } = connect();
    const paid = input();
    const a = await provider.startSession(account, paid);
    await fake.pay(a.sessionId);
    const paymentRef = fake.session(a.sessionId)!.paymentRef!;
    const b = await provider.startSession(account, input());
    await fake.startAsyncPayment(b.sessionId);
    await fake.pay(b.sessionId);
    const c = await provider.startSession(account, input());
    await fake.fail(c.sessionId);
    const d = await provider.startSession(account, input());
    await fake.expire(d.sessionId);

    expect(fake.webhooks().map((w) => w.type)).toEqual([
      'checkout.session.completed',
      'checkout.session.completed',
      'checkout.session.async_payment_succeeded',
      'checkout.session.completed',
      'checkout.session.async_payment_failed',
      'checkout.session.expired',
    ]);
    const states = receiver.notices.map((n) => (n.kind === 'SESSION' ? [n.sessionId, n.state.status] : n.kind));
    expect(states).toEqual([
      [a.sessionId, 'PAID'],
      [b.sessionId, 'OPEN'],
      [b.sessionId, 'PAID'],
      [c.sessionId, 'OPEN'],
      [c.sessionId, 'FAILED'],
      [d.sessionId, 'EXPIRED'],
    ]);
    expect(receiver.notices[0]).toEqual({
      kind: 'SESSION',
      eventId: fake.webhooks()[0]!.eventId,
      sessionId: a.sessionId,
      attemptId: paid.attemptId,
      state: { status: 'PAID', amount: '14.99', currency: 'USD', paymentRef },
    });
  });

  test('charge.refunded lists every refund of the payment; a dashboard refund too', async () => {
    const { account } = connect();
    const session = await provider.startSession(account, input({ amount: '30.00' }));
    await fake.pay(session.sessionId);
    const paymentRef = fake.session(session.sessionId)!.paymentRef!;
    const ours = await provider.refund(account, {
      refundId: 'rf_a',
      paymentRef,
      sessionId: session.sessionId,
      amount: '5.00',
      currency: 'USD',
    });
    await until(() => receiver.notices.some((n) => n.kind === 'REFUNDED'));
    await fake.dashboardRefund(paymentRef, '7.50');
    const refunded = receiver.notices.filter((n) => n.kind === 'REFUNDED');
    expect(refunded).toHaveLength(2);
    const dashboard = fake.refunds(paymentRef)[1]!;
    expect(refunded[1]).toEqual({
      kind: 'REFUNDED',
      eventId: expect.stringMatching(/^evt_/),
      paymentRef,
      refunds: expect.arrayContaining([
        { providerRefundId: ours.providerRefundId, amount: '5.00', currency: 'USD' },
        { providerRefundId: dashboard.providerRefundId, amount: '7.50', currency: 'USD' },
      ]),
    });
  });

  test('disputes: opened with our reason and the evidence deadline, closed won / lost', async () => {
    const { account } = connect();
    const session = await provider.startSession(account, input());
    await fake.pay(session.sessionId);
    const paymentRef = fake.session(session.sessionId)!.paymentRef!;
    const d1 = await fake.openDispute(paymentRef, { reason: 'product_not_received' });
    const d2 = await fake.openDispute(paymentRef, { reason: 'bank_cannot_process' });
    await fake.closeDispute(d1, 'won');
    await fake.closeDispute(d2, 'lost');
    const [opened, other, won, lost] = receiver.notices.slice(1);
    expect(opened).toMatchObject({
      kind: 'DISPUTE_OPENED',
      paymentRef,
      disputeId: d1,
      amount: '14.99',
      currency: 'USD',
      reason: 'PRODUCT_NOT_RECEIVED',
    });
    const due = (opened as { evidenceDueBy?: Date }).evidenceDueBy!;
    expect(due).toBeInstanceOf(Date);
    expect(due.getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect(other).toMatchObject({ kind: 'DISPUTE_OPENED', disputeId: d2, reason: 'GENERAL' });
    expect(won).toEqual({
      kind: 'DISPUTE_CLOSED',
      eventId: expect.any(String),
      paymentRef,
      disputeId: d1,
      outcome: 'WON',
    });
    expect(lost).toMatchObject({ kind: 'DISPUTE_CLOSED', disputeId: d2, outcome: 'LOST' });
  });

  test('a bad signature, a stale one, a missing header, an unsigned body: rejected; a replay within tolerance passes', async () => {
    const { account } = connect();
    const session = await provider.startSession(account, input());
    await fake.pay(session.sessionId);
    const eventId = fake.webhooks()[0]!.eventId;
    expect(await fake.resend(eventId, { tamper: 'bad-signature' })).toBe(400);
    expect(await fake.resend(eventId, { tamper: 'stale' })).toBe(400);
    expect(receiver.rejections).toEqual([
      expect.stringMatching(/No signatures found matching/),
      expect.stringMatching(/Timestamp outside the tolerance zone/),
    ]);
    // A resend with a fresh signature is accepted; the same event id lets the core drop it as a duplicate.
    expect(await fake.resend(eventId)).toBe(200);
    expect(receiver.notices.map((n) => n.eventId)).toEqual([eventId, eventId]);

    const body = Buffer.from(fake.webhooks()[0]!.body);
    await expect(provider.parseWebhook(account, body, {})).rejects.toBeInstanceOf(WebhookRejected);
    // The secret must never show in what a rejection says.
    const rejection = await provider
      .parseWebhook(account, body, { 'stripe-signature': 't=1,v1=00' })
      .catch((e: Error) => e);
    expect(rejection).toBeInstanceOf(WebhookRejected);
    expect((rejection as Error).message).not.toContain(account.credentials.webhook_secret);
  });

  function signed(account: ProviderAccount, payload: string) {
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: account.credentials.webhook_secret! });
    return provider.parseWebhook(account, Buffer.from(payload), { 'stripe-signature': header });
  }

  test("a correctly signed body that is not a Stripe event, or is the other mode's, is rejected", async () => {
    const { account } = connect();
    await expect(signed(account, 'not json')).rejects.toBeInstanceOf(WebhookRejected);
    await expect(signed(account, JSON.stringify({ hello: 'world' }))).rejects.toThrow(/not a Stripe event/);
    const live = { id: 'evt_1', object: 'event', type: 'customer.created', livemode: true, data: { object: {} } };
    await expect(signed(account, JSON.stringify(live))).rejects.toThrow(/live-mode event/);
    const broken = {
      id: 'evt_2',
      object: 'event',
      type: 'charge.dispute.created',
      livemode: false,
      data: { object: { object: 'dispute', id: 'du_1', payment_intent: 'pi_1', amount: 'lots', currency: 9 } },
    };
    await expect(signed(account, JSON.stringify(broken))).rejects.toBeInstanceOf(WebhookRejected);
  });

  test('an event we have no use for is IGNORED; a charge.refunded without its refunds list is completed from the API', async () => {
    const { account } = connect();
    const ignored = { id: 'evt_3', object: 'event', type: 'customer.created', livemode: false, data: { object: {} } };
    expect(await signed(account, JSON.stringify(ignored))).toEqual([
      { kind: 'IGNORED', eventId: 'evt_3', type: 'customer.created' },
    ]);

    const session = await provider.startSession(account, input({ amount: '30.00' }));
    await fake.pay(session.sessionId, { webhooks: false });
    const paymentRef = fake.session(session.sessionId)!.paymentRef!;
    await fake.dashboardRefund(paymentRef, '3.00');
    const event = JSON.parse(fake.webhooks().at(-1)!.body);
    // Since API 2022-11-15 Stripe leaves the charge's refunds out of events.
    delete event.data.object.refunds;
    const notices = await signed(account, JSON.stringify(event));
    expect(notices).toEqual([
      {
        kind: 'REFUNDED',
        eventId: event.id,
        paymentRef,
        refunds: [{ providerRefundId: fake.refunds(paymentRef)[0]!.providerRefundId, amount: '3.00', currency: 'USD' }],
      },
    ]);
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/refunds' });
  });

  test('an endpoint that fails is retried; held webhooks are sent on release', async () => {
    const { account } = connect();
    receiver.failures = 2;
    const session = await provider.startSession(account, input());
    await fake.pay(session.sessionId);
    expect(fake.webhooks()[0]!.sends).toEqual([503, 503, 200]);
    expect(receiver.notices).toHaveLength(1);

    fake.holdWebhooks(true);
    const other = await provider.startSession(account, input());
    await fake.expire(other.sessionId);
    expect(fake.webhooks()[1]!.sends).toEqual([]);
    fake.holdWebhooks(false);
    await until(() => fake.webhooks()[1]!.sends.includes(200));
    expect(receiver.notices.at(-1)).toMatchObject({ kind: 'SESSION', state: { status: 'EXPIRED' } });
  });
});

describe('the fake holds requests to the document', () => {
  test("a request that breaks Stripe's document gets Stripe's 400 and is recorded as a violation", async () => {
    const { credentials } = connect();
    const response = await fetch(`${fake.baseUrl}/v1/checkout/sessions`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${credentials.STRIPE_SECRET_KEY}`,
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: 'mode=payment&success_url=https://x.example&line_items[0][price_data][currency]=usd&line_items[0][price_data][unit_amount]=lots&not_a_param=1',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({ type: 'invalid_request_error' });
    expect(fake.violations.length).toBeGreaterThan(0);
    expect(fake.violations.join('\n')).toMatch(/unit_amount|additional/);
    expect(fake.sessions()).toEqual([]);
    fake.violations.splice(0); // seen and asserted: the afterEach check is for the other tests
  });
});
