// The events outbox: what happened in a shop, as delivered to its webhooks.
import { sql, type Transaction } from 'kysely';
import type { Database, EventRow } from '../tables';
import { applyKeyset, type Keyset } from './keyset';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import type { BatchPart } from './batch';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';
import { subscribedEndpoints } from './webhook-endpoints';

export type EventPageRow = PageRow<'events'>;

export const eventsPage = pageOf('events');

export const eventById = byIdOf('events');

/** An event as its writer makes it; the statement that writes it stamps the shop's mode. */
export type NewEvent = Omit<ShopRow<'events'>, 'livemode'>;

/** An event as written, with the ids of its deliveries' first attempts (in endpoint id order). */
export type WrittenEvent = EventRow & { attempt_ids: string[] };

/** Where the events' deliveries go, and the ids they get. */
export interface FanOut {
  /**
   * A fresh id (`newId('whd')`, a UUIDv7) the deliveries' ids are made from, and one (`newId('whl')`) for their
   * first attempts': each delivery's id is the seed with its last three (random) bytes replaced by the delivery's
   * number in the statement, 1, 2, …, in the order of the events, then of the endpoints' ids. The seed's time and
   * sequence are kept, so the ids are UUIDv7s of the same shape, after every id the process made before the seed
   * and before every id it makes after, as if made one by one.
   */
  deliveryIdSeed: string;
  attemptIdSeed: string;
  /** Only this endpoint (a test event), whatever it subscribes to; otherwise every enabled endpoint subscribed. */
  endpoint?: { id: string; url: string };
}

/**
 * The events and their webhook deliveries, each with its first, PENDING, attempt, written by one statement (as a part
 * of a batch, db/queries/batch.ts): the endpoints subscribed are read by the statement that writes the deliveries,
 * so nothing comes and goes between them. Answers the events as written.
 */
export function eventsWithDeliveries(
  trx: Transaction<Database>,
  shopId: string,
  events: readonly NewEvent[],
  fanOut: FanOut,
): BatchPart<WrittenEvent> {
  // The shop's mode is read by the insert itself: no round trip, and no writer can stamp the wrong one.
  // (An expression where the row type wants a value: kysely compiles it into the insert.)
  const livemode = sql<boolean>`(select livemode from shops where id = ${shopId})` as unknown as boolean;
  const endpoints = fanOut.endpoint
    ? sql`select ${fanOut.endpoint.id}::text as id, ${fanOut.endpoint.url}::text as url`
    : subscribedEndpoints(trx, shopId, sql<string>`e.type`);
  const numbered = (seed: string) => sql<string>`left(${seed}::text, ${seed.length - 6}) || lpad(to_hex(f.n), 6, '0')`;
  return {
    steps: [
      {
        name: 'new_events',
        query: inShopForWrite(trx, shopId)
          .insertInto(
            'events',
            events.map((e) => ({ ...e, livemode })),
          )
          .returningAll(),
      },
      {
        name: 'event_fanout',
        query: sql`select f.*, ${numbered(fanOut.deliveryIdSeed)} as delivery_id,
            ${numbered(fanOut.attemptIdSeed)} as attempt_id
          from (select e.id as event_id, e.type as event_type, e.created_at as at, ep.id as endpoint_id, ep.url,
                  row_number() over (order by e.id, ep.id) as n
                from new_events e cross join lateral (${endpoints}) ep) f`,
      },
      {
        name: 'new_deliveries',
        query: sql`insert into webhook_deliveries
            (id, shop_id, endpoint_id, event_id, status, next_attempt_at, pending_attempt_id, created_at, updated_at)
          select delivery_id, ${shopId}, endpoint_id, event_id, 'PENDING', at, attempt_id, at, at from event_fanout`,
      },
      {
        name: 'new_attempts',
        query: sql`insert into webhook_attempts
            (id, shop_id, delivery_id, endpoint_id, event_id, event_type, url, attempt, status, next_retry_at, created_at)
          select attempt_id, ${shopId}, delivery_id, endpoint_id, event_id, event_type, url, 1, 'PENDING', at, at
          from event_fanout`,
      },
    ],
    answer: sql<WrittenEvent>`select e.*, coalesce((select array_agg(f.attempt_id order by f.n) from event_fanout f
        where f.event_id = e.id), '{}') as attempt_ids
      from new_events e order by e.id`,
  };
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
