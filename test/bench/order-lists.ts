// GET /orders?limit=50 over settings.orders orders (100,000; 3 items each, plus generic payments the list skips),
// authenticated, through the whole stack in a process of its own (`npm start`'s server) against the bare express +
// pg + auth server (test/bench/bare-server.mjs: credential look-up, one keyset page of 50, the page's items in one
// query), side by side; page 2,000 (the last full page: rows 99,951 to 100,000) against page 1, which keyset
// pagination should serve alike; and the peak RSS of both server processes during those loads. The rows are written
// with INSERT … SELECT generate_series and ANALYZEd (autovacuum is off on these machines; production would have
// statistics); the deep page's cursor is sealed from its keyset position with the server's own cursor key and
// checked against the rows it must show. Needs PostgreSQL: the servers are other processes.
import { sql, type Kysely } from 'kysely';
import { serverSecret } from '../../db/queries/server-secrets';
import type { Database } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { orderListSpec } from '../../src/domain/orders/lists';
import { CursorCodec } from '../../src/platform/cursor';
import { listQueryBinding, parseListQuery } from '../../src/platform/list-query';
import { inAlternatingOrder, load, summary, type Load } from './load';
import { startServer } from './processes';
import { processProfileFlags } from './profile';
import { settings } from './settings';

export const PAGE = 50;
export const deepPage = () => Math.floor(settings.orders / PAGE);

export interface OrderListsBench {
  baseline: Load;
  page1: Load;
  deep: Load;
  /** whole stack page 1 / baseline, req/s, per round. */
  ratios: number[];
  /** deep page / page 1, p50 latency, per round. */
  deepRatios: number[];
  /** Peak RSS of each server process over all its list loads, MB. */
  rssMb: { full: number; bare: number };
}

/** The shop's orders (pairs share a created_at: ties break on id), 3 items each, and a tenth as many payments. */
export async function seedBenchOrders(db: Kysely<Database>, shopId: string, orders: number): Promise<void> {
  // Ids are global: each shop's rows get its own prefix.
  const prefix = shopId.slice(-8);
  await sql`insert into orders (id, shop_id, uniqid, kind, customer_email, currency, status, payment_status, gateway,
      subtotal, total, is_developer_invoice, created_at, updated_at)
    select 'ord_b' || ${prefix} || lpad(g::text, 7, '0'), ${shopId}, gen_random_uuid(), 'ORDER', 'buyer' || (g % 5000) || '@example.com',
      'EUR', (array['PENDING', 'COMPLETED', 'VOIDED'])[1 + g % 3], (array['PENDING', 'PAID', 'CANCELLED'])[1 + g % 3],
      'STRIPE', (g % 10000) * 0.3 + 0.3, (g % 10000) * 0.3 + 0.3, false,
      timestamptz '2026-01-01T00:00:00Z' + (g / 2) * interval '1 second',
      timestamptz '2026-01-01T00:00:00Z' + (g / 2) * interval '1 second'
    from generate_series(1, ${orders}) g`.execute(db);
  await sql`insert into order_items (id, shop_id, order_id, position, product_title, product_type, quantity,
      unit_price, total)
    select 'item_' || substr(o.id, 5) || '_' || p, o.shop_id, o.id, p, 'Product ' || p, 'SERVICE', 1, 0.1, 0.1
    from orders o cross join generate_series(0, 2) p where o.shop_id = ${shopId}`.execute(db);
  await sql`insert into orders (id, shop_id, uniqid, kind, customer_email, currency, status, payment_status,
      subtotal, total, is_developer_invoice, created_at, updated_at)
    select 'ord_p' || ${prefix} || lpad(g::text, 7, '0'), ${shopId}, gen_random_uuid(), 'PAYMENT', null, 'EUR', 'PENDING', 'PENDING',
      5, 5, true, timestamptz '2026-01-01T00:00:00.5Z' + g * interval '5 seconds',
      timestamptz '2026-01-01T00:00:00.5Z' + g * interval '5 seconds'
    from generate_series(1, ${Math.ceil(orders / 10)}) g`.execute(db);
  await sql`analyze orders`.execute(db);
  await sql`analyze order_items`.execute(db);
}

export async function benchOrderLists(db: Kysely<Database>, databaseUrl: string): Promise<OrderListsBench> {
  const shop = await admin.createShop(db, { name: 'Orders bench', plan: 'business' });
  const { key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['orders.read'] });
  await seedBenchOrders(db, shop.id, settings.orders);

  // The deep page starts after the last row of the page before it: its keyset position, sealed as the server does.
  const deep = deepPage();
  const cursors = new CursorCodec(await serverSecret(db, 'cursor'));
  const binding = {
    shopId: shop.id,
    queryHash: CursorCodec.queryHash(listQueryBinding(parseListQuery(orderListSpec, {}))),
  };
  const before = await sql<{ id: string; cursor_value: string }>`select id, created_at::text as cursor_value
    from orders where shop_id = ${shop.id} and kind = 'ORDER' order by created_at desc, id desc
    offset ${(deep - 1) * PAGE - 1} limit 2`.execute(db);
  const [last, first] = before.rows;
  const deepCursor = cursors.encode({ values: [last!.cursor_value], id: last!.id }, binding);

  const env = { DATABASE_URL: databaseUrl, SEED_DEMO: 'false', RATE_LIMIT_BUSINESS: '1000000' };
  const full = await startServer('full', env, key, processProfileFlags('list-full'));
  const bare = await startServer('bare', env, key, processProfileFlags('list-bare')).catch(async (err: unknown) => {
    await full.stop();
    throw err;
  });
  try {
    const page1Path = `/dev/v1/orders?limit=${PAGE}`;
    const deepPath = `${page1Path}&cursor=${encodeURIComponent(deepCursor)}`;
    // The deep page is what it should be: the 50 orders after the cursor's row, and nothing after it.
    const check = await fetch(`${full.url}${deepPath}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await check.json()) as {
      data: { id: string; items: unknown[] }[];
      pagination: { has_more: boolean };
    };
    const fullPages = settings.orders % PAGE === 0;
    if (
      check.status !== 200 ||
      body.data.length !== PAGE ||
      body.data[0]?.id !== first!.id ||
      body.data.some((o) => o.items.length !== 3) ||
      body.pagination.has_more !== !fullPages
    ) {
      throw new Error(`page ${deep} is not the expected page: ${check.status} ${JSON.stringify(body).slice(0, 300)}`);
    }

    const rounds: { baseline: Load; page1: Load; deep: Load }[] = [];
    const baselineRun = () => load(`${bare.url}/orders`, key, { rssPid: bare.pid });
    const page1Run = () => load(`${full.url}${page1Path}`, key, { rssPid: full.pid });
    const deepRun = () => load(`${full.url}${deepPath}`, key, { rssPid: full.pid });
    for (let i = 0; i < settings.rounds; i++) {
      const [baseline, page1, deep] = await inAlternatingOrder(i, [baselineRun, page1Run, deepRun]);
      rounds.push({ baseline: baseline!, page1: page1!, deep: deep! });
    }
    const page1 = summary(rounds.map((r) => r.page1));
    const deepLoad = summary(rounds.map((r) => r.deep));
    const baseline = summary(rounds.map((r) => r.baseline));
    return {
      baseline,
      page1,
      deep: deepLoad,
      ratios: rounds.map((r) => r.page1.rps / r.baseline.rps),
      deepRatios: rounds.map((r) => r.deep.p50 / r.page1.p50),
      rssMb: { full: Math.max(page1.rssMb!, deepLoad.rssMb!), bare: baseline.rssMb! },
    };
  } finally {
    await Promise.all([full.stop(), bare.stop()]);
  }
}
