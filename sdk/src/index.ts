// The hand-written part of the SDK: everything typed comes from ./generated/schema.ts (openapi-typescript output of
// openapi.yaml), so a contract change reaches callers as a compile error, not as a runtime surprise.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components, paths, webhooks } from './generated/schema';

export type { components, operations, paths, webhooks } from './generated/schema';
export { WebhookVerificationError };

export interface MerchantClientOptions {
  /** The API root, e.g. `http://localhost:3000/dev/v1`. */
  baseUrl: string;
  /** An API key (or an OAuth access token), sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /** A fetch of your own (a proxy agent, a test double); the global fetch otherwise. */
  fetch?: ClientOptions['fetch'];
}

/** The account (shop) of a credential, as `GET /me` answers it. */
export type Account = components['schemas']['Account'];

/**
 * An openapi-fetch client whose paths, parameters, bodies and responses are the contract's, with the mode its
 * credential acts in.
 */
export type MerchantClient = Client<paths> & {
  /**
   * `false` when the credential acts in the shop's test mode (a test key `mdk_test_…`, or the access token of a
   * test-mode OAuth installation, `mat_test_…`): it sees and makes only test data. Read from the credential's prefix,
   * without a request; `getAccount()` asks the server.
   */
  readonly livemode: boolean;
  /**
   * `GET /me`: the credential's account, with `livemode` and, in test mode, the live shop's id (`live_account_id`).
   * Throws a MerchantApiError when the API answers with an error (an unknown or revoked credential: 401).
   */
  getAccount(): Promise<Account>;
};

/** An error answer of the API (`{ error: { code, message } }`), thrown by the client's helpers such as getAccount. */
export class MerchantApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'MerchantApiError';
  }
}

/**
 * Whether a credential acts in live mode, from its prefix: `mdk_test_…` and `mat_test_…` are test mode, any other
 * key or token is live. (The server decides what a credential reaches; the prefix only says so.)
 */
export function credentialLivemode(apiKey: string): boolean {
  return !/^(mdk|mat)_test_/.test(apiKey.trim());
}

/**
 * A client for the Merchant Developer API. Calls are typed from the contract:
 * `client.POST('/orders', { body, params: { header: { 'Idempotency-Key': idempotencyKey() } } })`.
 * Send an `Idempotency-Key` on writes you may retry: a retry with the same key and body replays the stored response
 * (`Idempotency-Status: cached`) instead of doing the write twice.
 */
export function createMerchantClient(options: MerchantClientOptions): MerchantClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const getAccount = async (): Promise<Account> => {
    const { data, error, response } = await client.GET('/me');
    if (data) return data.data;
    const body = (error as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new MerchantApiError(response.status, body?.code ?? 'UNKNOWN', body?.message ?? `HTTP ${response.status}`);
  };
  return Object.assign(client, { livemode: credentialLivemode(options.apiKey), getAccount });
}

/** A fresh key for the `Idempotency-Key` header; keep it to retry the same write. */
export function idempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

type JsonBody<T> = T extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

/** Any event the API delivers (`{ event, data }`), discriminated on `event`, as the contract's `webhooks` define it. */
export type WebhookEvent = { [Name in keyof webhooks]: JsonBody<webhooks[Name]['post']> }[keyof webhooks];

/** Header bags as the common servers hand them over: fetch `Headers`, node's `IncomingHttpHeaders`, a plain record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const signatureHeaders = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerValue(headers: WebhookHeaders, name: string): string {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? '';
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(' ') : (value ?? '');
  }
  return '';
}

/**
 * Checks a delivery's Standard Webhooks signature (`webhook-signature` over `webhook-id.webhook-timestamp.body`,
 * keyed with the endpoint's `whsec_…` secret) and its timestamp (at most 5 minutes away), then returns the parsed
 * event. `payload` must be the raw request body, byte for byte: a body parsed and re-serialised no longer matches.
 * Throws WebhookVerificationError when the delivery is not authentic. De-duplicate on the `webhook-id` header:
 * delivery is at least once.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const wanted = Object.fromEntries(signatureHeaders.map((name) => [name, headerValue(headers, name)]));
  const event = new Webhook(secret).verify(body, wanted) as WebhookEvent | undefined;
  if (!event) throw new WebhookVerificationError('Empty payload');
  return event;
}
