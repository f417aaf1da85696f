// PayPal's error bodies (error_400 ... error_500 of the pinned document: a fixed name and message per status, a
// debug id, and details naming the issue), and the token endpoint's OAuth error.
import { randomBytes } from 'node:crypto';

const statusNames: Readonly<Record<number, { name: string; message: string }>> = {
  400: { name: 'INVALID_REQUEST', message: 'Request is not well-formed, syntactically incorrect, or violates schema.' },
  401: {
    name: 'AUTHENTICATION_FAILURE',
    message: 'Authentication failed due to missing authorization header, or invalid authentication credentials.',
  },
  404: { name: 'RESOURCE_NOT_FOUND', message: 'The specified resource does not exist.' },
  422: {
    name: 'UNPROCESSABLE_ENTITY',
    message: 'The requested action could not be performed, semantically incorrect, or failed business validation.',
  },
  500: { name: 'INTERNAL_SERVER_ERROR', message: 'An internal server error occurred.' },
};

export function debugId(): string {
  return randomBytes(6).toString('hex');
}

export interface ErrorDetail {
  issue: string;
  description?: string;
  field?: string;
  location?: 'body' | 'path' | 'query';
}

export function errorBody(status: 400 | 401 | 404 | 422 | 500, details: ErrorDetail[] = []): Record<string, unknown> {
  const { name, message } = statusNames[status]!;
  return {
    name,
    message,
    debug_id: debugId(),
    ...(details.length > 0 ? { details } : {}),
    links: [
      {
        href: `https://developer.paypal.com/docs/api/orders/v2/#error-${details[0]?.issue ?? name}`,
        rel: 'information_link',
        method: 'GET',
      },
    ],
  };
}

/** The error of the webhooks API (its `error` schema: name, message and debug_id required). */
export function webhooksErrorBody(name: string, message: string, details: ErrorDetail[] = []): Record<string, unknown> {
  return { name, message, debug_id: debugId(), ...(details.length > 0 ? { details } : {}) };
}

/** The fake's own refusals of a fault ("rate-limited"): PayPal's RATE_LIMIT_REACHED. */
export function rateLimitedBody(): Record<string, unknown> {
  return {
    name: 'RATE_LIMIT_REACHED',
    message: 'Too many requests. Blocked due to rate limiting.',
    debug_id: debugId(),
  };
}

interface IssueBranch {
  properties?: { issue?: { enum?: string[] }; description?: { enum?: string[] } };
}

/**
 * One `details[]` entry as the document spells it for this operation's error schema: PayPal's files enumerate the
 * issues each operation may answer, most with their exact description. An issue the schema does not list throws:
 * the fake must not answer what PayPal documents it never answers.
 */
export function issueDetail(
  document: unknown,
  schemaName: string,
  issue: string,
  extra: Omit<ErrorDetail, 'issue' | 'description'> = {},
): ErrorDetail {
  const schemas = (document as { components: { schemas: Record<string, unknown> } }).components.schemas;
  const schema = schemas[schemaName] as { properties?: { details?: { items?: { anyOf?: IssueBranch[] } } } };
  const branch = schema?.properties?.details?.items?.anyOf?.find((b) => b.properties?.issue?.enum?.[0] === issue);
  if (!branch) throw new Error(`${schemaName} documents no issue ${issue}`);
  const description = branch.properties?.description?.enum?.[0];
  return { issue, ...(description ? { description } : {}), ...extra };
}
