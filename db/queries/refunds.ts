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

/** The shop's refund recorded for this provider refund, if any (one row per provider refund). */
export async function refundOfProviderRefund(
  db: ReadDb,
  shopId: string,
  gateway: string,
  providerRefundId: string,
): Promise<RefundRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('refunds')
    .selectAll()
    .where('gateway', '=', gateway)
    .where('provider_refund_id', '=', providerRefundId)
    .executeTakeFirst();
}
