// The PayPal adapter against the PayPal fake, over real HTTP, no database: connect, checkout sessions (approval,
// capture on read, short payments, declines, expiry), refunds, every fault, webhook verification by PayPal's own
// call and the translation of every event we use. Every test ends with the fake holding nothing against PayPal's
// published document.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ProviderError,
  WebhookRejected,
  type ConnectTarget,
  type ProviderAccount,
  type StartSessionInput,
} from '../../src/integrations/gateway-provider';
import { createPayPalProvider, paypalProvider, requestIdFor } from '../../src/integrations/paypal';
import { translateEvent } from '../../src/integrations/paypal/webhook-translate';
import { startPayPalFake, type PayPalFake } from '../fakes/paypal/fake';

interface Received {
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** Our webhook route, as far as these tests need it: it keeps what arrives and answers the queued statuses. */
async function startReceiver(): Promise<{
  url: string;
  received: Received[];
  answers: number[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const answers: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(answers.shift() ?? 200);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/gateways/PAYPAL/shop_1`,
    received,
    answers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let fake: PayPalFake;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const provider = createPayPalProvider({ timeoutMs: 3000 });

beforeEach(async () => {
  fake = await startPayPalFake({ webhookRetryDelayMs: 20 });
  receiver = await startReceiver();
});

afterEach(async () => {
  await fake.settled();
  const violations = [...fake.violations];
  await fake.close();
  await receiver.close();
  expect(violations).toEqual([]);
});

/** A new PayPal account whose webhook posts to `webhookUrl` (null: none set yet), as the adapter is handed it. */
function connect(livemode = false, webhookUrl: string | null = receiver.url): ProviderAccount {
  const c = fake.createAccount({ livemode, webhookUrl: webhookUrl ?? undefined });
  return {
    livemode,
    apiBase: fake.apiBase(livemode),
    credentials: {
      client_id: c.PAYPAL_CLIENT_ID!,
      client_secret: c.PAYPAL_CLIENT_SECRET!,
      webhook_id: c.PAYPAL_WEBHOOK_ID!,
    },
  };
}

/** What connect passes: the shop's webhook route, which the accounts of `connect()` register by default. */
function here(): ConnectTarget {
  return { webhookUrl: receiver.url };
}

function sessionInput(overrides: Partial<StartSessionInput> = {}): StartSessionInput {
  return {
    attemptId: 'att_01JDX5T0M2ZQ',
    shopId: 'shop_1',
    orderUniqid: '0b8f9f4e-6f0e-4a39-9a43-2f6d3f1c9e11',
    description: 'Pro licence',
    amount: '14.99',
    currency: 'USD',
    customerEmail: 'buyer@example.com',
    successUrl: 'https://shop.example/checkout/return?attempt=att_01JDX5T0M2ZQ',
    cancelUrl: 'https://shop.example/checkout/again',
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

async function rejection(promise: Promise<unknown>): Promise<WebhookRejected> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WebhookRejected);
  return error as WebhookRejected;
}

/** The last webhook of a type that reached our receiver, as our route would hand it to the adapter. */
function arrived(type: string): Received {
  const match = [...receiver.received]
    .reverse()
    .find((r) => (JSON.parse(r.body) as { event_type: string }).event_type === type);
  if (!match) throw new Error(`no ${type} webhook arrived`);
  return match;
}

async function paidSession(
  account: ProviderAccount,
  input = sessionInput(),
): Promise<{ sessionId: string; paymentRef: string }> {
  const { sessionId } = await provider.startSession(account, input);
  await fake.pay(sessionId);
  const state = await provider.readSession(account, sessionId);
  if (state.status !== 'PAID') throw new Error(`expected PAID, got ${state.status}`);
  await fake.settled();
  return { sessionId, paymentRef: state.paymentRef };
}

describe('PayPal: the provider description', () => {
  it('names PayPal, its two hosts by mode and its three connect fields, the secret sealed', () => {
    expect(paypalProvider.code).toBe('PAYPAL');
    expect(paypalProvider.defaultApiBase(true)).toBe('https://api-m.paypal.com');
    expect(paypalProvider.defaultApiBase(false)).toBe('https://api-m.sandbox.paypal.com');
    expect(paypalProvider.fields).toEqual([
      { name: 'client_id', env: 'PAYPAL_CLIENT_ID', secret: false },
      { name: 'client_secret', env: 'PAYPAL_CLIENT_SECRET', secret: true },
      { name: 'webhook_id', env: 'PAYPAL_WEBHOOK_ID', secret: false },
    ]);
    // A PayPal client id does not say its mode: no local check, the connect-time call at the mode's host is it.
    expect(paypalProvider.modeMismatch({ client_id: 'Axyz', client_secret: 'Exyz' }, true)).toBeNull();
  });
});

describe('PayPal: connecting', () => {
  it("accepts good credentials at their own host, in both modes, and reads the webhook_id's webhook", async () => {
    const sandbox = connect(false);
    const live = connect(true);
    await expect(provider.verifyCredentials(sandbox, here())).resolves.toBeUndefined();
    await expect(provider.verifyCredentials(live, here())).resolves.toBeUndefined();
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/oauth2/token',
      `GET /v1/notifications/webhooks/${sandbox.credentials.webhook_id}`,
      'POST /v1/oauth2/token',
      `GET /v1/notifications/webhooks/${live.credentials.webhook_id}`,
    ]);
  });

  it("refuses a webhook_id PayPal does not know (a typo, another app's), naming the field and no secret", async () => {
    const account = connect();
    const id = account.credentials.webhook_id!;
    const typo = `${id.slice(0, -1)}${id.endsWith('X') ? 'Y' : 'X'}`;
    const other = connect().credentials.webhook_id!;
    for (const webhookId of [typo, other]) {
      const wrong = { ...account, credentials: { ...account.credentials, webhook_id: webhookId } };
      const error = await failure(provider.verifyCredentials(wrong, here()));
      expect(error.failure).toBe('refused');
      expect(error.message).toContain(`PayPal has no webhook ${webhookId} for this app`);
      expect(error.message).toContain('PAYPAL_WEBHOOK_ID ("webhook_id" on stdin)');
      expect(error.message).toContain('INVALID_RESOURCE_ID');
      expect(error.message).not.toContain(account.credentials.client_secret);
    }
    expect(fake.requests.filter((r) => r.method === 'GET').map((r) => r.path)).toEqual([
      `/v1/notifications/webhooks/${typo}`,
      `/v1/notifications/webhooks/${other}`,
    ]);
  });

  it("refuses a webhook that posts anywhere but this shop's route, or has no URL yet", async () => {
    const elsewhere = 'https://old-server.example/webhooks/gateways/paypal/shop_1';
    const error = await failure(provider.verifyCredentials(connect(false, elsewhere), here()));
    expect(error.failure).toBe('refused');
    expect(error.message).toContain(`posts to ${elsewhere}, not to this shop's ${receiver.url}`);
    expect(error.message).toContain('PAYPAL_WEBHOOK_ID ("webhook_id" on stdin)');
    // Another shop's route on this very server is elsewhere too: its webhooks would reach that shop.
    const otherShop = receiver.url.replace(/shop_1$/, 'shop_2');
    expect((await failure(provider.verifyCredentials(connect(false, otherShop), here()))).failure).toBe('refused');
    // No URL set: PayPal has no webhook under that id yet.
    const noUrl = await failure(provider.verifyCredentials(connect(false, null), here()));
    expect(noUrl.failure).toBe('refused');
    expect(noUrl.message).toContain('PayPal has no webhook');
    // The same address in other spelling (scheme case) is the same address.
    const spelled = { webhookUrl: receiver.url.replace(/^http:/, 'HTTP:') };
    await expect(provider.verifyCredentials(connect(), spelled)).resolves.toBeUndefined();
  });

  it('PayPal failing at the webhook call is unavailable (nothing learnt), and the next check passes', async () => {
    const account = connect();
    const path = `/v1/notifications/webhooks/${account.credentials.webhook_id}`;
    fake.failAt(path, 'server-error');
    expect((await failure(provider.verifyCredentials(account, here()))).failure).toBe('unavailable');
    fake.failAt(path, 'garbage');
    expect((await failure(provider.verifyCredentials(account, here()))).failure).toBe('unavailable');
    await expect(provider.verifyCredentials(account, here())).resolves.toBeUndefined();
    // The faults hit the webhook call, after a token PayPal gave each time.
    expect(fake.requests.map((r) => r.path)).toEqual(Array(3).fill(['/v1/oauth2/token', path]).flat());
  });

  it('refuses a wrong secret as unauthorized, and never puts the secret in the message', async () => {
    const account = connect();
    const wrong = { ...account, credentials: { ...account.credentials, client_secret: 'Enot-the-secret' } };
    const error = await failure(provider.verifyCredentials(wrong, here()));
    expect(error.failure).toBe('unauthorized');
    expect(error.message).not.toContain('Enot-the-secret');
    expect(error.message).not.toContain(account.credentials.client_secret);
  });

  it('refuses a wrong secret even after the right one got a token (the cache is keyed by the secret too)', async () => {
    const account = connect();
    await provider.verifyCredentials(account, here());
    const wrong = { ...account, credentials: { ...account.credentials, client_secret: 'Ewrong' } };
    expect((await failure(provider.readSession(wrong, 'ABC123'))).failure).toBe('unauthorized');
  });

  it('refuses sandbox credentials at the live host and live ones at the sandbox host (the mode check)', async () => {
    const sandbox = connect(false);
    const live = connect(true);
    const sandboxAtLive = { ...sandbox, livemode: true, apiBase: fake.apiBase(true) };
    const liveAtSandbox = { ...live, livemode: false, apiBase: fake.apiBase(false) };
    expect((await failure(provider.verifyCredentials(sandboxAtLive, here()))).failure).toBe('unauthorized');
    expect((await failure(provider.verifyCredentials(liveAtSandbox, here()))).failure).toBe('unauthorized');
  });

  it('asks for a token once and reuses it for the calls that follow', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await provider.readSession(account, sessionId);
    await provider.readSession(account, sessionId);
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/oauth2/token',
      '/v2/checkout/orders',
      `/v2/checkout/orders/${sessionId}`,
      `/v2/checkout/orders/${sessionId}`,
    ]);
  });

  it('refuses missing credentials without calling PayPal', async () => {
    const account = { ...connect(), credentials: { client_id: 'A1' } };
    expect((await failure(provider.verifyCredentials(account, here()))).failure).toBe('unauthorized');
    expect(fake.requests).toEqual([]);
  });
});

describe('PayPal: checkout sessions', () => {
  it('opens an order carrying the attempt, keyed by it, with the payer-action page as the checkout', async () => {
    const account = connect();
    const session = await provider.startSession(account, sessionInput());
    expect(session.checkoutUrl).toBe(`${fake.sandboxBaseUrl}/checkoutnow?token=${session.sessionId}`);
    expect(fake.session(session.sessionId)).toMatchObject({
      attemptId: 'att_01JDX5T0M2ZQ',
      amount: '14.99',
      currency: 'USD',
      state: 'open',
      livemode: false,
    });
    const create = fake.requests.find((r) => r.path === '/v2/checkout/orders')!;
    expect(create.idempotencyKey).toBe(requestIdFor('order', 'att_01JDX5T0M2ZQ'));
    expect(await provider.readSession(account, session.sessionId)).toEqual({ status: 'OPEN' });
  });

  it('opens one order for one attempt, however often it is started', async () => {
    const account = connect();
    const first = await provider.startSession(account, sessionInput());
    const second = await provider.startSession(account, sessionInput());
    expect(second).toEqual(first);
    const other = await provider.startSession(account, sessionInput({ attemptId: 'att_other' }));
    expect(other.sessionId).not.toBe(first.sessionId);
    expect(fake.sessions()).toHaveLength(2);
  });

  it("sends amounts in the currency's minor unit", async () => {
    const account = connect();
    const usd = await provider.startSession(account, sessionInput({ amount: '14.9' }));
    const jpy = await provider.startSession(
      account,
      sessionInput({ attemptId: 'att_jpy', amount: '1000', currency: 'JPY' }),
    );
    expect(fake.session(usd.sessionId)!.amount).toBe('14.90');
    expect(fake.session(jpy.sessionId)!.amount).toBe('1000');
  });

  it('captures an approved order when it is read, once, and reports the capture as the payment', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    expect(fake.session(sessionId)!.state).toBe('approved');
    // The return route and the webhook read it at the same time: one capture, one payment.
    const [a, b] = await Promise.all([
      provider.readSession(account, sessionId),
      provider.readSession(account, sessionId),
    ]);
    const paymentRef = fake.session(sessionId)!.paymentRef!;
    expect(a).toEqual({ status: 'PAID', amount: '14.99', currency: 'USD', paymentRef });
    expect(b).toEqual(a);
    const captures = fake.requests.filter((r) => r.path.endsWith('/capture'));
    expect(captures.every((r) => r.idempotencyKey === requestIdFor('capture', sessionId))).toBe(true);
    expect(await provider.readSession(account, sessionId)).toEqual(a);
    expect(fake.sessions().filter((s) => s.state === 'paid')).toHaveLength(1);
  });

  it('reports a short capture as what was captured (the core compares it with the invoice)', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId, { amount: '10.00' });
    const state = await provider.readSession(account, sessionId);
    expect(state).toEqual({ status: 'PAID', amount: '10.00', currency: 'USD', paymentRef: expect.any(String) });
  });

  it('reads an order someone else captured (ORDER_ALREADY_CAPTURED) as paid', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId, { webhooks: false });
    const realFetch = globalThis.fetch;
    const spy = jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      // Between our read (APPROVED) and our capture, the order is captured under another request id.
      if (String(input as string).endsWith('/capture') && fake.session(sessionId)!.state === 'approved') {
        await fake.captureAsMerchant(sessionId, { webhooks: false });
      }
      return realFetch(input, init);
    });
    try {
      const state = await provider.readSession(account, sessionId);
      expect(state).toMatchObject({ status: 'PAID', paymentRef: fake.session(sessionId)!.paymentRef });
    } finally {
      spy.mockRestore();
    }
    expect(fake.requests.filter((r) => r.method === 'GET').length).toBe(2);
  });

  it('reads a declined capture as failed', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.fail(sessionId);
    expect(await provider.readSession(account, sessionId)).toEqual({ status: 'FAILED' });
    expect(fake.session(sessionId)!.state).toBe('failed');
  });

  it('reads a voided order as expired', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.expire(sessionId);
    expect(await provider.readSession(account, sessionId)).toEqual({ status: 'EXPIRED' });
  });

  it("refuses to read another account's order", async () => {
    const { sessionId } = await provider.startSession(connect(), sessionInput());
    expect((await failure(provider.readSession(connect(), sessionId))).failure).toBe('refused');
  });

  it('serves the approval page: Pay returns the buyer to the success URL approved, Fail to the cancel URL', async () => {
    const account = connect();
    const paid = await provider.startSession(account, sessionInput());
    const html = await (await fetch(paid.checkoutUrl)).text();
    expect(html).toContain('>Pay</button>');
    expect(html).toContain('>Fail</button>');
    expect(html).toContain('SANDBOX');
    const pay = await fetch(`${fake.sandboxBaseUrl}/checkoutnow/approve`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `token=${paid.sessionId}`,
      redirect: 'manual',
    });
    expect(pay.status).toBe(303);
    const back = new URL(pay.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.example/checkout/return');
    expect(back.searchParams.get('attempt')).toBe('att_01JDX5T0M2ZQ');
    expect(back.searchParams.get('token')).toBe(paid.sessionId);
    expect(back.searchParams.get('PayerID')).toMatch(/^[A-Z0-9]+$/);
    expect(fake.session(paid.sessionId)!.state).toBe('approved');

    const failed = await provider.startSession(account, sessionInput({ attemptId: 'att_2' }));
    const fail = await fetch(`${fake.sandboxBaseUrl}/checkoutnow/decline`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `token=${failed.sessionId}`,
      redirect: 'manual',
    });
    expect(fail.status).toBe(303);
    expect(fail.headers.get('location')).toBe('https://shop.example/checkout/again');
    expect(await provider.readSession(account, failed.sessionId)).toEqual({ status: 'FAILED' });
  });
});

describe('PayPal: refunds', () => {
  it('refunds part, then the rest, then refuses more than was paid', async () => {
    const account = connect();
    const { sessionId, paymentRef } = await paidSession(account);
    const base = { paymentRef, sessionId, currency: 'USD' };
    const first = await provider.refund(account, { ...base, refundId: 'rf_1', amount: '4.99', reason: 'Changed mind' });
    expect(first.status).toBe('SUCCEEDED');
    const second = await provider.refund(account, { ...base, refundId: 'rf_2', amount: '10' });
    expect(second.status).toBe('SUCCEEDED');
    const over = await failure(provider.refund(account, { ...base, refundId: 'rf_3', amount: '0.01' }));
    expect(over.failure).toBe('refused');
    expect(over.message).toContain('CAPTURE_FULLY_REFUNDED');
    expect(fake.refunds(paymentRef)).toEqual([
      {
        providerRefundId: first.providerRefundId,
        paymentRef,
        amount: '4.99',
        currency: 'USD',
        idempotencyKey: 'refund-rf_1',
      },
      {
        providerRefundId: second.providerRefundId,
        paymentRef,
        amount: '10.00',
        currency: 'USD',
        idempotencyKey: 'refund-rf_2',
      },
    ]);
  });

  it('refuses a refund above what remains (REFUND_AMOUNT_EXCEEDED)', async () => {
    const account = connect();
    const { sessionId, paymentRef } = await paidSession(account);
    const error = await failure(
      provider.refund(account, { paymentRef, sessionId, currency: 'USD', refundId: 'rf_big', amount: '15.00' }),
    );
    expect(error.failure).toBe('refused');
    expect(error.message).toContain('REFUND_AMOUNT_EXCEEDED');
    expect(fake.refunds(paymentRef)).toEqual([]);
  });

  it('makes one refund for one refund id, however often it is asked', async () => {
    const account = connect();
    const { sessionId, paymentRef } = await paidSession(account);
    const request = { paymentRef, sessionId, currency: 'USD', refundId: 'rf_same', amount: '5' };
    const a = await provider.refund(account, request);
    const b = await provider.refund(account, request);
    expect(b).toEqual(a);
    expect(fake.refunds(paymentRef)).toHaveLength(1);
  });
});

describe('PayPal: faults', () => {
  async function openSession(): Promise<{ account: ProviderAccount; sessionId: string }> {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    return { account, sessionId };
  }

  it('a PayPal that does not answer is unavailable once the timeout passes', async () => {
    const { account, sessionId } = await openSession();
    fake.failNext('timeout');
    const started = Date.now();
    const error = await failure(createPayPalProvider({ timeoutMs: 200 }).readSession(account, sessionId));
    expect(error.failure).toBe('unavailable');
    expect(error.message).toContain('200 ms');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a 500 is unavailable', async () => {
    const { account, sessionId } = await openSession();
    fake.failNext('server-error');
    expect((await failure(provider.readSession(account, sessionId))).failure).toBe('unavailable');
  });

  it('a 429 is unavailable with the wait PayPal asked for', async () => {
    const { account, sessionId } = await openSession();
    fake.failNext('rate-limited');
    const error = await failure(provider.readSession(account, sessionId));
    expect(error.failure).toBe('unavailable');
    expect(error.retryAfterSeconds).toBe(7);
  });

  it('an answer that is not JSON is unavailable', async () => {
    const { account, sessionId } = await openSession();
    fake.failNext('garbage');
    expect((await failure(provider.readSession(account, sessionId))).failure).toBe('unavailable');
  });

  it('a fault on the token call is unavailable too', async () => {
    fake.failNext('server-error');
    expect((await failure(provider.verifyCredentials(connect(), here()))).failure).toBe('unavailable');
  });

  it('the fault passes: the same start afterwards opens the one order', async () => {
    const account = connect();
    await provider.verifyCredentials(account, here());
    fake.failNext('server-error');
    await failure(provider.startSession(account, sessionInput()));
    const session = await provider.startSession(account, sessionInput());
    expect(fake.sessions().map((s) => s.sessionId)).toEqual([session.sessionId]);
  });
});

describe('PayPal: webhooks', () => {
  it('sends signed events to the account URL, and the adapter verifies them through PayPal', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const hook = arrived('CHECKOUT.ORDER.APPROVED');
    expect(hook.headers['paypal-auth-algo']).toBe('SHA256withRSA');
    const notices = await provider.parseWebhook(account, Buffer.from(hook.body), hook.headers);
    const eventId = fake.webhooks().find((w) => w.type === 'CHECKOUT.ORDER.APPROVED')!.eventId;
    expect(notices).toEqual([
      { kind: 'SESSION', eventId, sessionId, attemptId: 'att_01JDX5T0M2ZQ', state: { status: 'OPEN' } },
    ]);
    expect(fake.requests.at(-1)!.path).toBe('/v1/notifications/verify-webhook-signature');
  });

  it('rejects a signature made with another key', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const eventId = fake.webhooks()[0]!.eventId;
    await fake.resend(eventId, { tamper: 'bad-signature' });
    const hook = receiver.received.at(-1)!;
    await rejection(provider.parseWebhook(account, Buffer.from(hook.body), hook.headers));
  });

  it('rejects a changed body, a changed transmission time and another webhook id', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const hook = arrived('CHECKOUT.ORDER.APPROVED');
    const body = hook.body.replace('"CHECKOUT.ORDER.APPROVED"', '"PAYMENT.CAPTURE.COMPLETED"');
    await rejection(provider.parseWebhook(account, Buffer.from(body), hook.headers));
    const later = { ...hook.headers, 'paypal-transmission-time': new Date(Date.now() + 60_000).toISOString() };
    await rejection(provider.parseWebhook(account, Buffer.from(hook.body), later));
    // Another account of the same app host: its webhook id is not the one PayPal signed for.
    const other = connect();
    await rejection(provider.parseWebhook(other, Buffer.from(hook.body), hook.headers));
  });

  it('accepts a replay or an old transmission as PayPal does, with the same event id for the core to dedupe', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const original = arrived('CHECKOUT.ORDER.APPROVED');
    const first = await provider.parseWebhook(account, Buffer.from(original.body), original.headers);
    const replayed = await provider.parseWebhook(account, Buffer.from(original.body), original.headers);
    const eventId = fake.webhooks()[0]!.eventId;
    await fake.resend(eventId, { tamper: 'stale' });
    const stale = receiver.received.at(-1)!;
    expect(Date.now() - Date.parse(String(stale.headers['paypal-transmission-time']))).toBeGreaterThan(3000_000);
    const old = await provider.parseWebhook(account, Buffer.from(stale.body), stale.headers);
    expect(replayed).toEqual(first);
    expect(old).toEqual(first);
    expect(first[0]!.eventId).toBe(eventId);
  });

  it("rejects what is not PayPal's: no JSON, no event, missing headers", async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const hook = arrived('CHECKOUT.ORDER.APPROVED');
    await rejection(provider.parseWebhook(account, Buffer.from('not json'), hook.headers));
    await rejection(provider.parseWebhook(account, Buffer.from('{"hello":"world"}'), hook.headers));
    const { ['paypal-transmission-sig']: _dropped, ...unsigned } = hook.headers;
    await rejection(provider.parseWebhook(account, Buffer.from(hook.body), unsigned));
    const noWebhookId = { ...account, credentials: { ...account.credentials, webhook_id: '' } };
    await rejection(provider.parseWebhook(noWebhookId, Buffer.from(hook.body), hook.headers));
  });

  it('translates a capture, a refund and a dispute, won and lost, into our notices', async () => {
    const account = connect();
    const { sessionId, paymentRef } = await paidSession(account);
    const parse = (type: string) => {
      const hook = arrived(type);
      return provider.parseWebhook(account, Buffer.from(hook.body), hook.headers);
    };
    const idOf = (type: string) => [...fake.webhooks()].reverse().find((w) => w.type === type)!.eventId;

    expect(await parse('PAYMENT.CAPTURE.COMPLETED')).toEqual([
      {
        kind: 'SESSION',
        eventId: idOf('PAYMENT.CAPTURE.COMPLETED'),
        sessionId,
        attemptId: 'att_01JDX5T0M2ZQ',
        state: { status: 'PAID', amount: '14.99', currency: 'USD', paymentRef },
      },
    ]);

    await fake.dashboardRefund(paymentRef, '2.50');
    const refundId = fake.refunds(paymentRef)[0]!.providerRefundId;
    expect(await parse('PAYMENT.CAPTURE.REFUNDED')).toEqual([
      {
        kind: 'REFUNDED',
        eventId: idOf('PAYMENT.CAPTURE.REFUNDED'),
        paymentRef,
        refunds: [{ providerRefundId: refundId, amount: '2.50', currency: 'USD' }],
      },
    ]);

    const disputeId = await fake.openDispute(paymentRef, { reason: 'UNAUTHORISED' });
    const opened = await parse('CUSTOMER.DISPUTE.CREATED');
    expect(opened).toEqual([
      {
        kind: 'DISPUTE_OPENED',
        eventId: idOf('CUSTOMER.DISPUTE.CREATED'),
        paymentRef,
        disputeId,
        amount: '14.99',
        currency: 'USD',
        reason: 'FRAUDULENT',
        evidenceDueBy: expect.any(Date),
      },
    ]);
    await fake.closeDispute(disputeId, 'won');
    expect(await parse('CUSTOMER.DISPUTE.RESOLVED')).toEqual([
      { kind: 'DISPUTE_CLOSED', eventId: idOf('CUSTOMER.DISPUTE.RESOLVED'), paymentRef, disputeId, outcome: 'WON' },
    ]);
    const second = await fake.openDispute(paymentRef);
    expect((await parse('CUSTOMER.DISPUTE.CREATED'))[0]).toMatchObject({ reason: 'PRODUCT_NOT_RECEIVED' });
    await fake.closeDispute(second, 'lost');
    expect((await parse('CUSTOMER.DISPUTE.RESOLVED'))[0]).toMatchObject({ disputeId: second, outcome: 'LOST' });
  });

  it('translates a denied capture into a failed session', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.fail(sessionId);
    await provider.readSession(account, sessionId);
    await fake.settled();
    const hook = arrived('PAYMENT.CAPTURE.DENIED');
    const [notice] = await provider.parseWebhook(account, Buffer.from(hook.body), hook.headers);
    expect(notice).toMatchObject({
      kind: 'SESSION',
      sessionId,
      attemptId: 'att_01JDX5T0M2ZQ',
      state: { status: 'FAILED' },
    });
  });

  it('maps every PayPal dispute reason and outcome, and ignores events it has no use for', () => {
    const dispute = (reason: string, outcome?: string) => ({
      id: 'WH-1',
      event_type: outcome ? 'CUSTOMER.DISPUTE.RESOLVED' : 'CUSTOMER.DISPUTE.CREATED',
      resource: {
        dispute_id: 'PP-D-1',
        reason,
        dispute_amount: { currency_code: 'EUR', value: '5.5' },
        disputed_transactions: [{ seller_transaction_id: 'CAP1' }],
        ...(outcome ? { dispute_outcome: { outcome_code: outcome } } : {}),
      },
    });
    const reasons: Record<string, string> = {
      MERCHANDISE_OR_SERVICE_NOT_RECEIVED: 'PRODUCT_NOT_RECEIVED',
      MERCHANDISE_OR_SERVICE_NOT_AS_DESCRIBED: 'PRODUCT_UNACCEPTABLE',
      UNAUTHORISED: 'FRAUDULENT',
      DUPLICATE_TRANSACTION: 'DUPLICATE',
      CREDIT_NOT_PROCESSED: 'CREDIT_NOT_PROCESSED',
      INCORRECT_AMOUNT: 'GENERAL',
      OTHER: 'GENERAL',
    };
    for (const [theirs, ours] of Object.entries(reasons)) {
      expect(translateEvent(dispute(theirs))[0]).toMatchObject({
        kind: 'DISPUTE_OPENED',
        reason: ours,
        amount: '5.50',
      });
    }
    expect(translateEvent(dispute('OTHER', 'RESOLVED_BUYER_FAVOUR'))[0]).toMatchObject({ outcome: 'LOST' });
    expect(translateEvent(dispute('OTHER', 'RESOLVED_SELLER_FAVOUR'))[0]).toMatchObject({ outcome: 'WON' });
    expect(translateEvent(dispute('OTHER', 'CANCELED_BY_BUYER'))[0]).toMatchObject({ outcome: 'CLOSED' });
    expect(translateEvent({ id: 'WH-2', event_type: 'BILLING.PLAN.CREATED', resource: {} })).toEqual([
      { kind: 'IGNORED', eventId: 'WH-2', type: 'BILLING.PLAN.CREATED' },
    ]);
  });

  it('retries a webhook our route did not take, with a fresh signature each time', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    receiver.answers.push(500, 503);
    await fake.pay(sessionId);
    const hook = fake.webhooks()[0]!;
    expect(hook.sends).toEqual([500, 503, 200]);
    expect(hook.url).toBe(receiver.url);
    const ids = receiver.received.map((r) => r.headers['paypal-transmission-id']);
    expect(new Set(ids).size).toBe(3);
    const last = receiver.received.at(-1)!;
    await expect(provider.parseWebhook(account, Buffer.from(last.body), last.headers)).resolves.toHaveLength(1);
  });

  it('holds webhooks while the endpoint is down and sends them on release', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    fake.holdWebhooks(true);
    await fake.pay(sessionId);
    expect(receiver.received).toEqual([]);
    fake.holdWebhooks(false);
    await fake.settled();
    expect(receiver.received).toHaveLength(1);
    expect(fake.webhooks()[0]!.sends).toEqual([200]);
  });

  it('an unreachable PayPal during verification is unavailable (PayPal will send again), not a rejection', async () => {
    const account = connect();
    const { sessionId } = await provider.startSession(account, sessionInput());
    await fake.pay(sessionId);
    const hook = arrived('CHECKOUT.ORDER.APPROVED');
    fake.failNext('server-error');
    const error = await failure(provider.parseWebhook(account, Buffer.from(hook.body), hook.headers));
    expect(error.failure).toBe('unavailable');
  });
});

describe('PayPal: the fake is held to the document', () => {
  it('records a request that breaks the pinned document and answers it with PayPal 400', async () => {
    const account = connect();
    const token = (await (
      await fetch(`${account.apiBase}/v1/oauth2/token`, {
        method: 'POST',
        headers: {
          Authorization: `Basic ${Buffer.from(`${account.credentials.client_id}:${account.credentials.client_secret}`).toString('base64')}`,
          'Content-Type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials',
      })
    ).json()) as { access_token: string };
    const response = await fetch(`${account.apiBase}/v2/checkout/orders`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token.access_token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ intent: 'SELL', purchase_units: [{ amount: { currency_code: 'USD', value: '1,00' } }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      name: 'INVALID_REQUEST',
      details: expect.arrayContaining([expect.objectContaining({ issue: 'INVALID_PARAMETER_SYNTAX' })]),
    });
    expect(fake.violations.length).toBeGreaterThan(0);
    expect(fake.violations.join('\n')).toContain('POST /v2/checkout/orders request body');
    fake.violations.splice(0); // seen and asserted: the afterEach check is for the other tests
  });

  it('records a token request without the client-credentials grant (the hand-written token schema)', async () => {
    const account = connect();
    const response = await fetch(`${account.apiBase}/v1/oauth2/token`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`${account.credentials.client_id}:${account.credentials.client_secret}`).toString('base64')}`,
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=password',
    });
    expect(response.status).toBe(400);
    expect(fake.violations.join('\n')).toContain('POST /v1/oauth2/token request body');
    fake.violations.splice(0);
  });
});
