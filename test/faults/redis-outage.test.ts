// Fault test: the real server process serves a concurrent read and write load while its Redis (a redis-server this
// test starts on a port of its own, never the machine's shared one) is SIGKILLed and, a little later, started again
// on the same port. Redis only carries the rate-limit counters, so not one request may fail: every request gets its
// normal 2xx, /readyz says `degraded` meanwhile, and once Redis is back the counters live there again (proved by a
// counter set in Redis by hand that the server then enforces). PostgreSQL run only (DATABASE_URL set): the server
// process needs a database of its own that this test can share with it, which the embedded one is not.
import type { ChildProcess } from 'node:child_process';
import { createClient } from 'redis';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { freePort, startRedis } from '../helpers/redis-server';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { latency, percentile, send, sleep, startLoad, statusCounts, type RequestSpec } from './load';
import { systemClock } from '../../src/platform/clock';
import { describeInPostgresRun } from '../helpers/postgres-run';

const CLIENTS = 20;
const FREE_LIMIT = 50;
const describeWithPostgres = describeInPostgresRun(
  'redis-outage.test.ts',
  'it runs the server as a process of its own against a PostgreSQL database, so it ' +
    'belongs to the PostgreSQL run (DATABASE_URL set); the embedded (PGlite) database cannot be shared with it.',
);

async function waitFor(what: string, check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (await check().catch(() => false)) return Date.now();
    await sleep(50);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

describeWithPostgres('Redis killed and restored under load', () => {
  let database: TestDatabase;
  let redis: ChildProcess | undefined;
  let redisPort: number;
  let server: ServerProcess | undefined;
  let probe: ReturnType<typeof createClient> | undefined;
  let key: string;
  let shopId: string;
  let freeKey: string;
  let freeShopId: string;
  let products: string[];

  const readyz = async () =>
    (await (await fetch(`${server!.base}/readyz`, { signal: AbortSignal.timeout(5_000) })).json()) as {
      status: string;
      redis: string;
    };

  beforeAll(async () => {
    database = await createTestDatabase();
    const shop = await admin.createShop(database.db, { name: 'Redis Shop', plan: 'business' });
    shopId = shop.id;
    key = (await admin.createApiKey(database.db, { shopId, scopes: ['*'] })).key;
    const row = (await shopById(database.db, shopId))!;
    const seeded = await database.db.transaction().execute((trx) =>
      seedFixtures(
        trx,
        row,
        {
          products: [1, 2, 3, 4].map((i) => ({ title: `Item ${i}`, slug: `item-${i}`, price: '3.00' })),
        },
        systemClock,
      ),
    );
    products = seeded.products;
    const free = await admin.createShop(database.db, { name: 'Small Shop', plan: 'free' });
    freeShopId = free.id;
    freeKey = (await admin.createApiKey(database.db, { shopId: freeShopId, scopes: ['*'] })).key;

    redisPort = await freePort();
    redis = await startRedis(redisPort);
    const url = `redis://127.0.0.1:${redisPort}`;
    probe = createClient({ url, socket: { reconnectStrategy: 100 } });
    probe.on('error', () => undefined); // it sees the outage too; that is the point
    await probe.connect();
    server = await startServerProcess({
      DATABASE_URL: database.url!,
      REDIS_URL: url,
      RATE_LIMIT_BUSINESS: '1000000',
      RATE_LIMIT_FREE: String(FREE_LIMIT),
      WEBHOOK_WORKER: 'off',
    });
    await waitFor('readyz to show redis up', async () => (await readyz()).redis === 'up', 15_000);
  }, 90_000);

  afterAll(async () => {
    await server?.kill();
    await probe?.close().catch(() => undefined);
    redis?.kill('SIGKILL');
    await database?.close();
  }, 60_000);

  test('no request fails while Redis is killed and restarted; limiting resumes through the new Redis', async () => {
    let seq = 0;
    const next = (c: number, i: number): RequestSpec => {
      const product = products[c % products.length]!;
      if (c % 2 === 0) return { kind: 'read', method: 'get', path: '/dev/v1/products?limit=10', key };
      return i % 2 === 0
        ? {
            kind: 'order',
            method: 'post',
            path: '/dev/v1/orders',
            key,
            idempotencyKey: `redis-${c}-${i}`,
            body: { email: `buyer${seq++}@example.com`, items: [{ product_id: product, quantity: 1 }] },
          }
        : { kind: 'list', method: 'get', path: '/dev/v1/orders?limit=5', key };
    };
    const load = startLoad(server!.base, {
      clients: CLIENTS,
      next,
      pauseMs: 5,
      maxRequests: 2_000,
      hardDeadline: Date.now() + 45_000,
      keepGoing: () => server!.alive(),
    });
    const timeline: Record<string, number> = {};
    const readyzWhileDown: string[] = [];
    let countedBefore: number | undefined;
    try {
      await load.firstSuccessAfter('order', 0, 20_000);
      await sleep(1_000);
      countedBefore = Number(await probe!.get(`rl:shop:${shopId}`));

      timeline.kill = Date.now();
      redis!.kill('SIGKILL');
      await new Promise((r) => redis!.once('exit', r));
      timeline.dead = Date.now();
      timeline.degraded = await waitFor(
        'readyz to show redis down',
        async () => (await readyz()).redis === 'down',
        10_000,
      );
      for (let i = 0; i < 10; i++) {
        const body = await readyz();
        readyzWhileDown.push(`${body.status}/${body.redis}`);
        await sleep(200);
      }
      timeline.restart = Date.now();
      redis = await startRedis(redisPort);
      timeline.restarted = Date.now();
      timeline.up = await waitFor('readyz to show redis up again', async () => (await readyz()).redis === 'up', 15_000);
      timeline.counting = await waitFor(
        'the new Redis to count the load',
        async () => probe!.isReady && Number(await probe!.get(`rl:shop:${shopId}`)) > 0,
        15_000,
      );
      await sleep(1_500);
    } finally {
      await load.stop();
    }

    const outcomes = load.outcomes;
    const whileDown = outcomes.filter((o) => o.started >= timeline.dead! && o.ended <= timeline.restarted!);
    const afterUp = outcomes.filter((o) => o.started >= timeline.up!);
    const countedAfter = Number(await probe!.get(`rl:shop:${shopId}`));
    console.log(
      `redis-outage: ${JSON.stringify({
        clients: CLIENTS,
        requests: outcomes.length,
        statuses: statusCounts(outcomes),
        by_kind: Object.fromEntries(
          ['read', 'list', 'order'].map((k) => [k, outcomes.filter((o) => o.kind === k).length]),
        ),
        while_redis_down: whileDown.length,
        after_redis_up: afterUp.length,
        latency_ms: {
          p50: percentile(outcomes, 50),
          p99: percentile(outcomes, 99),
          max: Math.max(...outcomes.map(latency)),
        },
        readyz_degraded_after_kill_ms: timeline.degraded! - timeline.dead!,
        down_ms: timeline.restarted! - timeline.dead!,
        readyz_up_after_restart_ms: timeline.up! - timeline.restarted!,
        counting_in_new_redis_after_restart_ms: timeline.counting! - timeline.restarted!,
        counter_before_kill: countedBefore,
        counter_in_new_redis: countedAfter,
      })}`,
    );

    expect(server!.alive()).toBe(true);
    expect(server!.output()).not.toMatch(/uncaught|unhandled/i);
    // Not one failed request: no network error, every answer its normal 2xx and as the contract says.
    expect(outcomes.filter((o) => o.error).map((o) => o.error)).toEqual([]);
    expect(
      outcomes
        .filter((o) => o.status !== (o.kind === 'order' ? 201 : 200))
        .map((o) => `${o.kind} ${o.status} ${o.code}`),
    ).toEqual([]);
    expect(outcomes.filter((o) => o.contract).map((o) => o.contract)).toEqual([]);
    // The load really ran across the outage, on both sides of it.
    expect(outcomes.filter((o) => o.ended < timeline.kill!).length).toBeGreaterThan(CLIENTS);
    expect(whileDown.length).toBeGreaterThan(CLIENTS);
    expect(afterUp.length).toBeGreaterThan(CLIENTS);
    // Counted in Redis before the kill; readyz said degraded (still 200, still serving) while it was away.
    expect(countedBefore!).toBeGreaterThan(0);
    expect(readyzWhileDown).toEqual(Array(10).fill('degraded/down'));
    expect(await readyz()).toMatchObject({ status: 'ready', redis: 'up' });
    // A fresh Redis counts only what came after it: at least one request, at most all those that started after it.
    expect(countedAfter).toBeGreaterThan(0);
    expect(countedAfter).toBeLessThanOrEqual(outcomes.filter((o) => o.ended >= timeline.restart!).length);

    // Limiting goes through the new Redis: a counter placed there by hand is what the server enforces (its memory
    // fallback has never seen this shop, so only Redis can make these requests 429).
    const free = (): RequestSpec => ({ kind: 'me', method: 'get', path: '/dev/v1/me', key: freeKey });
    const first = await send(server!.base, free());
    expect(first.status).toBe(200);
    expect(Number(await probe!.get(`rl:shop:${freeShopId}`))).toBe(1);
    await probe!.set(`rl:shop:${freeShopId}`, String(FREE_LIMIT), { KEEPTTL: true });
    const limited = await send(server!.base, free());
    expect({ status: limited.status, code: limited.code, contract: limited.contract }).toEqual({
      status: 429,
      code: 'RATE_LIMITED',
      contract: undefined,
    });
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
  }, 90_000);
});
