// Which database serves a read operation when streaming replicas are configured (DATABASE_READ_URL): a replica when
// it is up, no further behind the primary than REPLICA_MAX_LAG_MS, and past the reading shop's last write
// (read-your-writes); the primary otherwise, and the primary again, within the same request, when the replica fails
// it. docs/architecture.md ("Reads from replicas") gives the reasoning.
//
// The request path pays a map look-up and a comparison, plus one Redis GET when Redis is configured; what it
// compares against is refreshed in the background: every `pollMs` the primary's WAL position is sampled and each
// replica is asked how far it has replayed. A write pays one statement after its commit (the primary's WAL
// position), and one Redis call to share it with the other API processes.
import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import { isConnectionError } from '../../db/connection-errors';
import { openReplicas } from '../../db/database';
import { ReadOnlyPlugin } from '../../db/read-only';
import type { ReadDb } from '../../db/queries/shop-scope';
import { replicaPosition, walInsertPosition, walWritePosition } from '../../db/queries/replication';
import type { Database } from '../../db/tables';
import type { Logger } from '../logger';
import { countRead, observeReplica, type ReadReason } from './metrics';
import type { RedisClient } from './redis';

export interface ReadRoutingOptions {
  primary: Kysely<Database>;
  /** The replicas, in DATABASE_READ_URL's order (their index names them in logs and metrics). */
  replicas: readonly Kysely<Database>[];
  /** A replica further behind than this is not read from. */
  maxLagMs: number;
  /** How often the primary's position and the replicas' are read (default 250 ms). */
  pollMs?: number;
  /** Shares each shop's last write position with the other API processes; without it, this process's only. */
  redis?: RedisClient;
  /** Prefix of the Redis keys (tests isolate themselves with their own). */
  redisPrefix?: string;
  logger: Logger;
}

interface Replica {
  readonly index: number;
  readonly db: Kysely<Database>;
  readonly readDb: ReadDb;
  /** Whether it answered its last check as a standby; unknown before the first check. */
  state: 'unknown' | 'up' | 'down';
  /** WAL position it had replayed at its last check. */
  replayed: bigint;
  /** How far behind the primary it was at its last check (Infinity: further than the samples kept reach). */
  lagMs: number;
  /** performance.now() of its last successful check. */
  checkedAt: number;
  checking: boolean;
}

/** A WAL position nothing reaches: the shop's reads stay on the primary until its entry expires. */
const UNREACHABLE = (1n << 64n) - 1n;

/** Positions are kept in Redis as 16 hex digits, so the script can keep the larger by comparing strings. */
const hex = (lsn: bigint) => lsn.toString(16).padStart(16, '0');

// Keeps the later of two writes' positions however their notes interleave, for `ttl` ms after the latest note.
const RAISE_SCRIPT = `local current = redis.call('GET', KEYS[1])
if current and current > ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1`;

export class ReadRouting {
  private readonly primaryReadDb: ReadDb;
  private readonly replicas: Replica[];
  private readonly maxLagMs: number;
  private readonly pollMs: number;
  /**
   * How long a shop's last write position is kept. Once it is dropped, a replica within the allowed lag holds
   * everything the primary had `maxLagMs` (plus a check's age) before now, which includes that write.
   */
  readonly rememberMs: number;
  /** A check older than this (it hangs, or checks stopped) no longer vouches for a replica. */
  private readonly staleMs: number;
  /** (time, primary WAL write position) samples, oldest first: how lag is measured (see lagAt). */
  private readonly samples: Array<{ at: number; lsn: bigint }> = [];
  private readonly sampleWindowMs: number;
  private sampling = false;
  /** Each shop's last write position noted by this process, and until when it counts. */
  private readonly ownWrites = new Map<string, { lsn: bigint; until: number }>();
  private readonly redisPrefix: string;
  private redisFailing = false;
  private timer: NodeJS.Timeout | undefined;
  private next = 0;

  constructor(private readonly options: ReadRoutingOptions) {
    if (options.replicas.length === 0) throw new Error('read routing needs at least one replica');
    this.maxLagMs = options.maxLagMs;
    this.pollMs = options.pollMs ?? 250;
    this.staleMs = Math.max(4 * this.pollMs, 2000);
    this.rememberMs = this.maxLagMs + this.staleMs + 1000;
    this.sampleWindowMs = 2 * this.maxLagMs + this.staleMs;
    this.redisPrefix = options.redisPrefix ?? 'mdapi:read-lsn:';
    this.primaryReadDb = options.primary.withPlugin(new ReadOnlyPlugin());
    this.replicas = options.replicas.map((db, index) => ({
      index,
      db,
      readDb: db.withPlugin(new ReadOnlyPlugin()),
      state: 'unknown',
      replayed: 0n,
      lagMs: Infinity,
      checkedAt: -Infinity,
      checking: false,
    }));
  }

  /** Starts the background checks; resolves once the first round is done, so the first reads can use replicas. */
  async start(): Promise<void> {
    if (!this.timer) {
      this.timer = setInterval(() => void this.check(), this.pollMs);
      this.timer.unref();
    }
    await this.check();
  }

  /** Stops the background checks (the replicas then count as down once their last check is stale). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Runs a read operation's work on the database chosen for `shopId` (undefined: a public read, which has no
   * read-your-writes position and is served by the primary). A failure on a replica that `retryable` accepts (one
   * that would answer 5xx) runs the work again on the primary; a connection failure also marks the replica down.
   */
  async read<T>(
    shopId: string | undefined,
    work: (db: ReadDb) => Promise<T>,
    retryable: (err: unknown) => boolean,
  ): Promise<T> {
    const choice = await this.choose(shopId);
    if (choice.replica === undefined) {
      countRead('primary', choice.reason);
      return work(this.primaryReadDb);
    }
    countRead('replica', 'fresh');
    try {
      return await work(choice.replica.readDb);
    } catch (err) {
      if (!retryable(err)) throw err;
      if (isConnectionError(err)) this.markDown(choice.replica, err);
      countRead('primary', 'replica_error');
      return work(this.primaryReadDb);
    }
  }

  /**
   * After a write of `shopId` committed, before it is answered: remembers the primary's WAL position, so that this
   * shop's reads use a replica only once it has replayed that far (and, through Redis, in every API process).
   */
  async noteWrite(shopId: string): Promise<void> {
    // Unknown (the primary did not answer): the shop's reads stay on the primary until the entry expires.
    const lsn = await walInsertPosition(this.options.primary).catch(() => UNREACHABLE);
    const until = performance.now() + this.rememberMs;
    const known = this.ownWrites.get(shopId);
    if (!known || known.lsn < lsn || known.until < until) {
      this.ownWrites.set(shopId, { lsn: known && known.lsn > lsn ? known.lsn : lsn, until });
    }
    if (this.ownWrites.size > 100_000) this.forgetExpired();
    const redis = this.options.redis;
    if (!redis) return;
    try {
      await redis.eval(RAISE_SCRIPT, {
        keys: [this.redisPrefix + shopId],
        arguments: [hex(lsn), String(this.rememberMs)],
      });
      this.redisFailing = false;
    } catch (err) {
      // The other processes cannot read the shared position either (Redis is down for them too, most likely):
      // they send this shop's reads to the primary ('unknown_writes') rather than guess. Logged once per outage.
      if (!this.redisFailing) {
        this.options.logger.warn('read routing: write positions cannot be shared through Redis', {
          error: (err as Error).message,
        });
      }
      this.redisFailing = true;
    }
  }

  private async choose(shopId: string | undefined): Promise<{ replica?: Replica; reason: ReadReason }> {
    if (shopId === undefined) return { reason: 'no_shop' };
    const now = performance.now();
    const usable = this.replicas.filter((r) => r.state === 'up' && now - r.checkedAt <= this.staleMs);
    if (usable.length === 0) return { reason: 'down' };
    // The lag measured at the last check, plus the time since: while the primary writes, a replica can fall
    // that much further behind unseen.
    const current = usable.filter((r) => r.lagMs + (now - r.checkedAt) <= this.maxLagMs);
    if (current.length === 0) return { reason: 'lagging' };
    const own = this.ownWrite(shopId, now);
    let candidates = own === undefined ? current : current.filter((r) => r.replayed >= own);
    if (candidates.length === 0) return { reason: 'own_write' };
    if (this.options.redis) {
      // Another process's write of this shop (or this one's, shared): asked only when a replica is still in play.
      const shared = await this.sharedWrite(shopId);
      if (shared === null) return { reason: 'unknown_writes' };
      if (shared !== undefined) candidates = candidates.filter((r) => r.replayed >= shared);
      if (candidates.length === 0) return { reason: 'own_write' };
    }
    this.next = (this.next + 1) % candidates.length;
    return { replica: candidates[this.next]!, reason: 'fresh' };
  }

  private ownWrite(shopId: string, now: number): bigint | undefined {
    const entry = this.ownWrites.get(shopId);
    if (!entry) return undefined;
    if (entry.until >= now) return entry.lsn;
    this.ownWrites.delete(shopId);
    return undefined;
  }

  /** The shop's last write position shared by any process; undefined: none recent; null: Redis did not answer. */
  private async sharedWrite(shopId: string): Promise<bigint | undefined | null> {
    try {
      const value = await this.options.redis!.get(this.redisPrefix + shopId);
      return value === null ? undefined : BigInt(`0x${value}`);
    } catch {
      return null;
    }
  }

  private forgetExpired(): void {
    const now = performance.now();
    for (const [shop, entry] of this.ownWrites) if (entry.until < now) this.ownWrites.delete(shop);
  }

  /** One round of background checks: the primary's position, then each replica's (each skipped while its last runs). */
  private async check(): Promise<void> {
    await this.sample();
    await Promise.all(this.replicas.map((r) => this.checkReplica(r)));
  }

  private async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    // Stamped before asking: the primary had at least this position by then, so lag measured from it errs long.
    const at = performance.now();
    try {
      const lsn = await walWritePosition(this.options.primary);
      this.samples.push({ at, lsn });
      // Keep one sample older than the window, so a replica behind every kept sample is known to be that far behind.
      while (this.samples.length > 1 && this.samples[1]!.at < at - this.sampleWindowMs) this.samples.shift();
    } catch {
      // The primary did not answer: no sample, and the replicas' measured lag grows until it does.
    } finally {
      this.sampling = false;
    }
  }

  private async checkReplica(replica: Replica): Promise<void> {
    if (replica.checking) return;
    replica.checking = true;
    try {
      const position = await replicaPosition(replica.db);
      const at = performance.now();
      if (!position.standby || position.replayed === undefined) {
        // A promoted replica (or a primary given by mistake) no longer follows the primary: its data may miss writes.
        this.markDown(replica, new Error('not a standby of the primary'));
        return;
      }
      if (replica.state !== 'up') this.options.logger.info('read routing: replica up', { replica: replica.index });
      replica.state = 'up';
      replica.replayed = position.replayed;
      replica.lagMs = this.lagAt(position.replayed, at);
      replica.checkedAt = at;
      observeReplica(replica.index, replica.lagMs / 1000);
    } catch (err) {
      this.markDown(replica, err);
    } finally {
      replica.checking = false;
    }
  }

  /**
   * How far behind the primary a replica that has replayed `replayed` is: the time since the latest sample of the
   * primary it has fully replayed (it holds everything the primary had then). Infinity when it is behind every
   * sample kept (just started, or further behind than the window).
   */
  private lagAt(replayed: bigint, now: number): number {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i]!;
      if (sample.lsn <= replayed) return Math.max(0, now - sample.at);
    }
    return Infinity;
  }

  private markDown(replica: Replica, err: unknown): void {
    if (replica.state !== 'down') {
      this.options.logger.warn('read routing: replica down, its reads go to the primary', {
        replica: replica.index,
        error: (err as Error).message,
      });
    }
    replica.state = 'down';
    observeReplica(replica.index, undefined);
  }
}

/**
 * Opens DATABASE_READ_URL's replicas and starts routing reads to them (after the first check); undefined when none is
 * configured. `close` stops the checks and closes the replicas' pools.
 */
export async function openReadRouting(
  options: Omit<ReadRoutingOptions, 'replicas'> & {
    urls: readonly string[];
    poolSize?: number;
    queryTimeoutMs?: number;
    namedStatements?: boolean;
  },
): Promise<{ routing: ReadRouting; close(): Promise<void> } | undefined> {
  if (options.urls.length === 0) return undefined;
  const handles = openReplicas(options.urls, {
    poolSize: options.poolSize,
    queryTimeoutMs: options.queryTimeoutMs,
    namedStatements: options.namedStatements,
  });
  const routing = new ReadRouting({ ...options, replicas: handles.map((h) => h.db) });
  // The checks catch their own failures: a replica down at start is only routed around until it answers.
  await routing.start();
  return {
    routing,
    close: async () => {
      routing.stop();
      await Promise.all(handles.map((h) => h.close()));
    },
  };
}
