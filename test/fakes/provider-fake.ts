// What every payment provider's local fake offers the tests (test/fakes/<provider>/): a real HTTP server that keeps
// state, plays the provider's hosted payment page, signs and sends webhooks exactly as the provider does, and holds
// every request it receives and every response it gives to the provider's published OpenAPI document (pinned under
// test/fixtures/providers/). The end-to-end suites drive all three through this one shape.

/** A fault the fake plays on its next API calls (not on its hosted page). */
export type FakeFault =
  /** Accepts the connection and never answers (the caller's timeout must fire). */
  | 'timeout'
  /** 500 with the provider's error body. */
  | 'server-error'
  /** 429 with Retry-After. */
  | 'rate-limited'
  /** 200 with a body that is not JSON. */
  | 'garbage';

export interface FakeSession {
  sessionId: string;
  /** Our attempt id as the session carries it (metadata / custom_id / orderId). */
  attemptId: string | undefined;
  amount: string;
  currency: string;
  /** The fake's own words for its state: open, paid, partial, failed, expired, approved (PayPal, not captured). */
  state: string;
  /** Set once paid: what a refund names (payment intent, capture id, invoice id). */
  paymentRef: string | undefined;
  /** The mode of the account that opened it. */
  livemode: boolean;
}

export interface FakeRefund {
  providerRefundId: string;
  paymentRef: string;
  amount: string;
  currency: string;
  /** The idempotency key it was made with (Stripe Idempotency-Key, PayPal PayPal-Request-Id), when one was sent. */
  idempotencyKey: string | undefined;
}

export interface FakeWebhook {
  /** The provider's event id. */
  eventId: string;
  /** The provider's event type (checkout.session.completed, PAYMENT.CAPTURE.COMPLETED, InvoiceSettled...). */
  type: string;
  /** The exact bytes sent. */
  body: string;
  /** The signature headers sent with it (a fresh signature at every send, as the provider does). */
  headers: Record<string, string>;
  /** The account's webhook URL it was sent to. */
  url: string;
  /** HTTP statuses of each send so far (0: no answer). */
  sends: number[];
}

export interface ProviderFake {
  /** The API base to put in GATEWAY_BASE_URLS (Stripe, PayPal) or pass as `--url` (BTCPay). */
  readonly baseUrl: string;
  /** Every request or response seen so far that breaks the pinned OpenAPI document: a test asserts it is empty. */
  readonly violations: string[];
  /** API requests received, in order (method, path, and the idempotency key header when sent). */
  readonly requests: { method: string; path: string; idempotencyKey: string | undefined }[];
  /**
   * Makes an account the fake accepts and returns the credentials `gateway connect` takes, keyed by their
   * environment names (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET; PAYPAL_CLIENT_ID, ...; BTCPAY_API_KEY, ...).
   * `webhookUrl` is where the account's webhooks go (our route for that shop); it may be set later.
   */
  createAccount(options: { livemode: boolean; webhookUrl?: string }): Record<string, string>;
  /** Points an account (by any credential of it) at a webhook URL. */
  setWebhookUrl(credentials: Record<string, string>, url: string): void;
  /** The next `count` API calls (default 1) play this fault. */
  failNext(fault: FakeFault, count?: number): void;
  /**
   * What the hosted page's "Pay" button does, for tests that do not drive the browser: the session is paid (in full,
   * or `amount` only: a short payment; BTCPay: a partial payment), and the webhooks follow unless `webhooks: false`.
   */
  pay(sessionId: string, options?: { amount?: string; currency?: string; webhooks?: boolean }): Promise<void>;
  /** The hosted page's "Fail" button. */
  fail(sessionId: string, options?: { webhooks?: boolean }): Promise<void>;
  /** The session runs out unpaid. */
  expire(sessionId: string, options?: { webhooks?: boolean }): Promise<void>;
  session(sessionId: string): FakeSession | undefined;
  sessions(): FakeSession[];
  /** Refunds made, through the API or the dashboard, newest last. */
  refunds(paymentRef?: string): FakeRefund[];
  /** A refund made in the provider's own dashboard: recorded, its webhook sent. */
  dashboardRefund(paymentRef: string, amount: string): Promise<void>;
  /** A dispute opened / closed by the buyer's bank, webhook sent (BTCPay has no disputes: it throws). */
  openDispute(paymentRef: string, options?: { reason?: string }): Promise<string>;
  closeDispute(disputeId: string, outcome: 'won' | 'lost'): Promise<void>;
  /** Every webhook built so far, oldest first. */
  webhooks(): FakeWebhook[];
  /**
   * Sends a built webhook again, as is (a fresh signature) or tampered: 'bad-signature' signs with another secret,
   * 'stale' signs with a timestamp an hour old (Stripe's tolerance is 300 s; BTCPay has no timestamp: it replays the
   * old bytes and signature, which must be accepted and deduplicated). Returns the HTTP status our server answered.
   */
  resend(eventId: string, options?: { tamper?: 'bad-signature' | 'stale' }): Promise<number>;
  /** Holds automatic webhook sends (the endpoint "down"); `release` sends what was held, with the provider's retries. */
  holdWebhooks(hold: boolean): void;
  close(): Promise<void>;
}
