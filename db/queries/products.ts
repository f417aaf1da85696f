// Products and their variants.
import { sql, type Transaction } from 'kysely';
import type { Database, ProductRow, ProductVariantRow } from '../tables';
import { prepare } from './prepared';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type ProductPageRow = PageRow<'products'>;

/** One keyset page of a shop's products: `limit + 1` rows in the keyset's order, ties by id. */
export const productsPage = pageOf('products');

export const productById = byIdOf('products');

// Runs on every product list page: compiled once (prepared.ts), the ids bound as one array.
const variantsOfProducts = prepare(['shopId', 'productIds'], (db, shopId, productIds) =>
  inShop(db, shopId)
    .selectFrom('product_variants')
    .selectAll()
    .where('product_id', '=', sql<string>`any(${productIds})`)
    .orderBy('product_id')
    .orderBy('sort_priority')
    .orderBy('id'),
) as (db: ReadDb, shopId: string, productIds: string[]) => Promise<ProductVariantRow[]>;

/** The variants of the given products, grouped by product id, each group in display order. */
export async function variantsByProduct(
  db: ReadDb,
  shopId: string,
  productIds: string[],
): Promise<Map<string, ProductVariantRow[]>> {
  const groups = new Map<string, ProductVariantRow[]>();
  if (productIds.length === 0) return groups;
  const rows = await variantsOfProducts(db, shopId, productIds);
  for (const row of rows) {
    const list = groups.get(row.product_id);
    if (list) list.push(row);
    else groups.set(row.product_id, [row]);
  }
  return groups;
}

export type NewProduct = Omit<
  ProductRow,
  | 'shop_id'
  | 'created_at'
  | 'updated_at'
  | 'description_tabs'
  | 'custom_fields'
  | 'license_activation_limit'
  | 'license_duration_days'
  | 'billing_interval'
  | 'billing_interval_count'
> & {
  description_tabs: string;
  custom_fields: string;
} & Partial<Pick<ProductRow, 'license_activation_limit' | 'license_duration_days'>> &
  Partial<Pick<ProductRow, 'billing_interval' | 'billing_interval_count'>>;

export async function insertProduct(trx: Transaction<Database>, shopId: string, row: NewProduct): Promise<ProductRow> {
  return inShopForWrite(trx, shopId).insertInto('products', row).returningAll().executeTakeFirstOrThrow();
}

export type NewVariant = ShopRow<'product_variants'>;

export async function insertVariants(
  trx: Transaction<Database>,
  shopId: string,
  rows: NewVariant[],
): Promise<ProductVariantRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId).insertInto('product_variants', rows).returningAll().execute();
}

/** The slugs of a shop that start with the given prefix: used to pick a free slug for a copy. */
export async function slugsStartingWith(db: ReadDb, shopId: string, prefix: string): Promise<Set<string>> {
  const escaped = prefix.replace(/[\\%_]/g, (c) => `\\${c}`);
  const rows = await inShop(db, shopId)
    .selectFrom('products')
    .select('slug')
    .where('slug', 'like', `${escaped}%`)
    .execute();
  return new Set(rows.map((r) => r.slug));
}

/** The product, locked until the end of the transaction (SELECT … FOR UPDATE): claims on it queue behind this one. */
export async function productByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<ProductRow | undefined> {
  return inShop(trx, shopId).selectFrom('products').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** Sets a product's stock (e.g. a serial product's count of available serials). */
export async function setProductStock(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  stock: number,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('products')
    .set({ stock, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}

/**
 * The products, locked in id order (every writer that locks several products takes them in this order, so two
 * orders over the same products never deadlock).
 */
export async function productsByIdsForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  ids: readonly string[],
): Promise<Map<string, ProductRow>> {
  if (ids.length === 0) return new Map();
  const rows = await inShop(trx, shopId)
    .selectFrom('products')
    .selectAll()
    .where('id', 'in', ids)
    .orderBy('id')
    .forUpdate()
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** Changes a counted stock (product or variant; -1 means unlimited and is left alone) by `delta`. */
export async function adjustStock(
  trx: Transaction<Database>,
  shopId: string,
  target: { productId: string; variantId: string | null },
  delta: number,
): Promise<void> {
  if (delta === 0) return;
  const scope = inShopForWrite(trx, shopId);
  if (target.variantId !== null) {
    await scope
      .updateTable('product_variants')
      .set((eb) => ({ stock: sql<number>`${eb.ref('stock')} + ${delta}` }))
      .where('id', '=', target.variantId)
      .where('stock', '<>', -1)
      .execute();
  } else {
    await scope
      .updateTable('products')
      .set((eb) => ({ stock: sql<number>`${eb.ref('stock')} + ${delta}`, updated_at: sql<Date>`now()` }))
      .where('id', '=', target.productId)
      .where('stock', '<>', -1)
      .execute();
  }
}

/** The files a FILE product delivers. */
export async function productFiles(
  db: ReadDb,
  shopId: string,
  productId: string,
): Promise<{ attachment_id: string; filename: string }[]> {
  return inShop(db, shopId)
    .selectFrom('product_files as pf')
    .innerJoin('attachments as a', (join) =>
      join.onRef('a.shop_id', '=', 'pf.shop_id').onRef('a.id', '=', 'pf.attachment_id'),
    )
    .select(['pf.attachment_id', 'a.filename'])
    .where('pf.product_id', '=', productId)
    .orderBy('a.filename')
    .execute();
}
