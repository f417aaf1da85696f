// The one place an error becomes a response: the envelope { error: { code, message, doc_url, details? } }.
// Anything that is not an ApiError is a 500 with a generic message; its detail goes to the log, never the client.
import type { Response } from 'express';
import { ApiError, ClientAbortedError, DatabaseUnavailableError } from '../errors';
import type { Logger } from '../logger';
import { countError } from '../platform/metrics';
import { databaseErrorAnswer } from './database-errors';
import { isConnectionError } from '../../db/connection-errors';
import { isUndecodablePath } from './page-guard';
import { sendOAuthValidationError } from './oauth-errors';

export function toApiError(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  // A route outside /dev/v1 whose path parameter does not decode (the API itself answers 404 before routing).
  if (isUndecodablePath(err)) return new ApiError('BAD_REQUEST', 'The path is not validly percent-encoded (UTF-8).');
  if (isConnectionError(err)) return new DatabaseUnavailableError();
  return databaseErrorAnswer(err);
}

export function errorBody(err: ApiError, publicUrl: string) {
  return {
    error: {
      code: err.code,
      message: err.message,
      doc_url: `${publicUrl}/docs/errors#${err.code}`,
      ...(err.details ? { details: err.details } : {}),
    },
  };
}

/**
 * An error as the API answers it (its catalog entry and the envelope sent), or undefined for one it does not expect
 * (answered as a 500): what an idempotent business rejection is stored as (src/platform/idempotency.ts).
 */
export function errorAnswer(publicUrl: string): (err: unknown) => { error: ApiError; body: unknown } | undefined {
  return (err) => {
    const error = toApiError(err);
    return error && { error, body: errorBody(error, publicUrl) };
  };
}

export function sendError(res: Response, err: unknown, publicUrl: string, logger: Logger): void {
  if (err instanceof ClientAbortedError) {
    logger.info('client aborted', { request_id: res.locals.requestId });
    res.destroy();
    return;
  }
  let apiError = toApiError(err);
  if (!apiError) {
    logger.error('unhandled error', {
      request_id: res.locals.requestId,
      operation_id: res.locals.operationId ?? null,
      error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err),
    });
    apiError = new ApiError('INTERNAL_ERROR');
  } else if (apiError.status >= 500) {
    logger.warn('service error', {
      request_id: res.locals.requestId,
      code: apiError.code,
      cause: (err as Error)?.message,
    });
  }
  countError(apiError.code);
  if (res.headersSent) {
    res.end();
    return;
  }
  if (sendOAuthValidationError(res, apiError)) return;
  res.status(apiError.status).set(apiError.headers).json(errorBody(apiError, publicUrl));
}
