// Topology test: everything the server, the worker and the CLI send goes through PgBouncer in transaction mode
// (Debian 12's 1.18, which has no support for protocol-level named prepared statements there) with a pool of 4
// server connections shared by every process, while migrations take the direct connection DATABASE_MIGRATION_URL
// names. The test starts its own PostgreSQL (own port, every statement logged) and its own PgBouncer; the machine's
// shared instance is never touched. Besides the API's answers and the rows left behind, the primary's statement log
// is the evidence: nothing the pooled clients sent is a named prepared statement, a session SET, a session advisory
// lock, LISTEN/NOTIFY or a temporary table. PostgreSQL run only (DATABASE_URL set): the embedded run has no server.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openPostgres, type DatabaseHandle } from '../../db/database';
import { inProcessCli, processCli } from '../helpers/cli';
import { approveCode, equipShop, exchangeCode, succeeded } from '../helpers/operator-shop';
import {
  pgBinDir,
  pgBouncerBin,
  startOwnPostgres,
  startPgBouncer,
  type OwnPgBouncer,
  type OwnPostgres,
} from '../helpers/pg-cluster';
import { startServerProcess, startWorkerProcess, type ServerProcess } from '../helpers/server-process';
import { Receiver } from '../helpers/webhook-receiver';
import { send, sleep, type Outcome, type RequestSpec } from '../faults/load';
import { describeInPostgresRun } from '../helpers/postgres-run';

const POOL_SIZE = 4;
const ORDERS = 60;
const COMPLETIONS = 10;
/** application_name of the connections that do not go through the pooler, so the log tells them apart. */
const MIGRATION_APP = 'direct-migration';
const CHECK_APP = 'test-check';

/** One statement (or error) of the primary's log, with the application_name of the session that sent it. */
interface LogEntry {
  app: string;
  level: string;
  message: string;
}

/** The primary's log as entries (log_line_prefix `@@%a@@`; a statement's further lines belong to it). */
function logEntries(text: string): LogEntry[] {
  return text
    .split(/\n(?=@@)/)
    .map((chunk) => /^@@([^@]*)@@(\w+):\s+([\s\S]*)$/.exec(chunk))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ app: m[1]!, level: m[2]!, message: m[3]! }));
}

/** What a statement does that survives its transaction behind a pooler (or `undefined` if nothing). */
function sessionState(message: string): string | undefined {
  const named = /^execute (?!<unnamed>)([^:]+):/.exec(message);
  if (named) return `named prepared statement ${named[1]}`;
  const text = message.replace(/^(statement|execute <unnamed>): /, '');
  for (const part of text.split(';').map((s) => s.trim().toLowerCase())) {
    // PgBouncer itself sets the parameters it tracks per client on the server connection it lends.
    if (
      /^set\s+(?!local\b|transaction\b)(?!(client_encoding|datestyle|timezone|standard_conforming_strings|application_name)\b)/.test(
        part,
      )
    )
      return `session SET: ${part}`;
    if (/^(listen|unlisten|notify)\b/.test(part)) return `LISTEN/NOTIFY: ${part}`;
    if (/^create\s+(temp|temporary)\b/.test(part)) return `temporary table: ${part}`;
    if (/\bwith\s+hold\b/.test(part)) return `cursor WITH HOLD: ${part}`;
  }
  if (/pg_(try_)?advisory_(un)?lock(_shared)?\s*\(/i.test(text)) return `session advisory lock: ${text.slice(0, 120)}`;
  return undefined;
}

const describeWithPostgres = describeInPostgresRun(
  'pgbouncer.test.ts',
  'it starts a PostgreSQL and a PgBouncer of its own, so it belongs to the PostgreSQL ' +
    'run (DATABASE_URL set, PostgreSQL and pgbouncer installed); the embedded (PGlite) run has no server to pool.',
);

describeWithPostgres('behind PgBouncer in transaction mode', () => {
  let pg: OwnPostgres | undefined;
  let bouncer: OwnPgBouncer | undefined;
  let server: ServerProcess | undefined;
  let worker: ServerProcess | undefined;
  let check: DatabaseHandle | undefined;
  let pooled: DatabaseHandle | undefined;
  const receiver = new Receiver();
  let shopId: string;
  let key: string;
  let testKey: string;
  let products: string[];
  let testProducts: string[];
  let app: { client_id: string; client_secret: string };
  const setupMs: Record<string, number> = {};

  beforeAll(async () => {
    if (!pgBinDir) throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR');
    if (!pgBouncerBin) throw new Error('pgbouncer not found: apt-get install -y pgbouncer (.ci/run does)');
    const t0 = Date.now();
    pg = await startOwnPostgres({
      prefix: 'mdapi-pooled-',
      settings: { log_statement: 'all', log_line_prefix: '@@%a@@', log_error_verbosity: 'terse' },
    });
    const direct = await pg.createDatabase('mdapi');
    bouncer = await startPgBouncer(pg, { poolMode: 'transaction', defaultPoolSize: POOL_SIZE });
    setupMs.postgres_and_pgbouncer = Date.now() - t0;
    receiver.down = false;
    await receiver.start(0);

    const env: Record<string, string> = {
      DATABASE_URL: bouncer.url('mdapi'),
      DATABASE_MIGRATION_URL: `${direct}?application_name=${MIGRATION_APP}`,
      // PgBouncer 1.18 cannot keep prepared statements: everything unnamed, as docs/deployment.md says.
      DATABASE_NAMED_STATEMENTS: 'off',
      REDIS_URL: '',
      RATE_LIMIT_BUSINESS: '1000000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
    };
    // The first command, as an operator runs it (a process of its own), finds the database empty: it migrates, on the
    // direct connection. The others run the same CLI code in this process (a process each costs seconds) on a pool
    // through PgBouncer.
    const t1 = Date.now();
    const shop = await processCli({ ...process.env, ...env })(
      'shop',
      'create',
      '--name',
      'Pooled Shop',
      '--plan',
      'business',
    );
    succeeded(shop);
    shopId = shop.json.id;
    pooled = openPostgres(bouncer.url('mdapi'), { max: 4, namedStatements: false });
    ({ key, testKey, products, testProducts, app } = await equipShop(
      inProcessCli(pooled, { ...process.env, ...env }),
      shopId,
      {
        dir: pg.dir,
        fixtures: {
          products: [1, 2, 3, 4].map((i) => ({ title: `Pooled ${i}`, slug: `pooled-${i}`, price: '4.00' })),
        },
        webhookUrl: `http://127.0.0.1:${receiver.port}/hook`,
        events: ['order:created', 'order:completed'],
        appName: 'Pooled App',
      },
    ));
    setupMs.cli = Date.now() - t1;

    const t2 = Date.now();
    [server, worker] = await Promise.all([
      startServerProcess({ ...env, WEBHOOK_WORKER: 'off' }),
      startWorkerProcess(env),
    ]);
    setupMs.processes = Date.now() - t2;
    check = openPostgres(`${direct}?application_name=${CHECK_APP}`, { max: 2 });
  }, 150_000);

  afterAll(async () => {
    await worker?.kill();
    await server?.kill();
    await check?.close();
    await pooled?.close();
    await receiver.stop();
    await bouncer?.destroy();
    await pg?.destroy();
  }, 60_000);

  test('orders, replays, completions, OAuth, a test clock and webhooks: each once, nothing of a session used', async () => {
    const started = Date.now();
    const base = server!.base;
    const order = (i: number): RequestSpec => ({
      kind: 'order',
      method: 'post',
      path: '/dev/v1/orders',
      key,
      idempotencyKey: `pooled-${i}`,
      body: { email: `buyer${i}@example.com`, items: [{ product_id: products[i % products.length], quantity: 1 }] },
    });

    // PgBouncer's pools while the burst runs: how many clients shared how many server connections.
    const seen = { clients: 0, waiting: 0, servers: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const pool = (await bouncer!.admin('SHOW POOLS')).find((p) => p.database === 'mdapi');
        if (pool) {
          const n = (k: string) => Number(pool[k] ?? 0);
          seen.clients = Math.max(seen.clients, n('cl_active') + n('cl_waiting'));
          seen.waiting = Math.max(seen.waiting, n('cl_waiting'));
          seen.servers = Math.max(seen.servers, n('sv_active') + n('sv_idle') + n('sv_used') + n('sv_login'));
        }
        await sleep(20);
      }
    })();

    const created = await Promise.all(Array.from({ length: ORDERS }, (_, i) => send(base, order(i))));
    const replayed = await Promise.all(Array.from({ length: ORDERS }, (_, i) => send(base, order(i))));
    const ids = created.map((o) => o.id!);
    const completed = await Promise.all(
      ids
        .slice(0, COMPLETIONS)
        .map((id) =>
          send(base, { kind: 'complete', method: 'post', path: `/dev/v1/orders/${id}/complete`, key, body: {} }),
        ),
    );
    const list = await send(base, { kind: 'list', method: 'get', path: '/dev/v1/orders?limit=100', key });
    sampling = false;
    await sampler;

    // OAuth: a code approved with the key, exchanged for a token, which then reads.
    const { approved, code } = await approveCode(base, key, app);
    const exchanged = await exchangeCode(base, app, code!);
    const readWithToken = await send(base, {
      kind: 'oauth-read',
      method: 'get',
      path: '/dev/v1/orders?limit=5',
      key: exchanged.accessToken!,
    });

    // A test clock: a test order left unpaid, the clock moved past its expiry, the worker voids it on the new time.
    const testOrder = await send(base, {
      kind: 'test-order',
      method: 'post',
      path: '/dev/v1/orders',
      key: testKey,
      idempotencyKey: 'pooled-test-order',
      body: { email: 'tester@example.com', items: [{ product_id: testProducts[0], quantity: 1 }] },
    });
    const advanced = await send(base, {
      kind: 'advance',
      method: 'post',
      path: '/dev/v1/me/test-clock/advance',
      key: testKey,
      idempotencyKey: 'pooled-advance',
      body: { seconds: 2 * 3600 },
    });
    const testOrderStatus = async () =>
      (await check!.db.selectFrom('orders').select('status').where('id', '=', testOrder.id!).executeTakeFirst())
        ?.status;
    const voidBy = Date.now() + 30_000;
    while ((await testOrderStatus()) !== 'VOIDED' && Date.now() < voidBy) await sleep(200);

    // Webhooks: one order:created per order and one order:completed per completion, each delivered once.
    const hitsOf = (event: string) =>
      receiver.hits.filter((h) => (JSON.parse(h.body) as { event: string }).event === event);
    const deliverBy = Date.now() + 30_000;
    while (
      (hitsOf('order:created').length < ORDERS || hitsOf('order:completed').length < COMPLETIONS) &&
      Date.now() < deliverBy
    )
      await sleep(100);
    await sleep(1_000); // a duplicate would arrive now
    const deliveries = await check!.db
      .selectFrom('webhook_deliveries')
      .select(['status', sql<number>`count(*)::int`.as('n')])
      .groupBy('status')
      .execute();

    const all: Outcome[] = [...created, ...replayed, ...completed, list, approved, readWithToken, testOrder, advanced];
    const servers = await bouncer!.admin('SHOW SERVERS');
    const stats = (await bouncer!.admin('SHOW STATS')).find((s) => s.database === 'mdapi')!;

    // The primary's log: every statement the pooled clients sent, and what the direct migration sent.
    const entries = logEntries(readFileSync(join(pg!.dir, 'postgres.log'), 'utf8'));
    const pooled = entries.filter((e) => e.app !== MIGRATION_APP && e.app !== CHECK_APP);
    const pooledStatements = pooled.filter((e) => e.level === 'LOG' && /^(statement|execute)/.test(e.message));
    const migration = entries.filter((e) => e.app === MIGRATION_APP && e.level === 'LOG');
    const sessionUse = pooledStatements.map((e) => sessionState(e.message)).filter((s): s is string => s !== undefined);
    const pooledErrors = pooled.filter((e) => e.level === 'ERROR' || e.level === 'FATAL').map((e) => e.message);

    const dbOrders = await check!.db
      .selectFrom('orders')
      .select(['id', 'status'])
      .where('shop_id', '=', shopId)
      .execute();
    const summary = {
      setup_ms: setupMs,
      test_ms: Date.now() - started,
      pool: {
        default_pool_size: POOL_SIZE,
        max_clients_seen: seen.clients,
        max_waiting_seen: seen.waiting,
        max_servers_seen: seen.servers,
        servers_at_end: servers.length,
      },
      pgbouncer_transactions: Number(stats.total_xact_count),
      statuses: Object.fromEntries(
        [...new Set(all.map((o) => `${o.kind} ${o.status ?? o.error}`))].map((k) => [
          k,
          all.filter((o) => `${o.kind} ${o.status ?? o.error}` === k).length,
        ]),
      ),
      orders_in_database: dbOrders.length,
      webhooks: {
        hits: receiver.hits.length,
        unique_ids: new Set(receiver.hits.map((h) => h.id)).size,
        created: hitsOf('order:created').length,
        completed: hitsOf('order:completed').length,
        deliveries: Object.fromEntries(deliveries.map((d) => [d.status, d.n])),
      },
      log: {
        pooled_statements: pooledStatements.length,
        named_or_session_state: sessionUse.length,
        pooled_errors: pooledErrors,
        migration_statements: migration.length,
      },
    };
    console.log(`pgbouncer topology: ${JSON.stringify(summary)}`);

    // Every answer as the contract says and as expected.
    expect(all.filter((o) => o.contract || o.error).map((o) => o.contract ?? o.error)).toEqual([]);
    expect(created.map((o) => o.status)).toEqual(Array(ORDERS).fill(201));
    expect(created.map((o) => o.idempotencyStatus)).toEqual(Array(ORDERS).fill('created'));
    expect(new Set(ids).size).toBe(ORDERS);
    // Replays are the stored answers, identical.
    expect(replayed.map((o) => o.idempotencyStatus)).toEqual(Array(ORDERS).fill('cached'));
    expect(replayed.map((o) => [o.status, o.data])).toEqual(created.map((o) => [o.status, o.data]));
    expect(completed.map((o) => [o.status, o.data?.status])).toEqual(Array(COMPLETIONS).fill([200, 'COMPLETED']));
    expect(list.status).toBe(200);
    expect(approved.status).toBe(200);
    expect(exchanged.status).toBe(200);
    expect(readWithToken.status).toBe(200);
    expect([testOrder.status, advanced.status]).toEqual([201, 200]);
    expect(await testOrderStatus()).toBe('VOIDED');

    // Every acknowledged order exists once, and nothing else was written; the completions stuck.
    expect(dbOrders.map((o) => o.id).sort()).toEqual([...ids].sort());
    expect(
      dbOrders
        .filter((o) => o.status === 'COMPLETED')
        .map((o) => o.id)
        .sort(),
    ).toEqual(ids.slice(0, COMPLETIONS).sort());
    const keys = await check!.db
      .selectFrom('idempotency_keys')
      .select(['state', sql<number>`count(*)::int`.as('n')])
      .where('operation_id', '=', 'createOrder')
      .groupBy('state')
      .execute();
    expect(keys).toEqual([{ state: 'completed', n: ORDERS + 1 }]);

    // Each webhook delivered exactly once.
    expect(hitsOf('order:created').length).toBe(ORDERS);
    expect(hitsOf('order:completed').length).toBe(COMPLETIONS);
    expect(new Set(receiver.hits.map((h) => h.id)).size).toBe(receiver.hits.length);
    expect(deliveries).toEqual([{ status: 'SUCCEEDED', n: ORDERS + COMPLETIONS }]);

    // The pool was shared: more clients than server connections, never more servers than the pool.
    expect(seen.servers).toBeLessThanOrEqual(POOL_SIZE);
    expect(seen.clients).toBeGreaterThan(POOL_SIZE);
    expect(servers.length).toBeLessThanOrEqual(POOL_SIZE);

    // Nothing of a session: no named statement, session SET, session advisory lock, LISTEN or temporary table went
    // through the pooler; the migration's session lock went to the direct connection (so the check does see one).
    expect(pooledStatements.length).toBeGreaterThan(1_000);
    expect(sessionUse).toEqual([]);
    expect(migration.some((e) => sessionState(e.message)?.startsWith('session advisory lock'))).toBe(true);
    // (The one error expected there: the first CLI command's up-to-date check, before any migration table exists.)
    expect(pooledErrors.filter((m) => /prepared statement|portal|advisory/i.test(m))).toEqual([]);
    for (const p of [server!, worker!]) {
      expect(p.alive()).toBe(true);
      expect(p.output()).not.toMatch(/prepared statement|uncaught|unhandled/i);
    }
  }, 120_000);
});
