// The events outbox: what happened in a shop, as delivered to its webhooks.
import { sql, type Transaction } from 'kysely';
import type { Database, EventRow } from '../tables';
import { applyKeyset, type Keyset } from './keyset';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type EventPageRow = PageRow<'events'>;

export const eventsPage = pageOf('events');

export const eventById = byIdOf('events');

export async function insertEvent(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'events'>,
): Promise<EventRow> {
  // The shop's mode is read by the insert itself: no round trip, and no writer can stamp the wrong one.
  // (An expression where the row type wants a value: kysely compiles it into the insert.)
  const livemode = sql<boolean>`(select livemode from shops where id = ${shopId})` as unknown as boolean;
  return inShopForWrite(trx, shopId)
    .insertInto('events', { ...row, livemode })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * `eventsPage` restricted to these types (what a credential may read, src/domain/webhooks/webhooks.ts), in the query, so the
 * keyset, `limit + 1` and `has_more` count only the rows shown. Built per request: the type list varies by scopes.
 */
export async function eventsPageOfTypes(
  db: ReadDb,
  shopId: string,
  keyset: Keyset,
  types: readonly string[],
): Promise<EventPageRow[]> {
  if (types.length === 0) return [];
  return applyKeyset(
    inShop(db, shopId)
      .selectFrom('events')
      .selectAll()
      .where('type', 'in', [...types]),
    keyset,
  ).execute();
}
