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
  UNAUTHORIZED: {
    status: 401,
    message: 'The credential is unknown, revoked or expired.',
    doc: 'No live credential came with the request. Every 401 carries an RFC 6750 `WWW-Authenticate: Bearer realm="Merchant Developer API"` challenge, and its message and `error` attribute say which of three cases it is. No `Authorization` header: "No credential: send Authorization: Bearer <API key or access token>." (no `error` attribute). A header that is not a Bearer credential (another scheme such as `Basic`, `Bearer` with no token or a token with characters a bearer token cannot have, or more than one `Authorization` header): "The Authorization header is not a Bearer credential." and `error="invalid_request"`. A Bearer token that is unknown, revoked or expired, or not shaped like an API key or access token: "The credential is unknown, revoked or expired." and `error="invalid_token"`, the same words for all of them, so an answer never tells which keys exist. Send a live API key `mdk_…` or OAuth access token `mat_…`; an app whose access token expired uses its refresh token.',
  },
  FORBIDDEN: {
    status: 403,
    message: 'This credential may not perform this operation.',
    doc: 'The credential lacks the scope the operation needs (the message names it, and `WWW-Authenticate: Bearer ... error="insufficient_scope", scope="<the scopes needed>"` says it too, RFC 6750 §3.1), or its shop is suspended (no `WWW-Authenticate`: no other credential of that shop would do).',
  },
  VALIDATION_ERROR: {
    status: 422,
    message: 'The request is not valid.',
    doc: 'A parameter or the body has the wrong shape or values. `details` lists each `{ field, message }`. Correct the request; retrying it unchanged fails again.',
  },
  IDEMPOTENCY_CONFLICT: {
    status: 422,
    message: 'This idempotency key was used with a different request.',
    doc: 'The `Idempotency-Key` was already used by this credential for this operation with another body or path. Use a fresh key for a different request.',
  },
  IDEMPOTENCY_IN_PROGRESS: {
    status: 409,
    message: 'A request with this idempotency key is still being processed.',
    doc: 'The first request with this key has not finished. Retry after `Retry-After` seconds to receive its response.',
  },
  NOT_FOUND: {
    status: 404,
    message: 'Not found.',
    doc: 'No such route or resource. Resources of other shops are reported as not found.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'This method is not allowed on this path.',
    doc: 'The path exists but does not accept this HTTP method; the `Allow` header lists those it does.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: 'The request body is larger than 1 MiB.',
    doc: 'Request bodies are limited to 1 MiB (1,048,576 bytes).',
  },
  BAD_REQUEST: {
    status: 400,
    message: 'The request is not valid HTTP.',
    doc: 'The HTTP message itself could not be parsed (a malformed request line or header, an invalid `Content-Length` or chunk): it never reached an operation, and the connection is closed. A report download link (outside `/dev/v1`) whose path is not validly %-encoded as UTF-8 answers it too. Fix the client or the proxy that sent it.',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'The request was not received in time.',
    doc: 'The headers (`HTTP_HEADERS_TIMEOUT_SECONDS`) or the whole request (`HTTP_REQUEST_TIMEOUT_SECONDS`) took too long to arrive; the connection is closed. Send the request again.',
  },
  REQUEST_HEADER_FIELDS_TOO_LARGE: {
    status: 431,
    message: 'The request headers are too large.',
    doc: 'The request line and headers together exceed 16 KiB. Send fewer or shorter headers; the connection is closed.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Send the body as application/json, multipart/form-data or text/plain.',
    doc: 'Request bodies are accepted as `application/json`, `multipart/form-data` (fields become properties; JSON text in a field is parsed) or `text/plain` holding JSON.',
  },
  RATE_LIMITED: {
    status: 429,
    message: 'Too many requests.',
    doc: "The shop's per-minute request allowance (by plan) is used up. Wait `Retry-After` seconds or until `X-RateLimit-Reset`.",
  },
  INTERNAL_ERROR: {
    status: 500,
    message: 'The server failed to process the request.',
    doc: 'An unexpected failure. Nothing was disclosed about it; quote the `X-Request-Id` to support. Retrying with the same `Idempotency-Key` is safe.',
  },
  NOT_IMPLEMENTED: {
    status: 501,
    message: 'This operation is not available yet.',
    doc: 'The operation is part of the published contract but this server does not perform it yet.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: 'The service is temporarily unavailable.',
    doc: 'The database could not be reached. Retry after `Retry-After` seconds.',
  },
  PRODUCT_NOT_FOUND: {
    status: 404,
    message: 'Product not found.',
    doc: 'No product with this id exists in this shop.',
  },
  INVOICE_NOT_FOUND: {
    status: 404,
    message: 'Order not found.',
    doc: 'No order (invoice) with this id exists in this shop.',
  },
  PAYMENT_NOT_FOUND: {
    status: 404,
    message: 'Payment not found.',
    doc: 'No payment with this id exists in this shop.',
  },
  CUSTOMER_NOT_FOUND: {
    status: 404,
    message: 'Customer not found.',
    doc: 'No customer with this id exists in this shop.',
  },
  CATEGORY_NOT_FOUND: {
    status: 404,
    message: 'Category not found.',
    doc: 'No category with this id exists in this shop.',
  },
  COUPON_NOT_FOUND: {
    status: 404,
    message: 'Coupon not found.',
    doc: 'No coupon with this code or id exists in this shop.',
  },
  SUBSCRIPTION_NOT_FOUND: {
    status: 404,
    message: 'Subscription not found.',
    doc: 'No subscription with this id exists in this shop.',
  },
  TICKET_NOT_FOUND: {
    status: 404,
    message: 'Ticket not found.',
    doc: 'No support ticket with this id exists in this shop.',
  },
  REVIEW_NOT_FOUND: { status: 404, message: 'Review not found.', doc: 'No review with this id exists in this shop.' },
  ESCROW_NOT_FOUND: { status: 404, message: 'Escrow not found.', doc: 'No escrow with this id exists in this shop.' },
  LICENSE_NOT_FOUND: {
    status: 404,
    message: 'License not found.',
    doc: 'No license with this id exists in this shop.',
  },
  RESELLER_NOT_FOUND: {
    status: 404,
    message: 'Reseller not found.',
    doc: 'No reseller with this id exists in this shop.',
  },
  RESELLER_TIER_NOT_FOUND: {
    status: 404,
    message: 'Reseller tier not found.',
    doc: 'No reseller tier with this id exists in this shop.',
  },
  VARIANT_NOT_FOUND: {
    status: 404,
    message: 'Variant not found.',
    doc: 'No variant with this id exists on the product.',
  },
  ORDER_ITEM_NOT_FOUND: {
    status: 404,
    message: 'Line item not found.',
    doc: 'The order has no line item with this id.',
  },
  PAYMENT_LINK_NOT_FOUND: {
    status: 404,
    message: 'Payment link not found.',
    doc: 'No payment link with this id exists in this shop.',
  },
  VARIANT_FIELD_NOT_FOUND: {
    status: 404,
    message: 'Variant field not found.',
    doc: 'The product has no variant field with this id.',
  },
  QUANTITY_DEAL_NOT_FOUND: {
    status: 404,
    message: 'Quantity deal not found.',
    doc: 'No quantity deal with this uniqid exists in this shop.',
  },
  AFFILIATE_APPLICATION_NOT_FOUND: {
    status: 404,
    message: 'Affiliate application not found.',
    doc: 'No affiliate application with this id exists in this shop.',
  },
  WEBHOOK_NOT_FOUND: {
    status: 404,
    message: 'Webhook endpoint not found.',
    doc: 'No webhook endpoint with this id exists in this shop.',
  },
  WEBHOOK_LOG_NOT_FOUND: {
    status: 404,
    message: 'Webhook delivery log not found.',
    doc: 'No webhook delivery log with this id exists in this shop.',
  },
  EVENT_NOT_FOUND: {
    status: 404,
    message: 'Event not found.',
    doc: 'No event with this id exists in this shop. An event id is the `webhook-id` header of its deliveries.',
  },
  TEST_CLOCK_NOT_FOUND: {
    status: 404,
    message: 'Test clock not found.',
    doc: 'Live mode has no test clock: a live shop always runs on real time. Test clocks belong to test-mode shops; call `GET /me/test-clock` and `POST /me/test-clock/advance` with a test key (`mdk_test_…`).',
  },
  THEME_NOT_FOUND: { status: 404, message: 'Theme not found.', doc: 'No theme with this id exists in this shop.' },
  PREVIEW_SESSION_NOT_FOUND: {
    status: 404,
    message: 'Preview session not found.',
    doc: 'The theme has no running preview session with this id: unknown, of another theme, already stopped, or expired.',
  },
  THEME_NOT_PUBLISHED: {
    status: 404,
    message: 'The theme has no published document.',
    doc: 'The theme has never been published, so it has no published document. Read its draft (`GET /themes/{id}/control/document/draft`) or publish it first.',
  },
  DOMAIN_NOT_FOUND: {
    status: 404,
    message: 'Domain not found.',
    doc: 'No additional domain with this id exists in this shop.',
  },
  MESSAGING_BOT_NOT_FOUND: {
    status: 404,
    message: 'Messaging bot not found.',
    doc: 'No messaging bot with this id exists in this shop.',
  },
  REPORT_NOT_FOUND: {
    status: 404,
    message: 'Report not found.',
    doc: 'No analytics report with this id exists in this shop.',
  },
  DOWNLOAD_LINK_EXPIRED: {
    status: 410,
    message: 'The download link has expired.',
    doc: "An analytics report's `download_url` is valid for one hour, and only for the generation it was issued for: past its expiry, or once the report was generated again, it answers 410. Read the report again with `GET /dev/v1/analytics/reports` for a fresh link.",
  },
  SESSION_NOT_FOUND: {
    status: 404,
    message: 'Session not found.',
    doc: 'No dashboard session with this id exists in this shop.',
  },
  CONFLICT: {
    status: 409,
    message: 'This conflicts with an existing resource.',
    doc: 'The request conflicts with the current state: e.g. the reseller email is already invited, applied, active or suspended, or a unique value (license key, domain, variant field name) is taken.',
  },
  CONCURRENT_UPDATE: {
    status: 409,
    message: 'The request collided with concurrent changes to the same data; nothing was changed.',
    doc: 'The database could not apply the change because concurrent requests changed the same rows (a serialization failure or deadlock), even after retrying it a few times. Nothing was written. Retry after `Retry-After` seconds, with the same `Idempotency-Key`.',
  },
  REVISION_CONFLICT: {
    status: 409,
    message: 'The revision is not the current one.',
    doc: 'Someone saved the theme since you read it. Read the draft again and send its `revision` as `expected_revision`.',
  },
  LICENSE_INVALID: {
    status: 400,
    message: 'The license key is not valid.',
    doc: 'The license key is unknown, revoked, malformed or belongs to another product.',
  },
  LICENSE_EXPIRED: {
    status: 400,
    message: 'The license key has expired.',
    doc: 'The license key is past its `expires_at`.',
  },
  LICENSE_HWID_MISMATCH: {
    status: 400,
    message: 'The license is registered to another device.',
    doc: 'The hardware id differs from the device registered for this license. Release the device (`hwid: null`) to move it.',
  },
  COUPON_EXPIRED: { status: 400, message: 'The coupon has expired.', doc: 'The coupon is past its `expires_at`.' },
  COUPON_MAX_USES_REACHED: {
    status: 400,
    message: 'The coupon has been used its maximum number of times.',
    doc: 'The coupon reached `max_uses`.',
  },
  COUPON_NOT_APPLICABLE: {
    status: 400,
    message: 'The coupon does not apply to these items.',
    doc: 'The coupon is limited to other products, or is a FIXED coupon in another currency than the items; the same rule for `POST /orders` and `GET /coupons/code/{code}`.',
  },
  BUYER_BLOCKED: {
    status: 400,
    message: 'The buyer is blacklisted by the shop.',
    doc: "An entry of the shop's blacklist (`GET /blacklist`) matches the buyer's email, email domain, country or IP address; no order is created.",
  },
  TEST_CLOCK_LIMIT: {
    status: 400,
    message: 'The test clock cannot move that far.',
    doc: 'A test clock runs at most ten years (316,224,000 seconds) ahead of real time in all; an advance that would take it further is refused and moves nothing. The message says how far it may still move.',
  },
  ORDER_NOT_PENDING: {
    status: 400,
    message: 'The order is not pending.',
    doc: 'Only a `PENDING` order can be completed or fulfilled by trigger.',
  },
  ORDER_NOT_COMPLETED: {
    status: 400,
    message: 'The order is not completed.',
    doc: 'Line items can be fulfilled only on a completed order.',
  },
  ORDER_NOT_REFUNDABLE: {
    status: 400,
    message: 'The order cannot be refunded.',
    doc: 'Only `COMPLETED` or `PARTIALLY_REFUNDED` orders can be refunded; a `DISPUTED` order cannot be refunded while its dispute is open (the dispute decides: a lost one refunds what remains).',
  },
  REFUND_EXCEEDS_REMAINING: {
    status: 400,
    message: 'The refund amount exceeds what remains refundable.',
    doc: 'The refund `amount` is larger than the order total minus earlier refunds.',
  },
  OUT_OF_STOCK: {
    status: 400,
    message: 'Not enough stock.',
    doc: 'The product (or its serials) has fewer units available than requested.',
  },
  PRODUCT_NOT_SERIAL: {
    status: 400,
    message: 'The product has no claimable serials.',
    doc: 'Serials can be claimed only from a `SERIALS` product without variants.',
  },
  PRODUCT_UNAVAILABLE: {
    status: 400,
    message: 'The product cannot be bought.',
    doc: 'The product is on hold or otherwise not purchasable.',
  },
  QUANTITY_OUT_OF_RANGE: {
    status: 400,
    message: 'The quantity is outside the allowed range.',
    doc: 'The quantity is below `quantity_min` or above `quantity_max` of the product.',
  },
  GATEWAY_NOT_AVAILABLE: {
    status: 400,
    message: 'The gateway is not available.',
    doc: 'The gateway is unknown or not active for this shop (or not allowed for the product).',
  },
  GATEWAY_UNAVAILABLE: {
    status: 502,
    message: 'The payment provider could not be reached.',
    doc: 'The payment provider (Stripe, PayPal, BTCPay Server) timed out, failed, asked us to slow down or answered something it does not document. Nothing was written: the order stays as it was (PENDING and payable, or not refunded). Retry after `Retry-After` seconds with the same `Idempotency-Key`.',
  },
  GATEWAY_REFUSED: {
    status: 400,
    message: 'The payment provider refused the request.',
    doc: "The payment provider declined a well-formed request (a refund of a payment it no longer holds, an account that cannot take this currency); the message gives the provider's reason. Nothing was written.",
  },
  INSUFFICIENT_FUNDS: {
    status: 400,
    message: 'The balance is too small.',
    doc: 'The wallet or affiliate balance is smaller than the amount; nothing changed.',
  },
  NOT_AN_AFFILIATE: {
    status: 400,
    message: 'The customer is not an affiliate.',
    doc: 'Only an affiliate has commission to convert.',
  },
  SUBSCRIPTION_NOT_ACTIVE: {
    status: 400,
    message: 'The subscription is not active.',
    doc: 'Only an `ACTIVE` or `TRIALING` subscription can be paused (or a `PAUSED` one, to change its `resume_at`); a `PAST_DUE`, `CANCELLED` or `EXPIRED` one cannot.',
  },
  AFFILIATE_APPLICATION_NOT_PENDING: {
    status: 400,
    message: 'The application is not pending.',
    doc: 'The affiliate application was already approved or rejected.',
  },
  FEATURE_NOT_AVAILABLE: {
    status: 400,
    message: "The shop's plan does not include this feature.",
    doc: 'Upgrade the plan; `GET /me/capabilities` lists the features the shop has.',
  },
  OAUTH_INVALID_CLIENT: { status: 400, message: 'Unknown OAuth client.', doc: 'No app with this `client_id` exists.' },
  OAUTH_INVALID_REDIRECT_URI: {
    status: 400,
    message: 'The redirect URI is not registered for this client.',
    doc: 'Use one of the redirect URIs registered for the app, exactly.',
  },
  OAUTH_INVALID_SCOPE: {
    status: 400,
    message: 'A requested scope is unknown.',
    doc: 'Request only scopes of the form `resource.action` that exist (see the `oauth2` security scheme).',
  },
  RESELLER_INVALID_STATUS: {
    status: 422,
    message: "The reseller's status does not allow this.",
    doc: 'Suspend needs `ACTIVE`; reinstate needs `SUSPENDED`.',
  },
  RESELLER_TIER_REQUIRED: {
    status: 422,
    message: 'Choose a tier: send tier_id or set a program default tier.',
    doc: 'An invite without `tier_id` needs the program default tier.',
  },
  RESELLER_PROGRAM_DISABLED: {
    status: 422,
    message: 'The reseller program is disabled.',
    doc: 'Enable the program (`PATCH /reseller-program`) before inviting.',
  },
  DEFAULT_TIER_REQUIRED: {
    status: 422,
    message: 'OPEN enrollment needs a default tier.',
    doc: '`enrollment_mode` `OPEN` requires a `default_tier_id`, sent or already stored.',
  },
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

  constructor(
    code: ErrorCode,
    message?: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
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

/** The realm of every Bearer challenge (RFC 6750 §3). */
export const bearerRealm = 'Merchant Developer API';

/**
 * Why a request has no live credential, the three cases a 401 tells apart (RFC 6750 §3.1): none was sent; the
 * Authorization header is not a Bearer credential (`invalid_request`); the bearer token is unknown, revoked, expired
 * or malformed (`invalid_token`, one message for all, so an answer never tells which keys exist).
 */
export type CredentialProblem = 'missing' | 'not_bearer' | 'invalid_token';

export const credentialProblemMessages: Record<CredentialProblem, string> = {
  missing: 'No credential: send Authorization: Bearer <API key or access token>.',
  not_bearer: 'The Authorization header is not a Bearer credential.',
  invalid_token: 'The credential is unknown, revoked or expired.',
};

/** RFC 6750 §3: auth-param values are quoted strings that may hold neither a double quote nor a backslash. */
function quoted(value: string): string {
  return `"${value.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, ' ')}"`;
}

/** A `WWW-Authenticate: Bearer` challenge; without an error for a request that carried no credential at all. */
export function bearerChallenge(
  error?: { code: 'invalid_request' | 'invalid_token' | 'insufficient_scope'; description: string },
  scope?: readonly string[],
): string {
  const params = [`realm=${quoted(bearerRealm)}`];
  if (error) params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`);
  if (scope) params.push(`scope=${quoted(scope.join(' '))}`);
  return `Bearer ${params.join(', ')}`;
}

const challengeErrors = { not_bearer: 'invalid_request', invalid_token: 'invalid_token' } as const;

/**
 * 401 with its RFC 6750 challenge. RFC 6750 §3.1 would answer `invalid_request` with 400; it stays 401
 * `UNAUTHORIZED` here, as every request without a live credential does, so clients have one status to handle and
 * the answer still names the error in `WWW-Authenticate`.
 */
export class UnauthorizedError extends ApiError {
  readonly problem: CredentialProblem;

  constructor(message?: string, problem: CredentialProblem = 'invalid_token') {
    const text = message ?? credentialProblemMessages[problem];
    super('UNAUTHORIZED', text, {
      headers: {
        'WWW-Authenticate': bearerChallenge(
          problem === 'missing' ? undefined : { code: challengeErrors[problem], description: text },
        ),
      },
    });
    this.problem = problem;
  }
}

export class ForbiddenError extends ApiError {
  constructor(message?: string, options: { headers?: Record<string, string> } = {}) {
    super('FORBIDDEN', message, options);
  }
}

/** 403 for a credential without the operation's scopes, which RFC 6750 §3.1 also says in the challenge. */
export class InsufficientScopeError extends ForbiddenError {
  constructor(readonly needed: readonly string[]) {
    const message = `This operation needs the scope${needed.length > 1 ? 's' : ''} ${needed.join(' and ')}.`;
    super(message, {
      headers: {
        'WWW-Authenticate': bearerChallenge({ code: 'insufficient_scope', description: message }, needed),
      },
    });
  }
}

/** The database could not be reached: 503, so clients retry instead of treating it as a bug. */
export class DatabaseUnavailableError extends ApiError {
  constructor() {
    super('SERVICE_UNAVAILABLE', undefined, { headers: { 'Retry-After': '5' } });
  }
}

/** A statement ran past the write path's statement timeout and was cancelled: 503, nothing was written. */
export class DatabaseTimeoutError extends ApiError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'The database took too long to answer; nothing was changed. Retry later.', {
      headers: { 'Retry-After': '2' },
    });
  }
}

/** The client went away while its request was being read: nobody to answer, nothing to log as a failure. */
export class ClientAbortedError extends Error {
  constructor() {
    super('client aborted the request');
    this.name = 'ClientAbortedError';
  }
}
