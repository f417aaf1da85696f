// Payment links of a shop, and the lookups creating one needs.
import type { Transaction } from 'kysely';
import type { Database, PaymentLinkRow, ProductVariantRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export async function insertPaymentLink(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'payment_links'>,
): Promise<PaymentLinkRow> {
  return inShopForWrite(trx, shopId).insertInto('payment_links', row).returningAll().executeTakeFirstOrThrow();
}

/** Flips `enabled` in one statement, so two concurrent toggles flip twice rather than both writing the same value. */
export async function togglePaymentLink(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  now: Date,
): Promise<PaymentLinkRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('payment_links')
    .set((eb) => ({ enabled: eb.not(eb.ref('enabled')), updated_at: now }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The variant with this id of this product (a variant of another product is not found). */
export async function variantOfProduct(
  db: ReadDb,
  shopId: string,
  productId: string,
  variantId: string,
): Promise<ProductVariantRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('product_variants')
    .selectAll()
    .where('product_id', '=', productId)
    .where('id', '=', variantId)
    .executeTakeFirst();
}
