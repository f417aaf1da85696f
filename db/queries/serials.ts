// Serial keys of SERIALS products: each row is one value that is `available` until claimed.
import { sql, type Transaction } from 'kysely';
import { chunks, insertChunkRows } from './chunks';
import type { Database } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export interface ClaimableSerialRow {
  id: string;
  serial: string;
  variant_id: string | null;
  variant_title: string | null;
  created_at: Date;
}

/** The product's available serials, oldest first (ties by id), at most `n`, locked for this transaction. */
export async function oldestAvailableSerials(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
  n: number,
): Promise<ClaimableSerialRow[]> {
  // The composite key (shop_id, variant_id) guarantees the joined variant is the same shop's.
  return inShop(trx, shopId)
    .selectFrom('product_serials as s')
    .leftJoin('product_variants as v', (join) =>
      join.onRef('v.shop_id', '=', 's.shop_id').onRef('v.id', '=', 's.variant_id'),
    )
    .select(['s.id', 's.serial', 's.variant_id', 'v.title as variant_title', 's.created_at'])
    .where('s.product_id', '=', productId)
    .where('s.status', '=', 'available')
    .orderBy('s.created_at')
    .orderBy('s.id')
    .limit(n)
    .forUpdate('s')
    .execute();
}

/** How many serials of the product are still available. */
export async function availableSerialCount(db: ReadDb, shopId: string, productId: string): Promise<number> {
  const row = await inShop(db, shopId)
    .selectFrom('product_serials')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('product_id', '=', productId)
    .where('status', '=', 'available')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Marks the given available serials claimed; returns how many it marked (fewer means another claim got some). */
export async function markSerialsClaimed(trx: Transaction<Database>, shopId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await inShopForWrite(trx, shopId)
    .updateTable('product_serials')
    .set({ status: 'claimed', claimed_at: sql<Date>`now()` })
    .where('id', 'in', ids)
    .where('status', '=', 'available')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function insertSerials(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'product_serials'>[],
): Promise<number> {
  let inserted = 0;
  // In chunks: one INSERT may bind at most 65,535 parameters.
  for (const chunk of chunks(rows, insertChunkRows)) {
    const result = await inShopForWrite(trx, shopId).insertInto('product_serials', chunk).executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? chunk.length);
  }
  return inserted;
}

/** All serials of a product (tests and the CLI): value, status, claim time. */
export async function serialsOfProduct(db: ReadDb, shopId: string, productId: string) {
  return inShop(db, shopId)
    .selectFrom('product_serials')
    .select(['id', 'serial', 'status', 'claimed_at'])
    .where('product_id', '=', productId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Reserves `n` available serials of the product (and variant) for an order item, oldest first; returns how many it
 * reserved. Callers hold the product's row lock, so concurrent orders reserve one after another.
 */
export async function reserveSerials(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
  variantId: string | null,
  orderItemId: string,
  n: number,
): Promise<number> {
  const taken = inShop(trx, shopId)
    .selectFrom('product_serials')
    .select('id')
    .where('product_id', '=', productId)
    .where((eb) => (variantId === null ? eb('variant_id', 'is', null) : eb('variant_id', '=', variantId)))
    .where('status', '=', 'available')
    .orderBy('created_at')
    .orderBy('id')
    .limit(n)
    // Orders reserving the same product at once take different serials instead of queueing for the first ones
    // (nothing else holds the product for them): a serial another order holds is skipped, not waited for.
    .forUpdate()
    .skipLocked();
  const result = await inShopForWrite(trx, shopId)
    .updateTable('product_serials')
    .set({ status: 'reserved', order_item_id: orderItemId })
    .where('id', 'in', taken)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Available serials of the product (and variant). */
export async function availableSerialCountOf(
  db: ReadDb,
  shopId: string,
  productId: string,
  variantId: string | null,
): Promise<number> {
  const row = await inShop(db, shopId)
    .selectFrom('product_serials')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('product_id', '=', productId)
    .where((eb) => (variantId === null ? eb('variant_id', 'is', null) : eb('variant_id', '=', variantId)))
    .where('status', '=', 'available')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Hands the item's reserved serials to the buyer: claimed now; returns their values, oldest first. */
export async function claimReservedSerials(
  trx: Transaction<Database>,
  shopId: string,
  orderItemId: string,
  now: Date,
): Promise<string[]> {
  const rows = await inShopForWrite(trx, shopId)
    .updateTable('product_serials')
    .set({ status: 'claimed', claimed_at: now })
    .where('order_item_id', '=', orderItemId)
    .where('status', '=', 'reserved')
    .returning(['serial', 'created_at', 'id'])
    .execute();
  return rows
    .sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1))
    .map((r) => r.serial);
}

/** Gives the serials reserved by these items back (an order voided unpaid); returns how many. */
export async function releaseReservedSerials(
  trx: Transaction<Database>,
  shopId: string,
  orderItemIds: readonly string[],
): Promise<number> {
  if (orderItemIds.length === 0) return 0;
  const result = await inShopForWrite(trx, shopId)
    .updateTable('product_serials')
    .set({ status: 'available', order_item_id: null })
    .where('order_item_id', 'in', orderItemIds)
    .where('status', '=', 'reserved')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
