// An order line's product and variant are checked at commit (issue 39). The checks are the same foreign keys,
// (shop_id, product_id) and (shop_id, variant_id), so a line can still never name another shop's product or variant,
// or one that is gone; only their moment moves.
//
// Why: a foreign key check locks the referenced row FOR KEY SHARE until commit. Checked at the insert, fifty
// buyers of one product each held that lock while the first of them took the stock (FOR NO KEY UPDATE), so every
// lock and every update of the row built a new MultiXact of all its holders, and PostgreSQL spent more CPU looking
// those members up than on the orders themselves (a profile of the bench's rush on one product: GetMultiXactIdMembers
// the busiest function of the database, absent from ordinary orders). Checked at commit, after the order's own stock
// update, the row is already held by the order and the check adds nothing; no other order holds it meanwhile (a
// variant's stock is a row of its own, the same way). A product or variant deleted while an order of it is being
// written makes that order's commit fail (23503, answered as a reference to something that does not exist), where
// before the deletion waited for the order.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table order_items
    alter constraint order_items_product_fkey deferrable initially deferred,
    alter constraint order_items_variant_fkey deferrable initially deferred`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table order_items
    alter constraint order_items_product_fkey not deferrable,
    alter constraint order_items_variant_fkey not deferrable`.execute(db);
}
