// Refunds of orders, and what a refund takes back from the buyer's customer record.
import { type Selectable, type Transaction } from 'kysely';
import type { Database } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type RefundRow = Selectable<Database['refunds']>;

export async function insertRefund(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'refunds'>,
): Promise<RefundRow> {
  return inShopForWrite(trx, shopId).insertInto('refunds', row).returningAll().executeTakeFirstOrThrow();
}

/** The refunds of one order, oldest first. */
export async function refundsOfOrder(db: ReadDb, shopId: string, orderId: string): Promise<RefundRow[]> {
  return inShop(db, shopId)
    .selectFrom('refunds')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
