// Products and their variants.
import { sql, type Kysely } from 'kysely';
import type { Database, ProductRow, ProductVariantRow } from '../tables';

export type ProductPageRow = ProductRow & { cursor_ts: string };

/**
 * One keyset page of a shop's products, newest first (ties by id), `limit + 1` rows so the caller knows whether
 * there is more. `after` is the last row of the previous page; its timestamp is exact text, so rows created in
 * the same millisecond are neither skipped nor repeated.
 */
export async function productsPage(
  db: Kysely<Database>,
  shopId: string,
  limit: number,
  after: { createdAt: string; id: string } | null,
): Promise<ProductPageRow[]> {
  let q = db
    .selectFrom('products')
    .selectAll()
    .select(sql<string>`created_at::text`.as('cursor_ts'))
    .where('shop_id', '=', shopId);
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}::timestamptz, ${after.id})`);
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
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
