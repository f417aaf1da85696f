// Products and their variants.
import { sql, type Kysely } from 'kysely';
import type { Database, ProductRow, ProductVariantRow } from '../tables';
import { applyKeyset, type Keyset } from './keyset';

export type ProductPageRow = ProductRow & { cursor_value: string };

/**
 * One keyset page of a shop's products (see db/queries/keyset.ts): `limit + 1` rows in the keyset's order, ties by
 * id, so the caller knows whether there is more.
 */
export async function productsPage(db: Kysely<Database>, shopId: string, keyset: Keyset): Promise<ProductPageRow[]> {
  return applyKeyset(db.selectFrom('products').selectAll().where('shop_id', '=', shopId), keyset).execute();
}

export async function productById(db: Kysely<Database>, shopId: string, id: string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst();
}

/** The variants of the given products, grouped by product id, each group in display order. */
export async function variantsByProduct(
  db: Kysely<Database>,
  shopId: string,
  productIds: string[],
): Promise<Map<string, ProductVariantRow[]>> {
  const groups = new Map<string, ProductVariantRow[]>();
  if (productIds.length === 0) return groups;
  const rows = await db
    .selectFrom('product_variants')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where('product_id', 'in', productIds)
    .orderBy('product_id')
    .orderBy('sort_priority')
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const list = groups.get(row.product_id) ?? [];
    list.push(row);
    groups.set(row.product_id, list);
  }
  return groups;
}

export type NewProduct = Omit<ProductRow, 'created_at' | 'updated_at' | 'description_tabs' | 'custom_fields'> & {
  description_tabs: string;
  custom_fields: string;
};

export async function insertProduct(db: Kysely<Database>, row: NewProduct): Promise<ProductRow> {
  return db.insertInto('products').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function insertVariants(
  db: Kysely<Database>,
  rows: Omit<ProductVariantRow, 'created_at'>[],
): Promise<ProductVariantRow[]> {
  if (rows.length === 0) return [];
  return db.insertInto('product_variants').values(rows).returningAll().execute();
}

/** The slugs of a shop that start with the given prefix: used to pick a free slug for a copy. */
export async function slugsStartingWith(db: Kysely<Database>, shopId: string, prefix: string): Promise<Set<string>> {
  const escaped = prefix.replace(/[\\%_]/g, (c) => `\\${c}`);
  const rows = await db
    .selectFrom('products')
    .select('slug')
    .where('shop_id', '=', shopId)
    .where('slug', 'like', `${escaped}%`)
    .execute();
  return new Set(rows.map((r) => r.slug));
}

/** The product, locked until the end of the transaction (SELECT … FOR UPDATE): claims on it queue behind this one. */
export async function productByIdForUpdate(
  db: Kysely<Database>,
  shopId: string,
  id: string,
): Promise<ProductRow | undefined> {
  return db
    .selectFrom('products')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** Sets a product's stock (e.g. a serial product's count of available serials). */
export async function setProductStock(db: Kysely<Database>, shopId: string, id: string, stock: number): Promise<void> {
  await db
    .updateTable('products')
    .set({ stock, updated_at: sql<Date>`now()` })
    .where('shop_id', '=', shopId)
    .where('id', '=', id)
    .execute();
}
