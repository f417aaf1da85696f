// Payment disputes (chargebacks). A dispute is opened by the payment gateway that took the order's money: on this
// server that is the SANDBOX gateway (its checkout page's buttons, `cli dispute open|close`), or a fixture naming
// the order's gateway. The API only lists disputes (GET /disputes).
//
// Lifecycle, under the order's row lock (the lock every change of an order's state takes first, refunds and
// completion included, so a dispute and a refund of one order run one after the other, never interleaved):
// - open: a COMPLETED or PARTIALLY_REFUNDED order paid through the gateway becomes DISPUTED; the dispute remembers
//   that status, holds the gateway's part of what remains paid (`amount`) and is OPEN with evidence due in 7 days;
//   `dispute:opened`. While it is undecided the order cannot be refunded (ORDER_NOT_REFUNDABLE, as Stripe refuses
//   a refund of a disputed charge), completed or have items fulfilled.
// - close WON (the merchant won) or CLOSED (the buyer withdrew it): the order goes back to the status it had;
//   nothing is paid back; `dispute:closed`.
// - close LOST: the order goes back to its status and everything that remains paid is refunded through the refund
//   path (src/domain/orders/refunds.ts: a refunds row with the reason `Chargeback: dispute <id> lost`, `order:refunded`,
//   license keys revoked, the affiliate's commission reversed, a wallet-paid part back to the wallet while the
//   gateway's part is what the chargeback took), so the order ends REFUNDED; `dispute:closed` comes first.
// The database keeps one undecided dispute per order (a partial unique index) whatever the code does.
import Decimal from 'decimal.js';
import * as disputes from '../../../db/queries/disputes';
import * as orders from '../../../db/queries/orders';
import type { DisputeReason, DisputeRow, OrderRow } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import { decimalString } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { disputeView, type DisputeView } from '../../views/dispute';
import { refundOrder } from '../orders/refunds';

export const disputeReasons: readonly DisputeReason[] = [
  'FRAUDULENT',
  'PRODUCT_NOT_RECEIVED',
  'PRODUCT_UNACCEPTABLE',
  'DUPLICATE',
  'SUBSCRIPTION_CANCELED',
  'CREDIT_NOT_PROCESSED',
  'GENERAL',
];

/** How a dispute is decided: WON and CLOSED give the order back its status, LOST refunds what remains. */
export const disputeOutcomes = ['WON', 'LOST', 'CLOSED'] as const;
export type DisputeOutcome = (typeof disputeOutcomes)[number];

/** Days the merchant has to answer with evidence (Stripe gives 7 to 21 depending on the network). */
export const EVIDENCE_DAYS = 7;

/** The order statuses a dispute may be opened on: the buyer paid, and not everything was given back. */
const disputable: ReadonlySet<string> = new Set(['COMPLETED', 'PARTIALLY_REFUNDED']);

/** `GET /disputes`: newest first; filters on status, reason and order (documented on DisputeFilters). */
export const disputeListSpec: ListSpec = {
  name: 'disputes',
  filters: {
    status: {
      column: 'status',
      type: 'enum',
      values: ['OPEN', 'UNDER_REVIEW', 'WON', 'LOST', 'CLOSED'],
      description: 'a dispute status',
    },
    reason: { column: 'reason', type: 'enum', values: disputeReasons, description: 'a dispute reason' },
    order_id: { column: 'order_id', type: 'id' },
  },
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const disputeCursorList: CursorList<disputes.DisputePageRow, DisputeView> = {
  spec: disputeListSpec,
  page: disputes.disputesPage,
  view: (rows) => rows.map(disputeView),
};

/**
 * What the gateway holds of the order and can be disputed: what it took (the total less the wallet's part) less
 * what refunds already gave back from it (refunds give the wallet's part back first, src/domain/orders/wallet-orders.ts).
 */
export function gatewayShare(order: Pick<OrderRow, 'total' | 'balance_paid' | 'refunded'>): Decimal {
  const took = new Decimal(order.total).minus(order.balance_paid);
  const refundedFromGateway = Decimal.max(0, new Decimal(order.refunded).minus(order.balance_paid));
  return Decimal.max(0, took.minus(refundedFromGateway));
}

export interface OpenDisputeInput {
  /** The gateway opening it: only the one that took the order's payment may. */
  gateway: string;
  reason?: string;
  /** The provider's id of the dispute (its close event names it) and the provider's evidence deadline. */
  providerDisputeId?: string;
  evidenceDueBy?: Date;
}

export async function openDispute(w: ShopWrite, orderId: string, input: OpenDisputeInput): Promise<DisputeView> {
  const { trx, shopId, effects, now } = w;
  const reason = (input.reason ?? 'GENERAL') as DisputeReason;
  if (!disputeReasons.includes(reason))
    throw new ValidationError([{ field: 'reason', message: `must be one of ${disputeReasons.join(', ')}` }]);
  const order = await orders.orderByIdForUpdate(trx, shopId, orderId);
  if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
  if (order.gateway !== input.gateway)
    throw new ApiError(
      'GATEWAY_NOT_AVAILABLE',
      `The order was paid through ${order.gateway ?? 'no gateway'}; only that gateway can dispute it, not ${input.gateway}.`,
    );
  const open = await disputes.undecidedDisputeOfOrderForUpdate(trx, shopId, order.id);
  if (open || order.status === 'DISPUTED')
    throw new ApiError('CONFLICT', `The order already has an open dispute${open ? ` (${open.id})` : ''}.`);
  if (!disputable.has(order.status))
    throw new ApiError(
      'ORDER_NOT_COMPLETED',
      `The order is ${order.status}; only a COMPLETED or PARTIALLY_REFUNDED order can be disputed.`,
    );
  const amount = gatewayShare(order);
  if (amount.lte(0))
    throw new ApiError(
      'ORDER_NOT_COMPLETED',
      'Nothing the gateway took remains paid on this order: nothing to dispute.',
    );

  const dispute = await disputes.insertDispute(trx, shopId, {
    id: newId('dsp'),
    order_id: order.id,
    order_uniqid: order.uniqid,
    gateway: input.gateway,
    reason,
    status: 'OPEN',
    amount: amount.toFixed(),
    currency: order.currency,
    customer_email: order.customer_email,
    order_status_before: order.status as 'COMPLETED' | 'PARTIALLY_REFUNDED',
    evidence_due_by: input.evidenceDueBy ?? new Date(now.getTime() + EVIDENCE_DAYS * 86_400_000),
    provider_dispute_id: input.providerDisputeId ?? null,
    closed_at: null,
    created_at: now,
    updated_at: now,
  });
  await orders.updateOrder(trx, shopId, order.id, { status: 'DISPUTED', updated_at: now });
  const view = disputeView(dispute);
  effects.emit('dispute:opened', view);
  effects.audit({
    action: 'dispute.opened',
    resourceType: 'dispute',
    resourceId: dispute.id,
    detail: { order_id: order.id, amount: decimalString(amount, order.currency) },
  });
  return view;
}

export interface CloseDisputeInput {
  outcome: string;
  /** The gateway deciding it: the one that opened it. */
  gateway: string;
  /** When given, the order's undecided dispute must be this one. */
  disputeId?: string;
}

/** Decides the order's undecided dispute (see the top of this file for what each outcome does). */
export async function closeOrderDispute(w: ShopWrite, orderId: string, input: CloseDisputeInput): Promise<DisputeView> {
  const { trx, shopId, effects, now } = w;
  const outcome = input.outcome as DisputeOutcome;
  if (!disputeOutcomes.includes(outcome))
    throw new ValidationError([{ field: 'outcome', message: `must be one of ${disputeOutcomes.join(', ')}` }]);
  // The order's lock first, then the dispute's: the lock order of every path that changes an order.
  const order = await orders.orderByIdForUpdate(trx, shopId, orderId);
  if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
  const dispute = await disputes.undecidedDisputeOfOrderForUpdate(trx, shopId, order.id);
  if (!dispute || (input.disputeId !== undefined && dispute.id !== input.disputeId)) {
    const decided =
      input.disputeId === undefined ? undefined : await disputes.disputeById(trx, shopId, input.disputeId);
    throw new ApiError(
      'CONFLICT',
      decided
        ? `The dispute ${decided.id} is already decided (${decided.status}).`
        : 'The order has no open dispute to close.',
    );
  }
  if (dispute.gateway !== input.gateway)
    throw new ApiError('GATEWAY_NOT_AVAILABLE', `The dispute was opened by ${dispute.gateway}; only it can decide it.`);
  if (order.status !== 'DISPUTED')
    throw new Error(`order ${order.id} has the open dispute ${dispute.id} but is ${order.status}`);

  const closed = await disputes.updateDispute(trx, shopId, dispute.id, {
    status: outcome,
    closed_at: now,
    updated_at: now,
  });
  const view = disputeView(closed);
  effects.emit('dispute:closed', view);
  effects.audit({
    action: 'dispute.closed',
    resourceType: 'dispute',
    resourceId: dispute.id,
    detail: { order_id: order.id, outcome },
  });
  await orders.updateOrder(trx, shopId, order.id, { status: dispute.order_status_before, updated_at: now });
  // Lost: the chargeback takes back what remains, through the one refund path.
  if (outcome === 'LOST') await refundOrder(w, order.id, { reason: chargebackReason(dispute) });
  return view;
}

export function chargebackReason(dispute: Pick<DisputeRow, 'id'>): string {
  return `Chargeback: dispute ${dispute.id} lost`;
}

/** Decides a dispute named by its id (the command line knows the dispute, not its order). */
export async function closeDispute(
  w: ShopWrite,
  disputeId: string,
  input: Omit<CloseDisputeInput, 'disputeId'>,
): Promise<DisputeView> {
  const { trx, shopId } = w;
  const dispute = await disputes.disputeById(trx, shopId, disputeId);
  if (!dispute) throw new NotFoundError('NOT_FOUND', `No dispute ${disputeId} in this shop.`);
  return closeOrderDispute(w, dispute.order_id, { ...input, disputeId });
}
