// Email-marketing sync: each setting's sealed provider API key, the settings a new customer is synced to, and the
// outbox of sync requests (one per setting and customer) the worker claims with SKIP LOCKED and a lease.
import type { Transaction } from 'kysely';
import type { Database, EmailMarketingProvider, EmailMarketingSyncRow } from '../tables';
import { claimDue, type Lease } from './leased-queue';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** Stores (or replaces) the sealed API key of the shop's setting. */
export async function upsertEmailMarketingKey(
  trx: Transaction<Database>,
  shopId: string,
  settingId: string,
  sealedKey: Buffer,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .insertInto('email_marketing_keys', {
      setting_id: settingId,
      sealed_key: sealedKey,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['shop_id', 'setting_id']).doUpdateSet({ sealed_key: sealedKey, updated_at: now }))
    .execute();
}

/** Whether the shop's setting has an API key stored. */
export async function emailMarketingKeyExists(db: ReadDb, shopId: string, settingId: string): Promise<boolean> {
  const row = await inShop(db, shopId)
    .selectFrom('email_marketing_keys')
    .select('setting_id')
    .where('setting_id', '=', settingId)
    .executeTakeFirst();
  return row !== undefined;
}

/** A setting as the sync needs it: what it says now, and its sealed key (null when it has none). */
export interface SyncSetting {
  id: string;
  provider: EmailMarketingProvider;
  enabled: boolean;
  list_id: string | null;
  double_opt_in: boolean;
  sync_customers: boolean;
  sealed_key: Buffer | null;
}

const syncSettingColumns = [
  's.id',
  's.provider',
  's.enabled',
  's.list_id',
  's.double_opt_in',
  's.sync_customers',
  'k.sealed_key',
] as const;

/** The shop's enabled settings with sync_customers on, a list and a key: the candidates for a new customer. */
export async function syncingSettingsOfShop(db: ReadDb, shopId: string): Promise<SyncSetting[]> {
  return inShop(db, shopId)
    .selectFrom('email_marketing_settings as s')
    .innerJoin('email_marketing_keys as k', (j) =>
      j.onRef('k.shop_id', '=', 's.shop_id').onRef('k.setting_id', '=', 's.id'),
    )
    .select(syncSettingColumns)
    .where('s.enabled', '=', true)
    .where('s.sync_customers', '=', true)
    .where('s.list_id', 'is not', null)
    .orderBy('s.id')
    .execute();
}

/** The setting (with its key, if any) as it is now, for one attempt of the worker. */
export async function syncSettingById(db: ReadDb, shopId: string, settingId: string): Promise<SyncSetting | undefined> {
  return inShop(db, shopId)
    .selectFrom('email_marketing_settings as s')
    .leftJoin('email_marketing_keys as k', (j) =>
      j.onRef('k.shop_id', '=', 's.shop_id').onRef('k.setting_id', '=', 's.id'),
    )
    .select(syncSettingColumns)
    .where('s.id', '=', settingId)
    .executeTakeFirst();
}

/** Queues sync rows; a customer already queued for a setting keeps its row (no second sync). */
export async function insertEmailMarketingSyncs(
  trx: Transaction<Database>,
  shopId: string,
  rows: readonly ShopRow<'email_marketing_syncs'>[],
): Promise<void> {
  if (rows.length === 0) return;
  await inShopForWrite(trx, shopId)
    .insertInto('email_marketing_syncs', rows)
    .onConflict((oc) => oc.columns(['shop_id', 'setting_id', 'customer_id']).doNothing())
    .execute();
}

/** The shop's sync rows, oldest first (tests and support). */
export async function emailMarketingSyncsOfShop(db: ReadDb, shopId: string): Promise<EmailMarketingSyncRow[]> {
  return inShop(db, shopId)
    .selectFrom('email_marketing_syncs')
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** What the worker needs to make one attempt of a claimed sync. */
export interface ClaimedEmailMarketingSync {
  id: string;
  shop_id: string;
  setting_id: string;
  email: string;
  attempts: number;
}

/** Claims due syncs of every shop for a lease (claimDue). */
export async function claimDueEmailMarketingSyncs(
  trx: Transaction<Database>,
  lease: Lease,
): Promise<ClaimedEmailMarketingSync[]> {
  return claimDue<ClaimedEmailMarketingSync>(trx, 'email_marketing_syncs', lease, [
    'id',
    'shop_id',
    'setting_id',
    'email',
    'attempts',
  ]);
}

/** The setting's last_synced_at becomes `at`, unless a later sync already set it later (it never moves back). */
export async function touchEmailMarketingLastSynced(
  trx: Transaction<Database>,
  shopId: string,
  settingId: string,
  at: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('email_marketing_settings')
    .set({ last_synced_at: at })
    .where('id', '=', settingId)
    .where((eb) => eb.or([eb('last_synced_at', 'is', null), eb('last_synced_at', '<', at)]))
    .execute();
}
