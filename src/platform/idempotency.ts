// Idempotency for state-changing operations (Stripe's semantics, stored in PostgreSQL).
//
// A request with `Idempotency-Key` (or `X-Idempotency-Key`) first claims its key: a `processing` row scoped to the
// credential, the operationId and the key, committed at once so concurrent requests see it. The handler then runs
// in its transaction, and the response is written into the row (state `completed`) in that same transaction: the
// change and the record of it commit together or not at all. Later requests with the key replay the stored
// response (`Idempotency-Status: cached`) when their fingerprint (method, path, canonical body) matches, get 422
// IDEMPOTENCY_CONFLICT when it does not, and 409 IDEMPOTENCY_IN_PROGRESS while the first still runs.
//
// The claim is a lease, not a lock that must time out: it names its owner (a random token per request) and holds
// the key until `lease_expires_at` (database time, 5 s by default). While the request runs, its owner renews the
// lease every third of it, each renewal a statement of its own on the pool. A process that dies (SIGKILL, a lost
// machine) stops renewing, so its keys are free for the next request within one lease; a live slow request keeps
// renewing and keeps its key. Nothing lives in a database session (no advisory lock, no backend pid), so this holds
// behind a transaction-mode pooler. An owner that lost its lease anyway (its heartbeat could not reach the database,
// the process was paused) finds out when it stores its response: that statement, in the change's own transaction,
// compares the owner token, and a key taken over meanwhile rolls the whole change back (the taker's result stands).
// A request that holds its key past the lock timeout (60 s: a hung request) stops renewing and lets it go.
//
// What is stored: successful responses and business-rule rejections (4xx thrown by the handler, after its
// transaction rolled back). What is not: 5xx (the key is released so the client can retry), 401/403/429, and
// anything rejected before the handler runs (routing, authentication, rate limit, schema validation).
//
// Nothing here speaks HTTP: `execute` answers with data (the response to send, or the error to answer with, and the
// Idempotency-Status either carries) and src/http/idempotency.ts writes it; how an error reads on the wire is the
// http layer's mapping, handed in as `errorAnswer`.
//
// A stored response may hold a secret shown once (a webhook signing secret, a theme preview URL): its body is kept
// sealed with the deployment's secret box, bound to its key's scope, so the table never holds one in clear.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import {
  claimOrFetchIdempotencyKey,
  completeIdempotencyKey,
  deleteExpiredIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  idempotencyKeyByScope,
  releaseIdempotencyKey,
  renewIdempotencyLease,
  takeOverIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyScope,
  type StoredResponse,
} from '../../db/queries/idempotency-keys';
import { ApiError, ValidationError } from '../errors';
import type { Logger } from '../logger';
import type { Effects, UnitOfWork, WriteOrigin } from './unit-of-work';
import type { SecretBox } from './secret-box';
import type { Clock } from './clock';

export type { StoredResponse } from '../../db/queries/idempotency-keys';

/** What idempotency did for a request (its `Idempotency-Status` header). */
export type IdempotencyStatus = 'created' | 'cached' | 'processing' | 'bypassed';

export const DEFAULT_LOCK_TIMEOUT_MS = 60_000;
export const DEFAULT_LEASE_MS = 5_000;
export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
export const PURGE_INTERVAL_MS = 10 * 60 * 1000;
const MAX_KEY_LENGTH = 128;
/** Seconds a client is told to wait when the first request with its key is still running. */
const IN_PROGRESS_RETRY_AFTER = '1';

/** Headers that belong to each response, never to a replay. */
const perResponseHeaders = new Set([
  'x-request-id',
  'idempotency-status',
  'set-cookie',
  'date',
  'content-length',
  'content-type',
]);
const isPerResponse = (name: string) => perResponseHeaders.has(name.toLowerCase()) || /^x-ratelimit-/i.test(name);

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * The key the client sent, if any. Both headers with different values, or a key outside 1-128 characters:
 * 422 VALIDATION_ERROR (the contract checks the length too; this guards operations whatever the contract says).
 */
export function idempotencyKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const primary = headerValue(headers, 'idempotency-key');
  const alternative = headerValue(headers, 'x-idempotency-key');
  if (primary !== undefined && alternative !== undefined && primary !== alternative) {
    throw new ValidationError([
      {
        field: 'header.x-idempotency-key',
        message: 'must equal Idempotency-Key when both are sent (they name the same key)',
      },
    ]);
  }
  const key = primary ?? alternative;
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH) {
    const field = primary !== undefined ? 'header.idempotency-key' : 'header.x-idempotency-key';
    throw new ValidationError([{ field, message: `must be 1 to ${MAX_KEY_LENGTH} characters` }]);
  }
  return key;
}

/** JSON with object keys sorted at every level: equal values give equal text whatever the key order sent. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value);
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/**
 * SHA-256 (hex) of method, path, query and canonical body: what "the same request" means for a key. The query is
 * canonical too (parameters in any order are the same query), and it counts: `?notify=false` is another request.
 */
export function requestFingerprint(method: string, path: string, query: unknown, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()}\n${path}\n${canonicalJson(query ?? {})}\n${canonicalJson(body)}`)
    .digest('hex');
}

/** The headers of a response that a replay sends again (not the request id, rate-limit or per-response ones). */
export function replayableHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (!isPerResponse(name)) kept[name] = value;
  return kept;
}

/** Deletes the keys whose replay window ended by `now`; returns how many. */
export async function purgeExpiredIdempotencyKeys(db: Kysely<Database>, now: number | Date): Promise<number> {
  return deleteExpiredIdempotencyKeys(db, now instanceof Date ? now : new Date(now));
}

/** Runs the purge every `intervalMs` (10 min) in the background; returns the function that stops it. */
export function scheduleIdempotencyPurge(
  db: Kysely<Database>,
  logger: Logger,
  clock: Clock,
  options: { intervalMs?: number } = {},
): () => void {
  const now = () => clock.now();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    purgeExpiredIdempotencyKeys(db, now())
      .then((deleted) => {
        if (deleted) logger.info('expired idempotency keys purged', { deleted });
      })
      .catch((err: unknown) => logger.warn('idempotency purge failed', { error: (err as Error)?.message }))
      .finally(() => {
        running = false;
      });
  }, options.intervalMs ?? PURGE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** An error as the API answers it: its catalog entry and the body sent (src/http/errors.ts errorAnswer). */
export interface ErrorAnswer {
  error: ApiError;
  body: unknown;
}

export interface IdempotencyOptions {
  /**
   * How the API answers an error the work threw, or undefined for one it does not expect (a 500): a business
   * rejection is stored as exactly that answer, so its replay is what was sent.
   */
  errorAnswer: (err: unknown) => ErrorAnswer | undefined;
  /** Milliseconds since the epoch; injectable so tests can expire keys and locks. */
  now?: () => number;
  /**
   * How long a claim holds its key unless renewed (default 5 s): a crashed request's key is free within this. Its
   * request renews it every third of it while it runs.
   */
  leaseMs?: number;
  /** The longest a running request keeps renewing its lease (default 60 s): a hung request lets its key go. */
  lockTimeoutMs?: number;
  /** Replay window (default 24 h). */
  ttlMs?: number;
  logger?: Logger;
  /** Seals stored response bodies (they may hold a secret shown once); without it they are stored as they are. */
  secrets?: SecretBox;
}

const SEALED_PREFIX = 'sealed:v1:';

/** The authenticated data a stored body is sealed with: a body copied onto another key's row does not open. */
const sealingContext = (scope: IdempotencyScope) =>
  `idempotency:${scope.credentialId}:${scope.operationId}:${scope.key}`;

/** The stored form of a response body: sealed when a secret box is configured. */
export function sealStoredBody(secrets: SecretBox | undefined, scope: IdempotencyScope, body: string): string {
  if (!secrets) return body;
  return SEALED_PREFIX + secrets.seal(body, sealingContext(scope)).toString('base64');
}

/** The response body a stored record replays (bodies stored before sealing existed are read as they are). */
export function openStoredBody(secrets: SecretBox | undefined, scope: IdempotencyScope, stored: string): string {
  if (!stored.startsWith(SEALED_PREFIX)) return stored;
  if (!secrets) throw new Error('a sealed idempotent response cannot be replayed without the secret box');
  return secrets.open(Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64'), sealingContext(scope));
}

export interface WriteRequest {
  /** The request headers (where the key is read). */
  headers: IncomingHttpHeaders;
  /** The authenticated credential; without one (public operations) nothing is stored. */
  credentialId: string | undefined;
  operationId: string;
  method: string;
  /** The full request path, without the query. */
  path: string;
  /** The parsed query parameters (part of what the key is bound to). */
  query: unknown;
  /** The validated request body (undefined when the operation takes none). */
  body: unknown;
}

/**
 * What became of an idempotent write: the response to send (the work's, or the stored one replayed) or the error to
 * answer with, and in both cases the `Idempotency-Status` the answer carries.
 */
export type IdempotentOutcome =
  { idempotency: IdempotencyStatus; response: StoredResponse } | { idempotency: IdempotencyStatus; error: unknown };

/** What idempotency has done so far for one request; an error is answered with it too. */
interface Progress {
  idempotency: IdempotencyStatus;
}

/** The request lost its key to a takeover while it ran: its transaction is rolled back, the taker's result stands. */
class LockLostError extends Error {}

/** One key in the map of leases this process is renewing. */
const scopeId = (scope: IdempotencyScope) => JSON.stringify([scope.credentialId, scope.operationId, scope.key]);

const inProgress = () =>
  new ApiError('IDEMPOTENCY_IN_PROGRESS', undefined, { headers: { 'Retry-After': IN_PROGRESS_RETRY_AFTER } });

/**
 * 4xx other than these are business answers, stored for replay; these depend on who asks and when (and a
 * CONCURRENT_UPDATE wrote nothing and says to try again: replaying it would make the retry it asks for impossible).
 */
const notStored4xx = new Set([401, 403, 429]);
const isStoredRejection = (e: ApiError) =>
  e.status >= 400 && e.status < 500 && !notStored4xx.has(e.status) && e.code !== 'CONCURRENT_UPDATE';

export class Idempotency {
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly lockTimeoutMs: number;
  private readonly ttlMs: number;
  /**
   * The owner token of every key a request of this process holds and is renewing the lease of. Such an owner is
   * alive by definition, so a request of this process never takes its key over, even when its lease looks lapsed:
   * on the embedded database (one connection) a renewal waits behind every other transaction, and a long one could
   * otherwise make a live owner's lease lapse while it merely waited its turn.
   */
  private readonly renewing = new Map<string, string>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly unitOfWork: UnitOfWork,
    private readonly options: IdempotencyOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    if (!(this.leaseMs >= 100)) throw new Error(`an idempotency lease must be at least 100 ms, not ${this.leaseMs}`);
    this.ttlMs = options.ttlMs ?? REPLAY_WINDOW_MS;
  }

  /**
   * Runs a state-changing operation in the unit of work: `work` gets the transaction it must write in and the
   * effects it records, and returns its response as sent. Answers with that response or the stored one replayed,
   * or with the error to answer with; never throws.
   */
  async execute(
    request: WriteRequest,
    origin: WriteOrigin,
    work: (trx: Transaction<Database>, effects: Effects) => Promise<StoredResponse>,
    prepare?: () => Promise<void>,
  ): Promise<IdempotentOutcome> {
    const progress: Progress = { idempotency: 'bypassed' };
    try {
      const response = await this.run(progress, request, origin, work, prepare);
      return { idempotency: progress.idempotency, response };
    } catch (error) {
      return { idempotency: progress.idempotency, error };
    }
  }

  private async run(
    progress: Progress,
    request: WriteRequest,
    origin: WriteOrigin,
    work: (trx: Transaction<Database>, effects: Effects) => Promise<StoredResponse>,
    prepare?: () => Promise<void>,
  ): Promise<StoredResponse> {
    const key = idempotencyKeyOf(request.headers);
    if (key === undefined || request.credentialId === undefined) {
      await prepare?.();
      return this.unitOfWork.run(origin, work);
    }

    const scope: IdempotencyScope = { credentialId: request.credentialId, operationId: request.operationId, key };
    const fingerprint = requestFingerprint(request.method, request.path, request.query, request.body);
    const acquired = await this.acquire(progress, scope, fingerprint);
    if ('replay' in acquired) {
      progress.idempotency = 'cached';
      // A replay is a request too: an empty unit of work lets the sinks record it (its audit line, with the status
      // replayed) before it is answered; nothing else is pending, so nothing else is written.
      await this.unitOfWork.run({ ...origin, status: acquired.replay.status }, async () => undefined);
      return acquired.replay;
    }

    const { claim } = acquired;
    let stored: StoredResponse;
    try {
      const stopRenewing = this.renewWhileRunning(scope, claim);
      try {
        // A call to another service (a payment provider) the request makes before its transaction, under the key's
        // claim: a replay never repeats it, and no transaction is open while it waits.
        await prepare?.();
        stored = await this.unitOfWork.run(origin, async (trx, fx) => {
          const response = await work(trx, fx);
          if (!(await completeIdempotencyKey(trx, scope, claim, this.sealed(scope, response), new Date(this.now()))))
            throw new LockLostError();
          return response;
        });
      } finally {
        stopRenewing();
      }
    } catch (err) {
      throw await this.afterFailure(progress, scope, claim, err);
    }
    progress.idempotency = 'created';
    return stored;
  }

  /**
   * Renews the claim's lease every third of it until the returned function is called (the request ended: success,
   * error, or a client that went away, since the handler runs to its end regardless) or the lock timeout is reached.
   * Each renewal is its own statement on the pool: never inside the request's transaction (which nobody else can
   * see), never awaited by the request (on the embedded database it waits for that very transaction to end).
   */
  private renewWhileRunning(scope: IdempotencyScope, claim: IdempotencyClaim): () => void {
    const id = scopeId(scope);
    const started = performance.now();
    const interval = Math.max(50, Math.floor(this.leaseMs / 3));
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const stop = () => {
      stopped = true;
      clearTimeout(timer);
      if (this.renewing.get(id) === claim.token) this.renewing.delete(id);
    };
    const schedule = () => {
      if (stopped) return;
      timer = setTimeout(() => void renew(), interval);
      timer.unref();
    };
    const renew = async () => {
      if (stopped) return;
      if (performance.now() - started >= this.lockTimeoutMs) {
        this.options.logger?.warn('idempotent request outran the lock timeout: its key is let go', {
          operation_id: scope.operationId,
          credential_id: scope.credentialId,
          lock_timeout_ms: this.lockTimeoutMs,
        });
        stop();
        return;
      }
      try {
        // False: completed (this request's own commit), released, or taken over; nothing left to renew.
        if (!(await renewIdempotencyLease(this.db, scope, claim, this.leaseMs))) stop();
      } catch (err) {
        // The database is unreachable: the request will most likely fail too. Keep trying while it runs.
        this.options.logger?.warn('could not renew an idempotency lease', { error: (err as Error)?.message });
      }
      schedule();
    };
    this.renewing.set(id, claim.token);
    schedule();
    return stop;
  }

  private sealed(scope: IdempotencyScope, response: StoredResponse): StoredResponse {
    return { ...response, body: sealStoredBody(this.options.secrets, scope, response.body) };
  }

  /** Claims the key, or finds the response to replay; throws 409/422 when neither is possible. */
  private async acquire(
    progress: Progress,
    scope: IdempotencyScope,
    fingerprint: string,
  ): Promise<{ claim: IdempotencyClaim } | { replay: StoredResponse }> {
    // A few rounds at most: each one that loops saw the row vanish (released, expired) or lost a takeover race.
    for (let round = 0; round < 4; round++) {
      const now = new Date(this.now());
      const claim: IdempotencyClaim = { token: randomUUID(), lockedAt: now };
      const claimed = await claimOrFetchIdempotencyKey(this.db, scope, {
        ...claim,
        fingerprint,
        expiresAt: new Date(now.getTime() + this.ttlMs),
        leaseMs: this.leaseMs,
      });
      if (claimed.claimed) return { claim };

      // Undefined: created by a concurrent request after the claim's snapshot; read it again.
      const row = claimed.row ?? (await idempotencyKeyByScope(this.db, scope));
      if (!row) continue;
      if (row.expires_at.getTime() <= now.getTime()) {
        await deleteExpiredIdempotencyKey(this.db, scope, now);
        continue;
      }
      if (row.fingerprint !== fingerprint) {
        throw new ApiError(
          'IDEMPOTENCY_CONFLICT',
          'This idempotency key was already used with a different request (method, path or body). Use a fresh key for a different request.',
        );
      }
      if (row.state === 'completed') {
        return {
          replay: {
            status: row.response_status!,
            headers: row.response_headers ?? {},
            body: openStoredBody(this.options.secrets, scope, row.response_body!),
          },
        };
      }
      // Held: its owner renews the lease, so it is running (or died less than a lease ago).
      if (!row.lease_lapsed) break;
      // Lapsed, but the owner is a request of this very process that is still renewing: alive, only late.
      if (row.owner_token !== null && this.renewing.get(scopeId(scope)) === row.owner_token) break;
      // Its owner stopped renewing: it died (or hung past the lock timeout). Take the key over.
      if (await takeOverIdempotencyKey(this.db, scope, row.owner_token, claim, this.leaseMs)) {
        this.options.logger?.warn('lapsed idempotency lease taken over', {
          operation_id: scope.operationId,
          credential_id: scope.credentialId,
          locked_at: row.locked_at.toISOString(),
          lease_expired_at: row.lease_expires_at.toISOString(),
        });
        return { claim };
      }
    }
    progress.idempotency = 'processing';
    throw inProgress();
  }

  /**
   * The handler (or storing its response) failed; its transaction is rolled back. A business rejection is stored
   * for replay in a statement of its own; anything else releases the key. Returns the error to throw on.
   */
  private async afterFailure(
    progress: Progress,
    scope: IdempotencyScope,
    claim: IdempotencyClaim,
    err: unknown,
  ): Promise<unknown> {
    if (err instanceof LockLostError) {
      progress.idempotency = 'processing';
      return inProgress();
    }
    const answer = this.options.errorAnswer(err);
    if (answer && isStoredRejection(answer.error)) {
      const stored: StoredResponse = {
        status: answer.error.status,
        headers: replayableHeaders(answer.error.headers),
        body: JSON.stringify(answer.body),
      };
      try {
        if (await completeIdempotencyKey(this.db, scope, claim, this.sealed(scope, stored), new Date(this.now()))) {
          progress.idempotency = 'created';
          return err;
        }
      } catch (storeErr) {
        this.options.logger?.warn('could not store an idempotent rejection', { error: (storeErr as Error)?.message });
        await this.release(scope, claim);
      }
      progress.idempotency = 'bypassed';
      return err;
    }
    await this.release(scope, claim);
    progress.idempotency = 'bypassed';
    return err;
  }

  private async release(scope: IdempotencyScope, claim: IdempotencyClaim, attempt = 0): Promise<void> {
    try {
      await releaseIdempotencyKey(this.db, scope, claim);
    } catch (err) {
      this.options.logger?.warn('could not release an idempotency key', {
        error: (err as Error)?.message,
        attempt: attempt + 1,
      });
      // The database is gone (a restart): try again in the background, so the client's retry with this key after
      // a short outage runs at once instead of meeting 409 processing until the lease lapses (after that the key is
      // free anyway). The release compares the owner, so a late one never frees a key someone else has since taken.
      const delay = 500 * 2 ** attempt;
      if (delay < this.leaseMs) {
        setTimeout(() => void this.release(scope, claim, attempt + 1), delay).unref();
      }
    }
  }
}
