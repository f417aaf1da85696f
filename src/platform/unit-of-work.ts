// The write path: every state-changing operation runs through one UnitOfWork. It opens one READ COMMITTED
// transaction with a statement timeout, hands the work a Transaction<Database> and an Effects collector, writes the
// collected side effects (events, mail, audit entries) through the registered sinks inside that same transaction,
// and commits; all of it or none of it. A serialization failure or deadlock rolls everything back and the work runs
// again from the start, a bounded number of times, with fresh effects each attempt.
//
// What the write path itself costs in round trips is fixed, whatever the work: the `begin` that also sets the
// timeout (on PostgreSQL, db/postgres-dialect.ts), one statement for the whole flush (the sinks add their inserts to
// one batch, db/queries/batch.ts), and `commit`.
import { sql, type Kysely, type Transaction } from 'kysely';
import { executeBatch, type BatchPart } from '../../db/queries/batch';
import { isStatementCacheError } from '../../db/named-statements';
import { withStatementTimeout } from '../../db/postgres-dialect';
import type { Database } from '../../db/tables';
import { ApiError } from '../errors';
import type { Logger } from '../logger';
import type { Clock } from './clock';

/** An event for the outbox (delivered to webhooks after commit). */
export interface EventDraft {
  type: string;
  data: unknown;
}

/** A message to send after commit. */
export interface MailDraft {
  to: string;
  template: string;
  data: Record<string, unknown>;
}

/** A line of the audit trail, beside what the platform records of the request itself. */
export interface AuditDraft {
  action: string;
  resourceType: string;
  resourceId: string;
  detail?: Record<string, unknown>;
}

/**
 * A write that holds a contended row (a product's stock), sent as late as the transaction allows: in the flush's
 * statement, the last before commit, so the row is held for that statement and the commit only. `then` gets what
 * its part reads back, in the transaction; it may refuse the write (throw: all of it rolls back) or queue events
 * and mail, which are written by one more statement.
 */
export interface BeforeCommitWrite<R = unknown> {
  part: BatchPart<R>;
  then: (rows: R[]) => Promise<void>;
}

export interface PendingEffects {
  events: EventDraft[];
  mail: MailDraft[];
  audit: AuditDraft[];
  beforeCommit: BeforeCommitWrite[];
}

/** What a write records beside its change; written with it, in its transaction. */
export class Effects {
  readonly pending: PendingEffects = { events: [], mail: [], audit: [], beforeCommit: [] };

  emit(type: string, data: unknown): void {
    this.pending.events.push({ type, data });
  }

  mail(message: MailDraft): void {
    this.pending.mail.push(message);
  }

  audit(entry: AuditDraft): void {
    this.pending.audit.push(entry);
  }

  beforeCommit<R>(part: BatchPart<R>, then: (rows: R[]) => Promise<void>): void {
    this.pending.beforeCommit.push({ part, then } as BeforeCommitWrite);
  }
}

/**
 * One write for one shop, the single value every write function takes: the transaction it must run in, the shop
 * it writes for, what it records beside its change (committed with it, in that transaction) and its time. `now`
 * is read once from the clock when the write begins, so every row one write stamps agrees on the instant; the
 * clock itself is there for rules that must read it again (a lease renewed during a long write). There is no
 * default clock anywhere below the entry points: a write without one does not compile.
 */
export interface ShopWrite {
  readonly trx: Transaction<Database>;
  readonly shopId: string;
  readonly effects: Effects;
  readonly clock: Clock;
  readonly now: Date;
}

export function shopWrite(trx: Transaction<Database>, shopId: string, effects: Effects, clock: Clock): ShopWrite {
  return { trx, shopId, effects, clock, now: clock.now() };
}

/** Who is writing: sinks stamp their rows with it. */
export interface WriteOrigin {
  shopId: string | undefined;
  credentialId: string | undefined;
  operationId: string;
  requestId: string;
  /** The API request the write came from (what the audit trail records of it); absent for a worker's writes. */
  request?: WriteRequestFacts;
  /**
   * The clock of the write when it is not the sinks' own: a test shop whose clock runs ahead (src/http/api.ts).
   * The events and mail it queues are stamped, and fall due, on it.
   */
  clock?: Clock;
  /**
   * The HTTP status the request is answered with: set by the API layer once the work has produced its result (or
   * to the replayed status), so a sink writing in the transaction knows it before commit.
   */
  status?: number;
}

/** What a write records of its request: never its body, query or credential (src/platform/audit.ts). */
export interface WriteRequestFacts {
  /** `POST`, `PATCH`, … */
  method: string;
  /** The request path, without the query. */
  path: string;
  /** The path parameters (the ids the request is about). */
  pathParams: Record<string, string>;
  /** The client's address (`req.ip`: honours `trust proxy`). */
  ip: string | undefined;
  userAgent: string | undefined;
  credentialKind: 'api_key' | 'oauth_access_token' | undefined;
}

/**
 * The flush's one statement, built by the sinks: each adds the inserts of its effects as a part, and may ask for
 * what its part reads back (the events as written) to be handed to `then`, which runs in the transaction once the
 * statement has, and may write more (an event's consumers, when they act).
 */
export class FlushBatch {
  private readonly parts: BatchPart<unknown>[] = [];
  private readonly thens: (((rows: unknown[]) => Promise<unknown>) | undefined)[] = [];

  add<R>(part: BatchPart<R>, then?: (rows: R[]) => Promise<unknown>): void {
    this.parts.push(part as BatchPart<unknown>);
    this.thens.push(then as ((rows: unknown[]) => Promise<unknown>) | undefined);
  }

  /** Sends the parts as one statement (none when nothing was added), then runs each part's `then` in order. */
  async execute(trx: Transaction<Database>): Promise<void> {
    if (this.parts.length === 0) return;
    const results = await executeBatch(trx, this.parts);
    for (const [i, then] of this.thens.entries()) await then?.(results[i]!);
  }
}

/**
 * Writes one kind of pending effect inside the transaction (the events outbox, the mail queue, the audit trail).
 * Registered once at start; each sink says which kinds it takes.
 */
export interface EffectSink {
  kinds: readonly (keyof PendingEffects)[];
  /**
   * Called in every write transaction, just before commit (also with nothing pending: the audit of the request).
   * A sink adds its inserts to `batch`, so the whole flush is one statement; one that writes by statements of its
   * own may, in `trx`, before the batch is sent.
   */
  write(
    trx: Transaction<Database>,
    effects: PendingEffects,
    origin: WriteOrigin,
    batch: FlushBatch,
  ): void | Promise<void>;
  /**
   * Called after a write was rolled back by a business rule (a 4xx), in a transaction of its own: what must be
   * recorded of a refused request (its audit line) survives the rollback of the change it asked for.
   */
  rejected?(trx: Transaction<Database>, origin: WriteOrigin, error: ApiError): Promise<void>;
}

export interface UnitOfWorkOptions {
  /** `SET LOCAL statement_timeout` of every write transaction (default 10 s). */
  statementTimeoutMs?: number;
  /** Further attempts after a serialization failure or deadlock (default 3). */
  maxRetries?: number;
  sinks?: readonly EffectSink[];
  /** The time of every write it runs (`ShopWrite.now`). */
  clock: Clock;
  logger?: Logger;
  /** Waits between attempts; injectable so tests need not sleep. */
  sleep?: (ms: number) => Promise<void>;
}

/** PostgreSQL's serialization_failure and deadlock_detected: the transaction may succeed if run again. */
const retryableCodes = new Set(['40001', '40P01']);

/**
 * Whether the transaction may succeed if run again: after a serialization failure or deadlock, or when a named
 * statement failed by its name (db/named-statements.ts: a plan gone stale under a migration, a pooler that lost it).
 */
export function isRetryable(err: unknown): boolean {
  return retryableCodes.has((err as { code?: unknown })?.code as string) || isStatementCacheError(err);
}

/** Seconds a client is told to wait after the retries ran out. */
const CONFLICT_RETRY_AFTER = '1';

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RETRIES = 3;

export type Work<T> = (trx: Transaction<Database>, effects: Effects) => Promise<T>;

/** A write's origin when it writes for one shop (every write but the public OAuth ones). */
export type ShopOrigin = WriteOrigin & { shopId: string };

/**
 * Writes the pending effects through the sinks, in the write's transaction: what they add to the flush's batch goes
 * in one statement. Refuses the whole write when an effect has no sink: an effect nobody writes would be lost
 * silently.
 */
export async function flushEffects(
  trx: Transaction<Database>,
  sinks: readonly EffectSink[],
  pending: PendingEffects,
  origin: WriteOrigin,
): Promise<void> {
  const sunk = ['events', 'mail', 'audit'] as const;
  for (const kind of sunk) {
    if (pending[kind].length > 0 && !sinks.some((s) => s.kinds.includes(kind))) {
      throw new Error(`no sink is registered for ${kind}; the write is refused rather than losing them`);
    }
  }
  const batch = new FlushBatch();
  for (const sink of sinks) await sink.write(trx, pending, origin, batch);
  for (const late of pending.beforeCommit) batch.add(late.part, late.then);
  const written = { events: pending.events.length, mail: pending.mail.length, audit: pending.audit.length };
  await batch.execute(trx);
  // What the before-commit writes' `then` queued: its events and mail, by one more statement of the sinks that
  // write them (the audit sink is not asked again: it records the request once).
  const more: PendingEffects = {
    events: pending.events.slice(written.events),
    mail: pending.mail.slice(written.mail),
    audit: pending.audit.slice(written.audit),
    beforeCommit: [],
  };
  if (more.audit.length > 0) throw new Error('a before-commit write queued an audit entry after the flush');
  if (more.events.length === 0 && more.mail.length === 0) return;
  const again = new FlushBatch();
  for (const sink of sinks) {
    if (sink.kinds.includes('events') || sink.kinds.includes('mail')) await sink.write(trx, more, origin, again);
  }
  await again.execute(trx);
}

/**
 * A shop write inside a transaction somebody else opened (a worker's job that claimed its row with SKIP LOCKED):
 * `work` gets its ShopWrite, and its effects are written through `sinks` before the caller commits.
 */
export async function writeWithin<T>(
  trx: Transaction<Database>,
  origin: ShopOrigin,
  clock: Clock,
  sinks: readonly EffectSink[],
  work: (w: ShopWrite) => Promise<T>,
): Promise<T> {
  const w = shopWrite(trx, origin.shopId, new Effects(), clock);
  const result = await work(w);
  await flushEffects(trx, sinks, w.effects.pending, origin);
  return result;
}

export class UnitOfWork {
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly sinks: readonly EffectSink[];
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: UnitOfWorkOptions,
  ) {
    const ms = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    if (!Number.isInteger(ms) || ms < 0) throw new Error(`statement timeout must be a whole number of ms, not ${ms}`);
    this.timeoutMs = ms;
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.sinks = options.sinks ?? [];
    this.sleep = options.sleep ?? ((ms2) => new Promise((resolve) => setTimeout(resolve, ms2)));
  }

  /**
   * Runs `work` in one transaction and commits it with its effects. Retries the whole of it on 40001/40P01; when
   * the retries run out, 409 CONCURRENT_UPDATE (nothing was written).
   */
  async run<T>(origin: WriteOrigin, work: Work<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await withStatementTimeout(this.timeoutMs, (timeout) =>
          this.db.transaction().execute(async (trx) => {
            // Where `begin` could not set it (PGlite): set_config(…, true) is SET LOCAL with a bound value, and
            // ends with the transaction.
            if (!timeout.applied) {
              await sql`select set_config('statement_timeout', ${String(timeout.ms)}, true)`.execute(trx);
            }
            const effects = new Effects();
            const result = await work(trx, effects);
            await flushEffects(trx, this.sinks, effects.pending, origin);
            return result;
          }),
        );
      } catch (err) {
        if (!isRetryable(err)) throw err;
        if (attempt >= this.maxRetries) {
          this.options.logger?.warn('write gave up after concurrent-update retries', {
            operation_id: origin.operationId,
            request_id: origin.requestId,
            attempts: attempt + 1,
            code: (err as { code?: string }).code,
          });
          throw new ApiError('CONCURRENT_UPDATE', undefined, { headers: { 'Retry-After': CONFLICT_RETRY_AFTER } });
        }
        // Jittered back-off, so the transactions that collided do not collide again in step.
        await this.sleep(Math.round((5 + Math.random() * 20) * 2 ** attempt));
      }
    }
  }

  /** `run` for one shop: the work gets its ShopWrite (transaction, shop, effects, the clock's time). */
  write<T>(origin: ShopOrigin, work: (w: ShopWrite) => Promise<T>): Promise<T> {
    const clock = origin.clock ?? this.options.clock;
    return this.run(origin, (trx, effects) => work(shopWrite(trx, origin.shopId, effects, clock)));
  }

  /** The ShopWrite of a transaction this unit of work opened (the API's write operations). */
  shopWrite(trx: Transaction<Database>, shopId: string, effects: Effects, clock = this.options.clock): ShopWrite {
    return shopWrite(trx, shopId, effects, clock);
  }

  /** Records a refused write through the sinks that record refusals; never throws (the refusal is the answer). */
  async recordRejection(origin: WriteOrigin, error: ApiError): Promise<void> {
    const recorders = this.sinks.filter((s) => s.rejected);
    if (recorders.length === 0) return;
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const sink of recorders) await sink.rejected!(trx, origin, error);
      });
    } catch (err) {
      this.options.logger?.warn('could not record a rejected write', {
        operation_id: origin.operationId,
        request_id: origin.requestId,
        error: (err as Error)?.message,
      });
    }
  }
}
