// The events outbox. `writeEvent` records what happened, inside the transaction of the change it describes, and
// queues one delivery (with its first, PENDING, log entry) to every enabled endpoint of the shop subscribed to it.
// A rolled-back transaction takes the event and its deliveries with it; a committed one is delivered by the worker
// (src/worker/webhook-delivery.ts), at least once, whatever happens to this process.
//
// Features that must act on an event in its transaction (a marketing list's sync, a bot's message) are consumers
// the writer is given, as the unit of work is given its effect sinks: the outbox knows no feature. The list is
// named once, in src/domain/effects.ts, and every writer takes it from there.
import type { Transaction } from 'kysely';
import type { Database, EventRow } from '../../db/tables';
import type { ShopRow } from '../../db/queries/shop-scope';
import { insertEvent } from '../../db/queries/events';
import { endpointsSubscribedTo } from '../../db/queries/webhook-endpoints';
import { insertAttempts, insertDeliveries } from '../../db/queries/webhook-deliveries';
import { newId } from '../ids';
import type { Clock } from './clock';
import { eventData } from './event-data';
import type { EffectSink } from './unit-of-work';

/**
 * Hears every event written, in the transaction that writes it, after the event and its deliveries: `data` is what
 * the event holds (secrets already left out). What it writes commits with the event or not at all.
 */
export type EventConsumer = (
  trx: Transaction<Database>,
  shopId: string,
  event: EventRow,
  data: unknown,
) => Promise<unknown>;

export interface EmitOptions {
  /** Who hears the event (src/domain/effects.ts defaultEventConsumers); required, so no writer can skip them. */
  consumers: readonly EventConsumer[];
  clock: Clock;
  /** Only this endpoint (a test event), whatever the others subscribe to; no consumer hears a test event. */
  endpoint?: { id: string; url: string };
}

/**
 * The webhook body of an event: exactly `{ event, data, livemode }` (the `webhooks` section of openapi.yaml), from
 * the stored JSON text of its data, so amounts keep every digit (see src/platform/money.ts).
 */
export function eventBody(type: string, dataJson: string, livemode?: boolean): string {
  // A dynamic-delivery request (not an event of the outbox) has the same shape without the mode.
  const mode = livemode === undefined ? '' : `,"livemode":${livemode}`;
  return `{"event":${JSON.stringify(type)},"data":${dataJson}${mode}}`;
}

export async function writeEvent(
  trx: Transaction<Database>,
  shopId: string,
  type: string,
  given: unknown,
  options: EmitOptions,
): Promise<{ event: EventRow; attemptIds: string[] }> {
  const now = options.clock.now();
  // Here, where every event enters the outbox: no emitter can store or send a secret (a license key) by mistake.
  const data = eventData(type, given);
  const event = await insertEvent(trx, shopId, {
    id: newId('evt'),
    type,
    data: JSON.stringify(data),
    created_at: now,
  });
  const endpoints = options.endpoint ? [options.endpoint] : await endpointsSubscribedTo(trx, shopId, type);
  const attemptIds = await queueDeliveries(trx, shopId, event, endpoints, now);
  if (!options.endpoint) for (const consumer of options.consumers) await consumer(trx, shopId, event, data);
  return { event, attemptIds };
}

async function queueDeliveries(
  trx: Transaction<Database>,
  shopId: string,
  event: EventRow,
  endpoints: readonly { id: string; url: string }[],
  now: Date,
): Promise<string[]> {
  const plans = endpoints.map((e) => ({ endpoint: e, deliveryId: newId('whd'), attemptId: newId('whl') }));
  await insertDeliveries(
    trx,
    shopId,
    plans.map((p) => ({
      id: p.deliveryId,
      endpoint_id: p.endpoint.id,
      event_id: event.id,
      status: 'PENDING' as const,
      next_attempt_at: now,
      pending_attempt_id: p.attemptId,
      created_at: now,
      updated_at: now,
    })),
  );
  await insertAttempts(
    trx,
    shopId,
    plans.map((p) =>
      queuedAttempt({
        id: p.attemptId,
        deliveryId: p.deliveryId,
        endpointId: p.endpoint.id,
        eventId: event.id,
        eventType: event.type,
        url: p.endpoint.url,
        attempt: 1,
        dueAt: now,
      }),
    ),
  );
  return plans.map((p) => p.attemptId);
}

/** The log entry of an attempt queued for `dueAt` (status PENDING): the first, a retry, or a manual one. */
export function queuedAttempt(a: {
  id: string;
  deliveryId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  url: string;
  attempt: number;
  dueAt: Date;
}): ShopRow<'webhook_attempts'> {
  return {
    id: a.id,
    delivery_id: a.deliveryId,
    endpoint_id: a.endpointId,
    event_id: a.eventId,
    event_type: a.eventType,
    url: a.url,
    attempt: a.attempt,
    status: 'PENDING',
    response_status: null,
    response_body: null,
    duration_ms: null,
    error: null,
    next_retry_at: a.dueAt,
    created_at: a.dueAt,
  };
}

/** Writes the events a unit of work collected (`effects.emit`) through `writeEvent`, in its transaction. */
export function eventsSink(consumers: readonly EventConsumer[], clock: Clock): EffectSink {
  return {
    kinds: ['events'],
    async write(trx, pending, origin) {
      if (pending.events.length === 0) return;
      if (!origin.shopId) throw new Error('an event needs a shop');
      const at = origin.clock ?? clock;
      for (const e of pending.events) await writeEvent(trx, origin.shopId, e.type, e.data, { consumers, clock: at });
    },
  };
}
