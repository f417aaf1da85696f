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
