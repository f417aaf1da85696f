// Fault test: the real server process (`src/server.ts` under tsx) keeps serving while its PostgreSQL restarts under a
// sustained concurrent write load (24 writers: product duplicates and new orders, each with an Idempotency-Key) and a
// read load. The test starts a PostgreSQL of its own (own port, own data directory) so that it can stop and restart
// it; the machine's shared instance is never touched. It runs only with DATABASE_URL set (the PostgreSQL run), since
// the embedded run has no PostgreSQL server to restart.
import { sql } from 'kysely';
import { openPostgres } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { openStoredBody } from '../../src/platform/idempotency';
import { loadSecretBox } from '../../src/platform/secret-box';
import { pgBinDir, startOwnPostgres, type OwnPostgres } from '../helpers/pg-cluster';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { latency, percentile, send, sleep, startLoad, statusCounts, type Outcome, type RequestSpec } from './load';
import { systemClock } from '../../src/platform/clock';
import { describeInPostgresRun } from '../helpers/postgres-run';

const WRITERS = 24;
const READERS = 4;
const writeKinds = new Set(['duplicate', 'order']);

const describeWithPostgres = describeInPostgresRun(
  'postgres-restart.test.ts',
  'it starts and restarts a PostgreSQL server of its own, so it belongs to the ' +
    'PostgreSQL run (DATABASE_URL set, PostgreSQL installed); the embedded (PGlite) run has no server to restart.',
);

describeWithPostgres('PostgreSQL restarting under a concurrent write load', () => {
  let pg: OwnPostgres | undefined;
  let server: ServerProcess | undefined;
  let dbUrl: string;
  let key: string;
  let sources: string[];

  beforeAll(async () => {
    if (!pgBinDir)
      throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR (e.g. /usr/lib/postgresql/15/bin)');
    pg = await startOwnPostgres({ prefix: 'mdapi-pgrestart-' });
    dbUrl = await pg.createDatabase('mdapi');

    const handle = openPostgres(dbUrl, { max: 2 });
    try {
      await migrateToLatest(handle.db);
      const shop = await admin.createShop(handle.db, { name: 'Restart Shop', plan: 'business' });
      key = (await admin.createApiKey(handle.db, { shopId: shop.id, scopes: ['*'] })).key;
      const row = (await shopById(handle.db, shop.id))!;
      // Several sources, so concurrent copies do not all queue on one product's row lock.
      const seeded = await handle.db.transaction().execute((trx) =>
        seedFixtures(
          trx,
          row,
          {
            products: [1, 2, 3, 4, 5, 6].map((i) => ({ title: `Source ${i}`, slug: `source-${i}`, price: '5.00' })),
          },
          systemClock,
        ),
      );
      sources = seeded.products;
    } finally {
      await handle.close();
    }

    server = await startServerProcess({
      DATABASE_URL: dbUrl,
      REDIS_URL: '',
      RATE_LIMIT_BUSINESS: '1000000',
    });
  }, 120_000);

  afterAll(async () => {
    await server?.kill();
    await pg?.destroy();
  }, 60_000);

  async function countProcessing(): Promise<number> {
    const handle = openPostgres(dbUrl, { max: 1 });
    try {
      const row = await handle.db
        .selectFrom('idempotency_keys')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('state', '=', 'processing')
        .executeTakeFirstOrThrow();
      return row.n;
    } finally {
      await handle.close();
    }
  }

  /** The `i`-th write of writer `w`: even writers copy a product, odd ones create an order; each under its own key. */
  function write(w: number, i: number): RequestSpec {
    const source = sources[w % sources.length]!;
    const idempotencyKey = `restart-${w}-${i}`;
    return w % 2 === 0
      ? { kind: 'duplicate', method: 'post', path: `/dev/v1/products/${source}/duplicate`, key, idempotencyKey }
      : {
          kind: 'order',
          method: 'post',
          path: '/dev/v1/orders',
          key,
          idempotencyKey,
          body: { email: `buyer${w}@example.com`, items: [{ product_id: source, quantity: 1 }] },
        };
  }

  test('the process survives, answers 503 + Retry-After while PostgreSQL is down, recovers, and loses no acknowledged write', async () => {
    const testStarted = Date.now();
    const specs = new Map<string, RequestSpec>();
    const load = startLoad(server!.base, {
      clients: READERS + WRITERS,
      next: (c, i) => {
        if (c < READERS) return { kind: 'read', method: 'get', path: '/dev/v1/products?limit=20', key };
        const spec = write(c - READERS, i);
        specs.set(spec.idempotencyKey!, spec);
        return spec;
      },
      pauseMs: 10,
      maxRequests: 3_000,
      hardDeadline: Date.now() + 45_000,
      keepGoing: () => server!.alive(),
    });
    const firstWriteAfter = async (since: number, withinMs: number) => {
      const [order, copy] = await Promise.all([
        load.firstSuccessAfter('order', since, withinMs),
        load.firstSuccessAfter('duplicate', since, withinMs),
      ]);
      return order === undefined || copy === undefined ? undefined : Math.max(order, copy);
    };

    const timeline: Record<string, number> = {};
    const restarts: { ms: number; writeRecoveredMs: number | undefined }[] = [];
    let recoveredRead: number | undefined;
    let recoveredWrite: number | undefined;
    try {
      // The load is running and both kinds of write are acknowledged before anything is restarted (on a busy machine
      // the first ones take longer than a second: wait for them, bounded).
      expect(await firstWriteAfter(0, 20_000)).toBeDefined();
      await sleep(500);

      // A restart catches some pool clients checked out between two statements of a transaction: a few restarts
      // make it near certain that a transaction dies half done.
      for (let r = 0; r < 3; r++) {
        const called = Date.now();
        await pg!.restart();
        const done = Date.now();
        const recovered = await firstWriteAfter(done, 10_000);
        restarts.push({ ms: done - called, writeRecoveredMs: recovered && recovered - done });
        await sleep(700);
      }

      timeline.stopCalled = Date.now();
      await pg!.stop('fast');
      timeline.stopped = Date.now();
      await sleep(2_000);
      timeline.startCalled = Date.now();
      await pg!.start();
      timeline.started = Date.now();
      recoveredRead = await load.firstSuccessAfter('read', timeline.started, 10_000);
      recoveredWrite = await firstWriteAfter(timeline.started, 10_000);
      await sleep(1_000);
    } finally {
      await load.stop();
    }

    const outcomes = load.outcomes;
    const reads = outcomes.filter((o) => o.kind === 'read');
    const writes = outcomes.filter((o) => writeKinds.has(o.kind));
    const count = (list: Outcome[], f: (o: Outcome) => boolean) => list.filter(f).length;
    const whileDown = outcomes.filter((o) => o.started >= timeline.stopped! && o.ended <= timeline.startCalled!);
    const acknowledged = writes.filter((o) => o.status === 201);
    const unavailable = outcomes.filter((o) => o.status === 503);
    const loadSeconds =
      (Math.max(...outcomes.map((o) => o.ended)) - Math.min(...outcomes.map((o) => o.started))) / 1000;
    console.log(
      `postgres-restart: ${JSON.stringify({
        clients: { readers: READERS, writers: WRITERS },
        load_s: loadSeconds,
        requests: outcomes.length,
        statuses: statusCounts(outcomes),
        writes: { total: writes.length, '2xx': acknowledged.length, '503': count(writes, (o) => o.status === 503) },
        reads: {
          total: reads.length,
          '2xx': count(reads, (o) => o.status === 200),
          '503': count(reads, (o) => o.status === 503),
        },
        '503_with_retry_after': count(unavailable, (o) => Number(o.retryAfter) > 0),
        latency_ms: {
          p50: percentile(outcomes, 50),
          p99: percentile(outcomes, 99),
          max: Math.max(...outcomes.map(latency)),
        },
        restarts,
        while_stopped: { requests: whileDown.length, '503': count(whileDown, (o) => o.status === 503) },
        read_recovered_after_start_ms: recoveredRead && recoveredRead - timeline.started!,
        write_recovered_after_start_ms: recoveredWrite && recoveredWrite - timeline.started!,
      })}`,
    );

    // The process is alive and healthy.
    if (!server!.alive()) console.log(`server output:\n${server!.output().slice(-3000)}`);
    expect(server!.alive()).toBe(true);
    expect(server!.output()).not.toMatch(/uncaught|unhandled/i);
    expect((await fetch(`${server!.base}/healthz`)).status).toBe(200);

    // A sustained concurrent load: every writer wrote throughout, before and after the outage.
    expect(new Set(writes.map((o) => o.idempotencyKey!.split('-')[1])).size).toBe(WRITERS);
    expect(acknowledged.filter((o) => o.ended > timeline.started!).length).toBeGreaterThan(WRITERS);
    // Never a connection reset or timeout (a hang ends as a 10 s time-out), never a 500: only success or 503.
    expect(outcomes.filter((o) => o.error).map((o) => o.error)).toEqual([]);
    expect(
      outcomes.filter((o) => ![200, 201, 503].includes(o.status!)).map((o) => `${o.kind} ${o.status} ${o.code}`),
    ).toEqual([]);
    expect(outcomes.filter((o) => o.contract).map((o) => o.contract)).toEqual([]);
    // Every 503 is the envelope's SERVICE_UNAVAILABLE with a Retry-After.
    expect(unavailable.filter((o) => o.code !== 'SERVICE_UNAVAILABLE' || !(Number(o.retryAfter) > 0))).toEqual([]);
    // While PostgreSQL was stopped, requests were made, and every one of them was a 503.
    expect(whileDown.length).toBeGreaterThan(0);
    expect(whileDown.filter((o) => o.status !== 503).map((o) => `${o.kind} ${o.status ?? o.error}`)).toEqual([]);

    // Success again within a few seconds of PostgreSQL being back.
    expect(restarts.filter((r) => r.writeRecoveredMs === undefined)).toEqual([]);
    expect(recoveredRead! - timeline.started!).toBeLessThan(5_000);
    expect(recoveredWrite! - timeline.started!).toBeLessThan(5_000);
    for (let i = 0; i < 10; i++)
      expect(
        (await send(server!.base, { kind: 'read', method: 'get', path: '/dev/v1/products?limit=20', key })).status,
      ).toBe(200);

    // Retrying every write that was not acknowledged, with its own key and body, gets a final answer: the key was not
    // left `processing` (a request that died with the database stopped renewing its lease, which lapsed meanwhile).
    const processingBeforeRetry = await countProcessing();
    const unacknowledged = writes.filter((o) => o.status !== 201);
    const retried: Outcome[] = [];
    let stillProcessing = 0;
    const retryStarted = Date.now();
    const retryDeadline = retryStarted + 25_000;
    const queue = [...unacknowledged];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let o = queue.shift(); o; o = queue.shift()) {
          let last: Outcome | undefined;
          for (let attempt = 0; attempt < 20 && Date.now() < retryDeadline; attempt++) {
            last = await send(server!.base, specs.get(o.idempotencyKey!)!);
            if (last.status !== 409 && last.status !== 503) break;
            if (last.status === 409) stillProcessing++;
            await sleep(500);
          }
          if (last) retried.push(last);
        }
      }),
    );
    console.log(
      `postgres-restart retries: ${JSON.stringify({
        keys_processing_before_retry: processingBeforeRetry,
        retried_keys: unacknowledged.length,
        answered_201: count(retried, (o) => o.status === 201),
        replayed_cached: count(retried, (o) => o.idempotencyStatus === 'cached'),
        in_progress_answers_before_takeover: stillProcessing,
        retry_ms: Date.now() - retryStarted,
      })}`,
    );
    expect(retried.length).toBe(unacknowledged.length);
    expect(retried.filter((o) => o.status !== 201).map((o) => `${o.idempotencyKey} ${o.status} ${o.code}`)).toEqual([]);

    const handle = openPostgres(dbUrl, { max: 1 });
    try {
      // Every write acknowledged with a 2xx is in the database.
      const ackedProducts = acknowledged.filter((o) => o.kind === 'duplicate').map((o) => o.id!);
      const ackedOrders = acknowledged.filter((o) => o.kind === 'order').map((o) => o.id!);
      const products = (await handle.db.selectFrom('products').select('id').execute()).map((r) => r.id);
      const orders = (await handle.db.selectFrom('orders').select('id').execute()).map((r) => r.id);
      const missing = [
        ...ackedProducts.filter((id) => !products.includes(id)),
        ...ackedOrders.filter((id) => !orders.includes(id)),
      ];
      console.log(
        `postgres-restart database: ${JSON.stringify({
          acknowledged_writes: acknowledged.length,
          missing_in_database: missing.length,
          products_copied: products.length - sources.length,
          orders: orders.length,
          test_ms: Date.now() - testStarted,
        })}`,
      );
      expect(ackedProducts.length).toBeGreaterThan(0);
      expect(ackedOrders.length).toBeGreaterThan(0);
      expect(missing).toEqual([]);
      // No key is left `processing`, and every copy and order in the database is the recorded answer of exactly one
      // key: nothing was written twice, nothing written without an answer on record.
      expect(await countProcessing()).toBe(0);
      const recorded = await handle.db
        .selectFrom('idempotency_keys')
        .select(['credential_id', 'operation_id', 'key', 'response_status', 'response_body'])
        .where('state', '=', 'completed')
        .execute();
      // Stored bodies are sealed (src/platform/idempotency.ts): open them with the deployment's box.
      const box = await loadSecretBox(handle.db, undefined);
      const recordedIds = recorded
        .filter((r) => r.response_status === 201)
        .map((r) => {
          const scope = { credentialId: r.credential_id, operationId: r.operation_id, key: r.key };
          expect(r.response_body!.startsWith('sealed:v1:')).toBe(true);
          return (JSON.parse(openStoredBody(box, scope, r.response_body!)) as { data: { id: string } }).data.id;
        })
        .sort();
      const written = [...products.filter((id) => !sources.includes(id)), ...orders].sort();
      expect(written).toEqual(recordedIds);
    } finally {
      await handle.close();
    }
  }, 100_000);
});
