// POST /orders/{id}/complete as the bench measures it, shared by the rows that complete orders: the completion row
// (order-writes.ts) and the signed Stripe webhook row that is read against it (gateway-webhooks.ts). Both need the
// same pending orders, the same whole-stack server and the same measured run, or their ratio compares two setups
// rather than two ways of completing an order.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { createApp, type AppOptions } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/platform/clock';
import { listen, load, type Load, type LoadOptions, type Shot } from './load';
import { settings } from './settings';

/** The bench's configuration: no log, no rate limit in the way, no demo shop; `env` adds to it. */
export function benchConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_BUSINESS: '1000000',
    SEED_DEMO: 'false',
    PUBLIC_URL: 'http://bench',
    ...env,
  });
}

/** The whole stack on a free port of this process (so its CPU and round trips are counted with the run's). */
export async function wholeStack(
  db: Kysely<Database>,
  config: Config,
  options: Partial<AppOptions> = {},
): ReturnType<typeof listen> {
  return listen(await createApp({ clock: systemClock, db, config, logger: createLogger('silent'), ...options }));
}

/** A measured write run: counted for its cost (and profiled, with BENCH_PROFILE_DIR set) under its label. */
export const posts = (label: string, options: LoadOptions = {}): LoadOptions => ({
  method: 'POST',
  cost: true,
  label,
  ...options,
});

/**
 * Orders a completion run uses: the warm-up's first (a tenth as many, at least 10), then the measured
 * settings.completions. Each request completes another order, so a run is a count of requests, not a time.
 */
export function completionCounts(): { warmup: number; amount: number; total: number } {
  const warmup = Math.max(10, Math.ceil(settings.completions / 10));
  return { warmup, amount: settings.completions, total: warmup + settings.completions };
}

/** A SERIALS product of the shop (5.00 USD, no serials of its own): the product of seedPendingOrders' lines. */
export async function serialProduct(db: Kysely<Database>, shopId: string): Promise<string> {
  const row = (await shopById(db, shopId))!;
  const seeded = await db
    .transaction()
    .execute((trx) =>
      seedFixtures(
        trx,
        row,
        { products: [{ title: 'Serial', type: 'SERIALS', price: '5.00', currency: 'USD' }] },
        systemClock,
      ),
    );
  return seeded.products[0]!;
}

/** `count` PENDING orders of one SERIALS line each, each item holding a reserved serial of `productId`. */
export async function seedPendingOrders(
  db: Kysely<Database>,
  shopId: string,
  productId: string,
  tag: string,
  count: number,
): Promise<string[]> {
  const prefix = `ord_c${tag}${shopId.slice(-6)}`;
  await sql`insert into orders (id, shop_id, uniqid, kind, customer_email, currency, status, status_details,
      payment_status, flow_type, subtotal, total, is_developer_invoice, expires_at, created_at, updated_at)
    select ${prefix} || lpad(g::text, 7, '0'), ${shopId}, gen_random_uuid(), 'ORDER', 'buyer' || (g % 500) || '@example.com',
      'USD', 'PENDING', 'Awaiting payment', 'PENDING', 'DEVELOPER', 5, 5, true, now() + interval '1 day', now(), now()
    from generate_series(1, ${count}) g`.execute(db);
  await sql`insert into order_items (id, shop_id, order_id, position, product_id, product_title, product_type,
      quantity, unit_price, total)
    select 'item_' || substr(o.id, 5), o.shop_id, o.id, 0, ${productId}, 'Serial', 'SERIALS', 1, 5, 5
    from orders o where o.shop_id = ${shopId} and o.id like ${prefix + '%'}`.execute(db);
  await sql`insert into product_serials (id, shop_id, product_id, serial, status, order_item_id)
    select 'ser_' || substr(o.id, 5), o.shop_id, ${productId}, 'SERIAL-' || substr(o.id, 5), 'reserved', 'item_' || substr(o.id, 5)
    from orders o where o.shop_id = ${shopId} and o.id like ${prefix + '%'}`.execute(db);
  const ids = await sql<{ id: string }>`select id from orders where shop_id = ${shopId} and id like ${prefix + '%'}
    order by id`.execute(db);
  return ids.rows.map((r) => r.id);
}

/**
 * One measured completion run: POST `<url><prefix>/orders/{id}/complete` for each of `orderIds` (completionCounts()
 * of them, the warm-up's first), `settings.connections` at once.
 */
export function completeRun(
  url: string,
  prefix: string,
  key: string,
  orderIds: string[],
  label: string,
  options: Pick<LoadOptions, 'connections' | 'timeoutSeconds'> = {},
): Promise<Load> {
  const { warmup, amount } = completionCounts();
  const shots = orderIds.map((id): Shot => ({ path: `${prefix}/orders/${id}/complete`, body: {} }));
  return load(url, key, posts(label, { shots, warmup, amount, ...options }));
}
