// The one interface every payment provider is reached through (Stripe, PayPal, BTCPay Server; the local SANDBOX
// plays the same part from inside this server). An adapter speaks its provider's API and translates what the
// provider says into these words; it knows nothing of our tables, and the domain knows nothing of the providers'
// wire formats (src/domain/payments/ decides what a notice does to an invoice).
//
// Rules every adapter keeps:
// - Every call has a timeout. A call is retried only where the provider's idempotency key makes the retry safe
//   (Stripe `Idempotency-Key`, PayPal `PayPal-Request-Id`), the key derived from our id (attempt, refund).
// - Timeouts, 5xx, 429 and answers that are not what the provider documents are ProviderError('unavailable'); a
//   provider's "no" to a well-formed request is 'refused'; rejected credentials 'unauthorized'.
// - No secret (key, client secret, webhook secret) is ever part of an error message, a log line or a notice.

/** The gateway codes with a provider adapter (the identifier integrators send as `gateway`). */
export const providerCodes = ['STRIPE', 'PAYPAL', 'BTCPAY'] as const;
export type ProviderCode = (typeof providerCodes)[number];

export function isProviderCode(code: string): code is ProviderCode {
  return (providerCodes as readonly string[]).includes(code);
}

/** The names GATEWAY_BASE_URLS takes (src/config.ts): PAYPAL_SANDBOX is the test shops' PayPal address. */
export const gatewayBaseUrlNames = ['STRIPE', 'PAYPAL', 'PAYPAL_SANDBOX'] as const;
export type GatewayBaseUrlName = (typeof gatewayBaseUrlNames)[number];

/** A shop's connection to its provider, as the adapter needs it: the secrets opened, the API base resolved. */
export interface ProviderAccount {
  /** The mode of the shop the connection belongs to: a live shop holds live credentials only. */
  livemode: boolean;
  /** The fields given at connect (provider-specific names, see ProviderSpec.fields), decrypted. */
  credentials: Readonly<Record<string, string>>;
  /**
   * The provider's API base without a trailing slash: GATEWAY_BASE_URLS' entry, else the provider's own address,
   * and for BTCPay Server (self-hosted) the connection's `url`.
   */
  apiBase: string;
}

/** A field the operator gives at connect time (`gateway connect`): from the environment or `--secrets-stdin`. */
export interface ConnectField {
  /** The name in `--secrets-stdin` JSON and in ProviderAccount.credentials. */
  name: string;
  /** The environment variable it is read from (e.g. STRIPE_SECRET_KEY). */
  env: string;
  /** Secrets are sealed and never shown again; other fields (a store id, a URL) may be shown by `gateway list`. */
  secret: boolean;
  /** Absent fields that are optional are left out of credentials. */
  optional?: boolean;
}

/** What a connection is for, as far as the connect-time check needs it. */
export interface ConnectTarget {
  /** This shop's webhook route for the provider (the address `gateway connect` prints): where its events must go. */
  webhookUrl: string;
}

export interface StartSessionInput {
  /** Our payment attempt id: carried by the provider's session (metadata / custom_id / orderId) and the seed of
   *  the provider's idempotency key, so the same attempt never opens two sessions. */
  attemptId: string;
  shopId: string;
  orderUniqid: string;
  /** What the buyer sees as the line's name. */
  description: string;
  /** Canonical decimal string, in the currency's minor unit (e.g. "14.99", "1000" JPY). */
  amount: string;
  /** ISO 4217 upper case (or a coin code for a crypto invoice priced in it). */
  currency: string;
  customerEmail?: string;
  /** Where the provider sends the buyer after paying (our return route: it reads the session and settles it). */
  successUrl: string;
  /** Where the provider sends the buyer who gives up (the hosted checkout again). */
  cancelUrl: string;
  /** The coin or network the checkout opens on (BTCPay payment method id such as BTC-CHAIN, BTC-LN). */
  coin?: string;
}

export interface ProviderSession {
  /** The provider's session id (Stripe cs_..., PayPal order id, BTCPay invoice id). */
  sessionId: string;
  /** The provider's hosted page the buyer is sent to. */
  checkoutUrl: string;
}

/** What a session says now, in our words. Amounts are decimal strings in the currency's minor unit. */
export type SessionState =
  /** Not paid yet (open, approved but not captured, processing): keep waiting. */
  | { status: 'OPEN' }
  /** Paid in full or in part; `paymentRef` is what a refund or a dispute names (payment intent, capture, invoice). */
  | { status: 'PAID'; amount: string; currency: string; paymentRef: string }
  /** Some money arrived but the provider does not call it paid (BTCPay partial payment): the invoice stays payable. */
  | { status: 'PARTIAL'; amount: string; currency: string; paymentRef: string }
  /** The payment failed or was refused; the session cannot be paid any more. */
  | { status: 'FAILED' }
  /** The session ran out unpaid (or was cancelled). */
  | { status: 'EXPIRED' };

export interface RefundRequest {
  /** Our refund id: the seed of the provider's idempotency key. */
  refundId: string;
  /** SessionState.paymentRef of the paid session. */
  paymentRef: string;
  sessionId: string;
  amount: string;
  currency: string;
  reason?: string;
}

export interface ProviderRefund {
  /** The provider's refund id (Stripe re_..., PayPal refund id, BTCPay pull payment id). */
  providerRefundId: string;
  /** SUCCEEDED: the money is on its way; PENDING: the provider accepted it and finishes later (BTCPay's claim). */
  status: 'SUCCEEDED' | 'PENDING';
}

export type DisputeOutcome = 'WON' | 'LOST' | 'CLOSED';

/** A verified provider webhook in our words. `eventId` is the provider's id of the event (dedupes redeliveries). */
export type ProviderNotice =
  | {
      kind: 'SESSION';
      eventId: string;
      sessionId: string;
      /** Our attempt id as the provider's session carries it, when the event includes it. */
      attemptId?: string;
      state: SessionState;
    }
  | {
      /** Money given back at the provider (through us or in the provider's dashboard). */
      kind: 'REFUNDED';
      eventId: string;
      paymentRef: string;
      /** Every refund of that payment the event names, each once by its provider id. */
      refunds: { providerRefundId: string; amount: string; currency: string }[];
    }
  | {
      kind: 'DISPUTE_OPENED';
      eventId: string;
      paymentRef: string;
      disputeId: string;
      amount: string;
      currency: string;
      /** One of our dispute reasons (FRAUDULENT, PRODUCT_NOT_RECEIVED, ...; GENERAL when unmapped). */
      reason: string;
      evidenceDueBy?: Date;
    }
  | { kind: 'DISPUTE_CLOSED'; eventId: string; paymentRef: string; disputeId: string; outcome: DisputeOutcome }
  /** A verified event this server has no use for: acknowledged, nothing done. */
  | { kind: 'IGNORED'; eventId: string; type: string };

export interface GatewayProvider {
  readonly code: ProviderCode;
  /**
   * The provider's own API address for a shop of this mode (PayPal: api-m.sandbox.paypal.com for test shops,
   * api-m.paypal.com for live ones; BTCPay Server has none: its connection's `url`). GATEWAY_BASE_URLS overrides it:
   * `STRIPE=`, `PAYPAL=` (both modes) and `PAYPAL_SANDBOX=` (test shops, when PayPal's two addresses must differ).
   */
  defaultApiBase(livemode: boolean): string | undefined;
  /** The fields `gateway connect` reads. */
  readonly fields: readonly ConnectField[];
  /**
   * Why these credentials cannot serve a shop of this mode (a live key for a test shop, a sandbox client for a live
   * one), without calling anyone; null when they may.
   */
  modeMismatch(credentials: Readonly<Record<string, string>>, livemode: boolean): string | null;
  /**
   * One cheap authenticated call at connect time: a wrong key is refused then, not at a buyer's checkout. Where the
   * connection names the provider's webhook registration (PayPal's webhook_id), that is read too and must post to
   * `target.webhookUrl`; Stripe's and BTCPay's secrets name no endpoint, so their adapters have nothing to read.
   */
  verifyCredentials(account: ProviderAccount, target: ConnectTarget): Promise<void>;
  startSession(account: ProviderAccount, input: StartSessionInput): Promise<ProviderSession>;
  /**
   * The session's state now. PayPal: an APPROVED order is captured here (PayPal-Request-Id derived from the
   * session), so "read" after the buyer's approval is what takes the money, once.
   */
  readSession(account: ProviderAccount, sessionId: string): Promise<SessionState>;
  refund(account: ProviderAccount, request: RefundRequest): Promise<ProviderRefund>;
  /**
   * Verifies a webhook exactly as the provider signs it (Stripe-Signature with its tolerance, PayPal's
   * verify-webhook-signature call, BTCPay-Sig) and translates it. Throws WebhookRejected for a bad or stale
   * signature or a body that is not the provider's.
   */
  parseWebhook(
    account: ProviderAccount,
    rawBody: Buffer,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): Promise<ProviderNotice[]>;
}

export type ProviderFailure = 'unavailable' | 'refused' | 'unauthorized';

/** A provider call that did not do what was asked. The message is safe to show a merchant: it holds no secret. */
export class ProviderError extends Error {
  constructor(
    readonly failure: ProviderFailure,
    message: string,
    /** Seconds the provider asked us to wait (429 Retry-After), when it said. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** A webhook that is not verifiably the provider's (bad or stale signature, malformed body). */
export class WebhookRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRejected';
  }
}
