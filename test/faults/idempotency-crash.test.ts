// Fault test: idempotency keys of a server that dies are free within a lease (src/platform/idempotency.ts), while a
// live server's slow request keeps its key. Real server processes (`src/server.ts`, test/helpers/server-process.ts)
// share one database, as instances behind a load balancer do. A request is made to block inside its transaction by
// a row lock this test holds from its own connection (POST /products/{id}/duplicate locks its source product).
//
// 1. A live slow request: blocked for three lease periods on server A while server B is asked for the same key every
//    250 ms. B answers 409 IDEMPOTENCY_IN_PROGRESS every time (the lease in the row is renewed by A); once released,
//    A commits and B replays A's response; one copy.
// 2. A crash: three requests with keys block on A, A is SIGKILLed, and B is asked for each key every 200 ms. The time
//    from the kill to the first answer that is not 409 is how long a dead owner's key stays locked (the old lock
//    timeout made it 60 s). Then a restarted server replays the answers; every change applied exactly once.
// PostgreSQL run only (DATABASE_URL set): the server processes need a database they can share with this test.
import { sql } from 'kysely';
import { Client } from 'pg';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { send, sleep, type Outcome, type RequestSpec } from './load';
import { systemClock } from '../../src/platform/clock';
import { describeInPostgresRun } from '../helpers/postgres-run';

const describeWithPostgres = describeInPostgresRun(
  'idempotency-crash.test.ts',
  'it runs server processes of their own against a PostgreSQL database and ' +
    'holds row locks from a connection of its own, so it belongs to the PostgreSQL run (DATABASE_URL set); the ' +
    'embedded (PGlite) database cannot be shared with another process.',
);

/** The default lease (IDEMPOTENCY_LEASE_SECONDS): what a deployment gets. */
const LEASE_MS = 5_000;

describeWithPostgres('idempotency keys when their owner dies, or only runs slowly', () => {
  let database: TestDatabase;
  let dbName: string;
  let key: string;
  let shopId: string;
  let sources: string[];
  const servers: ServerProcess[] = [];
  let a: ServerProcess;
  let b: ServerProcess;
  let locker: Client;

  const env = {
    REDIS_URL: '',
    RATE_LIMIT_BUSINESS: '1000000',
    WEBHOOK_WORKER: 'off',
    // A request blocked for several leases must not be cancelled by the statement timeout (10 s by default).
    STATEMENT_TIMEOUT_MS: '60000',
  };
  const start = async () => {
    const server = await startServerProcess({ ...env, DATABASE_URL: database.url! }, 120_000);
    servers.push(server);
    return server;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    dbName = new URL(database.url!).pathname.slice(1);
    const shop = await admin.createShop(database.db, { name: 'Crash Shop', plan: 'business' });
    shopId = shop.id;
    key = (await admin.createApiKey(database.db, { shopId, scopes: ['*'] })).key;
    const row = (await shopById(database.db, shopId))!;
    const seeded = await database.db.transaction().execute((trx) =>
      seedFixtures(
        trx,
        row,
        {
          products: [0, 1, 2, 3].map((i) => ({ title: `Source ${i}`, slug: `source-${i}`, price: '5.00' })),
        },
        systemClock,
      ),
    );
    sources = seeded.products;
    locker = new Client({ connectionString: database.url });
    await locker.connect();
    [a, b] = await Promise.all([start(), start()]);
  }, 240_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.kill()));
    await locker?.end().catch(() => undefined);
    await database?.close();
  }, 60_000);

  const duplicate = (source: string, idempotencyKey: string): RequestSpec => ({
    kind: 'duplicate',
    method: 'post',
    path: `/dev/v1/products/${source}/duplicate`,
    key,
    idempotencyKey,
  });

  const copies = async () =>
    (await database.db.selectFrom('products').select('id').where('shop_id', '=', shopId).execute()).length -
    sources.length;

  /** Holds the given products' rows locked until the returned function commits. */
  async function lockProducts(ids: string[]): Promise<() => Promise<void>> {
    await locker.query('begin');
    await locker.query('select id from products where id = any($1) for update', [ids]);
    return async () => {
      await locker.query('commit');
    };
  }

  /** Resolves once `n` backends of this database wait for a lock (the requests are blocked where the test wants). */
  async function blockedRequests(n: number): Promise<void> {
    const started = Date.now();
    while (Date.now() - started < 30_000) {
      // Not through `locker`: inside its transaction pg_stat_activity would keep showing its first snapshot.
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = ${dbName} and wait_event_type = 'Lock'`.execute(database.db);
      if (rows[0]!.n >= n) return;
      await sleep(50);
    }
    throw new Error(`${n} requests never blocked`);
  }

  const leaseOf = async (idempotencyKey: string) =>
    (
      await database.db
        .selectFrom('idempotency_keys')
        .select(['state', 'lease_expires_at'])
        .where('key', '=', idempotencyKey)
        .executeTakeFirstOrThrow()
    ).lease_expires_at.getTime();

  test('a live slow request keeps its key for several leases: 409 from another server meanwhile, then its own answer, once', async () => {
    const source = sources[3]!;
    const spec = duplicate(source, 'slow-1');
    const release = await lockProducts([source]);
    let released = false;
    try {
      const first = send(a.base, spec, 60_000);
      await blockedRequests(1);
      const firstLease = await leaseOf('slow-1');
      const answers: Outcome[] = [];
      const started = Date.now();
      while (Date.now() - started < 3 * LEASE_MS + 1_000) {
        answers.push(await send(b.base, spec));
        await sleep(250);
      }
      // Every answer meanwhile, from a server that knows nothing of the owner but its lease in the row: wait.
      expect(answers.length).toBeGreaterThanOrEqual(20);
      expect(
        answers
          .filter(
            (o) => o.status !== 409 || o.code !== 'IDEMPOTENCY_IN_PROGRESS' || o.idempotencyStatus !== 'processing',
          )
          .map((o) => `${o.status} ${o.code ?? o.error} ${o.idempotencyStatus}`),
      ).toEqual([]);
      expect(answers.every((o) => o.retryAfter === '1' && !o.contract)).toBe(true);
      // The lease was renewed by the owner all along (each renewal moves it on), so it never lapsed.
      expect(await leaseOf('slow-1')).toBeGreaterThan(firstLease + 2 * LEASE_MS);
      expect(await copies()).toBe(0);
      released = true;
      await release();
      const done = await first;
      const replay = await send(b.base, spec);
      console.log(
        `idempotency-crash slow request: ${JSON.stringify({
          lease_s: LEASE_MS / 1000,
          blocked_ms: done.ended - done.started,
          answers_from_other_server_meanwhile: answers.length,
          in_progress_409: answers.filter((o) => o.status === 409).length,
          first_status: done.status,
          replay: replay.idempotencyStatus,
        })}`,
      );
      expect([done.status, done.idempotencyStatus]).toEqual([201, 'created']);
      expect([replay.status, replay.idempotencyStatus, replay.id]).toEqual([201, 'cached', done.id]);
      expect(await copies()).toBe(1);
    } finally {
      if (!released) await release();
    }
  }, 120_000);

  test('a SIGKILLed server leaves its in-flight keys locked for less than a lease, not 60 s; each change applied once', async () => {
    const before = await copies();
    const keys = ['crash-0', 'crash-1', 'crash-2'];
    const specs = keys.map((k, i) => duplicate(sources[i]!, k));
    const release = await lockProducts(sources.slice(0, 3));
    let released = false;
    let inFlight!: Promise<Outcome[]>;
    let killedAt!: number;
    try {
      inFlight = Promise.all(specs.map((spec) => send(a.base, spec, 60_000)));
      await blockedRequests(keys.length);
      // Held by a live owner: another server says wait.
      for (const spec of specs) expect((await send(b.base, spec)).status).toBe(409);

      await a.kill();
      killedAt = Date.now();
      // The dead server's transactions were blocked on this lock: let them go on, so nothing but the lease holds
      // the keys now. PostgreSQL rolls each back when it finds its client gone.
      released = true;
      await release();
    } finally {
      if (!released) await release();
    }
    const lost = await inFlight;
    expect(lost.every((o) => o.error !== undefined)).toBe(true); // the connections died with the server

    const measured = await Promise.all(
      specs.map(async (spec) => {
        let inProgress = 0;
        let lastInProgress = 0;
        for (;;) {
          const o = await send(b.base, spec);
          if (o.status !== 409)
            return { key: spec.idempotencyKey!, lockedMs: o.started - killedAt, lastInProgress, inProgress, o };
          lastInProgress = o.started - killedAt;
          expect([o.code, o.idempotencyStatus, o.retryAfter]).toEqual(['IDEMPOTENCY_IN_PROGRESS', 'processing', '1']);
          inProgress++;
          if (Date.now() - killedAt > 30_000)
            throw new Error(`${spec.idempotencyKey} still locked 30 s after the kill`);
          await sleep(200);
        }
      }),
    );
    console.log(
      `idempotency-crash SIGKILL: ${JSON.stringify({
        lease_s: LEASE_MS / 1000,
        renewal_every_ms: Math.floor(LEASE_MS / 3),
        keys: measured.map((m) => ({
          key: m.key,
          last_409_sent_after_kill_ms: m.lastInProgress,
          free_when_sent_after_kill_ms: m.lockedMs,
          in_progress_409: m.inProgress,
          then: `${m.o.status} ${m.o.idempotencyStatus}`,
        })),
      })}`,
    );
    for (const m of measured) {
      expect([m.o.status, m.o.idempotencyStatus]).toEqual([201, 'created']);
      // Locked while the dead owner's last renewal lasted (it renewed at most a third of a lease before dying), and
      // free within a lease of the kill (plus the retry's own interval and a loaded machine's slack).
      expect(m.inProgress).toBeGreaterThan(0);
      expect(m.lockedMs).toBeLessThanOrEqual(LEASE_MS + 2_000);
    }

    // A restarted server replays the answers; nothing was applied twice, nothing left processing.
    const restarted = await start();
    for (const m of measured) {
      const replay = await send(restarted.base, specs[keys.indexOf(m.key)]!);
      expect([replay.status, replay.idempotencyStatus, replay.id]).toEqual([201, 'cached', m.o.id]);
    }
    await sleep(500);
    expect(await copies()).toBe(before + keys.length);
    const processing = await database.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('state', '=', 'processing')
      .execute();
    expect(processing).toEqual([]);
    for (const s of [b, restarted]) expect(s.output()).not.toMatch(/uncaught|unhandled/i);
  }, 240_000);
});
