// What a payment attempt's provider session says, applied to the invoice, exactly once: the one rule every source
// of "paid" goes through (a provider's webhook, the buyer's return, the reconciler, the sandbox's page).
//
// Under the order's lock, then the attempt's (the lock order of every payment path): an attempt already PAID
// changes no more, so duplicated, out-of-order and concurrent reports of one session complete nothing twice; the
// invoice is completed only while it is PENDING, so two sessions of one invoice both paid complete it once. Money
// that did not pay its invoice is flagged and given back through its provider by the reconciler
// (src/worker/payment-reconciler.ts): a second payment (DUPLICATE), one after the invoice expired (LATE), less than
// the attempt asked (SHORT), or in another currency (CURRENCY). A partial payment (BTCPay) is recorded on the attempt
// and leaves the invoice payable.
import Decimal from 'decimal.js';
import * as attempts from '../../../db/queries/payment-attempts';
import * as orders from '../../../db/queries/orders';
import type { AttemptFlag, OrderRow, PaymentAttemptRow } from '../../../db/tables';
import type { SessionState } from '../../integrations/gateway-provider';
import type { ShopWrite } from '../../platform/unit-of-work';
import { completeInvoice, type CompletionDeps } from '../orders/completion';
import { decimalString } from '../../platform/money';
import { sandboxGatewayCode } from '../payments/gateways';
import { FIRST_LOOK_MS } from '../payments/provider-sessions';

export type SettleOutcome = 'COMPLETED' | 'FLAGGED' | 'RECORDED' | 'UNCHANGED';

/** The reconciler's back-off after each look that found a session still open (the first: FIRST_LOOK_MS). */
const MAX_LOOK_GAP_MS = 60 * 60_000;
/** Looks at one session in all (about two days at the longest gap): a session no provider keeps open longer. */
export const MAX_LOOKS = 50;

export function nextLookMs(looksMade: number): number {
  return Math.min(FIRST_LOOK_MS * 2 ** Math.max(looksMade - 1, 0), MAX_LOOK_GAP_MS);
}

/** Why a payment the provider calls paid does not pay its invoice; null when it does. */
export function paymentFlag(
  order: Pick<OrderRow, 'status' | 'currency'>,
  attempt: Pick<PaymentAttemptRow, 'amount'>,
  paid: { amount: string; currency: string },
): AttemptFlag | null {
  if (paid.currency.toUpperCase() !== order.currency.toUpperCase()) return 'CURRENCY';
  if (new Decimal(paid.amount).lt(attempt.amount)) return 'SHORT';
  if (order.status === 'PENDING') return null;
  return order.status === 'VOIDED' ? 'LATE' : 'DUPLICATE';
}

export async function settleAttempt(
  w: ShopWrite,
  orderId: string,
  attemptId: string,
  state: SessionState,
  deps: Pick<CompletionDeps, 'checkoutBaseUrl'>,
): Promise<SettleOutcome> {
  const { trx, shopId, now, effects } = w;
  const order = await orders.orderByIdForUpdate(trx, shopId, orderId);
  const attempt = await attempts.attemptByIdForUpdate(trx, shopId, attemptId);
  if (!order || !attempt || attempt.order_id !== order.id) return 'UNCHANGED';
  // Settled as paid: the provider reports each payment once, a replay (or a late "failed") changes nothing. A failed
  // session stays failed (the provider refused its payment). Only an expired one may still report money: paid late.
  if (attempt.status === 'PAID' || attempt.status === 'FAILED') return 'UNCHANGED';
  switch (state.status) {
    case 'OPEN':
      return 'UNCHANGED';
    case 'FAILED':
    case 'EXPIRED':
      if (attempt.status !== 'PENDING') return 'UNCHANGED';
      await attempts.updatePaymentAttempt(trx, shopId, attempt.id, { status: state.status, reconcile_at: null });
      return 'RECORDED';
    case 'PARTIAL':
      if (attempt.paid_amount !== null && new Decimal(attempt.paid_amount).eq(state.amount)) return 'UNCHANGED';
      await attempts.updatePaymentAttempt(trx, shopId, attempt.id, {
        paid_amount: state.amount,
        paid_currency: state.currency.toUpperCase(),
        payment_ref: state.paymentRef,
      });
      return 'RECORDED';
    case 'PAID':
      break;
  }
  await attempts.updatePaymentAttempt(trx, shopId, attempt.id, {
    payment_ref: state.paymentRef,
    paid_amount: state.amount,
    paid_currency: state.currency.toUpperCase(),
    reconcile_at: null,
  });
  const flag = paymentFlag(order, attempt, state);
  if (flag === null) {
    // The pipeline marks the attempt PAID along with everything else the payment completes.
    await completeInvoice(w, order.id, { gateway: attempt.gateway, attemptId: attempt.id }, deps);
    return 'COMPLETED';
  }
  // The sandbox moves no money: its extra payment has nothing to give back. Every other is returned through its
  // provider by the reconciler, which looks at it now.
  const sandbox = attempt.gateway === sandboxGatewayCode;
  await attempts.updatePaymentAttempt(trx, shopId, attempt.id, {
    status: 'PAID',
    paid_at: now,
    flag,
    return_status: 'PENDING',
    reconcile_at: sandbox ? null : now,
  });
  effects.audit({
    action: 'payment.flagged',
    resourceType: 'order',
    resourceId: order.id,
    detail: { attempt_id: attempt.id, gateway: attempt.gateway, flag, amount: state.amount, currency: state.currency },
  });
  if (sandbox)
    await settleFlaggedReturn(
      w,
      order,
      { ...attempt, flag, paid_amount: state.amount, paid_currency: state.currency.toUpperCase() },
      { status: 'REFUNDED', providerRefundId: null },
    );
  return 'FLAGGED';
}

export type ReturnOutcome =
  { status: 'REFUNDED'; providerRefundId: string | null } | { status: 'FAILED'; providerRefundId?: undefined };

/**
 * Settles how a flagged payment's money went back (given back through the provider, or declined there and so the
 * merchant's to settle with the buyer) and tells the merchant, once per payment (`payment:flagged`), in the
 * transaction that records it. The reconciler's refund and a provider's refund webhook may both report it: the first
 * settles it, the other changes nothing. False when it was settled already.
 */
export async function settleFlaggedReturn(
  w: ShopWrite,
  order: Pick<OrderRow, 'id' | 'uniqid'>,
  attempt: Pick<PaymentAttemptRow, 'id' | 'gateway' | 'flag' | 'paid_amount' | 'paid_currency'>,
  outcome: ReturnOutcome,
): Promise<boolean> {
  if (!(await attempts.settleReturnStatus(w.trx, w.shopId, attempt.id, outcome.status))) return false;
  const currency = attempt.paid_currency!;
  w.effects.emit('payment:flagged', {
    uniqid: order.uniqid,
    attempt_id: attempt.id,
    gateway: attempt.gateway,
    flag: attempt.flag!,
    amount: decimalString(attempt.paid_amount!, currency),
    currency,
    return_status: outcome.status,
    provider_refund_id: outcome.providerRefundId ?? null,
  });
  w.effects.audit({
    action: outcome.status === 'REFUNDED' ? 'payment.returned' : 'payment.return_failed',
    resourceType: 'order',
    resourceId: order.id,
    detail: { attempt_id: attempt.id, gateway: attempt.gateway, flag: attempt.flag },
  });
  return true;
}
