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

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The link at a shareable address, for the buyer's page: the uniqid is the only credential there, so this look-up
 * is not scoped by a shop (the link names its shop).
 */
export async function paymentLinkByUniqid(db: ReadDb, uniqid: string): Promise<PaymentLinkRow | undefined> {
  // unscopedByDesign: the public link page addresses a link by its unguessable uniqid alone.
  if (!uuidShape.test(uniqid)) return undefined;
  return db.selectFrom('payment_links').selectAll().where('uniqid', '=', uniqid).executeTakeFirst();
}

/** The link, locked: buyers using it at once take its uses one after the other. */
export async function paymentLinkByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<PaymentLinkRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('payment_links')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** Takes (+1) or gives back (-1) a use; the table's check keeps uses within max_uses whatever the caller does. */
export async function changePaymentLinkUses(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  delta: 1 | -1,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('payment_links')
    .set((eb) => ({ uses: eb('uses', '+', delta), updated_at: now }))
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}
