// The BTCPay Server adapter against the BTCPay fake over real HTTP (no database): every call the adapter makes and
// every answer and webhook the fake gives is held to the pinned Greenfield document (fake.violations).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ProviderError,
  WebhookRejected,
  type ProviderAccount,
  type ProviderNotice,
  type StartSessionInput,
} from '../../src/integrations/gateway-provider';
import { btcpayProvider, createBtcpayProvider } from '../../src/integrations/btcpay';
import { btcpaySignature } from '../../src/integrations/btcpay/webhook';
import { createBtcpayFake, type BtcpayFake } from '../fakes/btcpay';

/** Our webhook route for the test: records what BTCPay sent, answers what the test says. */
interface Receiver {
  url: string;
  received: { body: Buffer; headers: Record<string, string | string[] | undefined> }[];
  answers: number[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks), headers: req.headers });
      res.writeHead(answers.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/gateways/BTCPAY/shop_1`,
    received,
    answers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let fake: BtcpayFake;
let receiver: Receiver;
let account: ProviderAccount;
const provider = btcpayProvider;

function accountFor(credentials: Record<string, string>): ProviderAccount {
  return {
    livemode: false,
    apiBase: credentials.BTCPAY_URL!,
    credentials: {
      url: credentials.BTCPAY_URL!,
      api_key: credentials.BTCPAY_API_KEY!,
      store_id: credentials.BTCPAY_STORE_ID!,
      webhook_secret: credentials.BTCPAY_WEBHOOK_SECRET!,
    },
  };
}

let attempts = 0;
function input(overrides: Partial<StartSessionInput> = {}): StartSessionInput {
  attempts += 1;
  return {
    attemptId: `att_${attempts}_${Date.now()}`,
    shopId: 'shop_1',
    orderUniqid: '6f9d2c1e-0000-4000-8000-000000000001',
    description: 'Pro license',
    amount: '14.99',
    currency: 'USD',
    customerEmail: 'buyer@example.com',
    successUrl: 'https://shop.example/return?attempt=1',
    cancelUrl: 'https://shop.example/checkout',
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

/** The notices of every webhook our route received so far, verified and translated by the adapter. */
async function notices(): Promise<ProviderNotice[]> {
  const out: ProviderNotice[] = [];
  for (const { body, headers } of receiver.received) out.push(...(await provider.parseWebhook(account, body, headers)));
  return out;
}

beforeEach(async () => {
  receiver = await startReceiver();
  fake = await createBtcpayFake({ retryDelaysMs: [30, 60, 90] });
  account = accountFor(fake.createAccount({ livemode: false, webhookUrl: receiver.url }));
});

afterEach(async () => {
  await fake.close();
  await receiver.close();
  expect(fake.violations).toEqual([]);
});

describe('connect', () => {
  it('accepts the store and the key that the server knows', async () => {
    await expect(provider.verifyCredentials(account, { webhookUrl: receiver.url })).resolves.toBeUndefined();
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET /api/v1/stores/${account.credentials.store_id}`,
    ]);
  });

  it('refuses a wrong key, an unknown store and another store as unauthorized', async () => {
    const wrongKey = { ...account, credentials: { ...account.credentials, api_key: 'f'.repeat(40) } };
    const error = await providerError(provider.verifyCredentials(wrongKey, { webhookUrl: receiver.url }));
    expect(error.failure).toBe('unauthorized');
    expect(error.message).not.toContain('f'.repeat(40));

    const noStore = { ...account, credentials: { ...account.credentials, store_id: 'NoSuchStore' } };
    const missing = await providerError(provider.verifyCredentials(noStore, { webhookUrl: receiver.url }));
    expect([missing.failure, missing.message]).toEqual(['unauthorized', 'BTCPay Server has no such store']);

    const other = accountFor(fake.createAccount({ livemode: false }));
    const foreign = { ...account, credentials: { ...account.credentials, store_id: other.credentials.store_id! } };
    expect((await providerError(provider.verifyCredentials(foreign, { webhookUrl: receiver.url }))).failure).toBe(
      'unauthorized',
    );
  });

  it('has no mode to mismatch and no address of its own', () => {
    expect(provider.modeMismatch(account.credentials, true)).toBeNull();
    expect(provider.modeMismatch(account.credentials, false)).toBeNull();
    expect(provider.defaultApiBase(true)).toBeUndefined();
    expect(provider.fields.map((f) => [f.name, f.env, f.secret])).toEqual([
      ['url', 'BTCPAY_URL', false],
      ['api_key', 'BTCPAY_API_KEY', true],
      ['store_id', 'BTCPAY_STORE_ID', false],
      ['webhook_secret', 'BTCPAY_WEBHOOK_SECRET', true],
    ]);
  });
});

describe('sessions', () => {
  it('opens an invoice that carries the attempt id and reuses it for the same attempt', async () => {
    const start = input();
    const session = await provider.startSession(account, start);
    expect(session.checkoutUrl).toBe(`${fake.baseUrl}/i/${session.sessionId}`);
    expect(fake.session(session.sessionId)).toMatchObject({
      attemptId: start.attemptId,
      amount: '14.99',
      currency: 'USD',
      state: 'open',
    });

    const again = await provider.startSession(account, start);
    expect(again).toEqual(session);
    expect(fake.sessions()).toHaveLength(1);
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(1);

    await fake.idle();
    const created = JSON.parse(receiver.received[0]!.body.toString()) as { type: string; metadata: object };
    expect(created.type).toBe('InvoiceCreated');
    expect(created.metadata).toEqual({
      orderId: start.attemptId,
      itemDesc: 'Pro license',
      order_uniqid: start.orderUniqid,
      shop_id: 'shop_1',
      buyerEmail: 'buyer@example.com',
    });
  });

  it('refuses to reuse an attempt for another amount', async () => {
    const start = input();
    await provider.startSession(account, start);
    const error = await providerError(provider.startSession(account, { ...start, amount: '15.00' }));
    expect(error.failure).toBe('refused');
    expect(fake.sessions()).toHaveLength(1);
  });

  it('opens the checkout on the coin asked for, and BTCPay refuses a method the store lacks', async () => {
    const session = await provider.startSession(account, input({ coin: 'BTC-LN' }));
    await fake.pay(session.sessionId);
    const methods = (await (
      await fetch(
        `${fake.baseUrl}/api/v1/stores/${account.credentials.store_id}/invoices/${session.sessionId}/payment-methods`,
        {
          headers: { Authorization: `token ${account.credentials.api_key}` },
        },
      )
    ).json()) as { paymentMethodId: string }[];
    expect(methods.map((m) => m.paymentMethodId)).toEqual(['BTC-LN']);

    const error = await providerError(provider.startSession(account, input({ coin: 'LTC-CHAIN' })));
    expect(error.failure).toBe('refused');
  });

  it('reads open, paid, partial, processing, expired and failed invoices', async () => {
    const open = await provider.startSession(account, input());
    expect(await provider.readSession(account, open.sessionId)).toEqual({ status: 'OPEN' });

    const paid = await provider.startSession(account, input());
    await fake.pay(paid.sessionId);
    expect(await provider.readSession(account, paid.sessionId)).toEqual({
      status: 'PAID',
      amount: '14.99',
      currency: 'USD',
      paymentRef: paid.sessionId,
    });

    const partial = await provider.startSession(account, input());
    await fake.pay(partial.sessionId, { amount: '5.00' });
    expect(await provider.readSession(account, partial.sessionId)).toEqual({
      status: 'PARTIAL',
      amount: '5.00',
      currency: 'USD',
      paymentRef: partial.sessionId,
    });

    const processing = await provider.startSession(account, input());
    await fake.process(processing.sessionId);
    expect(await provider.readSession(account, processing.sessionId)).toEqual({ status: 'OPEN' });
    await fake.pay(processing.sessionId);
    expect(await provider.readSession(account, processing.sessionId)).toMatchObject({ status: 'PAID' });

    const expired = await provider.startSession(account, input());
    await fake.expire(expired.sessionId);
    expect(await provider.readSession(account, expired.sessionId)).toEqual({ status: 'EXPIRED' });

    const failed = await provider.startSession(account, input());
    await fake.fail(failed.sessionId);
    expect(await provider.readSession(account, failed.sessionId)).toEqual({ status: 'FAILED' });
  });

  it('reports money on an expired invoice as PARTIAL, and an overpaid one as PAID for the invoice amount', async () => {
    const expired = await provider.startSession(account, input());
    await fake.pay(expired.sessionId, { amount: '4.00' });
    await fake.expire(expired.sessionId);
    expect(await provider.readSession(account, expired.sessionId)).toEqual({
      status: 'PARTIAL',
      amount: '4.00',
      currency: 'USD',
      paymentRef: expired.sessionId,
    });

    const over = await provider.startSession(account, input({ amount: '1000', currency: 'JPY' }));
    await fake.pay(over.sessionId, { amount: '1200' });
    expect(await provider.readSession(account, over.sessionId)).toEqual({
      status: 'PAID',
      amount: '1000',
      currency: 'JPY',
      paymentRef: over.sessionId,
    });
  });

  it('refuses an invoice of no such id', async () => {
    const error = await providerError(provider.readSession(account, 'NoSuchInvoice'));
    expect(error.failure).toBe('refused');
  });
});

describe('a server older than v2.1.2 (no paidAmount)', () => {
  it('takes a partial payment from the payment methods: totalPaid times the rate', async () => {
    const old = await createBtcpayFake({ omitPaidAmount: true });
    try {
      const oldAccount = accountFor(old.createAccount({ livemode: false }));
      const session = await provider.startSession(oldAccount, input({ amount: '100.00' }));
      await old.pay(session.sessionId, { amount: '30.00' });
      expect(await provider.readSession(oldAccount, session.sessionId)).toEqual({
        status: 'PARTIAL',
        amount: '30.00',
        currency: 'USD',
        paymentRef: session.sessionId,
      });
      expect(old.requests.map((r) => r.path).at(-1)).toBe(
        `/api/v1/stores/${oldAccount.credentials.store_id}/invoices/${session.sessionId}/payment-methods`,
      );

      // The refund bound reads the same: an expired invoice paid in part refunds what was paid, no more.
      await old.expire(session.sessionId);
      const refund = {
        refundId: 'ref_old',
        paymentRef: session.sessionId,
        sessionId: session.sessionId,
        currency: 'USD',
      };
      await expect(provider.refund(oldAccount, { ...refund, amount: '30.00' })).resolves.toMatchObject({
        status: 'PENDING',
      });
      const over = await providerError(
        provider.refund(oldAccount, { ...refund, refundId: 'ref_old_2', amount: '0.01' }),
      );
      expect(over.failure).toBe('refused');
      expect(old.refunds(session.sessionId).map((r) => r.amount)).toEqual(['30.00']);
    } finally {
      await old.close();
      expect(old.violations).toEqual([]);
    }
  });
});

describe('refunds', () => {
  async function paidSession(amount = '20.00', currency = 'USD') {
    const session = await provider.startSession(account, input({ amount, currency }));
    await fake.pay(session.sessionId);
    return session;
  }
  const refundPosts = () => fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/refund'));

  it('refunds in part, then the rest, and refuses more than was paid without asking BTCPay', async () => {
    const session = await paidSession();
    const first = await provider.refund(account, {
      refundId: 'ref_1',
      paymentRef: session.sessionId,
      sessionId: session.sessionId,
      amount: '5.00',
      currency: 'USD',
      reason: 'damaged',
    });
    expect(first.status).toBe('PENDING');
    const second = await provider.refund(account, {
      refundId: 'ref_2',
      paymentRef: session.sessionId,
      sessionId: session.sessionId,
      amount: '15.00',
      currency: 'USD',
    });
    expect(second.providerRefundId).not.toBe(first.providerRefundId);
    expect(fake.refunds(session.sessionId)).toEqual([
      {
        providerRefundId: first.providerRefundId,
        paymentRef: session.sessionId,
        amount: '5.00',
        currency: 'USD',
        idempotencyKey: undefined,
      },
      {
        providerRefundId: second.providerRefundId,
        paymentRef: session.sessionId,
        amount: '15.00',
        currency: 'USD',
        idempotencyKey: undefined,
      },
    ]);

    const over = await providerError(
      provider.refund(account, {
        refundId: 'ref_3',
        paymentRef: session.sessionId,
        sessionId: session.sessionId,
        amount: '0.01',
        currency: 'USD',
      }),
    );
    expect(over.failure).toBe('refused');
    expect(refundPosts()).toHaveLength(2);
    expect(fake.refunds(session.sessionId)).toHaveLength(2);
  });

  it('gives the same pull payment back for the same refund id', async () => {
    const session = await paidSession();
    const request = {
      refundId: 'ref_same',
      paymentRef: session.sessionId,
      sessionId: session.sessionId,
      amount: '3.00',
      currency: 'USD',
    };
    const first = await provider.refund(account, request);
    const again = await provider.refund(account, request);
    expect(again).toEqual(first);
    expect(refundPosts()).toHaveLength(1);
    const changed = await providerError(provider.refund(account, { ...request, amount: '4.00' }));
    expect(changed.failure).toBe('refused');
  });

  it("counts the dashboard's refunds and refuses an unpaid invoice", async () => {
    const session = await paidSession('1000', 'JPY');
    await fake.dashboardRefund(session.sessionId, '600');
    const error = await providerError(
      provider.refund(account, {
        refundId: 'ref_j',
        paymentRef: session.sessionId,
        sessionId: session.sessionId,
        amount: '500',
        currency: 'JPY',
      }),
    );
    expect(error.failure).toBe('refused');
    await expect(
      provider.refund(account, {
        refundId: 'ref_k',
        paymentRef: session.sessionId,
        sessionId: session.sessionId,
        amount: '400',
        currency: 'JPY',
      }),
    ).resolves.toMatchObject({ status: 'PENDING' });

    const unpaid = await provider.startSession(account, input());
    const refused = await providerError(
      provider.refund(account, {
        refundId: 'ref_u',
        paymentRef: unpaid.sessionId,
        sessionId: unpaid.sessionId,
        amount: '1.00',
        currency: 'USD',
      }),
    );
    expect(refused.failure).toBe('refused');
    expect(refundPosts()).toHaveLength(1);
  });
});

describe('faults', () => {
  it('a timeout, a 500, a 429 and garbage are unavailable; 429 says when to come back', async () => {
    const session = await provider.startSession(account, input());
    const quick = createBtcpayProvider({ timeoutMs: 150 });

    fake.failNext('timeout');
    const timedOut = await providerError(quick.readSession(account, session.sessionId));
    expect([timedOut.failure, timedOut.message]).toEqual(['unavailable', 'BTCPay Server did not answer in time']);

    fake.failNext('server-error');
    expect((await providerError(provider.readSession(account, session.sessionId))).failure).toBe('unavailable');

    fake.failNext('rate-limited');
    const limited = await providerError(provider.verifyCredentials(account, { webhookUrl: receiver.url }));
    expect([limited.failure, limited.retryAfterSeconds]).toEqual(['unavailable', 7]);

    fake.failNext('garbage');
    expect((await providerError(provider.startSession(account, input()))).failure).toBe('unavailable');

    // Faults are for API calls only, and one each: the next call is answered.
    await expect(provider.readSession(account, session.sessionId)).resolves.toEqual({ status: 'OPEN' });
  });

  it('a server that cannot be reached is unavailable, and the message holds no secret', async () => {
    const gone = { ...account, apiBase: 'http://127.0.0.1:1' };
    const error = await providerError(provider.verifyCredentials(gone, { webhookUrl: receiver.url }));
    expect(error.failure).toBe('unavailable');
    expect(error.message).not.toContain(account.credentials.api_key!);
  });
});

describe('webhooks', () => {
  it('a full payment sends InvoiceReceivedPayment, InvoicePaymentSettled, InvoiceSettled: each a look-again notice', async () => {
    const start = input();
    const session = await provider.startSession(account, start);
    await fake.pay(session.sessionId);
    expect(fake.webhooks().map((w) => w.type)).toEqual([
      'InvoiceCreated',
      'InvoiceReceivedPayment',
      'InvoicePaymentSettled',
      'InvoiceSettled',
    ]);
    const ids = fake.webhooks().map((w) => w.eventId);
    expect(await notices()).toEqual([
      { kind: 'IGNORED', eventId: ids[0], type: 'InvoiceCreated' },
      ...ids.slice(1).map((eventId) => ({
        kind: 'SESSION',
        eventId,
        sessionId: session.sessionId,
        attemptId: start.attemptId,
        state: { status: 'OPEN' },
      })),
    ]);
  });

  it('translates processing, a partial payment, expiry (paid or not) and invalid', async () => {
    const processing = await provider.startSession(account, input());
    const partial = await provider.startSession(account, input());
    const expired = await provider.startSession(account, input());
    const invalid = await provider.startSession(account, input());
    await fake.idle();
    receiver.received.length = 0;
    await fake.process(processing.sessionId);
    await fake.pay(partial.sessionId, { amount: '1.00' });
    await fake.expire(partial.sessionId);
    await fake.expire(expired.sessionId);
    await fake.fail(invalid.sessionId);
    const translated = (await notices()).map((n) => (n.kind === 'SESSION' ? [n.sessionId, n.state.status] : [n.kind]));
    expect(translated).toEqual([
      [processing.sessionId, 'OPEN'], // InvoiceReceivedPayment
      [processing.sessionId, 'OPEN'], // InvoiceProcessing
      [partial.sessionId, 'OPEN'], // InvoiceReceivedPayment (partial)
      [partial.sessionId, 'OPEN'], // InvoiceExpired, partiallyPaid: look again (PARTIAL)
      [expired.sessionId, 'EXPIRED'],
      [invalid.sessionId, 'FAILED'],
    ]);
    expect(
      fake
        .webhooks()
        .slice(-6)
        .map((w) => w.type),
    ).toEqual([
      'InvoiceReceivedPayment',
      'InvoiceProcessing',
      'InvoiceReceivedPayment',
      'InvoiceExpired',
      'InvoiceExpired',
      'InvoiceInvalid',
    ]);
  });

  it('redelivers on a 5xx with a new deliveryId, and the notice keeps the first delivery id', async () => {
    receiver.answers.push(500, 503);
    await provider.startSession(account, input());
    await fake.idle();
    const [created] = fake.webhooks();
    expect(created!.sends).toEqual([500, 503, 200]);
    const bodies = receiver.received.map(
      (r) => JSON.parse(r.body.toString()) as { deliveryId: string; isRedelivery: boolean },
    );
    expect(new Set(bodies.map((b) => b.deliveryId)).size).toBe(3);
    expect(bodies.map((b) => b.isRedelivery)).toEqual([false, true, true]);
    expect(new Set((await notices()).map((n) => n.eventId))).toEqual(new Set([created!.eventId]));
  });

  it('holds deliveries while the endpoint is down and sends them when released', async () => {
    fake.holdWebhooks(true);
    const session = await provider.startSession(account, input());
    await fake.pay(session.sessionId);
    expect(receiver.received).toHaveLength(0);
    fake.holdWebhooks(false);
    await fake.idle();
    expect(receiver.received).toHaveLength(4);
  });

  it('refuses a bad signature, accepts a replay (same event id), refuses what is not BTCPay', async () => {
    await provider.startSession(account, input());
    await fake.idle();
    const [created] = fake.webhooks();

    expect(await fake.resend(created!.eventId, { tamper: 'bad-signature' })).toBe(200);
    const tampered = receiver.received.at(-1)!;
    expect(await rejection(provider.parseWebhook(account, tampered.body, tampered.headers))).toBeInstanceOf(
      WebhookRejected,
    );

    await fake.resend(created!.eventId, { tamper: 'stale' });
    const replay = receiver.received.at(-1)!;
    expect((await provider.parseWebhook(account, replay.body, replay.headers))[0]!.eventId).toBe(created!.eventId);

    await fake.resend(created!.eventId);
    const redelivered = receiver.received.at(-1)!;
    expect(JSON.parse(redelivered.body.toString())).toMatchObject({
      isRedelivery: true,
      originalDeliveryId: created!.eventId,
    });
    expect((await provider.parseWebhook(account, redelivered.body, redelivered.headers))[0]!.eventId).toBe(
      created!.eventId,
    );

    const secret = account.credentials.webhook_secret!;
    const signed = (text: string) => ({
      body: Buffer.from(text),
      headers: { 'btcpay-sig': btcpaySignature(text, secret) },
    });
    const cases = [
      signed('not json'),
      signed('{"hello":"world"}'),
      signed('[1,2]'),
      signed(JSON.stringify({ deliveryId: 'd1', type: 'InvoiceSettled', storeId: 'AnotherStore', invoiceId: 'i1' })),
      { body: redelivered.body, headers: {} },
      { body: redelivered.body, headers: { 'btcpay-sig': 'sha1=abc' } },
    ];
    for (const { body, headers } of cases) {
      expect(await rejection(provider.parseWebhook(account, body, headers))).toBeInstanceOf(WebhookRejected);
    }
    const noSecret = { ...account, credentials: { ...account.credentials, webhook_secret: '' } };
    expect(await rejection(provider.parseWebhook(noSecret, redelivered.body, redelivered.headers))).toBeInstanceOf(
      WebhookRejected,
    );
  });

  it('has no disputes', async () => {
    await expect(fake.openDispute('x')).rejects.toThrow('no disputes');
  });
});

describe('the checkout page', () => {
  it('shows Pay, Pay part and Fail; Pay part is partial, Pay settles and returns to the shop', async () => {
    const start = input();
    const session = await provider.startSession(account, start);
    const html = await (await fetch(session.checkoutUrl)).text();
    for (const label of ['>Pay<', '>Pay part<', '>Fail<']) expect(html).toContain(label);

    const part = await fetch(`${session.checkoutUrl}/pay-part`, { method: 'POST', redirect: 'manual' });
    expect(part.status).toBe(303);
    expect(fake.session(session.sessionId)!.state).toBe('partial');

    const pay = await fetch(`${session.checkoutUrl}/pay`, { method: 'POST', redirect: 'manual' });
    expect([pay.status, pay.headers.get('location')]).toEqual([303, start.successUrl]);
    expect(await provider.readSession(account, session.sessionId)).toMatchObject({ status: 'PAID', amount: '14.99' });

    const failing = await provider.startSession(account, input());
    await fetch(`${failing.checkoutUrl}/fail`, { method: 'POST', redirect: 'manual' });
    expect(await provider.readSession(account, failing.sessionId)).toEqual({ status: 'FAILED' });
  });
});

describe('the document check', () => {
  it('catches a request that breaks the document and answers it as BTCPay does', async () => {
    const response = await fetch(`${fake.baseUrl}/api/v1/stores/${account.credentials.store_id}/invoices`, {
      method: 'POST',
      headers: { Authorization: `token ${account.credentials.api_key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ amount: 14.99, currency: 'USD', checkout: { redirectUrl: 'https://x' } }),
    });
    expect(response.status).toBe(422);
    expect(Array.isArray(await response.json())).toBe(true);
    expect(fake.violations.join('\n')).toMatch(/amount must be string/);
    expect(fake.violations.join('\n')).toMatch(/checkout must NOT have additional properties/);
    expect(fake.sessions()).toHaveLength(0);
    fake.violations.length = 0;
  });
});
