// Where the domain's side effects go, named once for every entry point (the API, the checkout, the worker, the
// command line and its fixtures), so none can forget one: the features that hear each event in its transaction,
// and the sinks a unit of work writes its effects through (events with their webhook deliveries, mail, the audit
// trail). The outbox (src/platform/events.ts) and the unit of work know no feature; they are given these.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { mailSink } from '../mail/queue';
import { auditSink } from '../platform/audit';
import type { Clock } from '../platform/clock';
import { eventsSink, writeEvent, type EmitOptions, type EventConsumer } from '../platform/events';
import { writeWithin, type EffectSink, type ShopWrite } from '../platform/unit-of-work';
import { newId } from '../ids';
import { queueBotNotifications } from './store/bot-notifications';
import { emailMarketingOnEvent } from './store/email-marketing-sync';

/** Who hears every event of a shop, in the event's transaction. */
export const defaultEventConsumers: readonly EventConsumer[] = [
  // Email-marketing sync: a new customer is queued for the shop's lists.
  { after: { types: ['customer:created'], hear: emailMarketingOnEvent } },
  // Telegram messages to the shop's bot users whose switch for the event is on.
  queueBotNotifications,
];

/**
 * Writes an event to the outbox, heard by the default consumers: for writes outside a unit of work (a worker's job,
 * a renewal) and tests; inside one, `effects.emit` does it.
 */
export function emitEvent(
  trx: Transaction<Database>,
  shopId: string,
  type: string,
  data: unknown,
  options: Omit<EmitOptions, 'consumers'>,
) {
  return writeEvent(trx, shopId, type, data, { ...options, consumers: defaultEventConsumers });
}

/** The sinks of every unit of work: one list for the API, the checkout and the command line. */
export function defaultEffectSinks(clock: Clock): EffectSink[] {
  return [eventsSink(defaultEventConsumers, clock), mailSink(clock), auditSink()];
}

/**
 * A shop write in a transaction a worker opened (it claimed its row there, with SKIP LOCKED): the work gets its
 * ShopWrite, and its effects go through the default sinks before the worker commits, as an API write's would.
 */
export function workerWrite<T>(
  trx: Transaction<Database>,
  shopId: string,
  job: string,
  clock: Clock,
  work: (w: ShopWrite) => Promise<T>,
): Promise<T> {
  const origin = { shopId, credentialId: undefined, operationId: job, requestId: newId('req') };
  return writeWithin(trx, origin, clock, defaultEffectSinks(clock), work);
}
