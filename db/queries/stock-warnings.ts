// What the low-stock rule (src/domain/catalog/stock-warnings.ts) reads of products after their stock changed.
import type { Transaction } from 'kysely';
import type { Database } from '../tables';
import { inShop } from './shop-scope';

export interface ProductStockRow {
  id: string;
  title: string;
  stock: number;
  quantity_warning: number;
}

/** The current stock and warning level of the given products (in the caller's transaction), by product id. */
export async function productStocksByIds(
  trx: Transaction<Database>,
  shopId: string,
  ids: readonly string[],
): Promise<Map<string, ProductStockRow>> {
  if (ids.length === 0) return new Map();
  const rows = await inShop(trx, shopId)
    .selectFrom('products')
    .select(['id', 'title', 'stock', 'quantity_warning'])
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}
