// Where a write's side effects go, in its transaction: events (with their webhook deliveries), mail and the audit
// trail. One list for the API, the checkout and the command line, so no writer forgets one.
import { auditSink } from './audit';
import type { Clock } from './clock';
import { eventsSink } from './events';
import { mailSink } from '../mail/queue';
import type { EffectSink } from './unit-of-work';

export function defaultEffectSinks(clock: Clock): EffectSink[] {
  return [eventsSink(clock), mailSink(clock), auditSink()];
}
