// A provider's failure in the API's words: the one place ProviderError becomes an error envelope.
import { ApiError } from '../../errors';
import { ProviderError } from '../../integrations/gateway-provider';

/** GATEWAY_UNAVAILABLE (502, Retry-After) or GATEWAY_REFUSED (400); anything else is rethrown as it is. */
export function providerApiError(err: unknown, code: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  if (err.failure === 'refused') return new ApiError('GATEWAY_REFUSED', `${code} refused the request: ${err.message}`);
  const wait = Math.min(Math.max(err.retryAfterSeconds ?? 5, 1), 300);
  const why =
    err.failure === 'unauthorized'
      ? `${code} refused this shop's credentials; the operator must connect it again (gateway connect).`
      : `${code} could not be reached: ${err.message}`;
  return new ApiError('GATEWAY_UNAVAILABLE', `${why} Nothing was written.`, {
    headers: { 'Retry-After': String(wait) },
  });
}
