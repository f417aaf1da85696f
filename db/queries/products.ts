// Products and their variants.
import { sql, type Transaction } from 'kysely';
import type { Database, ProductRow, ProductVariantRow } from '../tables';
import { shaped, type BatchPart } from './batch';
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

/**
 * Holds SERIALS products for an order about to reserve their serials (FOR KEY SHARE, in id order): a claim
 * (`productByIdForUpdate`, then the oldest serials FOR UPDATE) waits for the order, or the order for the claim. Taken
 * after the serials instead, the order would hold serials the claim waits for while waiting for the claim's product
 * lock to recount its stock: a deadlock. Other orders are not held up (they take the same shared lock).
 */
export async function holdSerialProducts(
  trx: Transaction<Database>,
  shopId: string,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  await inShop(trx, shopId)
    .selectFrom('products')
    .select('id')
    .where('id', 'in', [...ids])
    .orderBy('id')
    .forKeyShare()
    .execute();
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
 * orders over the same products never deadlock). `FOR NO KEY UPDATE`: what a change of stock or status needs, and
 * it does not wait for an order that only holds a product's key (`holdSerialProducts`, a line's foreign key checked
 * at commit): a completion paid by a wallet, holding its buyer, would otherwise deadlock with another order of that
 * buyer holding the product.
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
    .forNoKeyUpdate()
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** A product as an order line reads it, with which catalog extras it has (so an order reads only those). */
export type OrderProductRow = ProductRow & {
  has_variants: boolean;
  has_fields: boolean;
  has_addons: boolean;
  has_tiers: boolean;
};

/** What an order is priced with from its shop: the currency a new buyer's wallet opens in, and the tax. */
export interface OrderShopTerms {
  currency: string;
  tax_rate: string;
  tax_inclusive: boolean;
}

/**
 * What an order needs of its products and shop, in one statement: the products (by id), whether each has variants,
 * variant fields, enabled add-ons and enabled quantity deals (most have none, and then nothing more is read), and
 * the shop's currency and tax. Nothing is locked: the stock is taken later by a conditional update (`takeStock`),
 * the only moment a product's row is held, and a product deleted meanwhile fails the order's commit (its lines'
 * product is checked then: db/migrations/0032). A lock here would be held by every order of a product at once,
 * which is what made a rush on one product cost PostgreSQL twice an ordinary order. No product found: no shop
 * terms either.
 */
export async function productsForOrder(
  trx: Transaction<Database>,
  shopId: string,
  ids: readonly string[],
): Promise<{ products: Map<string, OrderProductRow>; shop: OrderShopTerms | undefined }> {
  if (ids.length === 0) return { products: new Map(), shop: undefined };
  const { rows } = await sql<
    OrderProductRow & { shop_currency: string; shop_tax_rate: string; shop_tax_inclusive: boolean }
  >`
    select p.*,
      exists (select 1 from product_variants v where v.shop_id = p.shop_id and v.product_id = p.id) as has_variants,
      exists (select 1 from product_variant_fields f where f.shop_id = p.shop_id and f.product_id = p.id) as has_fields,
      exists (select 1 from addon_products ap join addons a on a.shop_id = ap.shop_id and a.id = ap.addon_id
        where ap.shop_id = p.shop_id and ap.product_id = p.id and a.enabled) as has_addons,
      exists (select 1 from quantity_deal_products dp join quantity_deals d on d.shop_id = dp.shop_id and d.id = dp.deal_id
        where dp.shop_id = p.shop_id and dp.product_id = p.id and d.enabled) as has_tiers,
      s.currency as shop_currency, s.tax_rate as shop_tax_rate, s.tax_inclusive as shop_tax_inclusive
    from products p join shops s on s.id = p.shop_id
    where p.shop_id = ${shopId} and p.id = any(${[...ids]}::text[])
    order by p.id`.execute(trx);
  const first = rows[0];
  const products = new Map<string, OrderProductRow>();
  for (const { shop_currency: _c, shop_tax_rate: _r, shop_tax_inclusive: _i, ...product } of rows)
    products.set(product.id, product);
  return {
    products,
    shop: first && {
      currency: first.shop_currency,
      tax_rate: first.shop_tax_rate,
      tax_inclusive: first.shop_tax_inclusive,
    },
  };
}

/** A product's stock after a change, with what its low-stock warning needs. */
export interface ProductStockAfter {
  id: string;
  title: string;
  stock: number;
  quantity_warning: number;
}

/**
 * Takes `quantity` from a counted stock (product or variant) if that much is left, as a part of a statement
 * (db/queries/batch.ts; `name` is its WITH entry): the row is held from this update to commit only, and two orders
 * racing for the last units cannot both get them (the second update sees the first's result and matches no row).
 * It reads back the row taken from, or nothing when not enough is left, or the stock is unlimited (-1).
 */
export function takeStock(
  shopId: string,
  target: { productId: string; variantId: string | null },
  quantity: number,
  name: string,
): BatchPart<ProductStockAfter | { stock: number }> {
  const values = { $shop: shopId, $id: target.variantId ?? target.productId, $quantity: quantity };
  const query = shaped('products.take_stock', target.variantId !== null, values, (db, p, variant) => {
    const scope = inShopForWrite(db as Transaction<Database>, p('$shop'));
    return variant
      ? scope
          .updateTable('product_variants')
          .set((eb) => ({ stock: sql<number>`${eb.ref('stock')} - ${p('$quantity')}` }))
          .where('id', '=', p('$id'))
          .where('stock', '<>', -1)
          .where('stock', '>=', p('$quantity'))
          .returning('stock')
      : scope
          .updateTable('products')
          .set((eb) => ({
            stock: sql<number>`${eb.ref('stock')} - ${p('$quantity')}`,
            updated_at: sql<Date>`now()`,
          }))
          .where('id', '=', p('$id'))
          .where('stock', '<>', -1)
          .where('stock', '>=', p('$quantity'))
          .returning(['id', 'title', 'stock', 'quantity_warning']);
  });
  return {
    steps: [{ name, query }],
    answer: shaped('products.take_stock.answer', name, {}, (db, p, from) => sql`select * from ${sql.id(from)}`),
  };
}

/** A counted stock as it is now (product or variant; -1 unlimited), or undefined when the row is gone. */
export async function currentStock(
  db: ReadDb,
  shopId: string,
  target: { productId: string; variantId: string | null },
): Promise<number | undefined> {
  const row =
    target.variantId !== null
      ? await inShop(db, shopId)
          .selectFrom('product_variants')
          .select('stock')
          .where('id', '=', target.variantId)
          .executeTakeFirst()
      : await inShop(db, shopId)
          .selectFrom('products')
          .select('stock')
          .where('id', '=', target.productId)
          .executeTakeFirst();
  return row?.stock;
}

/**
 * Sets a SERIALS product's stock to its count of available serials, under the product's row lock: taken first,
 * by a statement of its own, so that the count (the next statement, with a fresh snapshot) sees every reservation
 * committed before the lock was granted; the last order to count counts every one. Returns the stock before and
 * after.
 */
export async function recountSerialStock(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
): Promise<{ before: number; product: ProductStockAfter } | undefined> {
  const locked = await inShop(trx, shopId)
    .selectFrom('products')
    .select('stock')
    .where('id', '=', productId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!locked) return undefined;
  const product = await inShopForWrite(trx, shopId)
    .updateTable('products')
    .set({
      stock: sql<number>`(select count(*) from product_serials s where s.shop_id = products.shop_id
        and s.product_id = products.id and s.variant_id is null and s.status = 'available')::integer`,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', productId)
    .returning(['id', 'title', 'stock', 'quantity_warning'])
    .executeTakeFirstOrThrow();
  return { before: locked.stock, product };
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
