// A local Stripe for tests: a real HTTP server (port 0) that keeps accounts, checkout sessions, payment intents,
// charges, refunds and disputes, answers the API calls the adapter makes as Stripe does (form bodies, Bearer keys,
// idempotency keys, Stripe's error shapes), serves the hosted checkout page, and sends Stripe-signed webhooks.
// Every request and response (and every event sent) is held to Stripe's pinned OpenAPI document; what breaks it is
// collected in `violations`, and a request that breaks it gets Stripe's 400 invalid_request_error.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Decimal from 'decimal.js';
import qs from 'qs';
import { createOpenApiCheck, type OpenApiCheck } from '../openapi-check';
import type { FakeFault, FakeRefund, FakeSession, FakeWebhook, ProviderFake } from '../provider-fake';
import document from '../../fixtures/providers/stripe/openapi.json';
import { fromStripeAmount, toStripeAmount } from '../../../src/integrations/stripe/amounts';
import { hostedPage } from './hosted-page';
import {
  apiVersion,
  charge as makeCharge,
  type Charge,
  type CheckoutSession,
  dispute as makeDispute,
  type Dispute,
  now,
  paymentIntent as makePaymentIntent,
  type PaymentIntent,
  type Refund,
  stripeError,
  stripeId,
} from './objects';
import { WebhookSender } from './webhooks';

interface Account {
  id: string;
  secretKey: string;
  webhookSecret: string;
  livemode: boolean;
  webhookUrl: string | undefined;
  /** The endpoint's URL as the Dashboard lists it, when it is not where the fake delivers (see createAccount). */
  endpointUrl: string | undefined;
  /** Paths a restricted key (rk_) may not read: Stripe answers 403 naming the permission it lacks. */
  denied: string[];
  /** The account's one webhook endpoint (posting to webhookUrl, when set), as the Dashboard configured it. */
  endpoint: { id: string; created: number; enabled: boolean; events: string[] };
}

interface SessionRecord {
  account: Account;
  session: CheckoutSession;
  productName: string;
  paymentIntent: PaymentIntent | undefined;
  charge: Charge | undefined;
  /** The fake's word for the state (FakeSession.state). */
  state: 'open' | 'processing' | 'paid' | 'failed' | 'expired';
}

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface StoredIdempotent {
  fingerprint: string;
  answer: Answer;
}

export interface StripeFakeOptions {
  /** Sends of one webhook before giving up (Stripe retries for three days; tests need a few). Default 4. */
  webhookAttempts?: number;
  /** Delay between webhook retries. Default 100 ms. */
  webhookRetryDelayMs?: number;
  /** Retry-After the rate-limited fault sends. Default 2 s. */
  retryAfterSeconds?: number;
}

let check: OpenApiCheck | undefined;

/**
 * One checker per test process: compiling Stripe's schemas (about 600 of them, checkout.session alone reaching most)
 * takes seconds, so it is done once, up front, not inside the first API call a test times.
 */
function sharedCheck(): OpenApiCheck {
  if (check) return check;
  // Stripe's bodies are form-encoded: every value arrives as a string, so the checker coerces them to the
  // document's types (unit_amount "1499" -> 1499) before judging them.
  check = createOpenApiCheck(document, { coerceRequestBodies: true });
  for (const [path, method] of [
    ['/v1/checkout/sessions', 'POST'],
    ['/v1/checkout/sessions/cs_x', 'GET'],
    ['/v1/refunds', 'POST'],
    ['/v1/refunds', 'GET'],
    ['/v1/balance', 'GET'],
    ['/v1/webhook_endpoints', 'GET'],
  ] as const) {
    check.request(method, path, { query: {}, ...(method === 'POST' ? { body: {} } : {}) });
    check.response(method, path, 200, {});
    check.response(method, path, 400, {});
  }
  for (const name of ['event', 'checkout.session', 'charge', 'dispute', 'refund']) check.schema(name, {});
  return check;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ReturnType<typeof stripeError>,
  ) {
    super(body.error.message);
  }
}

const invalid = (message: string, extra: { code?: string; param?: string } = {}, status = 400) =>
  new ApiError(status, stripeError('invalid_request_error', message, extra));

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export class StripeFake implements ProviderFake {
  readonly violations: string[] = [];
  readonly requests: { method: string; path: string; idempotencyKey: string | undefined }[] = [];
  baseUrl = '';
  private readonly check: OpenApiCheck;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly accounts: Account[] = [];
  private readonly sessionsById = new Map<string, SessionRecord>();
  private readonly byPaymentIntent = new Map<string, SessionRecord>();
  private readonly refundList: { refund: Refund; account: Account; fake: FakeRefund }[] = [];
  private readonly disputes = new Map<string, { dispute: Dispute; record: SessionRecord }>();
  private readonly idempotency = new Map<string, StoredIdempotent>();
  private readonly built: { webhook: FakeWebhook; account: Account }[] = [];
  private readonly faults: FakeFault[] = [];
  /** Webhooks queued to go out after an API answer (a refund's charge.refunded), not yet handed to the sender. */
  private readonly afterAnswer = new Set<Promise<void>>();
  private readonly sender: WebhookSender;
  private readonly retryAfterSeconds: number;

  constructor(options: StripeFakeOptions = {}) {
    this.check = sharedCheck();
    this.sender = new WebhookSender(options.webhookAttempts ?? 4, options.webhookRetryDelayMs ?? 100);
    this.retryAfterSeconds = options.retryAfterSeconds ?? 2;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.violations.push(`fake crashed on ${req.method} ${req.url}: ${String(error)}`);
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  // ---- ProviderFake: accounts and faults ----

  /**
   * A Stripe account with one webhook endpoint when `webhookUrl` is given, sending every event. `endpointUrl` is the
   * address the endpoint is registered with when deliveries must go elsewhere: the server's PUBLIC_URL, which connect
   * checks, where a test's server listens on another address (as a proxy in front of it would map them).
   */
  createAccount(options: { livemode: boolean; webhookUrl?: string; endpointUrl?: string }): Record<string, string> {
    const mode = options.livemode ? 'live' : 'test';
    const account: Account = {
      id: stripeId('acct', 16),
      secretKey: stripeId(`sk_${mode}`, 99),
      webhookSecret: `whsec_${stripeId('x', 32).slice(2)}`,
      livemode: options.livemode,
      webhookUrl: options.webhookUrl,
      endpointUrl: options.endpointUrl,
      denied: [],
      endpoint: { id: stripeId('we', 24), created: now(), enabled: true, events: ['*'] },
    };
    this.accounts.push(account);
    return { STRIPE_SECRET_KEY: account.secretKey, STRIPE_WEBHOOK_SECRET: account.webhookSecret };
  }

  setWebhookUrl(credentials: Record<string, string>, url: string): void {
    this.accountOf(credentials).webhookUrl = url;
  }

  /** What the Dashboard says of the account's endpoint: disabled, or sending only `events` (default every event). */
  configureWebhookEndpoint(
    credentials: Record<string, string>,
    options: { enabled?: boolean; events?: string[] },
  ): void {
    const { endpoint } = this.accountOf(credentials);
    if (options.enabled !== undefined) endpoint.enabled = options.enabled;
    if (options.events !== undefined) endpoint.events = options.events;
  }

  /** Makes the account's key a restricted one (rk_) without read access to `paths`; returns its credentials. */
  restrictKey(credentials: Record<string, string>, paths: string[]): Record<string, string> {
    const account = this.accountOf(credentials);
    account.secretKey = account.secretKey.replace(/^sk_/, 'rk_');
    account.denied = paths;
    return { STRIPE_SECRET_KEY: account.secretKey, STRIPE_WEBHOOK_SECRET: account.webhookSecret };
  }

  private accountOf(credentials: Record<string, string>): Account {
    const values = new Set(Object.values(credentials));
    const account = this.accounts.find((a) => values.has(a.secretKey) || values.has(a.webhookSecret));
    if (!account) throw new Error('No fake Stripe account has these credentials.');
    return account;
  }

  /** Whether Stripe would send an event of `type` to the account's endpoint. */
  private sendsTo(account: Account, type: string): boolean {
    const { enabled, events } = account.endpoint;
    return account.webhookUrl !== undefined && enabled && (events.includes('*') || events.includes(type));
  }

  failNext(fault: FakeFault, count = 1): void {
    for (let i = 0; i < count; i++) this.faults.push(fault);
  }

  // ---- ProviderFake: what the buyer, the bank and the dashboard do ----

  /**
   * The hosted page's Pay. A session whose bank debit is processing (`startAsyncPayment`) settles: the async success
   * event. `amount` below the session's: the buyer applied a promotion code (Stripe has no short payment; the
   * session's amount_total is what was paid). `currency`: adaptive pricing charged the buyer in another currency.
   */
  async pay(
    sessionId: string,
    options: { amount?: string; currency?: string; webhooks?: boolean } = {},
  ): Promise<void> {
    const record = this.record(sessionId);
    const { session } = record;
    if (record.state === 'processing') {
      record.paymentIntent!.status = 'succeeded';
      record.paymentIntent!.amount_received = record.paymentIntent!.amount;
      record.charge = makeCharge(record.paymentIntent!, session.customer_email);
      record.paymentIntent!.latest_charge = record.charge.id;
      session.payment_status = 'paid';
      record.state = 'paid';
      await this.emit(record.account, 'checkout.session.async_payment_succeeded', session, options.webhooks);
      return;
    }
    this.mustBeOpen(record);
    if (options.currency && options.currency.toLowerCase() !== session.currency) {
      // Adaptive pricing: the buyer is charged in their currency; the session then speaks that currency and keeps
      // the merchant's price in currency_conversion.
      if (options.amount === undefined) throw new Error('A payment in another currency needs its amount too.');
      const presented = toStripeAmount(options.amount, options.currency);
      session.currency_conversion = {
        amount_subtotal: session.amount_subtotal,
        amount_total: session.amount_total,
        fx_rate: new Decimal(presented).dividedBy(session.amount_total || 1).toFixed(6),
        source_currency: session.currency,
      };
      session.currency = options.currency.toLowerCase();
      session.amount_subtotal = presented;
      session.amount_total = presented;
    } else if (options.amount !== undefined) {
      const paid = toStripeAmount(options.amount, session.currency);
      if (paid > session.amount_subtotal) throw new Error('Stripe Checkout never takes more than the session asks.');
      session.total_details.amount_discount = session.amount_subtotal - paid;
      session.amount_total = paid;
    }
    record.paymentIntent = makePaymentIntent(session, session.metadata, 'succeeded');
    record.paymentIntent.amount_received = record.paymentIntent.amount;
    record.charge = makeCharge(record.paymentIntent, session.customer_email);
    record.paymentIntent.latest_charge = record.charge.id;
    this.byPaymentIntent.set(record.paymentIntent.id, record);
    session.payment_intent = record.paymentIntent.id;
    session.status = 'complete';
    session.payment_status = 'paid';
    session.url = null;
    record.state = 'paid';
    await this.emit(record.account, 'checkout.session.completed', session, options.webhooks);
  }

  /**
   * The buyer completes the page with a bank debit: the session is complete but unpaid while the debit settles
   * (checkout.session.completed with payment_status unpaid); `pay` or `fail` settles it.
   */
  async startAsyncPayment(sessionId: string, options: { webhooks?: boolean } = {}): Promise<void> {
    const record = this.record(sessionId);
    this.mustBeOpen(record);
    const { session } = record;
    record.paymentIntent = makePaymentIntent(session, session.metadata, 'processing');
    this.byPaymentIntent.set(record.paymentIntent.id, record);
    session.payment_intent = record.paymentIntent.id;
    session.status = 'complete';
    session.url = null;
    record.state = 'processing';
    await this.emit(record.account, 'checkout.session.completed', session, options.webhooks);
  }

  /**
   * The hosted page's Fail: a card decline leaves a Stripe session open for another try, so the failure that ends a
   * session is a bank debit that bounces. An open session goes through the async start first.
   */
  async fail(sessionId: string, options: { webhooks?: boolean } = {}): Promise<void> {
    const record = this.record(sessionId);
    if (record.state === 'open') await this.startAsyncPayment(sessionId, options);
    if (record.state !== 'processing') throw new Error(`Session ${sessionId} is ${record.state}: it cannot fail now.`);
    record.paymentIntent!.status = 'requires_payment_method';
    record.paymentIntent!.last_payment_error = {
      type: 'card_error',
      code: 'payment_method_provider_decline',
      message: 'The payment was declined by the bank.',
    };
    record.state = 'failed';
    await this.emit(record.account, 'checkout.session.async_payment_failed', record.session, options.webhooks);
  }

  async expire(sessionId: string, options: { webhooks?: boolean } = {}): Promise<void> {
    const record = this.record(sessionId);
    this.mustBeOpen(record);
    record.session.status = 'expired';
    record.session.url = null;
    record.state = 'expired';
    await this.emit(record.account, 'checkout.session.expired', record.session, options.webhooks);
  }

  session(sessionId: string): FakeSession | undefined {
    const record = this.sessionsById.get(sessionId);
    return record && this.fakeSession(record);
  }

  sessions(): FakeSession[] {
    return [...this.sessionsById.values()].map((r) => this.fakeSession(r));
  }

  refunds(paymentRef?: string): FakeRefund[] {
    return this.refundList.map((r) => r.fake).filter((r) => paymentRef === undefined || r.paymentRef === paymentRef);
  }

  async dashboardRefund(paymentRef: string, amount: string): Promise<void> {
    const record = this.byPaymentIntent.get(paymentRef);
    if (!record?.charge) throw new Error(`No paid payment intent ${paymentRef}.`);
    this.createRefund(record, toStripeAmount(amount, record.charge.currency), {}, null, undefined);
    await this.emit(record.account, 'charge.refunded', record.charge);
  }

  async openDispute(paymentRef: string, options: { reason?: string } = {}): Promise<string> {
    const record = this.byPaymentIntent.get(paymentRef);
    if (!record?.charge) throw new Error(`No paid payment intent ${paymentRef}.`);
    const dispute = makeDispute(record.charge, options.reason ?? 'fraudulent');
    record.charge.disputed = true;
    this.disputes.set(dispute.id, { dispute, record });
    await this.emit(record.account, 'charge.dispute.created', dispute);
    return dispute.id;
  }

  async closeDispute(disputeId: string, outcome: 'won' | 'lost'): Promise<void> {
    const found = this.disputes.get(disputeId);
    if (!found) throw new Error(`No dispute ${disputeId}.`);
    found.dispute.status = outcome;
    await this.emit(found.record.account, 'charge.dispute.closed', found.dispute);
  }

  webhooks(): FakeWebhook[] {
    return this.built.map((b) => b.webhook);
  }

  async resend(eventId: string, options: { tamper?: 'bad-signature' | 'stale' } = {}): Promise<number> {
    const found = this.built.find((b) => b.webhook.eventId === eventId);
    if (!found) throw new Error(`No webhook ${eventId}.`);
    const delivery = { webhook: found.webhook, secret: found.account.webhookSecret };
    if (options.tamper === 'bad-signature') return this.sender.sendOnce(delivery, { secret: `whsec_${stripeId('x')}` });
    if (options.tamper === 'stale') return this.sender.sendOnce(delivery, { timestamp: now() - 3600 });
    return this.sender.sendOnce(delivery);
  }

  holdWebhooks(hold: boolean): void {
    void this.sender.hold(hold);
  }

  /** Waits until every webhook under way (including those an API answer queued) was delivered or gave up. */
  async settled(): Promise<void> {
    await Promise.all([...this.afterAnswer]);
    await this.sender.settle();
  }

  async close(): Promise<void> {
    await this.settled();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- state helpers ----

  private record(sessionId: string): SessionRecord {
    const record = this.sessionsById.get(sessionId);
    if (!record) throw new Error(`No checkout session ${sessionId}.`);
    return record;
  }

  private mustBeOpen(record: SessionRecord): void {
    if (record.state !== 'open') throw new Error(`Session ${record.session.id} is ${record.state}, not open.`);
  }

  private fakeSession(record: SessionRecord): FakeSession {
    const { session } = record;
    return {
      sessionId: session.id,
      attemptId: session.client_reference_id ?? session.metadata.attempt_id,
      amount: fromStripeAmount(session.amount_total, session.currency),
      currency: session.currency.toUpperCase(),
      state: record.state,
      paymentRef: record.state === 'paid' ? (session.payment_intent ?? undefined) : undefined,
      livemode: session.livemode,
    };
  }

  /** Builds the event, holds it and its object to the document, and sends it unless `send` is false. */
  private async emit(account: Account, type: string, object: object, send = true): Promise<void> {
    const event = {
      id: stripeId('evt'),
      object: 'event',
      account: account.id,
      api_version: apiVersion,
      created: now(),
      // A copy: later changes to the object must not rewrite what this event said.
      data: { object: structuredClone(object) },
      livemode: account.livemode,
      pending_webhooks: this.sendsTo(account, type) ? 1 : 0,
      request: { id: null, idempotency_key: null },
      type,
    };
    this.violations.push(...this.check.schema('event', event));
    const resource = (object as { object: string }).object;
    this.violations.push(...this.check.schema(resource, event.data.object));
    // Stripe sends events pretty-printed; the signature covers these exact bytes.
    const webhook: FakeWebhook = {
      eventId: event.id,
      type,
      body: JSON.stringify(event, null, 2),
      headers: {},
      url: account.webhookUrl ?? '',
      sends: [],
    };
    this.built.push({ webhook, account });
    if (send && this.sendsTo(account, type)) await this.sender.deliver({ webhook, secret: account.webhookSecret });
  }

  private createRefund(
    record: SessionRecord,
    amount: number,
    metadata: Record<string, string>,
    reason: Refund['reason'],
    idempotencyKey: string | undefined,
  ): Refund {
    const ch = record.charge!;
    const refund: Refund = {
      id: stripeId('re'),
      object: 'refund',
      amount,
      balance_transaction: stripeId('txn'),
      charge: ch.id,
      created: now(),
      currency: ch.currency,
      metadata,
      payment_intent: ch.payment_intent,
      reason,
      status: 'succeeded',
    };
    ch.amount_refunded += amount;
    ch.refunded = ch.amount_refunded === ch.amount;
    ch.refunds.data.unshift(refund);
    this.refundList.push({
      refund,
      account: record.account,
      fake: {
        providerRefundId: refund.id,
        paymentRef: ch.payment_intent,
        amount: fromStripeAmount(amount, ch.currency),
        currency: ch.currency.toUpperCase(),
        idempotencyKey,
      },
    });
    return refund;
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    // The buyer's side (Stripe serves it from checkout.stripe.com, not the API host): the hosted page, and the
    // favicon a browser asks that host for, which is no API call (no violation, and no fault spent on it).
    if (url.pathname.startsWith('/pay/') || url.pathname === '/favicon.ico')
      return this.page(method, url.pathname, res);

    const header = req.headers['idempotency-key'];
    const idempotencyKey = Array.isArray(header) ? header[0] : header;
    this.requests.push({ method, path: url.pathname, idempotencyKey });

    const fault = this.faults.shift();
    if (fault === 'timeout') return; // the socket stays open, unanswered, until the caller gives up or close()
    if (fault === 'garbage') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('<html>502 Bad Gateway</html>');
      return;
    }
    if (fault === 'server-error') {
      return this.send(method, url.pathname, res, {
        status: 500,
        body: stripeError('api_error', 'An unknown error occurred. Please try again later.'),
      });
    }
    if (fault === 'rate-limited') {
      return this.send(method, url.pathname, res, {
        status: 429,
        headers: { 'Retry-After': String(this.retryAfterSeconds) },
        body: stripeError('invalid_request_error', 'Too many requests hit the API too quickly.', {
          code: 'rate_limit',
        }),
      });
    }

    const answer = this.api(method, url, raw, req, idempotencyKey);
    return this.send(method, url.pathname, res, answer);
  }

  private api(method: string, url: URL, raw: string, req: IncomingMessage, key: string | undefined): Answer {
    try {
      const account = this.authenticate(req);
      if (account.denied.includes(url.pathname)) {
        const masked = `${account.secretKey.slice(0, 8)}${'*'.repeat(8)}${account.secretKey.slice(-4)}`;
        throw invalid(
          `The provided key '${masked}' does not have the required permissions for this endpoint on account ` +
            `'${account.id}'. Having the 'rak_webhook_read' permission would allow this request to continue.`,
          {},
          403,
        );
      }
      const query = qs.parse(url.search.slice(1), { depth: 10, arrayLimit: 100 });
      const body = method === 'POST' ? qs.parse(raw, { depth: 10, arrayLimit: 100 }) : undefined;
      const violations = this.check.request(method, url.pathname, { query, ...(body ? { body } : {}) });
      if (violations.length > 0) {
        this.violations.push(...violations.map((v) => `request: ${v}`));
        const unknown = violations.some((v) => v.includes('no such operation'));
        throw unknown
          ? invalid(`Unrecognized request URL (${method}: ${url.pathname}).`, {}, 404)
          : invalid(`Invalid request: ${violations[0]}`, { code: 'parameter_invalid' });
      }
      if (method !== 'POST' || !key) return this.route(account, method, url.pathname, query, body, key);
      // Stripe's idempotency: same key + same request -> the first answer again; another request -> 400.
      const scope = `${account.id}:${key}`;
      const fingerprint = createHash('sha256').update(`${method} ${url.pathname}\n${raw}`).digest('hex');
      const stored = this.idempotency.get(scope);
      if (stored) {
        if (stored.fingerprint !== fingerprint) {
          throw new ApiError(
            400,
            stripeError(
              'idempotency_error',
              `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
            ),
          );
        }
        return { ...stored.answer, headers: { ...stored.answer.headers, 'Idempotent-Replayed': 'true' } };
      }
      let answer: Answer;
      try {
        answer = this.route(account, method, url.pathname, query, body, key);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        answer = { status: error.status, body: error.body };
      }
      this.idempotency.set(scope, { fingerprint, answer });
      return answer;
    } catch (error) {
      if (error instanceof ApiError) return { status: error.status, body: error.body };
      throw error;
    }
  }

  private authenticate(req: IncomingMessage): Account {
    const auth = req.headers.authorization ?? '';
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    const account = this.accounts.find((a) => a.secretKey === key);
    if (!account) {
      const masked = key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(8)}${key.slice(-4)}` : '';
      throw invalid(masked ? `Invalid API Key provided: ${masked}` : 'You did not provide an API key.', {}, 401);
    }
    return account;
  }

  private route(
    account: Account,
    method: string,
    path: string,
    query: qs.ParsedQs,
    body: qs.ParsedQs | undefined,
    key: string | undefined,
  ): Answer {
    if (method === 'GET' && path === '/v1/balance') {
      const amounts = [{ amount: 0, currency: 'usd', source_types: { card: 0 } }];
      return {
        status: 200,
        body: { object: 'balance', available: amounts, livemode: account.livemode, pending: amounts },
      };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') return this.createSession(account, body!);
    const sessionPath = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
    if (method === 'GET' && sessionPath) {
      const record = this.sessionsById.get(decodeURIComponent(sessionPath[1]!));
      if (!record || record.account !== account) {
        throw invalid(`No such checkout.session: '${sessionPath[1]}'`, { code: 'resource_missing', param: 'id' }, 404);
      }
      const expand = Array.isArray(query.expand) ? query.expand : [];
      const session: Omit<CheckoutSession, 'payment_intent'> & { payment_intent: string | PaymentIntent | null } =
        structuredClone(record.session);
      if (expand.includes('payment_intent') && record.paymentIntent) session.payment_intent = record.paymentIntent;
      return { status: 200, body: session };
    }
    if (method === 'POST' && path === '/v1/refunds') return this.refundCall(account, body!, key);
    if (method === 'GET' && path === '/v1/refunds') {
      const pi = typeof query.payment_intent === 'string' ? query.payment_intent : undefined;
      const data = this.refundList
        .filter((r) => r.account === account && (pi === undefined || r.refund.payment_intent === pi))
        .map((r) => r.refund)
        .reverse();
      return { status: 200, body: { object: 'list', data, has_more: false, url: '/v1/refunds' } };
    }
    if (method === 'GET' && path === '/v1/webhook_endpoints') {
      const { endpoint } = account;
      const url = account.endpointUrl ?? account.webhookUrl;
      const data = url
        ? [
            {
              id: endpoint.id,
              object: 'webhook_endpoint',
              api_version: null,
              application: null,
              created: endpoint.created,
              description: null,
              enabled_events: endpoint.events,
              livemode: account.livemode,
              metadata: {},
              status: endpoint.enabled ? 'enabled' : 'disabled',
              url,
            },
          ]
        : [];
      return { status: 200, body: { object: 'list', data, has_more: false, url: '/v1/webhook_endpoints' } };
    }
    throw invalid(`Unrecognized request URL (${method}: ${path}).`, {}, 404);
  }

  private createSession(account: Account, body: qs.ParsedQs): Answer {
    const items = body.line_items as { quantity?: unknown; price_data?: Record<string, unknown> }[] | undefined;
    const item = items?.[0];
    const price = item?.price_data as
      { currency?: unknown; unit_amount?: unknown; product_data?: { name?: unknown } } | undefined;
    if (body.mode !== 'payment' || items?.length !== 1 || !price) {
      throw invalid('The fake Stripe plays one-line payment sessions with price_data only.', { param: 'line_items' });
    }
    const unitAmount = Number(price.unit_amount);
    const quantity = item?.quantity === undefined ? 1 : Number(item.quantity);
    if (!Number.isInteger(unitAmount) || unitAmount < 0) {
      throw invalid('Invalid integer: unit_amount', { param: 'line_items[0][price_data][unit_amount]' });
    }
    const currency = String(price.currency).toLowerCase();
    const amount = new Decimal(unitAmount).times(quantity).toNumber();
    const metadata = (body.metadata ?? {}) as Record<string, string>;
    const id = stripeId(account.livemode ? 'cs_live' : 'cs_test', 58);
    const created = now();
    const session: CheckoutSession = {
      id,
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      automatic_tax: { enabled: false, status: null },
      cancel_url: typeof body.cancel_url === 'string' ? body.cancel_url : null,
      client_reference_id: typeof body.client_reference_id === 'string' ? body.client_reference_id : null,
      created,
      currency,
      custom_fields: [],
      custom_text: { shipping_address: null, submit: null },
      customer_email: typeof body.customer_email === 'string' ? body.customer_email : null,
      expires_at: created + 86_400,
      livemode: account.livemode,
      metadata,
      mode: 'payment',
      payment_intent: null,
      payment_method_types: ['card'],
      payment_status: amount === 0 ? 'no_payment_required' : 'unpaid',
      phone_number_collection: { enabled: false },
      shipping_options: [],
      status: 'open',
      success_url: String(body.success_url),
      tax_id_collection: { enabled: false },
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      url: `${this.baseUrl}/pay/${id}`,
    };
    const productName = typeof price.product_data?.name === 'string' ? price.product_data.name : '';
    this.sessionsById.set(id, {
      account,
      session,
      productName,
      paymentIntent: undefined,
      charge: undefined,
      state: 'open',
    });
    return { status: 200, body: session };
  }

  private refundCall(account: Account, body: qs.ParsedQs, key: string | undefined): Answer {
    const pi = typeof body.payment_intent === 'string' ? body.payment_intent : undefined;
    if (!pi)
      throw invalid('One of the following params should be provided for this request: payment_intent or charge.');
    const record = this.byPaymentIntent.get(pi);
    if (!record || record.account !== account) {
      throw invalid(`No such payment_intent: '${pi}'`, { code: 'resource_missing', param: 'payment_intent' });
    }
    const ch = record.charge;
    if (!ch) throw invalid(`This PaymentIntent (${pi}) does not have a successful charge to refund.`);
    if (ch.refunded) {
      throw invalid(`Charge ${ch.id} has already been refunded.`, { code: 'charge_already_refunded' });
    }
    const remaining = ch.amount - ch.amount_refunded;
    const amount = body.amount === undefined ? remaining : Number(body.amount);
    if (!Number.isInteger(amount) || amount <= 0) {
      throw invalid('Invalid positive integer', { code: 'parameter_invalid_integer', param: 'amount' });
    }
    if (amount > remaining) {
      const show = (n: number) => `${fromStripeAmount(n, ch.currency)} ${ch.currency.toUpperCase()}`;
      throw invalid(
        `Refund amount (${show(amount)}) is greater than unrefunded amount on charge (${show(remaining)})`,
        {
          param: 'amount',
        },
      );
    }
    const reason = (typeof body.reason === 'string' ? body.reason : null) as Refund['reason'];
    const refund = this.createRefund(record, amount, (body.metadata ?? {}) as Record<string, string>, reason, key);
    // Stripe announces the refund on the charge; the delivery runs after the answer, as Stripe's does.
    const sent = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.emit(record.account, 'charge.refunded', record.charge!),
    );
    this.afterAnswer.add(sent);
    void sent.finally(() => this.afterAnswer.delete(sent));
    return { status: 200, body: refund };
  }

  private send(method: string, path: string, res: ServerResponse, answer: Answer): void {
    this.violations.push(...this.check.response(method, path, answer.status, answer.body).map((v) => `response: ${v}`));
    res
      .writeHead(answer.status, {
        'Content-Type': 'application/json',
        'Request-Id': stripeId('req', 14),
        'Stripe-Version': apiVersion,
        ...answer.headers,
      })
      .end(JSON.stringify(answer.body, null, 2));
  }

  // ---- the hosted checkout page ----

  private async page(method: string, path: string, res: ServerResponse): Promise<void> {
    const match = /^\/pay\/([^/]+)(?:\/(pay|fail))?$/.exec(path);
    const record = match ? this.sessionsById.get(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !record) {
      res.writeHead(404, { 'Content-Type': 'text/html; charset=utf-8' }).end('<p>Something went wrong.</p>');
      return;
    }
    const { session } = record;
    if (method === 'GET' && !match[2]) {
      const amountText = fromStripeAmount(session.amount_total, session.currency);
      res
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(hostedPage(session, record.productName, amountText));
      return;
    }
    if (method !== 'POST' || !match[2] || record.state !== 'open') {
      res.writeHead(409, { 'Content-Type': 'text/html; charset=utf-8' }).end('<p>This session is not open.</p>');
      return;
    }
    if (match[2] === 'pay') await this.pay(session.id);
    else await this.fail(session.id);
    // Stripe sends the buyer to success_url once the session is complete (paid, or a debit that later bounced),
    // with {CHECKOUT_SESSION_ID} filled in.
    const target = session.success_url.replaceAll('{CHECKOUT_SESSION_ID}', session.id);
    res.writeHead(303, { Location: target }).end();
  }
}

export async function startStripeFake(options: StripeFakeOptions = {}): Promise<StripeFake> {
  return new StripeFake(options).listen();
}
