// Product rules that span several queries: listing with variants, duplication.
import * as products from '../../../db/queries/products';
import { NotFoundError } from '../../errors';
import { newId, newUniqid } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { productView } from '../../views/product';

export type ProductView = ReturnType<typeof productView>;

/** The product list: newest first, no filters yet. */
export const productList: ListSpec = {
  name: 'products',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export interface ProductListOptions {
  includeVariants: boolean;
}

/** `GET /products`: a page of products, each with its variants (prices only when asked for). */
export const productCursorList: CursorList<products.ProductPageRow, ProductView, ProductListOptions> = {
  spec: productList,
  page: products.productsPage,
  async view(rows, { db, shopId, options }) {
    const variants = await products.variantsByProduct(
      db,
      shopId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => productView(r, variants.get(r.id) ?? [], options.includeVariants));
  },
};

/** `base-copy`, or `base-copy-2`, `-3`, … when taken. */
function freeSlug(base: string, taken: Set<string>): string {
  const first = `${base}-copy`;
  if (!taken.has(first)) return first;
  for (let n = 2; ; n++) if (!taken.has(`${first}-${n}`)) return `${first}-${n}`;
}

/**
 * Copies a product and its variants under new identifiers; serials stay with the original. Must run in a
 * transaction: the product and its variants appear together or not at all.
 */
export async function duplicateProduct(w: ShopWrite, productId: string): Promise<ProductView> {
  const { trx, shopId } = w;
  // Locked: concurrent copies of one product take turns, so they cannot pick the same free slug.
  const source = await products.productByIdForUpdate(trx, shopId, productId);
  if (!source) throw new NotFoundError('PRODUCT_NOT_FOUND');
  const sourceVariants = (await products.variantsByProduct(trx, shopId, [source.id])).get(source.id) ?? [];
  const slug = freeSlug(source.slug, await products.slugsStartingWith(trx, shopId, `${source.slug}-copy`));
  const { created_at: _c, updated_at: _u, shop_id: _s, ...fields } = source;
  const copy = await products.insertProduct(trx, shopId, {
    ...fields,
    id: newId('prod'),
    uniqid: newUniqid(),
    slug,
    // A serial product's stock is its unclaimed serials, which are not copied.
    stock: source.type === 'SERIALS' ? 0 : source.stock,
    description_tabs: JSON.stringify(source.description_tabs),
    custom_fields: JSON.stringify(source.custom_fields),
  });
  const variants = await products.insertVariants(
    trx,
    shopId,
    sourceVariants.map(({ created_at: _vc, shop_id: _vs, ...v }) => ({
      ...v,
      id: newId('var'),
      product_id: copy.id,
      stock: source.type === 'SERIALS' ? 0 : v.stock,
    })),
  );
  return productView(copy, variants, true);
}
