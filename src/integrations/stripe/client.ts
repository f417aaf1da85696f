// The official stripe-node client pointed at the account's API base (Stripe itself, or GATEWAY_BASE_URLS' address:
// the local fake in tests). One client per call: it holds the shop's key, and a shop's key is never shared.
import Stripe from 'stripe';
import type { ProviderAccount } from '../gateway-provider';

export interface StripeClientOptions {
  /** Per-request timeout (ms). Default 10 s; tests shorten it. */
  timeoutMs?: number;
  /**
   * stripe-node's automatic retries (connection errors, 409, 5xx), used only on calls that are safe to repeat: reads,
   * and creates that carry our idempotency key. Default 1.
   */
  maxNetworkRetries?: number;
}

export const defaultTimeoutMs = 10_000;
export const defaultMaxNetworkRetries = 1;

export function stripeClient(account: ProviderAccount, options: StripeClientOptions): Stripe {
  const secretKey = account.credentials.secret_key;
  if (!secretKey) throw new Error('The Stripe connection has no secret_key.');
  const base = new URL(account.apiBase);
  // stripe-node joins its own paths (/v1/...) to host:port, so a base with a path would be silently dropped.
  if (base.pathname !== '/' && base.pathname !== '') {
    throw new Error(`The Stripe API base must be an origin without a path, not ${base.origin}${base.pathname}.`);
  }
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(secretKey, {
    host: base.hostname,
    port: base.port || (protocol === 'http' ? 80 : 443),
    protocol,
    timeout: options.timeoutMs ?? defaultTimeoutMs,
    // Off by default; each call below opts in where repeating it is safe.
    maxNetworkRetries: 0,
    telemetry: false,
  });
}
