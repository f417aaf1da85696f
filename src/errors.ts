// The error catalog: every code the API can answer with, its HTTP status and its documentation, in one place.
// Code elsewhere throws ApiError (or a subclass) with a code; src/http/errors.ts turns it into the envelope.

export interface ErrorEntry {
  status: number;
  /** Default message when the thrower gives none. */
  message: string;
  /** What it means and what to do: rendered at /docs/errors. */
  doc: string;
}

export const errorCatalog = {
  UNAUTHORIZED: { status: 401, message: 'A valid credential is required.', doc: 'The `Authorization: Bearer <credential>` header is missing, malformed, unknown, expired or revoked. Send a valid API key or access token.' },
  FORBIDDEN: { status: 403, message: 'This credential may not perform this operation.', doc: 'The credential lacks the scope the operation needs (the message names it), or its shop is suspended.' },
  VALIDATION_ERROR: { status: 422, message: 'The request is not valid.', doc: 'A parameter or the body has the wrong shape or values. `details` lists each `{ field, message }`. Correct the request; retrying it unchanged fails again.' },
  IDEMPOTENCY_CONFLICT: { status: 422, message: 'This idempotency key was used with a different request.', doc: 'The `Idempotency-Key` was already used by this credential for this operation with another body or path. Use a fresh key for a different request.' },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, message: 'A request with this idempotency key is still being processed.', doc: 'The first request with this key has not finished. Retry after `Retry-After` seconds to receive its response.' },
  NOT_FOUND: { status: 404, message: 'Not found.', doc: 'No such route or resource. Resources of other shops are reported as not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'This method is not allowed on this path.', doc: 'The path exists but does not accept this HTTP method; the `Allow` header lists those it does.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than 1 MiB.', doc: 'Request bodies are limited to 1 MiB (1,048,576 bytes).' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send the body as application/json, multipart/form-data or text/plain.', doc: 'Request bodies are accepted as `application/json`, `multipart/form-data` (fields become properties; JSON text in a field is parsed) or `text/plain` holding JSON.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests.', doc: "The shop's per-minute request allowance (by plan) is used up. Wait `Retry-After` seconds or until `X-RateLimit-Reset`." },
  INTERNAL_ERROR: { status: 500, message: 'The server failed to process the request.', doc: 'An unexpected failure. Nothing was disclosed about it; quote the `X-Request-Id` to support. Retrying with the same `Idempotency-Key` is safe.' },
  NOT_IMPLEMENTED: { status: 501, message: 'This operation is not available yet.', doc: 'The operation is part of the published contract but this server does not perform it yet.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable.', doc: 'The database could not be reached. Retry after `Retry-After` seconds.' },
  PRODUCT_NOT_FOUND: { status: 404, message: 'Product not found.', doc: 'No product with this id exists in this shop.' },
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof errorCatalog;

export interface ErrorDetail {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
  /** Extra response headers (Allow, Retry-After). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message ?? errorCatalog[code].message);
    this.name = 'ApiError';
    this.code = code;
    this.status = errorCatalog[code].status;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export class NotFoundError extends ApiError {
  constructor(code: Extract<ErrorCode, `${string}NOT_FOUND`> = 'NOT_FOUND', message?: string) {
    super(code, message);
  }
}

export class ValidationError extends ApiError {
  constructor(details: ErrorDetail[], message?: string) {
    super('VALIDATION_ERROR', message, { details });
  }
}

export class UnauthorizedError extends ApiError {
  constructor(message?: string) {
    super('UNAUTHORIZED', message);
  }
}

export class ForbiddenError extends ApiError {
  constructor(message?: string) {
    super('FORBIDDEN', message);
  }
}

/** The database could not be reached: 503, so clients retry instead of treating it as a bug. */
export class DatabaseUnavailableError extends ApiError {
  constructor() {
    super('SERVICE_UNAVAILABLE', undefined, { headers: { 'Retry-After': '5' } });
  }
}
