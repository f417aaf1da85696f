// The official stripe-node client pointed at the account's API base (Stripe itself, or GATEWAY_BASE_URLS' address:
// the local fake in tests). One client per call: it holds the shop's key, and a shop's key is never shared.
import type Stripe from 'stripe';
import { type ProviderAccount, ProviderError } from '../gateway-provider';

let sdk: typeof Stripe | undefined;

/**
 * stripe-node, loaded at its first use: ~0.9 MB of code whose evaluation every start paid, and every process that
 * never talks to Stripe (a worker, a shop without it, the CLI) paid for nothing.
 */
export function stripeSdk(): typeof Stripe {
  return (sdk ??= require('stripe') as typeof Stripe);
}

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
  if (!secretKey) throw new ProviderError('unauthorized', 'The Stripe connection has no secret key.');
  const base = URL.parse(account.apiBase);
  // stripe-node joins its own paths (/v1/...) to host:port, so a base with a path would be silently dropped.
  if (!base || !['http:', 'https:'].includes(base.protocol) || (base.pathname !== '/' && base.pathname !== '')) {
    throw new ProviderError('unavailable', 'The Stripe API base must be an http(s) origin without a path.');
  }
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  const StripeSdk = stripeSdk();
  return new StripeSdk(secretKey, {
    host: base.hostname,
    port: base.port || (protocol === 'http' ? 80 : 443),
    protocol,
    timeout: options.timeoutMs ?? defaultTimeoutMs,
    // Off by default; each call below opts in where repeating it is safe.
    maxNetworkRetries: 0,
    telemetry: false,
  });
}
