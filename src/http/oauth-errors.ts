// The OAuth token and revocation endpoints answer a malformed request as OAuth does (RFC 6749 §5.2: 400
// `invalid_request`, plain JSON, not cached), not with the API's 422 envelope: standard client libraries read
// `error` from the body. Media type, size, idempotency and rate-limit refusals keep the envelope (documented).
import type { Response } from 'express';
import type { ApiError } from '../errors';

const oauthPlainErrorOperations = new Set(['exchangeOAuthToken', 'revokeOAuthToken']);

/** Sends the OAuth form of a validation error and returns true, or returns false when it is not one. */
export function sendOAuthValidationError(res: Response, err: ApiError): boolean {
  if (err.code !== 'VALIDATION_ERROR' || !oauthPlainErrorOperations.has(res.locals.operationId as string)) return false;
  const detail = err.details?.[0];
  const description = detail
    ? `${detail.field === 'body' ? 'The request' : detail.field} ${detail.message}.`
    : err.message;
  res
    .status(400)
    .set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' })
    .json({ error: 'invalid_request', error_description: description });
  return true;
}
