// Stripe-Signature verification by stripe-node itself (webhooks.constructEvent: HMAC-SHA256 of "t.payload" under the
// endpoint's whsec_ secret, any v1 signature matching, timestamp within the tolerance), never a copy of it.
import type Stripe from 'stripe';
import { stripeSdk } from './client';
import { type ProviderAccount, WebhookRejected } from '../gateway-provider';

/** Stripe's own default: a signature older than five minutes is a replay, not a delivery. */
export const signatureToleranceSeconds = 300;

function header(headers: Readonly<Record<string, string | string[] | undefined>>, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function verifyStripeEvent(
  account: ProviderAccount,
  rawBody: Buffer,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Stripe.Event {
  const secret = account.credentials.webhook_secret;
  if (!secret) throw new WebhookRejected('The Stripe connection has no webhook secret.');
  const signature = header(headers, 'stripe-signature');
  if (!signature) throw new WebhookRejected('The request has no Stripe-Signature header.');
  let event: unknown;
  try {
    event = stripeSdk().webhooks.constructEvent(rawBody, signature, secret, signatureToleranceSeconds);
  } catch (error) {
    // The library's message names the failure (no matching signature, timestamp outside the tolerance) and holds
    // no secret; a body that is signed but not JSON fails its parse and lands here too.
    const why = error instanceof stripeSdk().errors.StripeSignatureVerificationError ? error.message : 'not JSON';
    throw new WebhookRejected(`Stripe webhook rejected: ${why}`);
  }
  if (
    !isRecord(event) ||
    event.object !== 'event' ||
    typeof event.id !== 'string' ||
    typeof event.type !== 'string' ||
    typeof event.livemode !== 'boolean' ||
    !isRecord(event.data) ||
    !isRecord(event.data.object)
  ) {
    throw new WebhookRejected('Stripe webhook rejected: the body is not a Stripe event.');
  }
  // A test event must never settle a live shop's invoice, nor the reverse.
  if (event.livemode !== account.livemode) {
    throw new WebhookRejected(`Stripe webhook rejected: a ${event.livemode ? 'live' : 'test'}-mode event.`);
  }
  return event as unknown as Stripe.Event;
}
