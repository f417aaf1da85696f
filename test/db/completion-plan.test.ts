// The completion's serial claim (claimCompletionLines) must not trust the statistics about a shop: a shop newer than
// the last ANALYZE looks empty to the planner, and with the shop as an index condition it took the shop's serials as
// the outer side of a nested loop and scanned the shop's every line for each one (the Stripe webhook bench: 2-4 s per
// completion, timeouts). Here a shop is created after ANALYZE saw another one's rows, and the plan PostgreSQL makes
// for the statement as sent, with this shop's values, must reach the lines by the order's id and the serials by
// their line's. Both databases: the embedded one plans as PostgreSQL does.
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import { claimCompletionLines } from '../../db/queries/orders';
import type { Database } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { seedPendingOrders, serialProduct } from '../bench/completions';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

async function shopWithPendingOrders(db: Kysely<Database>, name: string, count: number) {
  const shop = await admin.createShop(db, { name, plan: 'business' });
  const orders = await seedPendingOrders(db, shop.id, await serialProduct(db, shop.id), 'plan', count);
  return { shopId: shop.id, orders };
}

/** Every index the plan reads, anywhere in it. */
function indexesOf(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesOf);
  if (!plan || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  return [
    ...(typeof node['Index Name'] === 'string' ? [node['Index Name']] : []),
    ...Object.values(node).flatMap(indexesOf),
  ];
}

describe('the completion’s serial claim, for a shop the statistics do not know yet', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  test('finds the lines by the order and the serials by their line, and claims only that order’s serials', async () => {
    const { db } = database;
    // An older shop whose claimed serials fill the statistics; the new shop's rows come after ANALYZE.
    const old = await shopWithPendingOrders(db, 'Older shop', 3000);
    await sql`update product_serials set status = 'claimed', claimed_at = now() where shop_id = ${old.shopId}`.execute(
      db,
    );
    await sql`analyze orders, order_items, product_serials`.execute(db);
    const fresh = await shopWithPendingOrders(db, 'New shop', 1500);
    const orderId = fresh.orders[700]!;

    let sent: CompiledQuery | undefined;
    let claimed: { lines: Awaited<ReturnType<typeof claimCompletionLines>>; indexes: string[] } | undefined;
    const rolledBack = new Error('rolled back');
    await db
      .transaction()
      .execute(async (trx) => {
        const recording = {
          executeQuery: (query: CompiledQuery) => {
            sent = query;
            return trx.executeQuery(query);
          },
        } as unknown as Transaction<Database>;
        const lines = await claimCompletionLines(recording, fresh.shopId, orderId, new Date());
        const plan = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
          CompiledQuery.raw(`explain (format json) ${sent!.sql}`, [...sent!.parameters]),
        );
        claimed = { lines, indexes: indexesOf(plan.rows[0]!['QUERY PLAN']) };
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });

    expect(claimed!.lines).toHaveLength(1);
    expect(claimed!.lines[0]!.item.order_id).toBe(orderId);
    expect(claimed!.lines[0]!.claimedSerials).toHaveLength(1);
    expect(claimed!.indexes).toContain('order_items_order_position_key');
    expect(claimed!.indexes).toContain('product_serials_order_item_idx');
    expect(claimed!.indexes.filter((i) => /^(order_items|product_serials)_shop/.test(i))).toEqual([]);
  });
});
