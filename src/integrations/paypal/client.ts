// The one way the adapter talks to PayPal: global fetch against the account's API base (PayPal's official server
// SDK hard-codes its hosts, so GATEWAY_BASE_URLS and the fake could not be reached through it), an OAuth2 access
// token per client cached until shortly before it runs out, a timeout on every call, and PayPal's answers sorted
// into our three failures. No retries here except the one a rejected cached token allows (nothing was done on a
// 401): a retry after a timeout or a 5xx is the caller's, later, with the same PayPal-Request-Id.
import { createHash } from 'node:crypto';
import { ProviderError, type ProviderAccount } from '../gateway-provider';
import { isRecord, type ErrorBody } from './wire';

export interface PayPalClientOptions {
  /** Per call, connect to last byte; default 10 s (tests shorten it). */
  timeoutMs?: number;
}

export interface PayPalCall {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** PayPal-Request-Id: PayPal's idempotency key, derived from our id (request-ids.ts). */
  requestId?: string;
  /** Prefer: return=representation for the full object rather than id, status and links. */
  representation?: boolean;
}

/** An answer PayPal gave: 2xx, or a 4xx other than 401/403/429 (a "no" the caller reads: 404, 422...). */
export interface PayPalAnswer {
  status: number;
  body: unknown;
}

const defaultTimeoutMs = 10_000;

interface CachedToken {
  token: string;
  expiresAt: number;
}

// In memory, per process. Keyed by a hash so no client id or secret sits in the map's keys; the secret is part of
// the hash so a wrong secret for a known client id is never answered with the good secret's cached token.
const tokens = new Map<string, CachedToken>();

function tokenKey(account: ProviderAccount): string {
  const { client_id = '', client_secret = '' } = account.credentials;
  return createHash('sha256').update(`${account.apiBase}\0${client_id}\0${client_secret}`).digest('hex');
}

/**
 * Seconds a 429 asked us to wait: delta-seconds, or an HTTP date taken against the answer's own Date header (the
 * server's clock, as RFC 9110 intends; no wall clock of ours is read).
 */
function retryAfter(header: string | null, date: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  const sent = date === null ? Number.NaN : Date.parse(date);
  return Number.isNaN(at) || Number.isNaN(sent) ? undefined : Math.max(0, Math.ceil((at - sent) / 1000));
}

/** Milliseconds on the process's monotonic clock: a token's lifetime is transport time, not a business time. */
function monotonicMs(): number {
  return performance.now();
}

/** What PayPal said, for a message a merchant may see: its error name, issue and debug id (never our inputs). */
export function describeError(body: unknown): string {
  if (!isRecord(body)) return 'no error body';
  const error = body as ErrorBody;
  const issue = Array.isArray(error.details) ? error.details.find((d) => typeof d?.issue === 'string')?.issue : '';
  const parts = [error.name ?? error.error, issue, error.debug_id ? `debug_id ${error.debug_id}` : undefined];
  return parts.filter((p): p is string => typeof p === 'string' && p.length > 0).join(', ') || 'no error name';
}

/** The first `details[].issue` of a PayPal error body (ORDER_ALREADY_CAPTURED, REFUND_AMOUNT_EXCEEDED...). */
export function issueOf(body: unknown): string | undefined {
  if (!isRecord(body) || !Array.isArray(body.details)) return undefined;
  for (const detail of body.details) {
    if (isRecord(detail) && typeof detail.issue === 'string') return detail.issue;
  }
  return undefined;
}

export class PayPalClient {
  private readonly timeoutMs: number;

  constructor(
    private readonly account: ProviderAccount,
    options: PayPalClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  }

  /** A fresh access token, bypassing the cache: connect-time proof that these credentials work at this host. */
  async verify(): Promise<void> {
    tokens.delete(tokenKey(this.account));
    await this.token();
  }

  async call(call: PayPalCall): Promise<PayPalAnswer> {
    const first = await this.send(call, await this.token());
    if (first.status !== 401) return this.sorted(first);
    // A cached token PayPal no longer takes (revoked, expired early): one more try with a new one is safe, since a
    // 401 did nothing.
    tokens.delete(tokenKey(this.account));
    return this.sorted(await this.send(call, await this.token()));
  }

  private async token(): Promise<string> {
    const key = tokenKey(this.account);
    const cached = tokens.get(key);
    if (cached && cached.expiresAt > monotonicMs()) return cached.token;

    const { client_id: clientId, client_secret: clientSecret } = this.account.credentials;
    if (!clientId || !clientSecret) {
      throw new ProviderError('unauthorized', 'PayPal needs a client_id and a client_secret');
    }
    const answer = await this.fetchJson('/v1/oauth2/token', {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
        'Content-Type': 'application/x-www-form-urlencoded',
        Accept: 'application/json',
      },
      body: 'grant_type=client_credentials',
    });
    if (answer.status === 401 || answer.status === 403) {
      throw new ProviderError('unauthorized', `PayPal refused the client credentials (${describeError(answer.body)})`);
    }
    this.failUnlessOk(answer, 'the access token request');
    const body = answer.body;
    if (!isRecord(body) || typeof body.access_token !== 'string' || typeof body.expires_in !== 'number') {
      throw new ProviderError('unavailable', 'PayPal answered the token request with something that is not a token');
    }
    // Renewed a minute before PayPal's expiry (half the lifetime for a short one) so no call carries a token that
    // runs out on the way.
    const lifetime = body.expires_in > 120 ? body.expires_in - 60 : body.expires_in / 2;
    tokens.set(key, { token: body.access_token, expiresAt: monotonicMs() + lifetime * 1000 });
    return body.access_token;
  }

  private send(call: PayPalCall, token: string): Promise<PayPalAnswer & { retryAfter?: number }> {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    if (call.requestId !== undefined) headers['PayPal-Request-Id'] = call.requestId;
    if (call.representation) headers.Prefer = 'return=representation';
    return this.fetchJson(call.path, {
      method: call.method,
      headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    });
  }

  /** 401/403/429/5xx become ProviderErrors; every other answer goes back to the caller to read. */
  private sorted(answer: PayPalAnswer & { retryAfter?: number }): PayPalAnswer {
    if (answer.status === 401 || answer.status === 403) {
      throw new ProviderError('unauthorized', `PayPal refused our access (${describeError(answer.body)})`);
    }
    if (answer.status === 429) {
      throw new ProviderError('unavailable', 'PayPal is rate limiting us', answer.retryAfter);
    }
    if (answer.status >= 500) {
      throw new ProviderError('unavailable', `PayPal failed (HTTP ${answer.status}, ${describeError(answer.body)})`);
    }
    return answer;
  }

  private failUnlessOk(answer: PayPalAnswer & { retryAfter?: number }, what: string): void {
    if (answer.status >= 200 && answer.status < 300) return;
    this.sorted(answer);
    throw new ProviderError('refused', `PayPal refused ${what} (${describeError(answer.body)})`);
  }

  private async fetchJson(
    path: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<PayPalAnswer & { retryAfter?: number }> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.account.apiBase}${path}`, {
        ...init,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      // By name, not instanceof: the DOMException fetch rejects with may come from another realm (test runners).
      const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
      const timedOut = name === 'TimeoutError' || name === 'AbortError';
      throw new ProviderError(
        'unavailable',
        timedOut ? `PayPal did not answer within ${this.timeoutMs} ms` : 'PayPal could not be reached',
      );
    }
    let body: unknown = undefined;
    if (text.length > 0) {
      try {
        body = JSON.parse(text) as unknown;
      } catch {
        // 5xx pages from a proxy are not JSON either; only a 2xx or a 4xx must be PayPal's JSON.
        if (response.status < 500 && response.status !== 429) {
          throw new ProviderError(
            'unavailable',
            `PayPal answered HTTP ${response.status} with a body that is not JSON`,
          );
        }
      }
    }
    return {
      status: response.status,
      body,
      retryAfter: retryAfter(response.headers.get('retry-after'), response.headers.get('date')),
    };
  }
}

/** Forgets every cached token (tests that replace an account's secret at the same address). */
export function clearTokenCache(): void {
  tokens.clear();
}
