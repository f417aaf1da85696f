// A verified PayPal event in our words. PayPal's events name the capture (our paymentRef) and, for a capture, the
// order it belongs to (our sessionId) in supplementary_data.related_ids.order_id.
import { decimalString } from '../../platform/money';
import type { DisputeOutcome, ProviderNotice } from '../gateway-provider';
import { isMoney, isRecord, linkHref, type WebhookEvent } from './wire';

const disputeReasons: Readonly<Record<string, string>> = {
  MERCHANDISE_OR_SERVICE_NOT_RECEIVED: 'PRODUCT_NOT_RECEIVED',
  MERCHANDISE_OR_SERVICE_NOT_AS_DESCRIBED: 'PRODUCT_UNACCEPTABLE',
  UNAUTHORISED: 'FRAUDULENT',
  DUPLICATE_TRANSACTION: 'DUPLICATE',
  CREDIT_NOT_PROCESSED: 'CREDIT_NOT_PROCESSED',
};

const disputeOutcomes: Readonly<Record<string, DisputeOutcome>> = {
  RESOLVED_BUYER_FAVOUR: 'LOST',
  RESOLVED_SELLER_FAVOUR: 'WON',
};

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function orderIdOf(capture: Record<string, unknown>): string | undefined {
  const supplementary = capture.supplementary_data;
  if (!isRecord(supplementary) || !isRecord(supplementary.related_ids)) return undefined;
  return text(supplementary.related_ids.order_id);
}

/** The capture a refund belongs to: the last segment of its `up` link (.../v2/payments/captures/{id}). */
function captureIdOfRefund(refund: Record<string, unknown>): string | undefined {
  const up = linkHref(refund.links, 'up');
  const match = up === undefined ? null : /\/v2\/payments\/captures\/([^/?#]+)/.exec(up);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

function disputedCaptureOf(dispute: Record<string, unknown>): string | undefined {
  const transactions = dispute.disputed_transactions;
  if (!Array.isArray(transactions) || !isRecord(transactions[0])) return undefined;
  return text(transactions[0].seller_transaction_id);
}

export function translateEvent(event: WebhookEvent): ProviderNotice[] {
  const eventId = event.id;
  const resource = event.resource;
  const ignored: ProviderNotice[] = [{ kind: 'IGNORED', eventId, type: event.event_type }];

  switch (event.event_type) {
    case 'CHECKOUT.ORDER.APPROVED': {
      // Approved is not paid: OPEN makes the core read the session again, and that read captures it.
      const sessionId = text(resource.id);
      if (!sessionId) return ignored;
      const unit = Array.isArray(resource.purchase_units) ? (resource.purchase_units[0] as unknown) : undefined;
      const attemptId = isRecord(unit) ? text(unit.custom_id) : undefined;
      return [{ kind: 'SESSION', eventId, sessionId, ...(attemptId ? { attemptId } : {}), state: { status: 'OPEN' } }];
    }
    case 'PAYMENT.CAPTURE.COMPLETED': {
      const sessionId = orderIdOf(resource);
      const paymentRef = text(resource.id);
      if (!sessionId || !paymentRef || !isMoney(resource.amount)) return ignored;
      const attemptId = text(resource.custom_id);
      const currency = resource.amount.currency_code;
      return [
        {
          kind: 'SESSION',
          eventId,
          sessionId,
          ...(attemptId ? { attemptId } : {}),
          state: { status: 'PAID', amount: decimalString(resource.amount.value, currency), currency, paymentRef },
        },
      ];
    }
    case 'PAYMENT.CAPTURE.DENIED':
    case 'PAYMENT.CAPTURE.DECLINED': {
      const sessionId = orderIdOf(resource);
      if (!sessionId) return ignored;
      const attemptId = text(resource.custom_id);
      return [
        { kind: 'SESSION', eventId, sessionId, ...(attemptId ? { attemptId } : {}), state: { status: 'FAILED' } },
      ];
    }
    case 'PAYMENT.CAPTURE.REFUNDED': {
      const paymentRef = captureIdOfRefund(resource);
      const providerRefundId = text(resource.id);
      if (!paymentRef || !providerRefundId || !isMoney(resource.amount)) return ignored;
      const currency = resource.amount.currency_code;
      return [
        {
          kind: 'REFUNDED',
          eventId,
          paymentRef,
          refunds: [{ providerRefundId, amount: decimalString(resource.amount.value, currency), currency }],
        },
      ];
    }
    case 'CUSTOMER.DISPUTE.CREATED': {
      const paymentRef = disputedCaptureOf(resource);
      const disputeId = text(resource.dispute_id);
      if (!paymentRef || !disputeId || !isMoney(resource.dispute_amount)) return ignored;
      const currency = resource.dispute_amount.currency_code;
      const due = text(resource.seller_response_due_date);
      const evidenceDueBy = due === undefined ? undefined : new Date(due);
      return [
        {
          kind: 'DISPUTE_OPENED',
          eventId,
          paymentRef,
          disputeId,
          amount: decimalString(resource.dispute_amount.value, currency),
          currency,
          reason: disputeReasons[String(resource.reason)] ?? 'GENERAL',
          ...(evidenceDueBy && !Number.isNaN(evidenceDueBy.getTime()) ? { evidenceDueBy } : {}),
        },
      ];
    }
    case 'CUSTOMER.DISPUTE.RESOLVED': {
      const paymentRef = disputedCaptureOf(resource);
      const disputeId = text(resource.dispute_id);
      if (!paymentRef || !disputeId) return ignored;
      const outcome = isRecord(resource.dispute_outcome) ? String(resource.dispute_outcome.outcome_code) : '';
      return [
        { kind: 'DISPUTE_CLOSED', eventId, paymentRef, disputeId, outcome: disputeOutcomes[outcome] ?? 'CLOSED' },
      ];
    }
    default:
      return ignored;
  }
}
