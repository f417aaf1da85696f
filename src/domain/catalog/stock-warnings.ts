// `product:stock_low`: emitted when a change makes a product's stock fall from above its `quantity_warning` to at
// or below it, once per crossing (later sales below the level emit nothing until the stock has risen above it
// again and falls once more). The stock is the product's own `stock` as GET /products shows it (for SERIALS, its
// unclaimed serials); unlimited stock (-1) and `quantity_warning` 0 (the default: no warning asked for) never
// warn, and a product with variants keeps its counts per variant, which this event does not watch. Callers pass
// the product rows as read under their row lock before the change and call this after it, in the same
// transaction, so the event is written with the change or not at all (w.effects: the outbox).
import { productStocksByIds } from '../../../db/queries/stock-warnings';
import type { components } from '../../generated/api-types';
import type { ShopWrite } from '../../platform/unit-of-work';

export type StockLowData = components['schemas']['EventStockLowData'];

/** Whether a stock going from `before` to `after` crosses the warning level `warning` (the rule above). */
export function crossesStockWarning(before: number, after: number, warning: number): boolean {
  return warning > 0 && before !== -1 && after !== -1 && before > warning && after <= warning;
}

/** A product's stock before a change and the product after it (title, stock, warning level). */
export interface StockChange {
  before: number;
  product: { id: string; title: string; stock: number; quantity_warning: number };
}

/** Emits `product:stock_low` for each change that took its product's stock across its warning level. */
export function warnOfStockChanges(w: ShopWrite, changes: readonly StockChange[]): void {
  for (const { before, product: p } of changes) {
    if (!crossesStockWarning(before, p.stock, p.quantity_warning)) continue;
    const data: StockLowData = {
      product_id: p.id,
      title: p.title,
      stock: p.stock,
      quantity_warning: p.quantity_warning,
    };
    w.effects.emit('product:stock_low', data);
  }
}

/**
 * Emits `product:stock_low` for each product whose stock the change took across its warning level. `drawn`: what
 * the change drew on, each product with its stock as read under its row lock before it; the stock after is read.
 */
export async function warnOfLowStock(
  w: ShopWrite,
  drawn: readonly { product: { id: string; stock: number } }[],
): Promise<void> {
  const stockBefore = new Map<string, number>();
  for (const { product } of drawn) if (!stockBefore.has(product.id)) stockBefore.set(product.id, product.stock);
  const current = await productStocksByIds(w.trx, w.shopId, [...stockBefore.keys()].sort());
  warnOfStockChanges(
    w,
    [...stockBefore].flatMap(([id, before]) => {
      const product = current.get(id);
      return product ? [{ before, product }] : [];
    }),
  );
}
