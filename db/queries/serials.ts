// Serial keys of SERIALS products: each row is one value that is `available` until claimed.
import { sql, type Insertable, type Kysely } from 'kysely';
import { chunks, insertChunkRows } from './chunks';
import type { Database, ProductSerialsTable } from '../tables';

export interface ClaimableSerialRow {
  id: string;
  serial: string;
  variant_id: string | null;
  variant_title: string | null;
  created_at: Date;
}

/** The product's available serials, oldest first (ties by id), at most `n`, locked for this transaction. */
export async function oldestAvailableSerials(
  db: Kysely<Database>,
  shopId: string,
  productId: string,
  n: number,
): Promise<ClaimableSerialRow[]> {
  return db
    .selectFrom('product_serials as s')
    .leftJoin('product_variants as v', 'v.id', 's.variant_id')
    .select(['s.id', 's.serial', 's.variant_id', 'v.title as variant_title', 's.created_at'])
    .where('s.shop_id', '=', shopId)
    .where('s.product_id', '=', productId)
    .where('s.status', '=', 'available')
    .orderBy('s.created_at')
    .orderBy('s.id')
    .limit(n)
    .forUpdate('s')
    .execute();
}

/** How many serials of the product are still available. */
export async function availableSerialCount(db: Kysely<Database>, shopId: string, productId: string): Promise<number> {
  const row = await db
    .selectFrom('product_serials')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('shop_id', '=', shopId)
    .where('product_id', '=', productId)
    .where('status', '=', 'available')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Marks the given available serials claimed; returns how many it marked (fewer means another claim got some). */
export async function markSerialsClaimed(db: Kysely<Database>, shopId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await db
    .updateTable('product_serials')
    .set({ status: 'claimed', claimed_at: sql<Date>`now()` })
    .where('shop_id', '=', shopId)
    .where('id', 'in', ids)
    .where('status', '=', 'available')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function insertSerials(db: Kysely<Database>, rows: Insertable<ProductSerialsTable>[]): Promise<number> {
  let inserted = 0;
  // In chunks: one INSERT may bind at most 65,535 parameters.
  for (const chunk of chunks(rows, insertChunkRows)) {
    const result = await db.insertInto('product_serials').values(chunk).executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? chunk.length);
  }
  return inserted;
}

/** All serials of a product (tests and the CLI): value, status, claim time. */
export async function serialsOfProduct(db: Kysely<Database>, shopId: string, productId: string) {
  return db
    .selectFrom('product_serials')
    .select(['id', 'serial', 'status', 'claimed_at'])
    .where('shop_id', '=', shopId)
    .where('product_id', '=', productId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
