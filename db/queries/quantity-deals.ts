// Quantity deals (volume discounts): the deal, the products it covers and its tiers.
import { type Transaction } from 'kysely';
import type { Database, QuantityDealRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** The shop's deal with this uniqid, locked: updates of one deal take turns (its tiers are replaced whole). */
export async function quantityDealByUniqidForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  uniqid: string,
): Promise<QuantityDealRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('quantity_deals')
    .selectAll()
    .where('uniqid', '=', uniqid)
    .forUpdate()
    .executeTakeFirst();
}

export async function insertQuantityDeal(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'quantity_deals'>,
): Promise<QuantityDealRow> {
  return inShopForWrite(trx, shopId).insertInto('quantity_deals', row).returningAll().executeTakeFirstOrThrow();
}

export async function updateQuantityDealRow(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: { title?: string; enabled?: boolean; updated_at: Date },
): Promise<void> {
  await inShopForWrite(trx, shopId).updateTable('quantity_deals').set(set).where('id', '=', id).execute();
}

/** Makes the deal cover exactly these products. */
export async function replaceQuantityDealProducts(
  trx: Transaction<Database>,
  shopId: string,
  dealId: string,
  productIds: readonly string[],
): Promise<void> {
  const scope = inShopForWrite(trx, shopId);
  await scope.deleteFrom('quantity_deal_products').where('deal_id', '=', dealId).execute();
  const unique = [...new Set(productIds)];
  if (unique.length > 0)
    await scope
      .insertInto(
        'quantity_deal_products',
        unique.map((product_id) => ({ deal_id: dealId, product_id })),
      )
      .execute();
}

export type NewTier = Omit<ShopRow<'quantity_deal_tiers'>, 'deal_id'>;

/** Makes these the deal's tiers. */
export async function replaceQuantityDealTiers(
  trx: Transaction<Database>,
  shopId: string,
  dealId: string,
  tiers: readonly NewTier[],
): Promise<void> {
  const scope = inShopForWrite(trx, shopId);
  await scope.deleteFrom('quantity_deal_tiers').where('deal_id', '=', dealId).execute();
  if (tiers.length > 0)
    await scope
      .insertInto(
        'quantity_deal_tiers',
        tiers.map((t) => ({ ...t, deal_id: dealId })),
      )
      .execute();
}

export interface ProductTierRow {
  product_id: string;
  deal_id: string;
  min_quantity: number;
  discount_type: 'PERCENTAGE' | 'FIXED';
  discount_value: string;
}

/** Every tier of the shop's enabled deals that cover one of these products, by product. */
export async function enabledTiersOfProducts(
  db: ReadDb,
  shopId: string,
  productIds: readonly string[],
): Promise<ProductTierRow[]> {
  if (productIds.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('quantity_deal_products as dp')
    .innerJoin('quantity_deals as d', (join) =>
      join.onRef('d.shop_id', '=', 'dp.shop_id').onRef('d.id', '=', 'dp.deal_id'),
    )
    .innerJoin('quantity_deal_tiers as t', (join) =>
      join.onRef('t.shop_id', '=', 'dp.shop_id').onRef('t.deal_id', '=', 'dp.deal_id'),
    )
    .select(['dp.product_id', 'dp.deal_id', 't.min_quantity', 't.discount_type', 't.discount_value'])
    .where('dp.product_id', 'in', productIds)
    .where('d.enabled', '=', true)
    .orderBy('dp.product_id')
    .orderBy('dp.deal_id')
    .orderBy('t.min_quantity')
    .execute();
}

/** Which of these ids are products of the shop. */
export async function productIdsInShop(db: ReadDb, shopId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await inShop(db, shopId).selectFrom('products').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}
