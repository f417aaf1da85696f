// Topology test (issue 38, point 3): the deployment docs/deployment.md describes, on this machine. A primary of the
// test's own, a streaming replica made from it with pg_basebackup (applying each commit 300 ms late, so a read sent
// there too early would miss the write), PgBouncer in transaction mode in front of the primary, a Redis of the test's
// own, and 2 API processes and 2 workers (`npm run worker`) through them; the first API process also runs the worker
// inside `npm start`, so both modes of the worker claim side by side. The machine's shared PostgreSQL and Redis are
// never touched.
//
// 20 writers create, complete and refund orders (every third one paid from the buyer's wallet) with Idempotency-Keys,
// each step on one API process and the read-back and the replay on the other, while a reader lists orders on both.
// A writer retries a request that got no answer or a 5xx/409/429 with the same key, as an integrator's client would,
// until it has an answer; what it got a 2xx for is "acknowledged". The load runs three times: steady, with the primary
// restarted behind PgBouncer, and with the replica stopped and started again. After each, from the primary itself:
// every acknowledged write exists exactly once, stock and serials and wallets equal their ledgers, every webhook is
// delivered at least once and counted for duplicates. Then the rate limit across the two processes and the OAuth and
// test-mode walls. PostgreSQL run only (DATABASE_URL set): the embedded run has no server to pool or replicate.
import type { ChildProcess } from 'node:child_process';
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import { openPostgres, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { inProcessCli } from '../helpers/cli';
import { approveCode, equipShop, exchangeCode, succeeded } from '../helpers/operator-shop';
import {
  pgBinDir,
  pgBouncerBin,
  primaryReplicationSettings,
  startOwnPostgres,
  startPgBouncer,
  startReplica,
  type OwnPgBouncer,
  type OwnPostgres,
} from '../helpers/pg-cluster';
import { freePort, startRedis } from '../helpers/redis-server';
import { startServerProcess, startWorkerProcess, type ServerProcess } from '../helpers/server-process';
import { Receiver } from '../helpers/webhook-receiver';
import { send, sleep, type Outcome, type RequestSpec } from '../faults/load';
import { describeInPostgresRun } from '../helpers/postgres-run';

const describeWithPostgres = describeInPostgresRun(
  'cluster.test.ts',
  'it starts a PostgreSQL primary, a streaming replica, a PgBouncer and a Redis of its ' +
    'own, so it belongs to the PostgreSQL run (DATABASE_URL set); the embedded run has no server to pool.',
);

const WRITERS = 20;
/** How long each phase starts new rounds; a round under way is finished. */
const PHASE_MS = 12_000;
/** A writer gives up on one request after this long without an answer (then the test fails: nothing may hang). */
const GIVE_UP_MS = 60_000;
const POOL_SIZE = 8;
const APPLY_DELAY_MS = 300;
const FREE_LIMIT = 30;
const SERVICE_STOCK = 100_000;
/**
 * Serials run out with throughput, not with the phases: the phases are timed, and three phases of 20 writers took
 * 1,504 orders in a run where 400 each (800) ran out in the third phase. Ample for several times that.
 */
const SERIALS_EACH = 2_000;
const WALLET = '1000.00';
const PRICE = '5.00';

type Fault = 'none' | 'primary restarted behind PgBouncer' | 'replica stopped and started';

/** One request as a writer saw it: every try, and the answer it settled on. */
interface Step {
  kind: 'create' | 'complete' | 'refund';
  writer: number;
  key: string;
  tries: Outcome[];
  final: Outcome;
  orderId?: string;
}

interface PhaseRecord {
  fault: Fault;
  /** Where each process's output and the receiver's hits stood when the phase began. */
  outputFrom: number[];
  hitsFrom: number;
  steps: Step[];
  /** Reads: the writer's read-back on the other process, the reader's lists, the replays. */
  reads: Outcome[];
  readBackMisses: string[];
  replayMismatches: string[];
  duration_ms: number;
  /** Where the two API processes' reads went (mdapi_db_reads_total, `target:reason`). */
  readTargets: Record<string, number>;
}

describeWithPostgres('2 API processes and 2 workers behind PgBouncer, reading from a streaming replica', () => {
  let primary: OwnPostgres | undefined;
  let replica: OwnPostgres | undefined;
  let bouncer: OwnPgBouncer | undefined;
  let redis: ChildProcess | undefined;
  let check: DatabaseHandle | undefined;
  const apis: ServerProcess[] = [];
  const workers: ServerProcess[] = [];
  const receiver = new Receiver();
  let shopId: string;
  let key: string;
  let testKey: string;
  let testProduct: string;
  let freeKey: string;
  /** A shop that writes nothing during the load: its reads are the replica's to serve. */
  let quietKey: string;
  const metricsPorts: number[] = [];
  let app: { client_id: string; client_secret: string };
  let services: string[];
  let serialProducts: string[];
  const phases: PhaseRecord[] = [];
  const summaries: Record<string, unknown>[] = [];

  beforeAll(async () => {
    if (!pgBinDir) throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR');
    if (!pgBouncerBin) throw new Error('pgbouncer not found: apt-get install -y pgbouncer (.ci/run does)');
    primary = await startOwnPostgres({ prefix: 'mdapi-cluster-', settings: primaryReplicationSettings });
    const direct = await primary.createDatabase('mdapi');
    check = openPostgres(direct, { max: 4 });
    await migrateToLatest(check.db);
    [replica, bouncer] = await Promise.all([
      startReplica(primary, { applyDelayMs: APPLY_DELAY_MS }),
      startPgBouncer(primary, { poolMode: 'transaction', defaultPoolSize: POOL_SIZE }),
    ]);
    const redisPort = await freePort();
    redis = await startRedis(redisPort);
    receiver.down = false;
    await receiver.start(0);

    const env: Record<string, string> = {
      DATABASE_URL: bouncer.url('mdapi'),
      DATABASE_MIGRATION_URL: direct,
      // PgBouncer 1.18 cannot keep prepared statements: everything unnamed, as docs/deployment.md says.
      DATABASE_NAMED_STATEMENTS: 'off',
      DATABASE_READ_URL: replica.url('mdapi'),
      REPLICA_MAX_LAG_MS: '5000',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      RATE_LIMIT_BUSINESS: '1000000',
      RATE_LIMIT_FREE: String(FREE_LIMIT),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
    };

    // The shop, its keys, catalog, buyers and webhook, as an operator makes them with the CLI (on the direct
    // connection: what is measured is the traffic of the processes below).
    const cli = inProcessCli(check, { ...process.env, ...env });
    const shop = succeeded(await cli('shop', 'create', '--name', 'Cluster Shop', '--plan', 'business'));
    shopId = shop.json.id;
    const fixtures = {
      products: [
        ...[1, 2, 3, 4].map((i) => ({ title: `Service ${i}`, type: 'SERVICE', price: PRICE, stock: SERVICE_STOCK })),
        ...[1, 2].map((i) => ({
          title: `Key ${i}`,
          type: 'SERIALS',
          price: PRICE,
          serials: Array.from({ length: SERIALS_EACH }, (_, s) => `K${i}-${String(s).padStart(4, '0')}`),
        })),
      ],
      customers: Array.from({ length: WRITERS }, (_, w) => ({ email: `w${w}@example.com`, wallet_balance: WALLET })),
    };
    const equipped = await equipShop(cli, shopId, {
      dir: primary.dir,
      fixtures,
      webhookUrl: `http://127.0.0.1:${receiver.port}/hook`,
      events: ['order:created', 'order:completed', 'order:refunded'],
      appName: 'Cluster App',
    });
    ({ key, testKey, app } = equipped);
    services = equipped.products.slice(0, 4);
    serialProducts = equipped.products.slice(4);
    testProduct = equipped.testProducts[0]!;
    const freeShop = succeeded(await cli('shop', 'create', '--name', 'Free Shop', '--plan', 'free'));
    freeKey = succeeded(await cli('key', 'create', '--shop', freeShop.json.id, '--scopes', '*')).json.key;
    // The quiet shop writes nothing during the load: its reads are the replica's.
    const quietShop = succeeded(await cli('shop', 'create', '--name', 'Quiet Shop', '--plan', 'business'));
    quietKey = succeeded(await cli('key', 'create', '--shop', quietShop.json.id, '--scopes', '*')).json.key;

    metricsPorts.push(await freePort(), await freePort());
    apis.push(
      ...(await Promise.all([
        // with the worker inside `npm start`
        startServerProcess({ ...env, METRICS_PORT: String(metricsPorts[0]) }),
        startServerProcess({ ...env, WEBHOOK_WORKER: 'off', METRICS_PORT: String(metricsPorts[1]) }),
      ])),
    );
    workers.push(...(await Promise.all([startWorkerProcess(env), startWorkerProcess(env)])));
  }, 180_000);

  afterAll(async () => {
    console.log(`cluster topology: ${JSON.stringify(summaries)}`);
    await Promise.all([...apis, ...workers].map((p) => p.kill()));
    await check?.close();
    await receiver.stop();
    redis?.kill('SIGKILL');
    await bouncer?.destroy();
    await replica?.destroy();
    await primary?.destroy();
  }, 60_000);

  /** Sends until an answer that is not a retry-later (no answer, 5xx, 409 in progress, 429), as a client would. */
  async function settle(base: () => string, spec: RequestSpec): Promise<{ tries: Outcome[]; final: Outcome }> {
    const tries: Outcome[] = [];
    const until = Date.now() + GIVE_UP_MS;
    for (;;) {
      const o = await send(base(), spec);
      tries.push(o);
      const again = o.error !== undefined || o.status! >= 500 || o.status === 409 || o.status === 429;
      if (!again || Date.now() > until) return { tries, final: o };
      await sleep(o.retryAfter ? Math.min(1_000, Number(o.retryAfter) * 1_000) : 200);
    }
  }

  /** One writer's round: create on one process, read back and replay on the other, complete, maybe refund. */
  async function round(phase: PhaseRecord, w: number, r: number): Promise<void> {
    const tag = `${phases.length}-${w}-${r}`;
    const [mine, other] = (w + r) % 2 === 0 ? [apis[0]!, apis[1]!] : [apis[1]!, apis[0]!];
    const wallet = r % 3 === 0;
    const product = wallet ? serialProducts[w % 2]! : [...services, ...serialProducts][(w + r) % 6]!;
    const createSpec: RequestSpec = {
      kind: 'create',
      method: 'post',
      path: '/dev/v1/orders',
      key,
      idempotencyKey: `create-${tag}`,
      body: {
        email: `w${w}@example.com`,
        items: [{ product_id: product, quantity: 1 }],
        ...(wallet ? { use_wallet_balance: true } : {}),
      },
    };
    const created = await settle(() => mine.base, createSpec);
    phase.steps.push({ kind: 'create', writer: w, key: createSpec.idempotencyKey!, ...created });
    const id = created.final.id;
    if (created.final.status !== 201 || !id) return;
    phase.steps[phase.steps.length - 1]!.orderId = id;

    // Read-your-writes on the process that did not write (it knows of the write through Redis).
    const readBack = await settle(() => other.base, {
      kind: 'read-back',
      method: 'get',
      path: `/dev/v1/orders/${id}`,
      key,
    });
    phase.reads.push(...readBack.tries);
    if (readBack.final.status !== 200)
      phase.readBackMisses.push(`${id}: ${readBack.final.status ?? readBack.final.error}`);
    // The replay on the other process is the first answer, byte for byte in its data.
    const replay = await settle(() => other.base, createSpec);
    phase.reads.push(...replay.tries);
    if (
      replay.final.status !== created.final.status ||
      replay.final.idempotencyStatus !== 'cached' ||
      JSON.stringify(replay.final.data) !== JSON.stringify(created.final.data)
    )
      phase.replayMismatches.push(
        `${createSpec.idempotencyKey}: ${replay.final.status} ${replay.final.idempotencyStatus}`,
      );

    if (created.final.data?.status !== 'COMPLETED') {
      const completeSpec: RequestSpec = {
        kind: 'complete',
        method: 'post',
        path: `/dev/v1/orders/${id}/complete`,
        key,
        idempotencyKey: `complete-${tag}`,
        body: {},
      };
      const completed = await settle(() => mine.base, completeSpec);
      phase.steps.push({ kind: 'complete', writer: w, key: completeSpec.idempotencyKey!, orderId: id, ...completed });
      if (completed.final.status !== 200) return;
    }
    if (r % 2 === 0) {
      const refundSpec: RequestSpec = {
        kind: 'refund',
        method: 'post',
        path: `/dev/v1/orders/${id}/refund`,
        key,
        idempotencyKey: `refund-${tag}`,
        body: { amount: '1.25', reason: 'cluster test' },
      };
      const refunded = await settle(() => other.base, refundSpec);
      phase.steps.push({ kind: 'refund', writer: w, key: refundSpec.idempotencyKey!, orderId: id, ...refunded });
    }
  }

  /** mdapi_db_reads_total of both API processes, summed: `target:reason` -> reads since they started. */
  async function readTargets(): Promise<Record<string, number>> {
    const sums: Record<string, number> = {};
    for (const port of metricsPorts) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      for (const m of text.matchAll(/^mdapi_db_reads_total\{([^}]*)\} (\d+)/gm)) {
        const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(m[1]!)?.[1];
        const series = `${label('target')}:${label('reason')}`;
        sums[series] = (sums[series] ?? 0) + Number(m[2]);
      }
    }
    return sums;
  }

  /** The load for PHASE_MS with `fault` done in its middle; resolves when every writer and the reader stopped. */
  async function runPhase(fault: Fault, inject: () => Promise<void>): Promise<PhaseRecord> {
    const phase: PhaseRecord = {
      fault,
      outputFrom: [...apis, ...workers].map((p) => p.output().length),
      hitsFrom: receiver.hits.length,
      steps: [],
      reads: [],
      readBackMisses: [],
      replayMismatches: [],
      duration_ms: 0,
      readTargets: {},
    };
    phases.push(phase);
    const readsBefore = await readTargets();
    const started = Date.now();
    const stopAt = started + PHASE_MS;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let r = 0; Date.now() < stopAt; r++) await round(phase, w, r);
    });
    const reader = (async () => {
      for (let i = 0; Date.now() < stopAt; i++) {
        // The busy shop's lists go to the primary (it has just written); the quiet shop's to the replica.
        phase.reads.push(
          await send(apis[i % 2]!.base, {
            kind: i % 4 < 2 ? 'list' : 'quiet-list',
            method: 'get',
            path: '/dev/v1/orders?limit=20',
            key: i % 4 < 2 ? key : quietKey,
          }),
        );
        await sleep(20);
      }
    })();
    await sleep(PHASE_MS / 3);
    await inject();
    await Promise.all([...writers, reader]);
    phase.duration_ms = Date.now() - started;
    for (const [series, n] of Object.entries(await readTargets()))
      if (n !== (readsBefore[series] ?? 0)) phase.readTargets[series] = n - (readsBefore[series] ?? 0);
    return phase;
  }

  /** Waits until no delivery is left to make, then counts what the receiver got against what was to be sent. */
  async function webhookCounts(phase: PhaseRecord) {
    const until = Date.now() + 90_000;
    let open = Infinity;
    while (open > 0 && Date.now() < until) {
      const r = await check!.db
        .selectFrom('webhook_deliveries')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', '!=', 'SUCCEEDED')
        .executeTakeFirstOrThrow();
      open = r.n;
      if (open > 0) await sleep(250);
    }
    await sleep(1_000); // a late duplicate would arrive now
    const deliveries = await check!.db
      .selectFrom('webhook_deliveries')
      .select(['event_id', 'status'])
      .where('shop_id', '=', shopId)
      .execute();
    const hitsPerEvent = new Map<string, number>();
    for (const h of receiver.hits) hitsPerEvent.set(h.id, (hitsPerEvent.get(h.id) ?? 0) + 1);
    const events = await check!.db
      .selectFrom('events')
      .select(['id', 'type'])
      .where('shop_id', '=', shopId)
      .where('type', 'in', ['order:created', 'order:completed', 'order:refunded'])
      .execute();
    // A send the receiver got twice is either one whose outcome could not be recorded (the attempt in flight when
    // the primary went away: at least once, by design) or a delivery made twice knowingly (two workers, or a
    // delivered one sent again): the second shows as two recorded successful attempts of one event.
    const recordedTwice = await sql<{ n: number }>`
      select count(*)::int as n from (select event_id from webhook_attempts where shop_id = ${shopId}
        and status = 'SUCCEEDED' group by event_id having count(*) > 1) x`.execute(check!.db);
    return {
      events: events.length,
      deliveries: deliveries.length,
      not_succeeded: deliveries.filter((d) => d.status !== 'SUCCEEDED').length,
      events_without_delivery: events.filter((e) => !deliveries.some((d) => d.event_id === e.id)).length,
      never_received: deliveries.filter((d) => !hitsPerEvent.has(d.event_id)).length,
      received: receiver.hits.length,
      duplicates: [...hitsPerEvent.values()].reduce((n, hits) => n + hits - 1, 0),
      /** Sends in this phase of an event the receiver already had (from this phase or before). */
      duplicates_this_phase: receiver.hits
        .slice(phase.hitsFrom)
        .filter((h, i) => receiver.hits.findIndex((x) => x.id === h.id) < phase.hitsFrom + i).length,
      delivered_twice_knowingly: recordedTwice.rows[0]!.n,
      answered_non_2xx: receiver.hits.filter((h) => h.answered !== 204).length,
    };
  }

  /** Everything acknowledged so far against the primary's rows, and the ledgers against their balances. */
  async function invariants() {
    const steps = phases.flatMap((p) => p.steps);
    const acked = (kind: Step['kind']) => steps.filter((s) => s.kind === kind && s.final.status! < 300);
    const createdIds = acked('create').map((s) => s.orderId!);
    const orders = await check!.db
      .selectFrom('orders')
      .select(['id', 'status', 'refunded', 'total'])
      .where('shop_id', '=', shopId)
      .execute();
    const inDb = new Set(orders.map((o) => o.id));
    const refundRows = await check!.db
      .selectFrom('refunds')
      .select(['order_id', sql<number>`count(*)::int`.as('n'), sql<string>`sum(amount)::text`.as('sum')])
      .where('shop_id', '=', shopId)
      .groupBy('order_id')
      .execute();
    const ackedRefunds = new Map<string, number>();
    for (const s of acked('refund')) ackedRefunds.set(s.orderId!, (ackedRefunds.get(s.orderId!) ?? 0) + 1);
    const completedIds = new Set([
      ...acked('complete').map((s) => s.orderId!),
      ...acked('create')
        .filter((s) => s.final.data?.status === 'COMPLETED')
        .map((s) => s.orderId!),
    ]);
    const done = new Set(['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED']);

    // Stock: counted services hold what the orders that were not voided took; serials are each held by one item.
    const stock = await sql<{ id: string; type: string; stock: number; taken: number; serials_held: number }>`
      select p.id, p.type, p.stock,
        coalesce((select sum(i.quantity) from order_items i join orders o on o.shop_id = i.shop_id and o.id = i.order_id
          where i.shop_id = p.shop_id and i.product_id = p.id and o.status <> 'VOIDED'), 0)::int as taken,
        (select count(*) from product_serials s where s.shop_id = p.shop_id and s.product_id = p.id
          and s.order_item_id is not null)::int as serials_held
      from products p where p.shop_id = ${shopId}`.execute(check!.db);
    const stockMismatches = stock.rows.filter((p) =>
      p.type === 'SERVICE' ? p.stock !== SERVICE_STOCK - p.taken : p.serials_held !== p.taken,
    );
    const serialsTwice = await sql<{ n: number }>`
      select count(*)::int as n from (select order_item_id from product_serials where shop_id = ${shopId}
        and order_item_id is not null group by order_item_id having count(*) > 1) x`.execute(check!.db);
    // Wallets: the cached balance is the ledger's sum; the hold fits in it; nothing left held once all completed.
    const wallets = await sql<{ email: string; balance: string; held: string; sum: string }>`
      select c.email, c.wallet_balance::text as balance, c.wallet_held::text as held,
        coalesce((select sum(w.amount) from wallet_transactions w where w.shop_id = c.shop_id and w.customer_id = c.id), 0)::text as sum
      from customers c where c.shop_id = ${shopId}`.execute(check!.db);
    const walletMismatches = wallets.rows.filter(
      (c) => !new Decimal(c.balance).eq(c.sum) || new Decimal(c.held).lt(0) || new Decimal(c.held).gt(c.balance),
    );
    const completedEvents = await sql<{ n: number }>`
      select count(*)::int as n from (select data::jsonb->>'uniqid' as u from events where shop_id = ${shopId}
        and type = 'order:completed' group by 1 having count(*) > 1) x`.execute(check!.db);

    return {
      acknowledged: {
        creates: createdIds.length,
        completions: acked('complete').length,
        refunds: acked('refund').length,
      },
      lost: {
        orders: createdIds.filter((id) => !inDb.has(id)).length,
        completions: [...completedIds].filter((id) => !done.has(orders.find((o) => o.id === id)?.status ?? '')).length,
        refunds: [...ackedRefunds].filter(([id, n]) => (refundRows.find((r) => r.order_id === id)?.n ?? 0) < n).length,
      },
      doubled: {
        orders: orders.length - new Set(createdIds).size,
        refunds: refundRows.filter((r) => r.n > (ackedRefunds.get(r.order_id) ?? 0)).length,
        completed_events: completedEvents.rows[0]!.n,
        serials_to_one_item: serialsTwice.rows[0]!.n,
      },
      refunded_sums_off: refundRows.filter((r) => {
        const o = orders.find((x) => x.id === r.order_id);
        return !o || !new Decimal(o.refunded).eq(r.sum);
      }).length,
      stock_mismatches: stockMismatches.map((p) => `${p.type} ${p.id}: stock ${p.stock}, taken ${p.taken}`),
      wallet_mismatches: walletMismatches.map((c) => `${c.email}: ${c.balance} vs ledger ${c.sum}, held ${c.held}`),
      wallet_orders: wallets.rows.filter((c) => new Decimal(c.balance).lt(WALLET)).length,
    };
  }

  /** Every final answer and every try by status (`error` for no answer), and the 5xx among the tries. */
  function answers(phase: PhaseRecord) {
    const all = [...phase.steps.flatMap((s) => s.tries), ...phase.reads];
    const byStatus: Record<string, number> = {};
    for (const o of all) {
      const k = `${o.kind} ${o.error ? 'error' : o.status}`;
      byStatus[k] = (byStatus[k] ?? 0) + 1;
    }
    return {
      tries: byStatus,
      server_errors: all.filter((o) => o.status !== undefined && o.status >= 500).length,
      no_answer: all.filter((o) => o.error).length,
      retried_to_an_answer: phase.steps.filter((s) => s.tries.length > 1).length,
      unsettled: phase.steps.filter((s) => s.final.error || s.final.status! >= 500 || s.final.status === 409).length,
      refused_finally: phase.steps
        .filter((s) => s.final.status! >= 400 && s.final.status! < 500 && s.final.status !== 409)
        .map((s) => `${s.kind} ${s.final.status} ${s.final.code}`),
      contract: all.filter((o) => o.contract).map((o) => `${o.kind} ${o.status}: ${o.contract}`),
      read_back_misses: phase.readBackMisses,
      replay_mismatches: phase.replayMismatches,
    };
  }

  async function judge(phase: PhaseRecord) {
    const [hooks, state] = [await webhookCounts(phase), await invariants()];
    const seen = answers(phase);
    const summary = {
      fault: phase.fault,
      duration_ms: phase.duration_ms,
      reads_went_to: phase.readTargets,
      ...seen,
      ...state,
      webhooks: hooks,
    };
    summaries.push(summary);
    console.log(`cluster phase: ${JSON.stringify(summary)}`);

    expect(seen.contract).toEqual([]);
    expect(seen.unsettled).toBe(0);
    expect(seen.refused_finally).toEqual([]);
    expect(seen.read_back_misses).toEqual([]);
    expect(seen.replay_mismatches).toEqual([]);
    expect(state.acknowledged.creates).toBeGreaterThan(0);
    expect(state.lost).toEqual({ orders: 0, completions: 0, refunds: 0 });
    expect(state.doubled).toEqual({ orders: 0, refunds: 0, completed_events: 0, serials_to_one_item: 0 });
    expect(state.refunded_sums_off).toBe(0);
    expect(state.stock_mismatches).toEqual([]);
    expect(state.wallet_mismatches).toEqual([]);
    expect(hooks.not_succeeded).toBe(0);
    expect(hooks.events_without_delivery).toBe(0);
    expect(hooks.never_received).toBe(0);
    expect(hooks.delivered_twice_knowingly).toBe(0);
    [...apis, ...workers].forEach((p, i) => {
      expect(p.alive()).toBe(true);
      expect(p.output().slice(phase.outputFrom[i])).not.toMatch(/uncaught|unhandled|prepared statement/i);
    });
    return { seen, state, hooks };
  }

  test('steady: 20 writers and a reader across 2 API processes, 2 workers and the worker in npm start', async () => {
    const { seen, hooks } = await judge(await runPhase('none', async () => {}));
    // Nothing went away: no retry was needed, no answer was a 5xx, no webhook went twice.
    expect({ server_errors: seen.server_errors, no_answer: seen.no_answer }).toEqual({
      server_errors: 0,
      no_answer: 0,
    });
    expect(hooks.duplicates_this_phase).toBe(0);
    // The writing shop read its writes from the primary; the quiet shop read from the replica.
    expect(phases[0]!.readTargets['primary:own_write']).toBeGreaterThan(0);
    expect(phases[0]!.readTargets['replica:fresh']).toBeGreaterThan(0);
  }, 240_000);

  test('the primary restarted behind PgBouncer under the load: every acknowledged write once, the clients retry to an answer', async () => {
    await judge(await runPhase('primary restarted behind PgBouncer', () => primary!.restart()));
    // What a client met while the primary was away is a documented 503 with Retry-After, or nothing, never a 500.
    const all = [...phases.at(-1)!.steps.flatMap((s) => s.tries), ...phases.at(-1)!.reads];
    expect(
      all.filter((o) => o.status !== undefined && o.status >= 500 && o.status !== 503).map((o) => o.status),
    ).toEqual([]);
  }, 300_000);

  test('the replica stopped and started again under the load: reads fall back to the primary, no 5xx', async () => {
    const { seen, hooks } = await judge(
      await runPhase('replica stopped and started', async () => {
        await replica!.stop('immediate');
        await sleep(PHASE_MS / 4);
        await replica!.start();
      }),
    );
    expect({ server_errors: seen.server_errors, no_answer: seen.no_answer }).toEqual({
      server_errors: 0,
      no_answer: 0,
    });
    expect(hooks.duplicates_this_phase).toBe(0);
    // While it was away its reads went to the primary; once back (and caught up), to it again.
    expect(phases.at(-1)!.readTargets['primary:down']).toBeGreaterThan(0);
    const readsAgain = Date.now() + 30_000;
    let fresh = 0;
    while (fresh === 0 && Date.now() < readsAgain) {
      const before = (await readTargets())['replica:fresh'] ?? 0;
      const list = await send(apis[0]!.base, {
        kind: 'quiet-list',
        method: 'get',
        path: '/dev/v1/orders',
        key: quietKey,
      });
      expect(list.status).toBe(200);
      fresh = ((await readTargets())['replica:fresh'] ?? 0) - before;
      if (fresh === 0) await sleep(250);
    }
    expect(fresh).toBe(1);
  }, 240_000);

  test('the rate limit is one budget across the two processes (Redis): exactly the limit answered, the rest 429', async () => {
    const sent = await Promise.all(
      Array.from({ length: FREE_LIMIT + 10 }, (_, i) =>
        send(apis[i % 2]!.base, { kind: 'limited', method: 'get', path: '/dev/v1/orders?limit=1', key: freeKey }),
      ),
    );
    const statuses = sent.map((o) => o.status ?? o.error);
    expect(statuses.filter((s) => s === 200).length).toBe(FREE_LIMIT);
    expect(statuses.filter((s) => s === 429).length).toBe(10);
    expect(sent.filter((o) => o.contract).map((o) => o.contract)).toEqual([]);
    expect(sent.filter((o) => o.status === 429).every((o) => Number(o.retryAfter) > 0)).toBe(true);
  });

  test('OAuth and test mode keep their walls on every process', async () => {
    const [one, two] = apis as [ServerProcess, ServerProcess];
    const liveOrder = phases[0]!.steps.find((s) => s.kind === 'create' && s.orderId)!.orderId!;

    // A code approved on one process, exchanged on the other; the token reads on both and writes on neither.
    const { approved, code } = await approveCode(one.base, key, app);
    expect([approved.status, approved.contract]).toEqual([200, undefined]);
    const exchanged = await exchangeCode(two.base, app, code!);
    expect(exchanged.status).toBe(200);
    const token = exchanged.accessToken!;
    const readWith = (p: ServerProcess) =>
      send(p.base, { kind: 'oauth', method: 'get', path: `/dev/v1/orders/${liveOrder}`, key: token });
    for (const p of [one, two]) {
      const read = await readWith(p);
      expect([read.status, read.contract]).toEqual([200, undefined]);
      const write = await send(p.base, {
        kind: 'oauth',
        method: 'post',
        path: '/dev/v1/orders',
        key: token,
        body: { email: 'x@example.com', items: [{ product_id: services[0], quantity: 1 }] },
      });
      expect([write.status, write.code, write.contract]).toEqual([403, 'FORBIDDEN', undefined]);
    }
    // The code spent, sent again (to the process that did not take it first): refused, and the token it gave is
    // revoked (RFC 6749 4.1.2), on both processes at once.
    const replayed = await exchangeCode(one.base, app, code!);
    expect(replayed.status).toBe(400);
    for (const p of [one, two]) expect((await readWith(p)).status).toBe(401);

    // Test mode: its own order, invisible to the live key; the live order invisible to the test key, on both processes.
    const testOrder = await send(one.base, {
      kind: 'test',
      method: 'post',
      path: '/dev/v1/orders',
      key: testKey,
      body: { email: 'tester@example.com', items: [{ product_id: testProduct, quantity: 1 }] },
    });
    expect(testOrder.status).toBe(201);
    for (const p of [one, two]) {
      const cross = await send(p.base, {
        kind: 'test',
        method: 'get',
        path: `/dev/v1/orders/${liveOrder}`,
        key: testKey,
      });
      expect([cross.status, cross.contract]).toEqual([404, undefined]);
      const back = await send(p.base, { kind: 'test', method: 'get', path: `/dev/v1/orders/${testOrder.id}`, key });
      expect([back.status, back.contract]).toEqual([404, undefined]);
      const list = await send(p.base, { kind: 'test', method: 'get', path: '/dev/v1/orders?limit=100', key: testKey });
      expect([list.status, list.contract]).toEqual([200, undefined]);
      expect((list.data as unknown as { id: string }[]).map((o) => o.id)).toEqual([testOrder.id]);
    }
  });
});
