// What an order left behind in its own tables, read straight from the database: the payment attempts that tried to
// pay it and how many events of a type name it. The payment suites assert on these after each webhook and drain.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/tables';

/** The order's payment attempts, oldest first (ties by id, so two made at one clock instant keep one order). */
export function attemptsOfOrder(db: Kysely<Database>, orderId: string) {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** How many events of `type` carry this order's uniqid. */
export async function eventCount(db: Kysely<Database>, type: string, uniqid: string): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from events
    where type = ${type} and data::jsonb ->> 'uniqid' = ${uniqid}`.execute(db);
  return Number(r.rows[0]!.n);
}
