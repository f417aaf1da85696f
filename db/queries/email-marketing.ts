// The shop's email-marketing integrations: the keyset page of GET /email-marketing/settings and the operator's
// upsert (one row per provider).
import type { Transaction } from 'kysely';
import type { Database, EmailMarketingSettingRow } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShopForWrite, type ShopRow } from './shop-scope';

export type EmailMarketingSettingPageRow = PageRow<'email_marketing_settings'>;

/** One keyset page of the shop's settings (newest first by default). */
export const emailMarketingSettingsPage = pageOf('email_marketing_settings');

/** What an operator may set on a provider's setting; fields left out keep their value (or default on insert). */
export type EmailMarketingChanges = Partial<
  Pick<EmailMarketingSettingRow, 'enabled' | 'list_id' | 'double_opt_in' | 'sync_customers' | 'last_synced_at'>
>;

/**
 * Inserts the shop's setting of `row.provider`, or, when the shop has one, changes the fields of `changes` on it
 * (its id and created_at stay). One statement, so two writers of one provider meet on the unique key.
 */
export async function upsertEmailMarketingSetting(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'email_marketing_settings'>,
  changes: EmailMarketingChanges,
  now: Date,
): Promise<EmailMarketingSettingRow> {
  return inShopForWrite(trx, shopId)
    .insertInto('email_marketing_settings', row)
    .onConflict((oc) => oc.columns(['shop_id', 'provider']).doUpdateSet({ ...changes, updated_at: now }))
    .returningAll()
    .executeTakeFirstOrThrow();
}
