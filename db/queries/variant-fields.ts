// Variant fields of products and their options.
import { sql, type Transaction } from 'kysely';
import type { Database, VariantFieldOptionRow, VariantFieldRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** The fields of the given products, each product's in display order (sort_order, then creation). */
export async function variantFieldsOfProducts(
  db: ReadDb,
  shopId: string,
  productIds: readonly string[],
): Promise<VariantFieldRow[]> {
  if (productIds.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('product_variant_fields')
    .selectAll()
    .where('product_id', 'in', productIds)
    .orderBy('product_id')
    .orderBy('sort_order')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The options of the given fields, each field's in display order (sort_order, then creation). */
export async function optionsOfVariantFields(
  db: ReadDb,
  shopId: string,
  fieldIds: readonly string[],
): Promise<VariantFieldOptionRow[]> {
  if (fieldIds.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('product_variant_field_options')
    .selectAll()
    .where('field_id', 'in', fieldIds)
    .orderBy('field_id')
    .orderBy('sort_order')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The product's field with this id; a field of another product (or shop) is not found. */
export async function variantFieldOfProduct(
  db: ReadDb,
  shopId: string,
  productId: string,
  fieldId: string,
): Promise<VariantFieldRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('product_variant_fields')
    .selectAll()
    .where('id', '=', fieldId)
    .where('product_id', '=', productId)
    .executeTakeFirst();
}

/** The largest sort_order among the product's fields, or null when it has none. */
export async function lastFieldSortOrder(db: ReadDb, shopId: string, productId: string): Promise<number | null> {
  const row = await inShop(db, shopId)
    .selectFrom('product_variant_fields')
    .select(sql<number | null>`max(sort_order)`.as('last'))
    .where('product_id', '=', productId)
    .executeTakeFirst();
  return row?.last ?? null;
}

/** The largest sort_order among the field's options, or null when it has none. */
export async function lastOptionSortOrder(db: ReadDb, shopId: string, fieldId: string): Promise<number | null> {
  const row = await inShop(db, shopId)
    .selectFrom('product_variant_field_options')
    .select(sql<number | null>`max(sort_order)`.as('last'))
    .where('field_id', '=', fieldId)
    .executeTakeFirst();
  return row?.last ?? null;
}

export async function insertVariantField(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'product_variant_fields'>,
): Promise<VariantFieldRow> {
  return inShopForWrite(trx, shopId).insertInto('product_variant_fields', row).returningAll().executeTakeFirstOrThrow();
}

export async function insertVariantFieldOptions(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'product_variant_field_options'>[],
): Promise<VariantFieldOptionRow[]> {
  if (rows.length === 0) return [];
  const inserted = await inShopForWrite(trx, shopId)
    .insertInto('product_variant_field_options', rows)
    .returningAll()
    .execute();
  // RETURNING does not promise the VALUES order: give them back in the order they were asked for.
  const order = new Map(rows.map((r, i) => [r.id, i]));
  return inserted.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
}
