// The events outbox: what happened in a shop, as delivered to its webhooks.
import { sql, type Kysely, type OperationNodeSource, type Transaction } from 'kysely';
import type { Database, EventRow } from '../tables';
import { applyKeyset, type Keyset } from './keyset';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { shaped, type BatchPart } from './batch';
import { addRowValues, definedColumns, rowPlaceholders, type Placeholder } from './prepared';
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
  shopId: string,
  events: readonly NewEvent[],
  fanOut: FanOut,
): BatchPart<WrittenEvent> {
  const values: Record<string, unknown> = {
    $shop: shopId,
    $deliverySeed: fanOut.deliveryIdSeed,
    $attemptSeed: fanOut.attemptIdSeed,
    $endpointId: fanOut.endpoint?.id,
    $endpointUrl: fanOut.endpoint?.url,
  };
  events.forEach((e, n) => addRowValues(values, e, `e${n}.`));
  // What the SQL depends on: the events' columns, the seeds' lengths (the ids keep all but the last 6 characters),
  // and whether one endpoint is named.
  const shape: EventsShape = {
    events: events.map(definedColumns),
    seeds: [fanOut.deliveryIdSeed.length, fanOut.attemptIdSeed.length],
    endpoint: fanOut.endpoint !== undefined,
  };
  const step = (
    name: string,
    build: (db: Kysely<Database>, p: Placeholder, shape: EventsShape) => OperationNodeSource,
  ) => ({ name, query: shaped(`events.${name}`, shape, values, build) });
  return {
    steps: [
      step('new_events', (db, p, shape) =>
        inShopForWrite(db as Transaction<Database>, p('$shop'))
          .insertInto(
            'events',
            shape.events.map((columns, n) => ({
              ...rowPlaceholders<NewEvent>(p, columns, `e${n}.`),
              // The shop's mode is read by the insert itself: no round trip, and no writer can stamp the wrong one.
              // (An expression where the row type wants a value: kysely compiles it into the insert.)
              livemode: sql<boolean>`(select livemode from shops where id = ${p('$shop')})` as unknown as boolean,
            })),
          )
          .returningAll(),
      ),
      step('event_fanout', (db, p, shape) => {
        const endpoints = shape.endpoint
          ? sql`select ${p('$endpointId')}::text as id, ${p('$endpointUrl')}::text as url`
          : subscribedEndpoints(db, p('$shop'), sql<string>`e.type`);
        const numbered = (seed: string, length: number) =>
          sql<string>`left(${p(seed)}::text, ${sql.lit(length - 6)}) || lpad(to_hex(f.n), 6, '0')`;
        return sql`select f.*, ${numbered('$deliverySeed', shape.seeds[0])} as delivery_id,
            ${numbered('$attemptSeed', shape.seeds[1])} as attempt_id
          from (select e.id as event_id, e.type as event_type, e.created_at as at, ep.id as endpoint_id, ep.url,
                  row_number() over (order by e.id, ep.id) as n
                from new_events e cross join lateral (${endpoints}) ep) f`;
      }),
      step(
        'new_deliveries',
        (db, p) => sql`insert into webhook_deliveries
            (id, shop_id, endpoint_id, event_id, status, next_attempt_at, pending_attempt_id, created_at, updated_at)
          select delivery_id, ${p('$shop')}, endpoint_id, event_id, 'PENDING', at, attempt_id, at, at from event_fanout`,
      ),
      step(
        'new_attempts',
        (db, p) => sql`insert into webhook_attempts
            (id, shop_id, delivery_id, endpoint_id, event_id, event_type, url, attempt, status, next_retry_at, created_at)
          select attempt_id, ${p('$shop')}, delivery_id, endpoint_id, event_id, event_type, url, 1, 'PENDING', at, at
          from event_fanout`,
      ),
    ],
    answer: shaped('events.answer', null, {}, () => writtenEvents),
  };
}

type EventsShape = { events: string[][]; seeds: [number, number]; endpoint: boolean };

const writtenEvents = sql<WrittenEvent>`select e.*, coalesce((select array_agg(f.attempt_id order by f.n)
    from event_fanout f where f.event_id = e.id), '{}') as attempt_ids
  from new_events e order by e.id`;

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
