// The events outbox: what happened in a shop, as delivered to its webhooks.
import type { Transaction } from 'kysely';
import type { Database, EventRow } from '../tables';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShopForWrite, type ShopRow } from './shop-scope';

export type EventPageRow = PageRow<'events'>;

export const eventsPage = pageOf('events');

export const eventById = byIdOf('events');

export async function insertEvent(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'events'>,
): Promise<EventRow> {
  return inShopForWrite(trx, shopId).insertInto('events', row).returningAll().executeTakeFirstOrThrow();
}
