// Dispute rows -> the Dispute object of the contract.
import type { DisputeRow } from '../../db/tables';
import { jsonAmount } from '../platform/money';
import { unixSeconds } from './time';

export function disputeView(row: DisputeRow) {
  return {
    id: row.id,
    order_id: row.order_id,
    order_uniqid: row.order_uniqid,
    gateway: row.gateway,
    reason: row.reason,
    status: row.status,
    amount: jsonAmount(row.amount),
    currency: row.currency,
    customer_email: row.customer_email,
    evidence_due_by: row.evidence_due_by === null ? null : unixSeconds(row.evidence_due_by),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type DisputeView = ReturnType<typeof disputeView>;
