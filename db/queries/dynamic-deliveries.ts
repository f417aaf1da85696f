// Dynamic-delivery callbacks: the outbox of signed requests to a DYNAMIC product's target (one per line item), and
// each shop's signing secret for them.
import type { Kysely, Transaction } from 'kysely';
import type { Database, DynamicDeliveryRow, OrderItemRow } from '../tables';
import { claimDue, type Lease } from './leased-queue';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export async function insertDynamicDelivery(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'dynamic_deliveries'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('dynamic_deliveries', row).execute();
}

export async function dynamicDeliveriesOfItem(
  db: ReadDb,
  shopId: string,
  orderItemId: string,
): Promise<DynamicDeliveryRow[]> {
  return inShop(db, shopId)
    .selectFrom('dynamic_deliveries')
    .selectAll()
    .where('order_item_id', '=', orderItemId)
    .orderBy('id')
    .execute();
}

/** What the worker needs to make one attempt of a claimed dynamic delivery. */
export interface ClaimedDynamicDelivery {
  id: string;
  shop_id: string;
  order_item_id: string;
  url: string;
  body: string;
  attempts: number;
}

/** Claims due dynamic deliveries of every shop for a lease (claimDue). */
export async function claimDueDynamicDeliveries(
  trx: Transaction<Database>,
  lease: Lease,
): Promise<ClaimedDynamicDelivery[]> {
  return claimDue<ClaimedDynamicDelivery>(trx, 'dynamic_deliveries', lease, [
    'id',
    'shop_id',
    'order_item_id',
    'url',
    'body',
    'attempts',
  ]);
}

/** The shop's sealed signing secret for dynamic deliveries, or undefined before its first use. */
export async function dynamicDeliverySecret(db: ReadDb, shopId: string): Promise<Buffer | undefined> {
  const row = await inShop(db, shopId).selectFrom('dynamic_delivery_secrets').select('secret').executeTakeFirst();
  return row ? Buffer.from(row.secret) : undefined;
}

/**
 * Stores `sealed` as the shop's secret unless it has one already; returns the one that is stored, so concurrent
 * first uses agree on one secret.
 */
export async function ensureDynamicDeliverySecret(
  db: Kysely<Database>,
  shopId: string,
  sealed: Buffer,
  now: Date,
): Promise<Buffer> {
  await db.transaction().execute(async (trx) => {
    await inShopForWrite(trx, shopId)
      .insertInto('dynamic_delivery_secrets', { secret: sealed, created_at: now })
      .onConflict((oc) => oc.columns(['shop_id', 'purpose']).doNothing())
      .execute();
  });
  const stored = await dynamicDeliverySecret(db, shopId);
  if (!stored) throw new Error(`shop ${shopId} has no dynamic-delivery secret`);
  return stored;
}

/** The line item, locked: take the order's lock first (orderByIdForUpdate), as every change of an order does. */
export async function orderItemForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<OrderItemRow | undefined> {
  return inShop(trx, shopId).selectFrom('order_items').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function orderIdOfItem(db: ReadDb, shopId: string, itemId: string): Promise<string | undefined> {
  const row = await inShop(db, shopId)
    .selectFrom('order_items')
    .select('order_id')
    .where('id', '=', itemId)
    .executeTakeFirst();
  return row?.order_id;
}
