// Reads from a streaming replica (issue 38, point 2), on a primary and a hot standby of the test's own: the replica
// is made with pg_basebackup and applies each commit 4 s late (recovery_min_apply_delay), so a read it served too
// early would miss the write. Two apps on the same primary, replica and Redis stand for two API processes. Where a
// read went is read from the metrics (mdapi_db_reads_total by target and reason), and what the replica holds is
// asked of the replica itself. PostgreSQL run only: the embedded database has no replica.
import { sql } from 'kysely';
import { openPostgres, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { ConfigError, loadConfig } from '../../src/config';
import {
  pgBinDir,
  primaryReplicationSettings,
  startOwnPostgres,
  startReplica,
  type OwnPostgres,
} from '../helpers/pg-cluster';
import { freePort } from '../helpers/redis-server';
import { replicaCaughtUp as caughtUp, replicaGauge, targetsOf, waitFor } from '../helpers/read-routing-metrics';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { describeInPostgresRun } from '../helpers/postgres-run';

const enabled = !!process.env.DATABASE_URL;
const describeWithPostgres = describeInPostgresRun(
  'replica-reads.test.ts',
  'it starts a PostgreSQL primary and a streaming replica of its own, so it belongs ' +
    'to the PostgreSQL run (DATABASE_URL set, PostgreSQL installed); the embedded database has no replica.',
);
/** Without Redis the processes cannot share write positions: the second process's part is left out (and said so). */
const shared = !!process.env.REDIS_URL;
if (enabled && !shared) console.log('replica-reads.test.ts: REDIS_URL unset, so the second process is not checked');

// Wide enough that a loaded CI machine still reads before the replica applies (2 s was not, once).
const APPLY_DELAY_MS = 4000;
const MAX_LAG_MS = 8000;

test('DATABASE_READ_URL takes one or more PostgreSQL URLs, only beside DATABASE_URL; REPLICA_MAX_LAG_MS is bounded', () => {
  const primaryOnly = { DATABASE_URL: 'postgres://app@db/shop' };
  expect(loadConfig(primaryOnly)).toMatchObject({ databaseReadUrls: [], replicaMaxLagMs: 5000 });
  const two = loadConfig({ ...primaryOnly, DATABASE_READ_URL: 'postgres://app@r1/shop, postgresql://app@r2/shop' });
  expect(two.databaseReadUrls).toEqual(['postgres://app@r1/shop', 'postgresql://app@r2/shop']);
  expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://app@r1/shop' })).toThrow(/needs DATABASE_URL/);
  expect(() => loadConfig({ ...primaryOnly, DATABASE_READ_URL: 'mysql://app@r1/shop' })).toThrow(ConfigError);
  expect(() => loadConfig({ ...primaryOnly, DATABASE_READ_URL: 'postgres://app@r1/shop,' })).toThrow(/empty entry/);
  expect(() => loadConfig({ ...primaryOnly, REPLICA_MAX_LAG_MS: '50' })).toThrow(/REPLICA_MAX_LAG_MS/);
});

describeWithPostgres('reads from a streaming replica', () => {
  let primary: OwnPostgres | undefined;
  let replica: OwnPostgres | undefined;
  /** The replica as the test asks it directly (what it holds right now). */
  let onReplica: DatabaseHandle | undefined;
  /** Two API processes: the same primary, replica and Redis, each its own pools and routing. */
  let one: TestApp | undefined;
  let two: TestApp | undefined;
  const shops: Record<'a' | 'b', { id: string; key: string; product: string }> = {} as never;
  let url: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (!pgBinDir)
      throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR (e.g. /usr/lib/postgresql/15/bin)');
    primary = await startOwnPostgres({ prefix: 'mdapi-primary-', settings: primaryReplicationSettings });
    url = await primary.createDatabase('mdapi');
    const process1 = openPostgres(url, { max: 10 });
    await migrateToLatest(process1.db);
    replica = await startReplica(primary, { applyDelayMs: APPLY_DELAY_MS });
    const replicaUrl = replica.url('mdapi');
    onReplica = openPostgres(replicaUrl, { max: 2 });
    env = {
      DATABASE_URL: url,
      DATABASE_READ_URL: replicaUrl,
      REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      RATE_LIMIT_BUSINESS: '1000000',
    };
    one = await startTestApp({ database: process1, env });
    two = await startTestApp({ database: openPostgres(url, { max: 10 }), env });
    for (const name of ['a', 'b'] as const) {
      const id = await one.createShop({ name: `Replica ${name}`, plan: 'business' });
      const { key } = await one.createKey(id, ['*']);
      const [product] = (await one.seed(id, { products: [{ title: `P ${name}`, price: '5.00' } as never] })).products;
      shops[name] = { id, key, product: product! };
    }
    // Shop b's rows must be on the replica before reads of b are sent there.
    await replicaCaughtUp();
  }, 120_000);

  afterAll(async () => {
    await two?.close();
    await one?.close();
    await onReplica?.close();
    await replica?.destroy();
    await primary?.destroy();
  }, 60_000);

  /** The replica has replayed everything the primary has written, and the routing has seen it (lag under 1 s). */
  const replicaCaughtUp = () => caughtUp(one!.db, onReplica!.db);

  async function ordersOnReplica(id: string): Promise<number> {
    const r = await sql<{ n: number }>`select count(*)::int as n from orders where id = ${id}`.execute(onReplica!.db);
    return r.rows[0]!.n;
  }

  async function createOrder(t: TestApp, shop: 'a' | 'b'): Promise<string> {
    const res = await t.http
      .post('/dev/v1/orders')
      .set(bearer(shops[shop].key))
      .send({ email: 'buyer@example.com', items: [{ product_id: shops[shop].product, quantity: 1 }] });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  async function listOrders(t: TestApp, shop: 'a' | 'b'): Promise<string[]> {
    const res = await t.http.get('/dev/v1/orders?limit=50').set(bearer(shops[shop].key));
    expect(res.status).toBe(200);
    return (res.body.data as { id: string }[]).map((o) => o.id);
  }

  async function getOrder(t: TestApp, shop: 'a' | 'b', id: string): Promise<void> {
    const res = await t.http.get(`/dev/v1/orders/${id}`).set(bearer(shops[shop].key));
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(id);
  }

  test('read-your-writes on a replica 4 s behind: the writer reads its order at once from the primary, in this process and another; another shop reads the replica meanwhile', async () => {
    await replicaCaughtUp();
    const id = await createOrder(one!, 'a');
    expect(await ordersOnReplica(id)).toBe(0); // the replica has not applied it: a read there would miss it

    expect(await targetsOf(() => getOrder(one!, 'a', id))).toEqual({ 'primary:own_write': 1 });
    // The other process never wrote: it knows of the write through Redis.
    if (shared) expect(await targetsOf(() => getOrder(two!, 'a', id))).toEqual({ 'primary:own_write': 1 });
    expect(await ordersOnReplica(id)).toBe(0); // both reads happened while the replica still lagged
    // Shop b wrote nothing: its reads go to the replica, 4 s behind and within the 8 s allowed.
    expect(await targetsOf(() => listOrders(one!, 'b'))).toEqual({ 'replica:fresh': 1 });
    expect(await targetsOf(() => listOrders(two!, 'b'))).toEqual({ 'replica:fresh': 1 });

    // Once the replica has applied the write, shop a's reads go back to it, and find the order there.
    await waitFor('the replica applies the order', async () => (await ordersOnReplica(id)) === 1);
    await waitFor('shop a reads the replica again', async () => {
      const moved = await targetsOf(() => getOrder(one!, 'a', id));
      return moved['replica:fresh'] === 1;
    });
  });

  test('a replica further behind than REPLICA_MAX_LAG_MS is not read from; once it catches up it is read again', async () => {
    await replicaCaughtUp();
    await sql`select pg_wal_replay_pause()`.execute(onReplica!.db);
    try {
      await createOrder(one!, 'a'); // the primary moves on; the paused replica stays where it is
      // A second past the limit: the gauge is the last check of either process, and each measures the lag from
      // its own samples of the primary, so one may see the limit passed a check before the other.
      await waitFor(
        `the replica's lag passes ${MAX_LAG_MS} ms by a second`,
        async () => ((await replicaGauge('mdapi_db_replica_lag_seconds')) ?? 0) > MAX_LAG_MS / 1000 + 1,
      );
      expect(await targetsOf(() => listOrders(one!, 'b'))).toEqual({ 'primary:lagging': 1 });
      expect(await targetsOf(() => listOrders(two!, 'b'))).toEqual({ 'primary:lagging': 1 });
    } finally {
      await sql`select pg_wal_replay_resume()`.execute(onReplica!.db);
    }
    await waitFor('shop b reads the replica again', async () => {
      const moved = await targetsOf(() => listOrders(one!, 'b'));
      return moved['replica:fresh'] === 1;
    });
  });

  test('a stopped replica answers no 5xx: the read that meets it is run again on the primary, the next ones go there, and the restarted replica is read again', async () => {
    await replicaCaughtUp();
    const bOrder = await createOrder(one!, 'b');
    await waitFor('the replica applies the order', async () => (await ordersOnReplica(bOrder)) === 1);
    await waitFor('shop b reads the replica', async () => {
      const moved = await targetsOf(() => listOrders(one!, 'b'));
      return moved['replica:fresh'] === 1;
    });
    // No check runs between the stop and the read: the read itself meets the dead replica, as one would between two
    // checks, and is answered from the primary in the same request.
    one!.reads!.stop();
    await replica!.stop('immediate');
    let listed: string[] = [];
    expect(await targetsOf(async () => (listed = await listOrders(one!, 'b')))).toEqual({
      'replica:fresh': 1,
      'primary:replica_error': 1,
    });
    expect(listed).toContain(bOrder);
    expect(await targetsOf(() => listOrders(one!, 'b'))).toEqual({ 'primary:down': 1 });
    // The other process finds it down by its own checks (the gauge is shared by both in-process apps, and the first
    // already set it): until then its reads meet the dead replica and are answered from the primary, never a 5xx.
    await waitFor('the other process finds the replica down', async () => {
      const moved = await targetsOf(() => listOrders(two!, 'b'));
      return moved['primary:down'] === 1;
    });
    expect(await replicaGauge('mdapi_db_replica_up')).toBe(0);

    await one!.reads!.start();
    expect(await targetsOf(() => getOrder(one!, 'b', bOrder))).toEqual({ 'primary:down': 1 });
    await replica!.start();
    await waitFor('both processes read the replica again', async () => {
      const moved = await targetsOf(async () => {
        await getOrder(one!, 'b', bOrder);
        await getOrder(two!, 'b', bOrder);
      });
      return moved['replica:fresh'] === 2;
    });
  });

  test('with Redis unreachable a process cannot know what the others wrote: it reads every shop from the primary, and still its own writes', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const three = await startTestApp({
      database: openPostgres(url, { max: 2 }),
      env: { ...env, REDIS_URL: deadRedis },
    });
    try {
      await replicaCaughtUp();
      expect(await targetsOf(() => listOrders(three, 'b'))).toEqual({ 'primary:unknown_writes': 1 });
      const id = await createOrder(three, 'a');
      expect(await targetsOf(() => getOrder(three, 'a', id))).toEqual({ 'primary:own_write': 1 });
    } finally {
      await three.close();
    }
  });
});
