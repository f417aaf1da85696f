// A verified Stripe event in our words. Only the events below mean something to us; any other verified event is
// IGNORED (acknowledged, nothing done), so an endpoint subscribed to more events than we need does no harm.
import type Stripe from 'stripe';
import { type DisputeOutcome, type ProviderNotice, WebhookRejected } from '../gateway-provider';
import { fromStripeAmount } from './amounts';
import { stripeSessionState } from './session';

/** Stripe's dispute reasons that have a name of ours; the rest (bank_cannot_process, unrecognized...) are GENERAL. */
const disputeReasons: Readonly<Record<string, string>> = {
  fraudulent: 'FRAUDULENT',
  product_not_received: 'PRODUCT_NOT_RECEIVED',
  product_unacceptable: 'PRODUCT_UNACCEPTABLE',
  duplicate: 'DUPLICATE',
  subscription_canceled: 'SUBSCRIPTION_CANCELED',
  credit_not_processed: 'CREDIT_NOT_PROCESSED',
};

export function disputeReason(reason: string): string {
  return Object.hasOwn(disputeReasons, reason) ? disputeReasons[reason]! : 'GENERAL';
}

function disputeOutcome(status: string): DisputeOutcome {
  return status === 'won' ? 'WON' : status === 'lost' ? 'LOST' : 'CLOSED';
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  return typeof value === 'string' ? value : (value?.id ?? undefined);
}

function malformed(event: Stripe.Event, what: string): WebhookRejected {
  return new WebhookRejected(`Stripe webhook rejected: ${event.type} ${event.id} has ${what}.`);
}

function sessionNotice(event: Stripe.Event, session: Stripe.Checkout.Session, failed = false): ProviderNotice {
  if (typeof session.id !== 'string' || session.object !== 'checkout.session') {
    throw malformed(event, 'no checkout session');
  }
  const attemptId = session.client_reference_id ?? session.metadata?.attempt_id ?? undefined;
  return {
    kind: 'SESSION',
    eventId: event.id,
    sessionId: session.id,
    ...(attemptId ? { attemptId } : {}),
    // async_payment_failed: the session itself still reads "complete, unpaid" and its payment intent is not expanded
    // in an event, so the event's type is what says the payment failed.
    state: failed ? { status: 'FAILED' } : stripeSessionState(session),
  };
}

/** The refunds of a payment intent, when a charge event does not list them all (Stripe stopped including them). */
export type RefundLister = (paymentIntent: string) => Promise<Stripe.Refund[]>;

async function refundedNotice(event: Stripe.Event, charge: Stripe.Charge, list: RefundLister): Promise<ProviderNotice> {
  const paymentRef = idOf(charge.payment_intent);
  if (charge.object !== 'charge' || !paymentRef) throw malformed(event, 'no charge with a payment intent');
  const listed = charge.refunds;
  const refunds = listed && !listed.has_more ? listed.data : await list(paymentRef);
  return {
    kind: 'REFUNDED',
    eventId: event.id,
    paymentRef,
    refunds: refunds
      .filter((r) => r.status !== 'failed' && r.status !== 'canceled')
      .map((r) => ({
        providerRefundId: r.id,
        amount: fromStripeAmount(r.amount, r.currency),
        currency: r.currency.toUpperCase(),
      })),
  };
}

function disputeRef(event: Stripe.Event, dispute: Stripe.Dispute): string {
  const ref = idOf(dispute.payment_intent) ?? idOf(dispute.charge);
  if (dispute.object !== 'dispute' || !ref) throw malformed(event, 'no dispute with a payment');
  return ref;
}

/**
 * The events the switch below acts on: what a connected shop's Stripe webhook endpoint must send
 * (src/integrations/stripe/webhook-endpoint-check.ts refuses a connection whose endpoint leaves one out).
 */
export const stripeEventTypes = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.async_payment_failed',
  'checkout.session.expired',
  'charge.refunded',
  'charge.dispute.created',
  'charge.dispute.closed',
] as const satisfies readonly Stripe.Event.Type[];

export async function stripeNotices(event: Stripe.Event, listRefunds: RefundLister): Promise<ProviderNotice[]> {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
    case 'checkout.session.expired':
      return [sessionNotice(event, event.data.object)];
    case 'checkout.session.async_payment_failed':
      return [sessionNotice(event, event.data.object, true)];
    case 'charge.refunded':
      return [await refundedNotice(event, event.data.object, listRefunds)];
    case 'charge.dispute.created': {
      const dispute = event.data.object;
      const dueBy = dispute.evidence_details?.due_by;
      return [
        {
          kind: 'DISPUTE_OPENED',
          eventId: event.id,
          paymentRef: disputeRef(event, dispute),
          disputeId: dispute.id,
          amount: fromStripeAmount(dispute.amount, dispute.currency),
          currency: dispute.currency.toUpperCase(),
          reason: disputeReason(dispute.reason),
          ...(typeof dueBy === 'number' ? { evidenceDueBy: new Date(dueBy * 1000) } : {}),
        },
      ];
    }
    case 'charge.dispute.closed': {
      const dispute = event.data.object;
      return [
        {
          kind: 'DISPUTE_CLOSED',
          eventId: event.id,
          paymentRef: disputeRef(event, dispute),
          disputeId: dispute.id,
          outcome: disputeOutcome(dispute.status),
        },
      ];
    }
    default:
      return [{ kind: 'IGNORED', eventId: event.id, type: event.type }];
  }
}
