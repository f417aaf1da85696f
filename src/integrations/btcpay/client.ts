// One Greenfield call: the URL from the connection's `url`, the API key, a timeout, and the answer classified into
// what GatewayProvider promises (ProviderError unavailable / refused / unauthorized). Never retried: BTCPay has no
// idempotency key, so a retried POST could open a second invoice or a second refund.
import { ProviderError, type ProviderAccount } from '../gateway-provider';
import type { ProblemDetails, ValidationProblemDetails } from './types';

export interface BtcpayClientOptions {
  /** Per call; default 10 s. Tests shorten it. */
  timeoutMs?: number;
}

export interface GreenfieldRequest {
  method: 'GET' | 'POST';
  /** Below the API base, starting with /api/v1/. Path segments must already be encoded (see `segment`). */
  path: string;
  query?: Record<string, string | string[]>;
  body?: unknown;
}

/** A 404 is the caller's to interpret (no such store is a credential problem, no such invoice is not). */
export type GreenfieldAnswer = { status: 200; body: unknown } | { status: 404; body: unknown };

export const defaultTimeoutMs = 10_000;

/** A path segment from our ids (store id, invoice id): encoded so an id can never change the route. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

function credential(account: ProviderAccount, name: string): string {
  const value = account.credentials[name];
  if (!value) throw new ProviderError('unauthorized', `the BTCPay connection has no ${name}`);
  return value;
}

export function storeId(account: ProviderAccount): string {
  return credential(account, 'store_id');
}

function url(account: ProviderAccount, request: GreenfieldRequest): string {
  const target = new URL(`${account.apiBase.replace(/\/+$/, '')}${request.path}`);
  for (const [key, value] of Object.entries(request.query ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) target.searchParams.append(key, item);
  }
  return target.toString();
}

/** Retry-After in seconds. The HTTP-date form would need the wall clock here; it is left unsaid (undefined). */
function retryAfter(header: string | null): number | undefined {
  if (!header || !/^\s*[0-9]+\s*$/.test(header)) return undefined;
  return Number(header);
}

/** BTCPay's own words for a refusal, cut short: its messages name fields and rules, never our key. */
function refusal(body: unknown): string {
  if (Array.isArray(body)) {
    const errors = body as ValidationProblemDetails;
    const text = errors
      .map((error) => [error.path, error.message].filter((part) => typeof part === 'string' && part).join(': '))
      .filter(Boolean)
      .join('; ');
    if (text) return text.slice(0, 300);
  } else if (typeof body === 'object' && body !== null) {
    const problem = body as ProblemDetails;
    const text = [problem.code, problem.message].filter((part) => typeof part === 'string' && part).join(': ');
    if (text) return text.slice(0, 300);
  }
  return 'the request was refused';
}

export async function greenfield(
  account: ProviderAccount,
  request: GreenfieldRequest,
  options: BtcpayClientOptions = {},
): Promise<GreenfieldAnswer> {
  const apiKey = credential(account, 'api_key');
  const headers: Record<string, string> = { Accept: 'application/json', Authorization: `token ${apiKey}` };
  let body: string | undefined;
  if (request.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(request.body);
  }
  let response: Response;
  try {
    response = await fetch(url(account, request), {
      method: request.method,
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? defaultTimeoutMs),
    });
  } catch (error) {
    // A DOMException (TimeoutError) may come from another realm than this module's Error: read its name only.
    const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
    const timedOut = name === 'TimeoutError' || name === 'AbortError';
    // The cause is a network condition; the URL and key are left out of the message on purpose.
    throw new ProviderError(
      'unavailable',
      timedOut ? 'BTCPay Server did not answer in time' : 'BTCPay Server could not be reached',
    );
  }

  let text: string;
  try {
    text = await response.text();
  } catch {
    throw new ProviderError('unavailable', 'BTCPay Server broke off its answer');
  }
  let parsed: unknown = undefined;
  let isJson = false;
  if (text.length > 0) {
    try {
      parsed = JSON.parse(text);
      isJson = true;
    } catch {
      isJson = false;
    }
  }

  const status = response.status;
  if (status === 429) {
    throw new ProviderError(
      'unavailable',
      'BTCPay Server is rate limiting',
      retryAfter(response.headers.get('retry-after')),
    );
  }
  if (status >= 500) throw new ProviderError('unavailable', `BTCPay Server failed (HTTP ${status})`);
  if (status === 401) throw new ProviderError('unauthorized', 'BTCPay Server refused the API key');
  if (status === 403) {
    throw new ProviderError('unauthorized', 'the API key lacks a permission this needs on the store');
  }
  if (status === 200 || status === 404) {
    // A 404 from something that is not Greenfield (a proxy's HTML page) is not an answer about our object.
    if (!isJson)
      throw new ProviderError('unavailable', `BTCPay Server answered HTTP ${status} with a body that is not JSON`);
    return { status, body: parsed };
  }
  if (status === 400 || status === 422) {
    if (!isJson)
      throw new ProviderError('unavailable', `BTCPay Server answered HTTP ${status} with a body that is not JSON`);
    throw new ProviderError('refused', `BTCPay Server refused: ${refusal(parsed)}`);
  }
  throw new ProviderError('unavailable', `BTCPay Server answered an undocumented HTTP ${status}`);
}
