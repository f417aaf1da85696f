// Email-marketing sync: a shop's new customer is added to the list of each of its email-marketing settings that can
// sync (enabled, sync_customers on, a list and an API key; see syncBlocker in src/platform/email-marketing-providers.ts).
// Queued here, in the transaction that created the customer (a rolled-back change queues nothing); sent by the
// worker (src/worker/email-marketing-sync.ts), which moves the setting's last_synced_at on each success.
// The provider API key is set by the operator (`cli email-marketing set --api-key-stdin` or EMAIL_MARKETING_API_KEY),
// sealed with the secret box bound to the shop and the setting, and never returned, logged or audited.
import type { Transaction } from 'kysely';
import * as syncs from '../../../db/queries/email-marketing-sync';
import type { Database, EventRow } from '../../../db/tables';
import { ValidationError } from '../../errors';
import { newId } from '../../ids';
import { syncBlocker } from '../../platform/email-marketing-providers';
import type { SecretBox } from '../../platform/secret-box';
import type { ShopWrite } from '../../platform/unit-of-work';

/** What a setting's API key is sealed with: it opens only on that setting's row of that shop. */
export function emailMarketingKeyContext(shopId: string, settingId: string): string {
  return `email-marketing-key:${shopId}:${settingId}`;
}

export const API_KEY_MAX = 500;

/** Stores (or replaces) the setting's provider API key, sealed. A key is 1-500 visible ASCII characters. */
export async function setEmailMarketingKey(
  w: ShopWrite,
  box: SecretBox,
  settingId: string,
  apiKey: string,
): Promise<void> {
  const { trx, shopId, now } = w;
  if (apiKey.length < 1 || apiKey.length > API_KEY_MAX || !/^[\x21-\x7e]+$/.test(apiKey))
    throw new ValidationError([{ field: 'api_key', message: `must be 1 to ${API_KEY_MAX} visible ASCII characters` }]);
  await syncs.upsertEmailMarketingKey(
    trx,
    shopId,
    settingId,
    box.seal(apiKey, emailMarketingKeyContext(shopId, settingId)),
    now,
  );
}

/**
 * What queueing a sync needs of a write: its transaction, its shop and its instant. A ShopWrite is one; so is what
 * an event consumer has (the event's transaction, its shop, and the event's time).
 */
export type SyncWrite = Pick<ShopWrite, 'trx' | 'shopId' | 'now'>;

/**
 * Queues the customer's sync to every setting of the shop that can sync now: one PENDING row per setting, due at
 * once. A customer already queued for a setting is not queued again.
 */
export async function queueCustomerSync(w: SyncWrite, customer: { id: string; email: string }): Promise<number> {
  const { trx, shopId, now } = w;
  const settings = (await syncs.syncingSettingsOfShop(trx, shopId)).filter(
    (s) => syncBlocker({ ...s, hasKey: s.sealed_key !== null }) === null,
  );
  await syncs.insertEmailMarketingSyncs(
    trx,
    shopId,
    settings.map((s) => ({
      id: newId('emsy'),
      setting_id: s.id,
      customer_id: customer.id,
      email: customer.email,
      status: 'PENDING' as const,
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    })),
  );
  return settings.length;
}

/** A consumer of the events outbox (src/domain/effects.ts): a `customer:created` queues the customer's sync. */
export async function emailMarketingOnEvent(
  trx: Transaction<Database>,
  shopId: string,
  event: EventRow,
  data: unknown,
): Promise<void> {
  if (event.type !== 'customer:created') return;
  const customer = data as { id?: unknown; email?: unknown };
  if (typeof customer.id !== 'string' || typeof customer.email !== 'string') return;
  await queueCustomerSync({ trx, shopId, now: event.created_at }, { id: customer.id, email: customer.email });
}
