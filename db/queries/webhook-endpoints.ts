// A shop's webhook endpoints.
import { sql, type Expression, type Transaction, type Updateable } from 'kysely';
import type { Database, WebhookEndpointRow, WebhookEndpointsTable } from '../tables';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type WebhookEndpointPageRow = PageRow<'webhook_endpoints'>;

export const webhookEndpointsPage = pageOf('webhook_endpoints');

export const webhookEndpointById = byIdOf('webhook_endpoints');

/** The endpoint, locked until the end of the transaction (a rotation and an update do not interleave). */
export async function webhookEndpointForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Enabled endpoints of the shop subscribed to an event type (by name or by `*`): a query for the statement that
 * writes the events' deliveries (db/queries/events.ts), where `type` is the event row's column.
 */
export function subscribedEndpoints(db: ReadDb, shopId: string, type: Expression<string>) {
  return inShop(db, shopId)
    .selectFrom('webhook_endpoints')
    .select(['id', 'url'])
    .where('enabled', '=', true)
    .where(sql<boolean>`events && array[${type}, '*']::text[]`);
}

export async function insertWebhookEndpoint(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'webhook_endpoints'>,
): Promise<WebhookEndpointRow> {
  return inShopForWrite(trx, shopId).insertInto('webhook_endpoints', row).returningAll().executeTakeFirstOrThrow();
}

export async function updateWebhookEndpoint(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  changes: Omit<Updateable<WebhookEndpointsTable>, 'id' | 'shop_id'>,
): Promise<WebhookEndpointRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('webhook_endpoints')
    .set(changes)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the endpoint; its deliveries and their log go with it (foreign keys on delete cascade). */
export async function deleteWebhookEndpoint(trx: Transaction<Database>, shopId: string, id: string): Promise<boolean> {
  const r = await inShopForWrite(trx, shopId).deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return r.numDeletedRows > 0n;
}
