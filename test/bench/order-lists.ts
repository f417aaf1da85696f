// Throughput of `GET /orders?limit=50` over 100,000 orders (3 items each, plus 10,000 generic payments the list
// skips) through the whole stack, against a bare express + pg + auth route doing the same work (credential look-up,
// one keyset page of 50, the page's items in one query), measured side by side as in test/bench/run.ts; and page
// 2,000 (the last one: rows 99,951 to 100,000) against page 1, which keyset pagination should serve alike (target
// within 1.1x). The rows are written with INSERT … SELECT generate_series and ANALYZEd; the page-2,000 cursor is
// built from its keyset position with the server's own cursor key (and checked against the rows it must show).
// Also prints the plans of both pages' queries (expected: an index scan, no sort). Called by `npm run bench`;
// `tsx test/bench/order-lists.ts` runs it alone on a fresh database. Prints tables; asserts nothing.
import express from 'express';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { applyKeyset } from '../../db/queries/keyset';
import { serverSecret } from '../../db/queries/server-secrets';
import { inShop } from '../../db/queries/shop-scope';
import type { Database } from '../../db/tables';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/domain/admin';
import { orderListSpec } from '../../src/domain/order-lists';
import { createLogger } from '../../src/logger';
import { CursorCodec } from '../../src/platform/cursor';
import { listQueryBinding, parseListQuery } from '../../src/platform/list-query';
import { openKeyset } from '../../src/platform/pagination';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';
import { bearerTokenOf, hashCredential } from './bench-auth';
import { median } from './cold-start';
import { connections, listen, load, rounds, seconds, summary, type Load } from './load';

export const ORDERS = 100_000;
const PAYMENTS = 10_000;
const PAGE = 50;
const DEEP_PAGE = 2_000;

export interface OrderListsBench {
  baseline: Load;
  page1: Load;
  deepPage: Load;
  /** whole stack / baseline, req/s, per round. */
  ratios: number[];
  /** page 2,000 / page 1, p50 latency, per round. */
  deepRatios: number[];
  /** The whole stack's CPU per request beyond the baseline's, in microseconds, per round. */
  beyond: number[];
  seedSeconds: number;
  plans: { page1: string[]; deepPage: string[] };
}

/** 100,000 orders of the shop (pairs share a created_at: ties break on id), 3 items each, and 10,000 payments. */
export async function seedBenchOrders(db: Kysely<Database>, shopId: string): Promise<void> {
  // Ids are global: each shop's rows get its own prefix.
  const prefix = shopId.slice(-8);
  await sql`insert into orders (id, shop_id, uniqid, kind, customer_email, currency, status, payment_status, gateway,
      subtotal, total, is_developer_invoice, created_at, updated_at)
    select 'ord_b' || ${prefix} || lpad(g::text, 7, '0'), ${shopId}, gen_random_uuid(), 'ORDER', 'buyer' || (g % 5000) || '@example.com',
      'EUR', (array['PENDING', 'COMPLETED', 'VOIDED'])[1 + g % 3], (array['PENDING', 'PAID', 'CANCELLED'])[1 + g % 3],
      'STRIPE', (g % 10000) * 0.3 + 0.3, (g % 10000) * 0.3 + 0.3, false,
      timestamptz '2026-01-01T00:00:00Z' + (g / 2) * interval '1 second',
      timestamptz '2026-01-01T00:00:00Z' + (g / 2) * interval '1 second'
    from generate_series(1, ${ORDERS}) g`.execute(db);
  await sql`insert into order_items (id, shop_id, order_id, position, product_title, product_type, quantity,
      unit_price, total)
    select 'item_' || substr(o.id, 5) || '_' || p, o.shop_id, o.id, p, 'Product ' || p, 'SERVICE', 1, 0.1, 0.1
    from orders o cross join generate_series(0, 2) p where o.shop_id = ${shopId}`.execute(db);
  await sql`insert into orders (id, shop_id, uniqid, kind, customer_email, currency, status, payment_status,
      subtotal, total, is_developer_invoice, created_at, updated_at)
    select 'ord_p' || ${prefix} || lpad(g::text, 7, '0'), ${shopId}, gen_random_uuid(), 'PAYMENT', null, 'EUR', 'PENDING', 'PENDING',
      5, 5, true, timestamptz '2026-01-01T00:00:00.5Z' + g * interval '5 seconds',
      timestamptz '2026-01-01T00:00:00.5Z' + g * interval '5 seconds'
    from generate_series(1, ${PAYMENTS}) g`.execute(db);
  // Statistics for the planner, as autovacuum would gather them in production (it is off on these machines).
  await sql`analyze orders`.execute(db);
  await sql`analyze order_items`.execute(db);
}

/** The plan of the whole stack's page query (the SQL ordersPage compiles for this keyset). */
async function plan(db: Kysely<Database>, shopId: string, cursor: CursorCodec, next?: string): Promise<string[]> {
  const query = parseListQuery(orderListSpec, {});
  const { keyset } = openKeyset(cursor, query, { shopId, limit: PAGE, cursor: next });
  // As db/queries/order-pages.ts ordersPage builds it: kind ORDER as the keyset's first filter.
  const compiled = applyKeyset(inShop(db, shopId).selectFrom('orders').selectAll(), {
    ...keyset,
    filters: [{ column: 'kind', op: '=', value: 'ORDER' }, ...keyset.filters],
  }).compile();
  const explained = await db.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(`explain (analyze, costs off, timing off, summary off) ${compiled.sql}`, [
      ...compiled.parameters,
    ]),
  );
  return explained.rows.map((r) => r['QUERY PLAN']);
}

export async function benchOrderLists(db: Kysely<Database>): Promise<OrderListsBench> {
  const shop = await admin.createShop(db, { name: 'Orders bench', plan: 'business' });
  const { key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['orders.read'] });
  const started = Date.now();
  await seedBenchOrders(db, shop.id);
  const seedSeconds = (Date.now() - started) / 1000;

  // Page 2,000 starts after the last row of page 1,999: its keyset position, sealed as the server seals cursors.
  const cursors = new CursorCodec(await serverSecret(db, 'cursor'));
  const binding = {
    shopId: shop.id,
    queryHash: CursorCodec.queryHash(listQueryBinding(parseListQuery(orderListSpec, {}))),
  };
  const before = await sql<{ id: string; cursor_value: string }>`select id, created_at::text as cursor_value
    from orders where shop_id = ${shop.id} and kind = 'ORDER' order by created_at desc, id desc
    offset ${(DEEP_PAGE - 1) * PAGE - 1} limit 2`.execute(db);
  const [last, first] = before.rows;
  const deepCursor = cursors.encode({ values: [last!.cursor_value], id: last!.id }, binding);

  const config = loadConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_BUSINESS: '1000000',
    SEED_DEMO: 'false',
    PUBLIC_URL: 'http://bench',
  });
  const app = await createApp({ db, config, logger: createLogger('silent') });
  const full = await listen(app);

  // The baseline: the same work with nothing around it (no routing by spec, validation, envelope, views, limits).
  const bare = express();
  bare.get('/orders', async (req, res) => {
    const token = bearerTokenOf(req.headers.authorization);
    const auth = await sql<{ shop_id: string }>`select c.shop_id from credentials c join shops s on s.id = c.shop_id
      where c.token_hash = ${hashCredential(token)} and c.revoked_at is null`.execute(db);
    const shopId = auth.rows[0]?.shop_id;
    if (!shopId) return void res.status(401).end();
    const rows = await sql<{
      id: string;
    }>`select *, created_at::text as cursor_value from orders where shop_id = ${shopId} and kind = 'ORDER'
      order by created_at desc, id desc limit ${PAGE + 1}`.execute(db);
    const ids = rows.rows.slice(0, PAGE).map((r) => r.id);
    const items = await sql`select * from order_items where shop_id = ${shopId} and order_id = any(${ids})
      order by order_id, position`.execute(db);
    res.json({ data: rows.rows.slice(0, PAGE), items: items.rows });
  });
  const baseline = await listen(bare);

  const page1Url = `${full.url}/dev/v1/orders?limit=${PAGE}`;
  const deepUrl = `${page1Url}&cursor=${encodeURIComponent(deepCursor)}`;
  try {
    // The deep page is what it should be: the 50 orders after the cursor's row, and nothing after it.
    const check = await fetch(deepUrl, { headers: { authorization: `Bearer ${key}` } });
    const body = (await check.json()) as {
      data: { id: string; items: unknown[] }[];
      pagination: { has_more: boolean };
    };
    if (
      check.status !== 200 ||
      body.data.length !== PAGE ||
      body.data[0]?.id !== first!.id ||
      body.data.some((o) => o.items.length !== 3) ||
      body.pagination.has_more
    ) {
      throw new Error(
        `page ${DEEP_PAGE} is not the expected page: ${check.status} ${JSON.stringify(body).slice(0, 300)}`,
      );
    }

    const plans = { page1: await plan(db, shop.id, cursors), deepPage: await plan(db, shop.id, cursors, deepCursor) };
    const runs: { baseline: Load[]; page1: Load[]; deepPage: Load[] } = { baseline: [], page1: [], deepPage: [] };
    for (let i = 0; i < rounds; i++) {
      runs.baseline.push(await load(`${baseline.url}/orders`, key));
      runs.page1.push(await load(page1Url, key));
      runs.deepPage.push(await load(deepUrl, key));
    }
    return {
      baseline: summary(runs.baseline),
      page1: summary(runs.page1),
      deepPage: summary(runs.deepPage),
      ratios: runs.page1.map((f, i) => f.rps / runs.baseline[i]!.rps),
      deepRatios: runs.deepPage.map((d, i) => d.p50 / runs.page1[i]!.p50),
      beyond: runs.page1.map((f, i) => f.cpuUs - runs.baseline[i]!.cpuUs),
      seedSeconds,
      plans,
    };
  } finally {
    full.server.close();
    baseline.server.close();
  }
}

export function printOrderLists(r: OrderListsBench, database: string): void {
  console.log(
    `\nGET /orders (${database}; ${connections} connections, ${seconds} s per run, ${rounds} round(s)); ` +
      `${ORDERS.toLocaleString('en')} orders x 3 items + ${PAYMENTS.toLocaleString('en')} payments ` +
      `(seeded in ${r.seedSeconds} s, ANALYZEd), pages of ${PAGE}:\n`,
  );
  console.log('| scenario | req/s | p50 ms | p99 ms | server CPU per request, us |');
  console.log('|---|---|---|---|---|');
  const line = (name: string, l: Load) => console.log(`| ${name} | ${l.rps} | ${l.p50} | ${l.p99} | ${l.cpuUs} |`);
  line('bare express + auth + keyset page + items (baseline)', r.baseline);
  line(`GET /dev/v1/orders?limit=${PAGE}, whole stack, page 1`, r.page1);
  line(`same, page ${DEEP_PAGE.toLocaleString('en')} (cursor)`, r.deepPage);
  const each = (xs: number[]) => (xs.length > 1 ? ` (rounds: ${xs.map((x) => x.toFixed(2)).join(', ')})` : '');
  console.log(
    `\nwhole stack / baseline: ${median(r.ratios.map((x) => Math.round(x * 100))) / 100}x${each(r.ratios)} ` +
      '(target >= 0.9x)',
  );
  console.log(
    `whole stack's own CPU per request beyond the baseline: ${median(r.beyond)} us` +
      `${r.beyond.length > 1 ? ` (rounds: ${r.beyond.join(', ')})` : ''}`,
  );
  console.log(
    `page ${DEEP_PAGE} / page 1, p50 latency: ${median(r.deepRatios.map((x) => Math.round(x * 100))) / 100}x` +
      `${each(r.deepRatios)} (target <= 1.1x)`,
  );
  console.log(`\nPlan of page 1:\n  ${r.plans.page1.join('\n  ')}`);
  console.log(`Plan of page ${DEEP_PAGE}:\n  ${r.plans.deepPage.join('\n  ')}`);
}

if (require.main === module) {
  (async () => {
    await globalSetup();
    const database = await createTestDatabase();
    try {
      printOrderLists(await benchOrderLists(database.db), database.kind);
    } finally {
      await database.close();
    }
  })().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
