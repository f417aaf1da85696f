// Disputes of orders: a keyset page of the shop's disputes, the one dispute of an order that is not decided yet,
// and the writes of the dispute's lifecycle (src/domain/support/disputes.ts).
import type { Transaction } from 'kysely';
import type { Database, DisputeRow } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type DisputePageRow = PageRow<'disputes'>;

/** One keyset page of the shop's disputes (newest first by default). */
export const disputesPage = pageOf('disputes');

export async function insertDispute(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'disputes'>,
): Promise<DisputeRow> {
  return inShopForWrite(trx, shopId).insertInto('disputes', row).returningAll().executeTakeFirstOrThrow();
}

/** The order's dispute that is not decided yet (OPEN or UNDER_REVIEW), locked; at most one exists. */
export async function undecidedDisputeOfOrderForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
): Promise<DisputeRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('disputes')
    .selectAll()
    .where('order_id', '=', orderId)
    .where('status', 'in', ['OPEN', 'UNDER_REVIEW'])
    .forUpdate()
    .executeTakeFirst();
}

export async function disputeById(db: ReadDb, shopId: string, id: string): Promise<DisputeRow | undefined> {
  return inShop(db, shopId).selectFrom('disputes').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The disputes of one order, oldest first. */
export async function disputesOfOrder(db: ReadDb, shopId: string, orderId: string): Promise<DisputeRow[]> {
  return inShop(db, shopId)
    .selectFrom('disputes')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function updateDispute(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: Partial<Omit<ShopRow<'disputes'>, 'id'>>,
): Promise<DisputeRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('disputes')
    .set(set)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The shop's dispute the provider opened with this id. */
export async function disputeOfProvider(
  db: ReadDb,
  shopId: string,
  gateway: string,
  providerDisputeId: string,
): Promise<DisputeRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('disputes')
    .selectAll()
    .where('gateway', '=', gateway)
    .where('provider_dispute_id', '=', providerDisputeId)
    .executeTakeFirst();
}
