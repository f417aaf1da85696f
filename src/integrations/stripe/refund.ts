// A refund of a paid session's payment intent. The idempotency key is derived from our refund id, so a retried
// refund (ours or stripe-node's) never gives the money back twice.
import type Stripe from 'stripe';
import type { ProviderAccount, ProviderRefund, RefundRequest } from '../gateway-provider';
import { ProviderError } from '../gateway-provider';
import { toStripeAmount } from './amounts';
import { defaultMaxNetworkRetries, stripeClient, type StripeClientOptions } from './client';
import { asProviderError, undocumented } from './errors';

export function refundIdempotencyKey(refundId: string): string {
  return `refund_${refundId}`;
}

/** Stripe's refund reasons; any other reason text travels in metadata only. */
const stripeReasons = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
type StripeReason = (typeof stripeReasons)[number];

function stripeReason(reason: string | undefined): StripeReason | undefined {
  const normalised = reason?.trim().toLowerCase();
  return stripeReasons.find((r) => r === normalised);
}

export async function stripeRefund(
  account: ProviderAccount,
  request: RefundRequest,
  options: StripeClientOptions,
): Promise<ProviderRefund> {
  const reason = stripeReason(request.reason);
  const params: Stripe.RefundCreateParams = {
    payment_intent: request.paymentRef,
    amount: toStripeAmount(request.amount, request.currency),
    metadata: {
      refund_id: request.refundId,
      ...(request.reason && !reason ? { reason: request.reason.slice(0, 500) } : {}),
    },
    ...(reason ? { reason } : {}),
  };
  const stripe = stripeClient(account, options);
  let refund: Stripe.Refund;
  try {
    refund = await stripe.refunds.create(params, {
      idempotencyKey: refundIdempotencyKey(request.refundId),
      maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries,
    });
  } catch (error) {
    throw asProviderError(error, 'refunding a payment');
  }
  if (refund?.object !== 'refund' || typeof refund.id !== 'string') {
    throw undocumented('refunding a payment', 'something that is not a refund');
  }
  switch (refund.status) {
    case 'succeeded':
      return { providerRefundId: refund.id, status: 'SUCCEEDED' };
    case 'pending':
    case 'requires_action':
      return { providerRefundId: refund.id, status: 'PENDING' };
    case 'failed':
    case 'canceled':
      throw new ProviderError('refused', `Stripe's refund ${refund.id} ${refund.status}.`);
    default:
      throw undocumented('refunding a payment', `a refund in status ${String(refund.status)}`);
  }
}

/** Every refund of a payment intent (a charge.refunded event may not list them). A read: safe to retry. */
export async function listStripeRefunds(
  account: ProviderAccount,
  paymentIntent: string,
  options: StripeClientOptions,
): Promise<Stripe.Refund[]> {
  const stripe = stripeClient(account, options);
  const refunds: Stripe.Refund[] = [];
  let startingAfter: string | undefined;
  try {
    for (;;) {
      const page = await stripe.refunds.list(
        { payment_intent: paymentIntent, limit: 100, ...(startingAfter ? { starting_after: startingAfter } : {}) },
        { maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries },
      );
      if (page?.object !== 'list' || !Array.isArray(page.data)) {
        throw undocumented('listing refunds', 'something that is not a list');
      }
      refunds.push(...page.data);
      if (!page.has_more || page.data.length === 0) return refunds;
      startingAfter = page.data[page.data.length - 1]!.id;
    }
  } catch (error) {
    throw asProviderError(error, 'listing refunds');
  }
}
