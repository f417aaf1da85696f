// Prometheus metrics (issue 28): the series an operator watches, in one registry of this process. The request path
// touches them through a few small functions (a counter's inc and a histogram's observe on a child made once per
// operation and status class, no label object per request); what lives elsewhere (the pg pool, the queues) is read
// at scrape time by collect callbacks, the queues with one statement cached for a moment, so scrapes cannot hammer
// the database. Labels are bounded: operation ids of the contract, status classes, error codes of the catalog,
// outcome names; never a path, an id or a shop.
import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { queueStates, type QueueState } from '../../db/queries/operator-metrics';
import type { Database } from '../../db/tables';

export const registry = new Registry();
const prefix = 'mdapi_';

const statusClasses = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

const requests = new Counter({
  name: `${prefix}http_requests_total`,
  help:
    'Requests answered, by operation id (or "none" outside the API, "unmatched" for no operation, "parser_error" for ' +
    "what Node's HTTP parser refused before any route was known) and status class.",
  labelNames: ['operation', 'status_class'] as const,
  registers: [registry],
});
const durations = new Histogram({
  name: `${prefix}http_request_duration_seconds`,
  help: 'Time from receiving a request to finishing its response, by operation id and status class.',
  labelNames: ['operation', 'status_class'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const errors = new Counter({
  name: `${prefix}http_errors_total`,
  help: "Error responses by error code of the catalog (the envelope's `code`).",
  labelNames: ['code'] as const,
  registers: [registry],
});
const rateLimited = new Counter({
  name: `${prefix}rate_limit_refusals_total`,
  help: 'Requests refused with 429 by the rate limiter: per shop (by plan) or per IP (no valid credential).',
  labelNames: ['limiter'] as const,
  registers: [registry],
});
const idempotency = new Counter({
  name: `${prefix}idempotency_outcomes_total`,
  help: 'State-changing requests by what idempotency did: created, cached (replayed), processing (409), bypassed.',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
const webhookAttempts = new Counter({
  name: `${prefix}webhook_attempts_total`,
  help: 'Webhook delivery attempts by outcome: delivered, or the attempt error code (http_error, timeout, ...).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
const webhookLatency = new Histogram({
  name: `${prefix}webhook_attempt_duration_seconds`,
  help: 'Time a webhook attempt took, from connecting to the end of the answer, by result (delivered or failed).',
  labelNames: ['result'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Per operation, one child per status class, made on first use: a request's metrics cost no label object. */
type Children = Array<{ count: Counter.Internal; time: Histogram.Internal<string> }>;
const children = new Map<string, Children>();

function childrenOf(operation: string): Children {
  let found = children.get(operation);
  if (!found) {
    found = statusClasses.map((cls) => ({
      count: requests.labels(operation, cls),
      time: durations.labels(operation, cls),
    }));
    children.set(operation, found);
  }
  return found;
}

const childOf = (operation: string, status: number) =>
  childrenOf(operation)[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))]!;

/** One finished request: its operation id (bounded: the contract's, "unmatched" or "none") and status. */
export function observeRequest(operation: string, status: number, seconds: number): void {
  const child = childOf(operation, status);
  child.count.inc();
  child.time.observe(seconds);
}

/**
 * A request Node's HTTP parser refused (malformed, headers too large, too slow), answered with `code` below the app.
 * Its path is unknown, so its operation is "parser_error"; it has no duration either (the parser gives no start
 * time), so only the counters move.
 */
export function countParserRefusal(status: number, code: string): void {
  childOf('parser_error', status).count.inc();
  countError(code);
}

/** An error answered, by its catalog code. */
export function countError(code: string): void {
  errors.inc({ code });
}

/** A 429 of the rate limiter. */
export function countRateLimitRefusal(limiter: 'shop' | 'ip'): void {
  rateLimited.inc({ limiter });
}

/** What idempotency did for a state-changing request. */
export function countIdempotencyOutcome(outcome: string): void {
  idempotency.inc({ outcome });
}

/** A webhook attempt's outcome (delivered, or its error code) and how long it took. */
export function observeWebhookAttempt(outcome: string, seconds: number): void {
  webhookAttempts.inc({ outcome });
  webhookLatency.observe({ result: outcome === 'delivered' ? 'delivered' : 'failed' }, seconds);
}

/** Where a read operation's queries went, and why there (src/platform/read-routing.ts). */
export type ReadTarget = 'primary' | 'replica';
export type ReadReason =
  /** replica: it was up, within the lag allowed, and past the shop's last write. */
  | 'fresh'
  /** primary: the read has no shop (public), so no read-your-writes position to check. */
  | 'no_shop'
  /** primary: no replica had replayed the shop's last write yet (read-your-writes). */
  | 'own_write'
  /** primary: every replica is further behind than REPLICA_MAX_LAG_MS. */
  | 'lagging'
  /** primary: no replica answered its last check (down, or not a standby). */
  | 'down'
  /** primary: the shop's last write is unknown (Redis, which shares it between processes, is unreachable). */
  | 'unknown_writes'
  /** primary: the read failed on a replica and was run again here. */
  | 'replica_error';

const reads = new Counter({
  name: `${prefix}db_reads_total`,
  help:
    'Read operations by the database that served them (primary or replica) and why there: fresh (replica), no_shop, ' +
    'own_write, lagging, down, unknown_writes, replica_error (primary). Counted only when DATABASE_READ_URL is set.',
  labelNames: ['target', 'reason'] as const,
  registers: [registry],
});
const readChildren = new Map<string, Counter.Internal>();

/** One read operation's attempt on a target (a read retried on the primary counts twice). */
export function countRead(target: ReadTarget, reason: ReadReason): void {
  const name = `${target}:${reason}`;
  let child = readChildren.get(name);
  if (!child) readChildren.set(name, (child = reads.labels(target, reason)));
  child.inc();
}

const replicaLag = new Gauge({
  name: `${prefix}db_replica_lag_seconds`,
  help:
    'How far each replica (by its position in DATABASE_READ_URL, from 0) is behind the primary: the time since the ' +
    'primary wrote past what the replica has replayed, at the last check (every ~250 ms). Absent while it is down.',
  labelNames: ['replica'] as const,
  registers: [registry],
});
const replicaUp = new Gauge({
  name: `${prefix}db_replica_up`,
  help: 'Whether each replica answered its last check as a standby (1) or not (0).',
  labelNames: ['replica'] as const,
  registers: [registry],
});

/** A replica's state after a check: up with its lag, or down (its lag series removed: there is no lag to tell). */
export function observeReplica(index: number, lagSeconds: number | undefined): void {
  const replica = String(index);
  replicaUp.set({ replica }, lagSeconds === undefined ? 0 : 1);
  if (lagSeconds === undefined) replicaLag.remove({ replica });
  else replicaLag.set({ replica }, lagSeconds);
}

/** The database whose pool and queues the scrape reads (the last one given: a process has one). */
interface Watched {
  db: Kysely<Database>;
  kind: 'postgres' | 'pglite';
  pool?: Pool;
}
let watched: Watched | undefined;

new Gauge({
  name: `${prefix}db_pool_connections`,
  help: 'Database connections by state: in_use or idle (PostgreSQL pool); the embedded database has one, always open.',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    this.reset();
    const pool = watched?.pool;
    if (pool) {
      this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
      this.set({ state: 'idle' }, pool.idleCount);
    } else if (watched?.kind === 'pglite') this.set({ state: 'open' }, 1);
  },
});
new Gauge({
  name: `${prefix}db_pool_waiting_requests`,
  help: 'Queries waiting for a pool connection (PostgreSQL; always 0 on the embedded database, which has no pool).',
  registers: [registry],
  collect() {
    this.reset();
    if (watched?.pool) this.set(watched.pool.waitingCount);
  },
});

/** How long a read of the queues serves scrapes before the next one reads again. */
const QUEUE_CACHE_MS = 2000;
let queueRead: { at: number; states: Promise<QueueState[] | undefined> } | undefined;

function currentQueues(): Promise<QueueState[] | undefined> {
  const db = watched?.db;
  if (!db) return Promise.resolve(undefined);
  const now = performance.now();
  if (!queueRead || now - queueRead.at > QUEUE_CACHE_MS) {
    // A database that does not answer leaves these series out of the scrape; the scrape itself still succeeds.
    queueRead = { at: now, states: queueStates(db).catch(() => undefined) };
  }
  return queueRead.states;
}

new Gauge({
  name: `${prefix}queue_depth`,
  help: 'Items waiting in each outbox queue (due now or scheduled for a retry), across all shops.',
  labelNames: ['queue'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const q of (await currentQueues()) ?? []) this.set({ queue: q.queue }, q.depth);
  },
});
new Gauge({
  name: `${prefix}queue_oldest_item_age_seconds`,
  help: 'Age of the oldest item waiting in each outbox queue; 0 when it is empty.',
  labelNames: ['queue'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const q of (await currentQueues()) ?? []) this.set({ queue: q.queue }, q.oldest_seconds);
  },
});
new Gauge({
  name: `${prefix}outbox_lag_seconds`,
  help: 'Age of the oldest event not yet delivered to every endpoint (its delivery waits or is being retried).',
  registers: [registry],
  async collect() {
    this.reset();
    const webhooks = (await currentQueues())?.find((q) => q.queue === 'webhook_deliveries');
    if (webhooks) this.set(webhooks.oldest_seconds);
  },
});

let processMetrics = false;

/**
 * Points the pool and queue series at the process's database, and turns on the process metrics (CPU, memory, event
 * loop, GC, file descriptors): what an entry point calls when it serves metrics.
 */
export function watchDatabase(database: Watched): void {
  watched = database;
  queueRead = undefined;
  if (!processMetrics) {
    processMetrics = true;
    collectDefaultMetrics({ register: registry, prefix });
  }
}
