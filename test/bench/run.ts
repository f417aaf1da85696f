// `npm run bench`: cold start (test/bench/cold-start.ts: `npm start` -> first 200), then throughput of an
// authenticated cursor list through the whole stack against a bare express route doing the same work (credential
// look-up + one keyset page of 50 + its variants) in the same run, then the idempotency latency benchmark, then
// webhook delivery throughput of one worker (test/bench/webhook-delivery.ts, BENCH_WEBHOOK_EVENTS), then GET /orders
// over 100,000 orders against its own bare baseline, page 1 and page 2,000 (test/bench/order-lists.ts), then
// POST /licenses/validate against its own bare baseline (test/bench/license-validate.ts). Runs on
// PostgreSQL when DATABASE_URL is set (the meaningful setting), else PGlite. The tables are ANALYZEd after seeding,
// as autovacuum would do in production (it is off on these machines; without statistics the planner scans and
// sorts every row). The load comes from autocannon in a separate process; both servers share this one, measured
// one after the other, so this process's CPU time during a run, divided by the requests served, is the CPU each
// request costs; the whole stack's cost beyond the baseline is the difference (the target is <= 250 us).
// Prints tables; asserts nothing (these machines are shared and noisy: read the ratios, not the absolute numbers).
// Settings: BENCH_SECONDS (10) per run, BENCH_CONNECTIONS (50), BENCH_ROUNDS (3 rounds of baseline then whole
// stack; the medians are printed), BENCH_COLD_RUNS (3 starts per cold-start setting; 0 skips the cold start).
import express from 'express';
import { sql } from 'kysely';
import { createApp } from '../../src/app';
import { hashCredential, bearerTokenOf } from './bench-auth';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/domain/admin';
import { seedFixtures } from '../../src/domain/fixtures';
import { createLogger } from '../../src/logger';
import { shopById } from '../../db/queries/shops';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';
import { benchColdStart, median, printColdStart } from './cold-start';
import { benchIdempotency } from './idempotency';
import { connections, listen, load, rounds, seconds, summary, type Load } from './load';
import { benchLicenseValidate, printLicenseValidate } from './license-validate';
import { benchOrderLists, printOrderLists } from './order-lists';
import { benchWebhookDelivery, printWebhookDelivery } from './webhook-delivery';

const coldRuns = Number(process.env.BENCH_COLD_RUNS ?? 3);

async function main(): Promise<void> {
  const cold = coldRuns > 0 ? await benchColdStart(coldRuns) : undefined;
  await globalSetup();
  const database = await createTestDatabase();
  const { db } = database;
  try {
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      RATE_LIMIT_BUSINESS: '1000000',
      SEED_DEMO: 'false',
      PUBLIC_URL: 'http://bench',
    });
    const shop = await admin.createShop(db, { name: 'Bench', plan: 'business' });
    const { key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['products.read'] });
    const row = await shopById(db, shop.id);
    for (let i = 0; i < 10; i++) {
      await db.transaction().execute((trx) =>
        seedFixtures(trx, row!, {
          products: Array.from({ length: 100 }, (_, j) => ({
            title: `P${i}-${j}`,
            price: '9.99',
            variants: j % 4 === 0 ? [{ title: 'V', price: '1.00' }] : [],
          })),
        }),
      );
    }
    // Statistics for the planner, as autovacuum would gather them in production (it is off on these machines).
    await sql`analyze`.execute(db);

    const app = await createApp({ db, config, logger: createLogger('silent') });
    const full = await listen(app);

    // The baseline: the same work with nothing around it (no routing by spec, validation, envelope, limits).
    const bare = express();
    bare.get('/products', async (req, res) => {
      const token = bearerTokenOf(req.headers.authorization);
      const auth = await sql<{ shop_id: string }>`select c.shop_id from credentials c join shops s on s.id = c.shop_id
        where c.token_hash = ${hashCredential(token)} and c.revoked_at is null`.execute(db);
      const shopId = auth.rows[0]?.shop_id;
      if (!shopId) return void res.status(401).end();
      const rows = await sql<{
        id: string;
      }>`select *, created_at::text as cursor_ts from products where shop_id = ${shopId}
        order by created_at desc, id desc limit 51`.execute(db);
      const ids = rows.rows.slice(0, 50).map((r) => r.id);
      const variants = await sql`select * from product_variants where shop_id = ${shopId} and product_id = any(${ids})
        order by product_id, sort_priority, id`.execute(db);
      res.json({ data: rows.rows.slice(0, 50), variants: variants.rows });
    });
    const baseline = await listen(bare);

    const runs: { baseline: Load[]; full: Load[] } = { baseline: [], full: [] };
    for (let i = 0; i < rounds; i++) {
      runs.baseline.push(await load(`${baseline.url}/products`, key));
      runs.full.push(await load(`${full.url}/dev/v1/products?limit=50`, key));
    }
    const results = { baseline: summary(runs.baseline), full: summary(runs.full) };
    const ratios = runs.full.map((f, i) => f.rps / runs.baseline[i]!.rps);
    const beyond = runs.full.map((f, i) => f.cpuUs - runs.baseline[i]!.cpuUs);
    full.server.close();
    baseline.server.close();

    const idem = await benchIdempotency({ n: 200 });
    const hooks = await benchWebhookDelivery(db);
    const orders = await benchOrderLists(db);
    const licenses = await benchLicenseValidate(db);
    if (cold) printColdStart(cold);
    console.log(
      `\nDatabase: ${database.kind}; ${connections} connections, ${seconds} s per run, ${rounds} round(s); ` +
        '1,000 products (ANALYZEd), pages of 50\n',
    );
    console.log('| scenario | req/s | p50 ms | p99 ms | server CPU per request, us |');
    console.log('|---|---|---|---|---|');
    const line = (name: string, r: Load) => console.log(`| ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.cpuUs} |`);
    line('bare express + auth + keyset page (baseline)', results.baseline);
    line('GET /dev/v1/products?limit=50, whole stack', results.full);
    const each = rounds > 1 ? ` (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')})` : '';
    console.log(
      `\nwhole stack / baseline: ${median(ratios.map((r) => Math.round(r * 100))) / 100}x${each} (target >= 0.9x)`,
    );
    console.log(
      `whole stack's own CPU per request beyond the baseline: ${median(beyond)} us` +
        `${rounds > 1 ? ` (rounds: ${beyond.join(', ')})` : ''} (target <= 250 us)`,
    );
    console.log(`\nIdempotent POST /products/{id}/duplicate (${idem.database}, sequential, n=${idem.original.n}):`);
    console.log('| request | p50 ms | p95 ms | mean ms |');
    console.log('|---|---|---|---|');
    console.log(
      `| original (fresh key) | ${idem.original.p50_ms} | ${idem.original.p95_ms} | ${idem.original.mean_ms} |`,
    );
    console.log(`| replay (same key) | ${idem.replay.p50_ms} | ${idem.replay.p95_ms} | ${idem.replay.mean_ms} |`);
    printWebhookDelivery(hooks, database.kind);
    printOrderLists(orders, database.kind);
    printLicenseValidate(licenses, database.kind);
  } finally {
    await database.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
