// A verified provider event applied to the shop, in one transaction (the worker's, src/worker/gateway-events.ts):
// a session's state settles its attempt (src/domain/payments/settlement.ts), a refund made at the provider is
// recorded once by its provider id, a dispute opens or closes ours. Anything that names nothing of this shop (an
// unknown session, another shop's payment) changes nothing and says why, for the log.
import * as attempts from '../../../db/queries/payment-attempts';
import * as disputes from '../../../db/queries/disputes';
import * as orders from '../../../db/queries/orders';
import * as refunds from '../../../db/queries/refunds';
import type { PaymentAttemptRow } from '../../../db/tables';
import { ApiError } from '../../errors';
import type { ProviderNotice, SessionState } from '../../integrations/gateway-provider';
import type { ShopWrite } from '../../platform/unit-of-work';
import type { CompletionDeps } from '../orders/completion';
import { refundOrder } from '../orders/refunds';
import { closeDispute, openDispute } from '../support/disputes';
import { settleAttempt, settleFlaggedReturn } from '../orders/settlement';

/** What applying a notice did, in a word or two for the log line. */
export type NoticeOutcome = string;

/** Settles the attempt of a provider session with the state read from (or reported by) the provider. */
export async function applySessionState(
  w: ShopWrite,
  gateway: string,
  sessionId: string,
  state: SessionState,
  deps: Pick<CompletionDeps, 'checkoutBaseUrl'>,
  attemptId?: string,
): Promise<NoticeOutcome> {
  const attempt = await attempts.attemptOfSession(w.trx, w.shopId, gateway, sessionId);
  if (!attempt) return 'ignored: no attempt of this shop has that session';
  // The session carries our attempt id: one that names another attempt is not this shop's session.
  if (attemptId !== undefined && attemptId !== attempt.id) return 'ignored: the session names another attempt';
  return (await settleAttempt(w, attempt.order_id, attempt.id, state, deps)).toLowerCase();
}

async function paidAttempt(w: ShopWrite, gateway: string, paymentRef: string): Promise<PaymentAttemptRow | undefined> {
  return attempts.attemptOfPayment(w.trx, w.shopId, gateway, paymentRef);
}

/** Each provider refund once: ours (already recorded by the API) are found by their id and skipped. */
async function recordRefunds(
  w: ShopWrite,
  gateway: string,
  notice: Extract<ProviderNotice, { kind: 'REFUNDED' }>,
): Promise<NoticeOutcome> {
  const attempt = await paidAttempt(w, gateway, notice.paymentRef);
  if (!attempt) return 'ignored: no payment of this shop';
  let recorded = 0;
  for (const r of notice.refunds) {
    if (await refunds.refundOfProviderRefund(w.trx, w.shopId, gateway, r.providerRefundId)) continue;
    if (attempt.flag !== null) {
      // The giving back of a payment that did not pay its invoice (src/worker/payment-reconciler.ts, or the merchant
      // at the provider): not a refund of the order.
      const order = await orders.orderById(w.trx, w.shopId, attempt.order_id);
      if (order)
        await settleFlaggedReturn(w, order, attempt, { status: 'REFUNDED', providerRefundId: r.providerRefundId });
      continue;
    }
    try {
      await refundOrder(
        w,
        attempt.order_id,
        { amount: r.amount, reason: `Refunded at ${gateway} (${r.providerRefundId})` },
        { attemptId: attempt.id, gateway, providerRefundId: r.providerRefundId, providerOnly: true },
      );
      recorded += 1;
    } catch (err) {
      // The order cannot take it (already fully refunded here, disputed): logged, nothing written for it.
      if (err instanceof ApiError) return `ignored: ${err.code} (${err.message})`;
      throw err;
    }
  }
  return `recorded ${recorded} refund(s)`;
}

export async function applyNotice(
  w: ShopWrite,
  gateway: string,
  notice: ProviderNotice,
  deps: Pick<CompletionDeps, 'checkoutBaseUrl'>,
): Promise<NoticeOutcome> {
  switch (notice.kind) {
    case 'SESSION':
      return applySessionState(w, gateway, notice.sessionId, notice.state, deps, notice.attemptId);
    case 'REFUNDED':
      return recordRefunds(w, gateway, notice);
    case 'DISPUTE_OPENED': {
      if (await disputes.disputeOfProvider(w.trx, w.shopId, gateway, notice.disputeId)) return 'ignored: known dispute';
      const attempt = await paidAttempt(w, gateway, notice.paymentRef);
      if (!attempt) return 'ignored: no payment of this shop';
      try {
        const opened = await openDispute(w, attempt.order_id, {
          gateway,
          reason: notice.reason,
          providerDisputeId: notice.disputeId,
          evidenceDueBy: notice.evidenceDueBy,
        });
        return `dispute ${opened.id} opened`;
      } catch (err) {
        if (err instanceof ApiError) return `ignored: ${err.code} (${err.message})`;
        throw err;
      }
    }
    case 'DISPUTE_CLOSED': {
      const dispute = await disputes.disputeOfProvider(w.trx, w.shopId, gateway, notice.disputeId);
      if (!dispute) return 'ignored: unknown dispute';
      if (dispute.status !== 'OPEN' && dispute.status !== 'UNDER_REVIEW') return 'ignored: dispute already decided';
      await closeDispute(w, dispute.id, { outcome: notice.outcome, gateway });
      return `dispute ${dispute.id} closed ${notice.outcome}`;
    }
    case 'IGNORED':
      return `ignored: ${notice.type}`;
  }
}
