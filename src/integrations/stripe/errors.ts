// Stripe's errors in our words (gateway-provider.ts): unreachable, slow, 5xx, 429 or undocumented answers are
// 'unavailable'; a rejected key is 'unauthorized'; Stripe's "no" to a well-formed request is 'refused'. Messages keep
// Stripe's explanation (a merchant can act on "amount is greater than unrefunded amount") with any key masked out.
import { ProviderError } from '../gateway-provider';
import { stripeSdk } from './client';

const secretPattern = /\b(?:sk|rk|pk)_(?:test|live)_[A-Za-z0-9*]+|\bwhsec_[A-Za-z0-9+/=*]+/g;

/** Stripe echoes a masked key in some messages; no part of a key ever leaves this module. */
export function withoutSecrets(message: string): string {
  return message.replace(secretPattern, '[key]');
}

function retryAfter(headers: Record<string, string> | undefined): number | undefined {
  const value = headers?.['retry-after'];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds) : undefined;
}

export function asProviderError(error: unknown, doing: string): ProviderError {
  if (error instanceof ProviderError) return error;
  const { errors } = stripeSdk();
  if (!(error instanceof errors.StripeError)) {
    return new ProviderError('unavailable', `Stripe could not be reached while ${doing}.`);
  }
  const said = error.message ? `: ${withoutSecrets(error.message)}` : '.';
  if (error instanceof errors.StripeAuthenticationError || error instanceof errors.StripePermissionError) {
    return new ProviderError('unauthorized', `Stripe rejected the API key while ${doing}.`);
  }
  if (error instanceof errors.StripeRateLimitError) {
    return new ProviderError('unavailable', `Stripe is rate limiting ${doing}.`, retryAfter(error.headers));
  }
  if (
    error instanceof errors.StripeInvalidRequestError ||
    error instanceof errors.StripeCardError ||
    error instanceof errors.StripeIdempotencyError
  ) {
    return new ProviderError('refused', `Stripe refused ${doing}${said}`);
  }
  // StripeAPIError (5xx, a body that is not JSON), StripeConnectionError (timeout, refused connection), and the rest.
  return new ProviderError('unavailable', `Stripe failed while ${doing}${said}`);
}

/** An answer that is not what Stripe documents is treated like no answer. */
export function undocumented(doing: string, what: string): ProviderError {
  return new ProviderError('unavailable', `Stripe answered ${doing} with ${what}.`);
}
