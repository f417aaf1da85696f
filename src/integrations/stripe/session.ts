// A Stripe Checkout Session for one payment attempt, and what a session says in our words. The attempt id is the
// session's client_reference_id and metadata, and the seed of the idempotency key: starting the same attempt twice
// gives the same session back (Stripe replays the first answer for 24 h).
import type Stripe from 'stripe';
import type { ProviderAccount, ProviderSession, SessionState, StartSessionInput } from '../gateway-provider';
import { fromStripeAmount, toStripeAmount } from './amounts';
import { defaultMaxNetworkRetries, stripeClient, type StripeClientOptions } from './client';
import { asProviderError, undocumented } from './errors';

export function sessionIdempotencyKey(attemptId: string): string {
  return `attempt_${attemptId}`;
}

export async function startStripeSession(
  account: ProviderAccount,
  input: StartSessionInput,
  options: StripeClientOptions,
): Promise<ProviderSession> {
  const metadata = { attempt_id: input.attemptId, order_uniqid: input.orderUniqid, shop_id: input.shopId };
  const params: Stripe.Checkout.SessionCreateParams = {
    mode: 'payment',
    line_items: [
      {
        quantity: 1,
        price_data: {
          currency: input.currency.toLowerCase(),
          unit_amount: toStripeAmount(input.amount, input.currency),
          product_data: { name: input.description },
        },
      },
    ],
    client_reference_id: input.attemptId,
    metadata,
    payment_intent_data: { metadata },
    success_url: input.successUrl,
    cancel_url: input.cancelUrl,
    ...(input.customerEmail ? { customer_email: input.customerEmail } : {}),
  };
  const stripe = stripeClient(account, options);
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.create(params, {
      idempotencyKey: sessionIdempotencyKey(input.attemptId),
      maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries,
    });
  } catch (error) {
    throw asProviderError(error, 'opening a checkout session');
  }
  if (typeof session?.id !== 'string' || typeof session.url !== 'string') {
    throw undocumented('opening a checkout session', 'a session without an id or a URL');
  }
  return { sessionId: session.id, checkoutUrl: session.url };
}

function paymentIntentId(session: Stripe.Checkout.Session): string | undefined {
  const pi = session.payment_intent;
  return typeof pi === 'string' ? pi : (pi?.id ?? undefined);
}

/**
 * A session's state, from a read or from a webhook's copy of it. Stripe has no partial payment: a session is paid in
 * full of its amount_total (which a promotion code may have lowered; the domain compares it with the invoice).
 */
export function stripeSessionState(session: Stripe.Checkout.Session): SessionState {
  if (session.status === 'expired') return { status: 'EXPIRED' };
  if (session.payment_status === 'paid' || session.payment_status === 'no_payment_required') {
    if (session.amount_total === null || session.currency === null) {
      throw undocumented('reading a session', 'a paid session without an amount');
    }
    return {
      status: 'PAID',
      amount: fromStripeAmount(session.amount_total, session.currency),
      currency: session.currency.toUpperCase(),
      // A session that needed no payment has no payment intent: the session is what a refund would name.
      paymentRef: paymentIntentId(session) ?? session.id,
    };
  }
  // Complete but unpaid: an asynchronous method (bank debit) is still settling, unless its payment intent says it
  // failed (then Stripe sends checkout.session.async_payment_failed and the session cannot be paid again).
  const pi = session.payment_intent;
  if (session.status === 'complete' && typeof pi === 'object' && pi !== null) {
    if (pi.status === 'canceled' || (pi.status === 'requires_payment_method' && pi.last_payment_error)) {
      return { status: 'FAILED' };
    }
  }
  return { status: 'OPEN' };
}

export async function readStripeSession(
  account: ProviderAccount,
  sessionId: string,
  options: StripeClientOptions,
): Promise<SessionState> {
  const stripe = stripeClient(account, options);
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.retrieve(
      sessionId,
      { expand: ['payment_intent'] },
      { maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries },
    );
  } catch (error) {
    throw asProviderError(error, 'reading a checkout session');
  }
  if (session?.object !== 'checkout.session' || session.id !== sessionId) {
    throw undocumented('reading a checkout session', 'something that is not that session');
  }
  return stripeSessionState(session);
}
