// The hand-written part of the SDK: everything typed comes from ./generated/schema.ts (openapi-typescript output of
// openapi.yaml), so a contract change reaches callers as a compile error, not as a runtime surprise.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { paths, webhooks } from './generated/schema';

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

/** An openapi-fetch client whose paths, parameters, bodies and responses are the contract's. */
export type MerchantClient = Client<paths>;

/**
 * A client for the Merchant Developer API. Calls are typed from the contract:
 * `client.POST('/orders', { body, params: { header: { 'Idempotency-Key': idempotencyKey() } } })`.
 * Send an `Idempotency-Key` on writes you may retry: a retry with the same key and body replays the stored response
 * (`Idempotency-Status: cached`) instead of doing the write twice.
 */
export function createMerchantClient(options: MerchantClientOptions): MerchantClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
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
