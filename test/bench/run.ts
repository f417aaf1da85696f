// `npm run bench`: every scenario through the whole stack beside a bare baseline doing the same work, in the same
// run, one table (test/bench/report.ts) printed and written to docs/benchmarks.md with the machine it was measured
// on. The scenarios: cold start (cold-start.ts), the order list, its deep page and the servers' RSS under that load
// (order-lists.ts), the list through PgBouncer (pooler.ts) and from a streaming replica (replica-reads.ts), POST
// /orders and order completion (order-writes.ts), signed Stripe webhooks completing orders
// beside POST /orders/{id}/complete (gateway-webhooks.ts), license validation (license-validate.ts),
// idempotent replay (idempotency.ts) and webhook delivery (webhook-delivery.ts). Runs on PostgreSQL when
// DATABASE_URL is set (the meaningful setting: the baselines are express + pg, and the process-level rows need a
// server other processes can reach); on the embedded database otherwise, where those rows read n/a. Asserts no
// figure: these machines are shared and noisy, so the ratios are what to read; a scenario that cannot run (a
// non-2xx answer, a wrong page, a lost delivery) fails the bench. Settings: test/bench/settings.ts (BENCH_QUICK=1
// for a quick run, BENCH_OUT for where the document goes).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sql } from 'kysely';
import globalSetup, { preparePGliteSnapshot } from '../helpers/global-setup';
import { createEmbeddedTestDatabase, createTestDatabase } from '../helpers/test-database';
import { benchColdStart, coldMedian } from './cold-start';
import { benchGatewayWebhooks, GATEWAY_WEBHOOK_TARGET_RATIO } from './gateway-webhooks';
import { benchIdempotency } from './idempotency';
import { benchLicenseValidate } from './license-validate';
import { median } from './load';
import { benchOrderLists, deepPage, PAGE } from './order-lists';
import { benchOrderWrites, EMBEDDED_LOAD } from './order-writes';
import { benchPooler, POOL } from './pooler';
import { benchReplicaReads } from './replica-reads';
import { reportProfiles } from './profile';
import { HOT_PRODUCT, machine, ORDINARY_ORDER, report, type Row } from './report';
import { settings } from './settings';
import {
  benchWebhookDelivery,
  FAST_ENDPOINTS,
  SLOW_ANSWER_MS,
  SLOW_ENDPOINT_TARGET_RATIO,
  WEBHOOK_TARGET_PER_SECOND,
} from './webhook-delivery';

const NEEDS_PG = 'Needs DATABASE_URL (PostgreSQL): the servers are processes of their own.';

async function main(): Promise<void> {
  await globalSetup();
  const database = await createTestDatabase();
  try {
    const { db } = database;
    const version = (await sql<{ v: string }>`select current_setting('server_version') as v`.execute(db)).rows[0]!.v;
    const m = machine(
      database.kind === 'postgres' ? `PostgreSQL ${version} (127.0.0.1)` : `embedded PGlite (PostgreSQL ${version})`,
    );
    // The bench process's event loop (its servers, fakes and workers run on it): a scenario whose requests time out
    // while its loop stood still measured the bench, not the API.
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    const step = (name: string) => {
      if (loop.count > 0)
        console.error(
          `bench: event loop delay max ${Math.round(loop.max / 1e6)} ms, p99 ${Math.round(loop.percentile(99) / 1e6)} ms`,
        );
      loop.reset();
      console.error(`bench: ${name} (${new Date().toISOString()})`);
    };
    // Each scenario's figures as soon as it ends: a later scenario that fails does not take them with it.
    const shown = <T>(result: T): T => {
      console.error(`bench: ${JSON.stringify(result)}`);
      return result;
    };

    step('cold start');
    const cold = shown(await benchColdStart());
    step('order list');
    const lists = shown(database.url ? await benchOrderLists(db, database.url) : null);
    step('order writes');
    const writes = shown(await benchOrderWrites(db));
    // The same write rows on the embedded database (npm start's default), beside the PostgreSQL ones.
    let embeddedWrites: Awaited<ReturnType<typeof benchOrderWrites>> | null = null;
    if (database.kind === 'postgres' && process.env.BENCH_EMBEDDED !== '0') {
      step('order writes, embedded');
      await preparePGliteSnapshot();
      const embedded = await createEmbeddedTestDatabase();
      try {
        embeddedWrites = shown(await benchOrderWrites(embedded.db, 'embedded-'));
      } finally {
        await embedded.close();
      }
    }
    step('pgbouncer beside direct');
    const pooler = shown(database.url ? await benchPooler(db, database.url) : null);
    step('streaming replica beside the primary');
    const replicaReads = shown(database.url ? await benchReplicaReads() : null);
    step('stripe webhooks');
    const stripe = shown(await benchGatewayWebhooks(db));
    step('license validation');
    const licenses = shown(await benchLicenseValidate(db));
    step('idempotency');
    const idem = shown(await benchIdempotency());
    step('webhook delivery');
    const hooks = shown(await benchWebhookDelivery(db));
    if (hooks.duplicates > 0 || hooks.unsettled > 0)
      throw new Error(`webhook delivery: ${hooks.duplicates} duplicates, ${hooks.unsettled} not SUCCEEDED`);

    const bareProcess =
      'bare express + pg + auth server (test/bench/bare-server.mjs), a process of its own as the whole stack is';
    const bareCold = coldMedian(cold.bare);
    const rows: Row[] = [
      {
        scenario: `GET /orders?limit=${PAGE}, authenticated, ${settings.orders.toLocaleString('en')} orders`,
        unit: 'req/s',
        full: lists?.page1.rps ?? null,
        baseline: lists?.baseline.rps ?? null,
        baselineIs: `${bareProcess}: the API-key look-up, one keyset page of ${PAGE} orders, their items in one more query`,
        ...(lists ? { ratio: median(lists.ratios) } : {}),
        target: { on: 'ratio', op: '>=', value: 0.9 },
        why: NEEDS_PG,
      },
      {
        scenario: `GET /orders page ${deepPage().toLocaleString('en')} vs page 1, p50 latency`,
        unit: 'ms',
        full: lists?.deep.p50 ?? null,
        baseline: lists?.page1.p50 ?? null,
        baselineIs: 'page 1 of the same list through the whole stack, same run (the deep page comes by keyset cursor)',
        ...(lists ? { ratio: median(lists.deepRatios) } : {}),
        target: { on: 'ratio', op: '<=', value: 1.1 },
        why: NEEDS_PG,
      },
      ...(
        [
          ['GET /orders?limit=50 through PgBouncer (transaction mode) vs direct', pooler?.list],
          ['POST /orders through PgBouncer (transaction mode) vs direct', pooler?.create],
        ] as const
      ).map(([scenario, r]): Row => ({
        scenario,
        unit: 'req/s',
        full: r?.full.rps ?? null,
        baseline: r?.baseline.rps ?? null,
        ...(r ? { ratio: r.ratio, cost: { full: r.full.cost, baseline: r.baseline.cost } } : {}),
        baselineIs:
          `the same whole stack in this process on a direct pg pool of ${POOL}; the pooled side's pool of ${POOL} ` +
          `goes through PgBouncer 1.18 in transaction mode with default_pool_size ${POOL} (test/bench/pooler.ts)`,
        target: { on: 'ratio', op: '>=', value: 0.9 },
        why: database.url ? 'Needs pgbouncer (apt-get install -y pgbouncer; .ci/run installs it).' : NEEDS_PG,
      })),
      {
        scenario: `GET /orders?limit=${PAGE} from a streaming replica vs the primary`,
        unit: 'req/s',
        full: replicaReads?.list.full.rps ?? null,
        baseline: replicaReads?.list.baseline.rps ?? null,
        ...(replicaReads
          ? {
              ratio: replicaReads.list.ratio,
              cost: { full: replicaReads.list.full.cost, baseline: replicaReads.list.baseline.cost },
            }
          : {}),
        baselineIs:
          `the same whole stack in this process reading from the primary alone (a pg pool of ${POOL}); the replica ` +
          `side has DATABASE_READ_URL set to a hot standby of that primary (pg_basebackup, no apply delay, a pool of ` +
          `${POOL} to each), its reads checked to have gone to the replica (test/bench/replica-reads.ts); both are ` +
          'PostgreSQL servers of the bench’s own on this machine',
        target: { on: 'ratio', op: '>=', value: 0.9 },
        why: database.url
          ? 'Needs PostgreSQL’s server binaries (initdb, pg_basebackup: postgresql-15; PG_BIN_DIR to point at them).'
          : NEEDS_PG,
      },
      {
        scenario: ORDINARY_ORDER,
        unit: 'req/s',
        full: writes.create.full.rps,
        baseline: writes.create.baseline.rps,
        ratio: writes.create.ratio,
        baselineIs:
          'bare express + pg + auth route: in one transaction the product locked, the buyer looked up, the order, ' +
          'its item, the order:created event and the audit entry inserted',
        target: { on: 'ratio', op: '>=', value: 0.65 },
        cost: { full: writes.create.full.cost, baseline: writes.create.baseline.cost },
      },
      {
        scenario: HOT_PRODUCT(settings.connections),
        unit: 'req/s',
        full: writes.hot.full.rps,
        baseline: writes.hot.baseline.rps,
        ratio: writes.hot.ratio,
        baselineIs:
          'the bare POST /orders route above, ordering the same product (it holds the product row locked for its ' +
          'whole transaction)',
        target: { on: 'ratio', op: '>=', value: 0.9 },
        cost: { full: writes.hot.full.cost, baseline: writes.hot.baseline.cost },
      },
      {
        scenario: 'POST /orders/{id}/complete, serial delivered',
        unit: 'req/s',
        full: writes.complete.full.rps,
        baseline: writes.complete.baseline.rps,
        ratio: writes.complete.ratio,
        baselineIs:
          'bare express + pg + auth route: in one transaction the order locked, its reserved serial claimed, the ' +
          'item and order marked complete, and what the completion records beside it written (the payment attempt, ' +
          'order:paid and order:completed, the receipt and delivery mail, the audit entry), one statement each ' +
          `(${settings.completions.toLocaleString('en')} orders per run)`,
        target: { on: 'ratio', op: '>=', value: 0.75 },
        cost: { full: writes.complete.full.cost, baseline: writes.complete.baseline.cost },
      },
      {
        scenario:
          'Signed Stripe checkout.session.completed -> order completed (route verifies and queues, the ' +
          'gateway-events job applies), serial delivered',
        unit: 'orders/s',
        full: stripe.webhook.rps,
        baseline: stripe.complete.rps,
        ratio: stripe.ratio,
        baselineIs:
          'POST /orders/{id}/complete through the whole stack, same run and server, of the same kind of PENDING ' +
          'orders (one SERIALS line, its serial reserved, a Stripe session open). The webhook side is timed from ' +
          `its first webhook sent (${settings.connections} at once) to its last order COMPLETED: the worker's ` +
          "gateway-events job runs in the server's process beside it, its time, CPU and round trips counted with " +
          `the route's (${stripe.orders.toLocaleString('en')} orders per run; every order checked completed once)`,
        target: { on: 'ratio', op: '>=', value: GATEWAY_WEBHOOK_TARGET_RATIO },
        cost: { full: stripe.webhook.cost, baseline: stripe.complete.cost },
      },
      ...(embeddedWrites
        ? (
            [
              ['POST /orders (one line, returning buyer), EMBEDDED database', embeddedWrites.create],
              [
                `POST /orders, ${EMBEDDED_LOAD.connections} buyers of ONE product, EMBEDDED database`,
                embeddedWrites.hot,
              ],
              ['POST /orders/{id}/complete, serial delivered, EMBEDDED database', embeddedWrites.complete],
            ] as const
          ).map(([scenario, r]): Row => ({
            scenario,
            unit: 'req/s',
            full: r.full.rps,
            baseline: r.baseline.rps,
            ratio: r.ratio,
            baselineIs:
              'the same bare route as its PostgreSQL row, on the same embedded database in this process (PGlite ' +
              'runs one statement at a time, so there are no round trips to count), both loaded by ' +
              `${EMBEDDED_LOAD.connections} connections (more only queue in front of PGlite)`,
          }))
        : []),
      {
        scenario: 'Idempotent replay vs original (POST /products/{id}/duplicate), p50 latency',
        unit: 'ms',
        full: idem.replay.p50_ms,
        baseline: idem.original.p50_ms,
        baselineIs: `the original request with a fresh Idempotency-Key, whole stack; ${idem.original.n} sequential requests each`,
        target: { on: 'ratio', op: '<=', value: 1 },
      },
      {
        scenario: 'POST /licenses/validate',
        unit: 'req/s',
        full: licenses.full.rps,
        baseline: licenses.baseline.rps,
        ratio: licenses.ratio,
        cost: { full: licenses.full.cost, baseline: licenses.baseline.cost },
        baselineIs: `bare express + pg + auth route running the same validation statement (${settings.licenses.toLocaleString('en')} licenses)`,
        target: { on: 'ratio', op: '>=', value: 0.92 },
      },
      {
        scenario:
          `Webhook delivery, one worker, ${hooks.deliveries.toLocaleString('en')} events; per delivery ` +
          `${hooks.roundTrips} round trips, ${hooks.cpuMs} CPU ms (bare loop: ${hooks.bareRoundTrips}, ${hooks.bareCpuMs})`,
        unit: 'events/s',
        full: hooks.eventsPerSecond,
        baseline: hooks.bareEventsPerSecond,
        baselineIs:
          `a bare loop reading the same events ${settings.webhookBatch} at a time, signing them and POSTing each ` +
          'batch at once to the same local receiver over keep-alive connections, recording nothing',
        target: { on: 'full', op: '>=', value: WEBHOOK_TARGET_PER_SECOND },
      },
      {
        scenario:
          `Webhook delivery to ${FAST_ENDPOINTS} endpoints beside one answering after ${SLOW_ANSWER_MS / 1000} s ` +
          `(${hooks.slow.deliveries.toLocaleString('en')} deliveries to the ${FAST_ENDPOINTS})`,
        unit: 'events/s',
        full: hooks.slow.withSlow,
        baseline: hooks.slow.withoutSlow,
        baselineIs:
          `the same ${FAST_ENDPOINTS} endpoints' deliveries, one worker, without the slow endpoint (its own shop, ` +
          'same run): the rate until all of them are SUCCEEDED',
        target: { on: 'ratio', op: '>=', value: SLOW_ENDPOINT_TARGET_RATIO },
      },
      {
        scenario: 'Cold start to first 200, embedded, empty data directory (schema image, demo shop)',
        unit: 'ms',
        full: coldMedian(cold.embeddedFresh),
        baseline: bareCold,
        baselineIs: `${bareProcess}, started on PostgreSQL, first 200 on an authenticated GET`,
        target: { on: 'ratio', op: '<=', value: 6 },
        why: NEEDS_PG,
      },
      {
        scenario: 'Cold start to first 200, embedded, existing data directory',
        unit: 'ms',
        full: coldMedian(cold.embeddedExisting),
        baseline: bareCold,
        baselineIs: 'as above',
        target: { on: 'ratio', op: '<=', value: 4 },
        why: NEEDS_PG,
      },
      {
        scenario: 'Floor of the embedded first start: PGlite alone, schema image unpacked, one query',
        unit: 'ms',
        full: coldMedian(cold.embeddedFloorFresh),
        baseline: bareCold,
        baselineIs:
          'as above; the figure is a process doing only what every embedded first start must (test/bench/bare-pglite.mjs): ' +
          'its ratio is the least the first start’s can be (no target)',
        why: NEEDS_PG,
      },
      {
        scenario: 'Floor of the embedded restart: PGlite alone on the same data directory, one query',
        unit: 'ms',
        full: coldMedian(cold.embeddedFloorExisting),
        baseline: bareCold,
        baselineIs: 'as above, for the restart (no target)',
        why: NEEDS_PG,
      },
      {
        scenario: 'Cold start to first 200, PostgreSQL',
        unit: 'ms',
        full: coldMedian(cold.postgres),
        baseline: bareCold,
        baselineIs: 'as above (the starts alternate)',
        target: { on: 'ratio', op: '<=', value: 2.5 },
        why: NEEDS_PG,
      },
      {
        scenario: `RSS of the embedded server, idle ${settings.idleSeconds} s after a restart`,
        unit: 'MB',
        full: coldMedian(cold.embeddedIdleRssMb),
        baseline: coldMedian(cold.postgresIdleRssMb),
        baselineIs: 'the whole stack on PostgreSQL, idle as long after its first 200 (what the embedded database adds)',
        target: { on: 'full', op: '<=', value: 250 },
      },
      {
        scenario: 'Admin CLI command, PostgreSQL (`npm run cli -- key list`, without npm)',
        unit: 'ms',
        full: coldMedian(cold.cli),
        baseline: bareCold,
        baselineIs: 'the bare server’s cold start to first 200 (a process start, a connection, a query)',
        target: { on: 'full', op: '<=', value: 1000 },
        why: NEEDS_PG,
      },
      {
        scenario: 'Peak RSS of the server process during the order-list loads',
        unit: 'MB',
        full: lists?.rssMb.full ?? null,
        baseline: lists?.rssMb.bare ?? null,
        baselineIs: `${bareProcess}, during its own list load`,
        target: { on: 'full', op: '<=', value: 200 },
        why: NEEDS_PG,
      },
    ];
    step('report');
    report(rows, m);
    reportProfiles();
  } finally {
    await database.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
