// The events outbox. `writeEvent` records what happened, inside the transaction of the change it describes, and
// queues one delivery (with its first, PENDING, log entry) to every enabled endpoint of the shop subscribed to it,
// in the one statement that writes the event (in a unit of work, the flush's statement: `eventsSink`).
// A rolled-back transaction takes the event and its deliveries with it; a committed one is delivered by the worker
// (src/worker/webhook-delivery.ts), at least once, whatever happens to this process.
//
// Features that must act on an event in its transaction (a marketing list's sync, a bot's message) are consumers
// the writer is given, as the unit of work is given its effect sinks: the outbox knows no feature. The list is
// named once, in src/domain/effects.ts, and every writer takes it from there.
import type { Transaction } from 'kysely';
import type { Database, EventRow } from '../../db/tables';
import type { ShopRow } from '../../db/queries/shop-scope';
import { executeBatch, type BatchPart, type BatchStep } from '../../db/queries/batch';
import { eventsWithDeliveries, type WrittenEvent } from '../../db/queries/events';
import { newId } from '../ids';
import type { Clock } from './clock';
import { eventData } from './event-data';
import { currentTraceparent } from './tracing';
import type { EffectSink, EventDraft } from './unit-of-work';

/** An event as its statement will store it: what a consumer's entries of that statement may name. */
export interface PlannedEvent {
  id: string;
  type: string;
  created_at: Date;
}

/**
 * Hears every event written, in the transaction that writes it: `data` is what the event holds (secrets already
 * left out). What it writes commits with the event or not at all. A write that needs nothing the statement reads
 * back goes in the event's own statement (`inStatement`: entries of db/queries/batch.ts, no round trip of their
 * own); anything else runs after that statement (`after`), for the event types it names only, so a statement
 * whose events no such consumer hears need read nothing back.
 */
export interface EventConsumer {
  /** Entries of the statement that writes the event; each entry's name is unique within the consumer. */
  inStatement?(shopId: string, event: PlannedEvent, data: unknown): readonly BatchStep[];
  after?: {
    types: readonly string[];
    hear(trx: Transaction<Database>, shopId: string, event: EventRow, data: unknown): Promise<unknown>;
  };
}

export interface EmitOptions {
  /** Who hears the event (src/domain/effects.ts defaultEventConsumers); required, so no writer can skip them. */
  consumers: readonly EventConsumer[];
  clock: Clock;
  /** Only this endpoint (a test event), whatever the others subscribe to; no consumer hears a test event. */
  endpoint?: { id: string; url: string };
  /** The writer wants the events as written (with their attempts' ids) whoever hears them. */
  readBack?: boolean;
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

/** Writes one event and its deliveries in one statement, then lets the consumers hear it (see `writeEvents`). */
export async function writeEvent(
  trx: Transaction<Database>,
  shopId: string,
  type: string,
  given: unknown,
  options: EmitOptions,
): Promise<{ event: EventRow; attemptIds: string[] }> {
  const [written] = await writeEvents(trx, shopId, [{ type, data: given }], options);
  return written!;
}

/**
 * Writes events for writes outside a unit of work (a worker's job, a renewal, a seed) and tests: the events and their
 * deliveries in one statement, then the consumers.
 */
export async function writeEvents(
  trx: Transaction<Database>,
  shopId: string,
  drafts: readonly EventDraft[],
  options: EmitOptions,
): Promise<{ event: EventRow; attemptIds: string[] }[]> {
  if (drafts.length === 0) return [];
  const { part, heard } = eventsPart(trx, shopId, drafts, { ...options, readBack: true });
  const [rows] = await executeBatch(trx, [part]);
  return heard(rows as WrittenEvent[]);
}

/**
 * The one rule of an event's entry into the outbox, whoever writes it: its data as `eventData` leaves it, one
 * delivery (with its first, PENDING, log entry) to every enabled endpoint of the shop subscribed to it (or to the
 * one endpoint of a test event), all in the statement of `part`; then, given what that statement read back,
 * `heard` lets the consumers hear each event, in order, and answers the events with their attempts' ids.
 */
function eventsPart(
  trx: Transaction<Database>,
  shopId: string,
  drafts: readonly EventDraft[],
  options: EmitOptions,
): {
  part: BatchPart<WrittenEvent>;
  heard: (rows: WrittenEvent[]) => Promise<{ event: EventRow; attemptIds: string[] }[]>;
} {
  const now = options.clock.now();
  const dataOf = new Map<string, unknown>();
  // The request (or job) writing the events, for the delivery span's link; only set while tracing is on, so the
  // statement is the same as ever when it is off.
  const traceparent = currentTraceparent();
  const events = drafts.map((draft) => {
    // Here, where every event enters the outbox: no emitter can store or send a secret (a license key) by mistake.
    const data = eventData(draft.type, draft.data);
    const id = newId('evt');
    dataOf.set(id, data);
    const event = { id, type: draft.type, data: JSON.stringify(data), created_at: now };
    return traceparent ? { ...event, traceparent } : event;
  });
  const written = eventsWithDeliveries(shopId, events, {
    deliveryIdSeed: newId('whd'),
    attemptIdSeed: newId('whl'),
    endpoint: options.endpoint && { id: options.endpoint.id, url: options.endpoint.url },
  });
  // No consumer hears a test event (sent to one endpoint).
  const consumers = options.endpoint ? [] : options.consumers;
  const consumerSteps = events.flatMap((event, e) =>
    consumers.flatMap((consumer, c) =>
      (consumer.inStatement?.(shopId, event, dataOf.get(event.id)) ?? []).map((step) => ({
        ...step,
        name: `${step.name}_${c}_${e}`,
      })),
    ),
  );
  const steps = [...written.steps, ...consumerSteps];
  // Read back only when a consumer hears one of these events after the statement, or the writer wants the rows.
  const types = new Set(events.map((e) => e.type));
  const readBack = options.readBack || consumers.some((c) => c.after?.types.some((t) => types.has(t)));
  const part = readBack ? { steps, answer: written.answer } : { steps };
  const heard = async (rows: WrittenEvent[]) => {
    const done = rows.map(({ attempt_ids: attemptIds, ...event }) => ({ event: event as EventRow, attemptIds }));
    for (const { event } of done) {
      for (const { after } of consumers) {
        if (after?.types.includes(event.type)) await after.hear(trx, shopId, event, dataOf.get(event.id));
      }
    }
    return done;
  };
  return { part, heard };
}

/**
 * The log entry of an attempt queued for `dueAt` (status PENDING): a retry or a manual one. (The first is written
 * with its delivery, by the statement that writes the event: db/queries/events.ts.)
 */
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

/**
 * Writes the events a unit of work collected (`effects.emit`) in the flush's statement, each with its deliveries;
 * the consumers hear them once it ran, in the same transaction.
 */
export function eventsSink(consumers: readonly EventConsumer[], clock: Clock): EffectSink {
  return {
    kinds: ['events'],
    write(trx, pending, origin, batch) {
      if (pending.events.length === 0) return;
      if (!origin.shopId) throw new Error('an event needs a shop');
      const { part, heard } = eventsPart(trx, origin.shopId, pending.events, {
        consumers,
        clock: origin.clock ?? clock,
      });
      batch.add(part, heard);
    },
  };
}
