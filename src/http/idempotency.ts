// The HTTP side of idempotency (the rules are src/platform/idempotency.ts): a handler's result rendered as the exact
// response sent and stored for replay, the `Idempotency-Status` header, and a stored response written byte for byte.
import type { Response } from 'express';
import {
  replayableHeaders,
  type IdempotencyStatus,
  type IdempotentOutcome,
  type StoredResponse,
} from '../platform/idempotency';
import type { OperationResult } from './handler';

export const IDEMPOTENCY_STATUS_HEADER = 'Idempotency-Status';

export function setIdempotencyStatus(res: Response, status: IdempotencyStatus): void {
  res.set(IDEMPOTENCY_STATUS_HEADER, status);
}

/** A handler's result as the exact response sent: `data` in the `{ data }` envelope, `page` and `raw` as is. */
export function renderResult(result: OperationResult): StoredResponse {
  if ('html' in result) throw new Error('an HTML result is for reads only: it is never stored for replay');
  const body = 'page' in result ? result.page : 'raw' in result ? result.raw : { data: result.data };
  return { status: result.status ?? 200, headers: replayableHeaders(result.headers), body: JSON.stringify(body) };
}

/** Sends a rendered response; its body text goes out byte for byte (what res.json would have sent). */
export function sendStored(res: Response, stored: StoredResponse): void {
  res.status(stored.status);
  if (Object.keys(stored.headers).length) res.set(stored.headers);
  res.type('application/json').send(stored.body);
}

/**
 * Answers an idempotent write as Idempotency.execute decided: its `Idempotency-Status`, then the response, or the
 * error thrown on for src/http/errors.ts to map (with the header already set).
 */
export function sendOutcome(res: Response, outcome: IdempotentOutcome): void {
  setIdempotencyStatus(res, outcome.idempotency);
  if ('error' in outcome) throw outcome.error;
  sendStored(res, outcome.response);
}
