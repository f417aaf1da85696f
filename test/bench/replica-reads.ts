// GET /orders?limit=50 with reads routed to a streaming replica (DATABASE_READ_URL) beside the same whole stack
// reading from the primary alone, side by side in one run, with the round trips each side sends. The primary and its
// hot standby are the bench's own (test/helpers/pg-cluster.ts: initdb, pg_basebackup, no apply delay), so the
// machine's shared PostgreSQL is not touched. Both stacks run in this process with pg pools of POOL connections (the
// replica side's reads use a pool of as many to the replica; its API-key look-up stays on the primary). The shop's
// rows are written with SQL, not through the API, so no write of it is remembered (read-your-writes would send its
// reads to the primary); the replica has replayed them, and the routing has seen it current, before the loads
// start. Where the replica side's reads went is read from mdapi_db_reads_total: a run whose reads did not go to the
// replica measured the primary twice, so it fails the bench. Needs PostgreSQL's server binaries.
import { openPostgres, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import * as admin from '../../src/ops/admin';
import { createLogger } from '../../src/logger';
import { openReadRouting } from '../../src/platform/read-routing';
import {
  pgBinDir,
  primaryReplicationSettings,
  startOwnPostgres,
  startReplica,
  type OwnPostgres,
} from '../helpers/pg-cluster';
import { readCounts, replicaCaughtUp } from '../helpers/read-routing-metrics';
import { benchConfig, wholeStack } from './completions';
import { load, medianRatio, sideBySide, type Load } from './load';
import { PAGE, seedBenchOrders } from './order-lists';
import type { SideBySide } from './order-writes';
import { POOL } from './pooler';
import { settings } from './settings';

/** Orders of the shop: page 1 is what is read, so a list deep enough to need its index (a quick run: fewer). */
const LIST_ORDERS = settings.quick ? 1_000 : 10_000;
/** Below this share of the replica side's reads served by the replica, the row measured the wrong thing. */
const MIN_REPLICA_SHARE = 0.95;

export interface ReplicaBench {
  /** baseline: the stack on the primary alone; full: the stack with DATABASE_READ_URL set to the replica. */
  list: SideBySide;
  /** The replica side's read operations (warm-ups included) by `target:reason` (mdapi_db_reads_total). */
  reads: Record<string, number>;
}

/** null when PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) are not installed (the row says so). */
export async function benchReplicaReads(): Promise<ReplicaBench | null> {
  if (!pgBinDir) return null;
  let primary: OwnPostgres | undefined;
  let replica: OwnPostgres | undefined;
  const handles: DatabaseHandle[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  try {
    primary = await startOwnPostgres({ prefix: 'mdapi-bench-primary-', settings: primaryReplicationSettings });
    const url = await primary.createDatabase('mdapi');
    const setup = openPostgres(url, { max: 2 });
    handles.push(setup);
    await migrateToLatest(setup.db);
    const shop = await admin.createShop(setup.db, { name: 'Replica bench', plan: 'business' });
    const { key } = await admin.createApiKey(setup.db, { shopId: shop.id, scopes: ['orders.read'] });
    await seedBenchOrders(setup.db, shop.id, LIST_ORDERS);

    replica = await startReplica(primary);
    const replicaUrl = replica.url('mdapi');
    const onReplica = openPostgres(replicaUrl, { max: 1 });
    handles.push(onReplica);

    const primaryOnly = openPostgres(url, { max: POOL });
    const withReplica = openPostgres(url, { max: POOL });
    handles.push(primaryOnly, withReplica);
    const config = benchConfig({ DATABASE_URL: url, DATABASE_READ_URL: replicaUrl });
    const routing = (await openReadRouting({
      primary: withReplica.db,
      urls: config.databaseReadUrls,
      maxLagMs: config.replicaMaxLagMs,
      poolSize: POOL,
      queryTimeoutMs: 30_000,
      logger: createLogger('silent'),
    }))!;
    closers.push(() => routing.close());
    const primaryStack = await wholeStack(primaryOnly.db, benchConfig({ DATABASE_URL: url }));
    closers.push(async () => primaryStack.server.close());
    const replicaStack = await wholeStack(withReplica.db, config, { reads: routing.routing });
    closers.push(async () => replicaStack.server.close());

    // Everything written so far (the stacks' start wrote their server secrets) is on the replica, and the routing
    // has measured it current: otherwise the first reads go to the primary as 'lagging'.
    await replicaCaughtUp(setup.db, onReplica.db, 30_000);

    const listPath = `/dev/v1/orders?limit=${PAGE}`;
    const moved = new Map<string, number>();
    const viaReplica = async (): Promise<Load> => {
      const before = await readCounts();
      const run = await load(`${replicaStack.url}${listPath}`, key, { cost: true, label: 'replica-list-replica' });
      for (const [series, n] of await readCounts())
        moved.set(series, (moved.get(series) ?? 0) + n - (before.get(series) ?? 0));
      return run;
    };
    const list = await sideBySide(
      () => load(`${primaryStack.url}${listPath}`, key, { cost: true, label: 'replica-list-primary' }),
      viaReplica,
    );
    const reads = Object.fromEntries([...moved].filter(([, n]) => n > 0));
    const total = Object.values(reads).reduce((a, b) => a + b, 0);
    const onReplicaShare = total === 0 ? 0 : (reads['replica:fresh'] ?? 0) / total;
    if (onReplicaShare < MIN_REPLICA_SHARE)
      throw new Error(
        `replica bench: only ${(onReplicaShare * 100).toFixed(1)}% of the replica side's ${total} reads went to the ` +
          `replica (${JSON.stringify(reads)}): it measured the primary, not the replica`,
      );
    return { list: { baseline: list.baseline, full: list.full, ratio: medianRatio(list.rounds) }, reads };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    for (const handle of handles.reverse()) await handle.close().catch(() => undefined);
    await replica?.destroy();
    await primary?.destroy();
  }
}
