// PayPal-Request-Id values (PayPal's idempotency key, 1-108 characters, kept by PayPal for at least 6 hours), each
// derived from our own id so a repeated call, from a retry or a second process, is the same call to PayPal.
import { createHash } from 'node:crypto';

export type RequestIdKind = 'order' | 'capture' | 'refund';

/** `<kind>-<id>` when the id is plain and short, else `<kind>-<sha256 of the id>`: always the same for one id. */
export function requestIdFor(kind: RequestIdKind, id: string): string {
  if (/^[A-Za-z0-9_-]{1,96}$/.test(id)) return `${kind}-${id}`;
  return `${kind}-${createHash('sha256').update(id).digest('hex')}`;
}
