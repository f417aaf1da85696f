// Add-ons and the products each is offered with.
import { sql, type Transaction } from 'kysely';
import type { AddonRow, Database } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type AddonPageRow = PageRow<'addons'>;

/** One keyset page of the shop's add-ons. */
export const addonsPage = pageOf('addons');

/** The products each of the given add-ons is offered with, by add-on id (ids in order). */
export async function productIdsOfAddons(
  db: ReadDb,
  shopId: string,
  addonIds: readonly string[],
): Promise<Map<string, string[]>> {
  const byAddon = new Map<string, string[]>(addonIds.map((id) => [id, []]));
  if (addonIds.length === 0) return byAddon;
  const rows = await inShop(db, shopId)
    .selectFrom('addon_products')
    .select(['addon_id', 'product_id'])
    .where('addon_id', '=', sql<string>`any(${[...addonIds]})`)
    .orderBy('addon_id')
    .orderBy('product_id')
    .execute();
  for (const r of rows) byAddon.get(r.addon_id)?.push(r.product_id);
  return byAddon;
}

/** The enabled add-ons offered with each of these products: rows of the add-on with the product it is offered with. */
export async function enabledAddonsOfProducts(
  db: ReadDb,
  shopId: string,
  productIds: readonly string[],
): Promise<(AddonRow & { product_id: string })[]> {
  if (productIds.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('addon_products as ap')
    .innerJoin('addons as a', (join) => join.onRef('a.shop_id', '=', 'ap.shop_id').onRef('a.id', '=', 'ap.addon_id'))
    .selectAll('a')
    .select('ap.product_id')
    .where('ap.product_id', 'in', productIds)
    .where('a.enabled', '=', true)
    .orderBy('ap.product_id')
    .orderBy('a.created_at')
    .orderBy('a.id')
    .execute();
}

export async function insertAddon(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'addons'>,
  productIds: readonly string[],
): Promise<AddonRow> {
  const addon = await inShopForWrite(trx, shopId).insertInto('addons', row).returningAll().executeTakeFirstOrThrow();
  const unique = [...new Set(productIds)];
  if (unique.length > 0)
    await inShopForWrite(trx, shopId)
      .insertInto(
        'addon_products',
        unique.map((product_id) => ({ addon_id: addon.id, product_id })),
      )
      .execute();
  return addon;
}
