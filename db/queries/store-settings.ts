// Store settings: the shop's one row of branding and layout (absent until the first write).
import type { Transaction } from 'kysely';
import type { Database, StoreSettingsRow } from '../tables';
import { inShop, inShopForWrite, shopSingletonForUpdate, type ReadDb, type ShopRow } from './shop-scope';

export async function storeSettingsOfShop(db: ReadDb, shopId: string): Promise<StoreSettingsRow | undefined> {
  return inShop(db, shopId).selectFrom('store_settings').selectAll().executeTakeFirst();
}

/** The shop's name and creation time: what the defaults of a shop that never wrote its settings are made of. */
export async function shopNameAndCreatedAt(
  db: ReadDb,
  shopId: string,
): Promise<{ name: string; created_at: Date } | undefined> {
  return db.selectFrom('shops').select(['name', 'created_at']).where('id', '=', shopId).executeTakeFirst();
}

/**
 * The settings row, inserted with `fresh` (the defaults) when the shop has none yet, locked until the transaction
 * ends: two writers of one shop's settings run one after the other.
 */
export async function storeSettingsForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  fresh: ShopRow<'store_settings'>,
): Promise<StoreSettingsRow> {
  return shopSingletonForUpdate(trx, shopId, 'store_settings', fresh);
}

export type BrandingChanges = Pick<
  StoreSettingsRow,
  'name' | 'logo_url' | 'favicon_url' | 'primary_color' | 'accent_color' | 'support_email'
>;

export interface LayoutChanges {
  product_grid_columns: number;
  show_search: boolean;
  show_categories: boolean;
  show_reviews: boolean;
  announcement: string | null;
  footer_links: { url: string; label: string }[];
}

export async function updateBranding(
  trx: Transaction<Database>,
  shopId: string,
  changes: BrandingChanges,
  now: Date,
): Promise<StoreSettingsRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('store_settings')
    .set({ ...changes, branding_updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateLayout(
  trx: Transaction<Database>,
  shopId: string,
  changes: LayoutChanges,
  now: Date,
): Promise<StoreSettingsRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('store_settings')
    .set({ ...changes, footer_links: JSON.stringify(changes.footer_links), layout_updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}
