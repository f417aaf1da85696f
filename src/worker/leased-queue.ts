// The round of a leased outbox (db/queries/leased-queue.ts), written once for dynamic deliveries, bot notifications
// and email-marketing syncs: claim due rows (SKIP LOCKED, with a lease), make each attempt outside any transaction,
// then record its outcome in one transaction, only if this worker still holds the lease (else the worker that took
// the row over records its own). What is sent and what an outcome means stay with each queue.
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { leasedRowForUpdate, type LeasedTable, type Lease } from '../../db/queries/leased-queue';
import type { Clock } from '../platform/clock';
import { jobSpan } from './job-span';
import type { Job, JobContext } from './worker';

export interface LeasedQueue<C extends { id: string; shop_id: string }, V> {
  /** The job's name. */
  name: string;
  table: LeasedTable;
  /** How the log names a row ('dynamic delivery'), and the field that carries its id ('delivery_id'). */
  noun: string;
  idField: string;
  /** Attempts a row may make in all; past them a row whose outcome was never recorded is given up (FAILED). */
  maxAttempts: number;
  claim(trx: Transaction<Database>, lease: Lease): Promise<C[]>;
  /**
   * One attempt, outside any transaction: what happened, for `record`. `clock` is the job's, or the clock of the one
   * shop a pass serves (src/worker/worker.ts): the time both read.
   */
  send(claim: C, clock: Clock): Promise<V>;
  /** Records the attempt. The row is locked and the lease still held; `attempts` were made before this one. */
  record(trx: Transaction<Database>, claim: C, attempts: number, verdict: V, clock: Clock): Promise<void>;
  /** The logged text of an error that kept an attempt from being recorded (default: its message). */
  errorText?(err: unknown): string | undefined;
}

export interface LeasedQueueOptions extends JobContext {
  /** Rows claimed (and sent concurrently) per round (default 20). */
  batch?: number;
}

/** `schedule`'s wait after the `attemptsMade`-th failed attempt, ±`jitter`; undefined when that was the last. */
export function scheduledDelayMs(
  schedule: readonly number[],
  attemptsMade: number,
  random: () => number,
  jitter = 0.1,
): number | undefined {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return undefined;
  return Math.round(base * (1 + jitter * (2 * random() - 1)));
}

export function leasedQueueJob<C extends { id: string; shop_id: string }, V>(
  db: Kysely<Database>,
  options: LeasedQueueOptions,
  queue: LeasedQueue<C, V>,
): Job {
  const leaseMs = options.leaseMs ?? 60_000;
  const errorText = queue.errorText ?? ((err: unknown) => (err as Error)?.message);

  async function attempt(claim: C, token: string, clock: Clock): Promise<void> {
    // Tracing on: one span per item, its statements (the recording) under it.
    const span = jobSpan(`job ${queue.name}`, undefined, { [queue.idField]: claim.id });
    if (!span) return attemptIn(claim, token, clock);
    try {
      await span.run(() => attemptIn(claim, token, clock));
      span.end('ok');
    } catch (err) {
      span.fail(err);
      throw err;
    }
  }

  async function attemptIn(claim: C, token: string, clock: Clock): Promise<void> {
    const verdict = await queue.send(claim, clock);
    await db.transaction().execute(async (trx) => {
      const row = await leasedRowForUpdate(trx, queue.table, claim.shop_id, claim.id, token);
      // The lease ran out and another worker took the row over: its attempt is the one recorded.
      if (!row) {
        options.logger.warn(`${queue.noun} finished after its lease was taken over`, { [queue.idField]: claim.id });
        return;
      }
      // The claim counted this attempt already; `record` is given the attempts made before it.
      await queue.record(trx, claim, row.attempts - 1, verdict, clock);
    });
  }

  return {
    name: queue.name,
    onShopClocks: true,
    async runOnce(scope) {
      const clock = scope?.clock ?? options.clock;
      const now = clock.now();
      const realNow = options.clock.now();
      const token = randomUUID();
      const lease: Lease = {
        now,
        realNow,
        until: new Date(realNow.getTime() + leaseMs),
        token,
        maxAttempts: queue.maxAttempts,
        limit: options.batch ?? 20,
        shopId: scope?.shopId,
      };
      const claimed = await db.transaction().execute((trx) => queue.claim(trx, lease));
      await Promise.all(
        claimed.map((c) =>
          attempt(c, token, clock).catch((err: unknown) =>
            // Not recorded: the lease runs out and the row is tried again (at least once), each claim counting an
            // attempt, so a row whose outcome can never be recorded is given up after maxAttempts, not sent forever.
            options.logger.warn(`${queue.noun} could not be recorded`, {
              [queue.idField]: c.id,
              error: errorText(err),
            }),
          ),
        ),
      );
      return claimed.length;
    },
  };
}
