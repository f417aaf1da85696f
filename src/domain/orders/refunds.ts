// Refunds: all of what remains of a completed order, or part of it, recorded as a refunds row. The order row is
// locked first (SELECT … FOR UPDATE), so concurrent refunds of one order run one after another and each sees the
// `refunded` sum the one before it left: together they can never exceed the total (the column's check
// `refunded <= total` is the last line behind that). Any rejection throws, and the unit of work rolls back.
import Decimal from 'decimal.js';
import * as orders from '../../../db/queries/orders';
import * as refunds from '../../../db/queries/refunds';
import { ApiError, NotFoundError } from '../../errors';
import { newId } from '../../ids';
import { decimalString, parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { refundToWallet, walletRefundNote } from './wallet-orders';
import { reverseCommission } from '../affiliates/commissions';
import { refundResellerRevenue } from '../resellers/reseller-orders';
import { revokeOrderLicenses } from '../licenses/issuing';

export interface RefundInput {
  /** Decimal string; absent: everything that remains. */
  amount?: string;
  reason?: string;
}

/** A refund the payment provider made (through our API or in its own dashboard): recorded once, by its id. */
export interface ProviderRefundRecord {
  /** Our refund id (the seed of the provider's idempotency key), when we asked for it. */
  refundId?: string;
  attemptId: string;
  gateway: string;
  providerRefundId: string;
  /**
   * The amount is only what the provider gave back (a dashboard refund): no part of it goes to the buyer's wallet.
   * Through our API the amount is the whole refund, the wallet's part first and the provider's the rest.
   */
  providerOnly: boolean;
  /** The refund lease taken to ask the provider (provider-refunds.ts), given back with the refund's record. */
  leaseToken?: string;
}

/** The statuses a refund may start from. */
const refundable: ReadonlySet<string> = new Set(['COMPLETED', 'PARTIALLY_REFUNDED']);

export async function refundOrder(
  w: ShopWrite,
  orderId: string,
  input: RefundInput,
  provider?: ProviderRefundRecord,
): Promise<{ message: string }> {
  const { trx, shopId, effects, now } = w;
  const order = await orders.orderByIdForUpdate(trx, shopId, orderId);
  if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
  const { currency } = order;
  // Checked against the order's currency: a refund of 0.001 USD cannot be paid out, so it is a bad request (422)
  // rather than something to round.
  const requested =
    input.amount === undefined
      ? undefined
      : new Decimal(parseAmount(input.amount, 'amount', { currency, min: 0, exclusiveMin: true }));
  // As Stripe refuses to refund a disputed charge: the dispute's outcome decides (src/domain/support/disputes.ts).
  if (order.status === 'DISPUTED') {
    throw new ApiError(
      'ORDER_NOT_REFUNDABLE',
      'The order is DISPUTED; it cannot be refunded while its dispute is open (a lost dispute refunds what remains).',
    );
  }
  if (!refundable.has(order.status)) {
    throw new ApiError(
      'ORDER_NOT_REFUNDABLE',
      `The order is ${order.status}; only COMPLETED or PARTIALLY_REFUNDED orders can be refunded.`,
    );
  }
  const total = new Decimal(order.total);
  const alreadyRefunded = new Decimal(order.refunded);
  const remaining = total.minus(alreadyRefunded);
  if (remaining.lte(0)) {
    // A completed order of total 0: there is nothing to give back.
    throw new ApiError('ORDER_NOT_REFUNDABLE', 'Nothing remains to be refunded on this order.');
  }
  const amount = requested ?? remaining;
  if (amount.gt(remaining)) {
    throw new ApiError(
      'REFUND_EXCEEDS_REMAINING',
      `The refund of ${decimalString(amount, currency)} ${currency} exceeds the ${decimalString(remaining, currency)} ${currency} that remains refundable. Nothing was refunded.`,
    );
  }

  const refunded = alreadyRefunded.plus(amount);
  const fully = refunded.eq(total);
  const status = fully ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
  const reason = input.reason ?? null;
  const refund = await refunds.insertRefund(trx, shopId, {
    id: provider?.refundId ?? newId('rfd'),
    order_id: order.id,
    amount: amount.toFixed(),
    reason,
    created_at: now,
    attempt_id: provider?.attemptId ?? null,
    gateway: provider ? provider.gateway : null,
    provider_refund_id: provider ? provider.providerRefundId : null,
  });
  // A full refund revokes the license keys the order issued (src/domain/licenses/issuing.ts).
  if (fully) await revokeOrderLicenses(w, order.id);
  // The refund's share of the affiliate's commission on this order is reversed (src/domain/affiliates/commissions.ts).
  await reverseCommission(w, order, {
    id: refund.id,
    refundedTotal: refunded,
  });
  // A reseller's order: the refund takes its amount back from the reseller's lifetime revenue.
  await refundResellerRevenue(w, order, amount);
  await orders.updateOrder(trx, shopId, order.id, {
    refunded: refunded.toFixed(),
    status,
    payment_status: status,
    updated_at: now,
  });
  // What the buyer's wallet paid goes back to it first (src/domain/orders/wallet-orders.ts); the rest is the gateway's.
  const note = provider?.providerOnly
    ? ''
    : walletRefundNote(await refundToWallet(w, order, amount, alreadyRefunded), currency);
  // The buyer's total_spent is computed from its paid orders minus `refunded` (db/queries/customers.ts).
  const shown = decimalString(amount, currency);
  effects.emit('order:refunded', {
    uniqid: order.uniqid,
    amount: shown,
    currency,
    reason,
    fully_refunded: fully,
  });
  return {
    message: fully
      ? `Refunded ${shown} ${currency}${note}; the order is fully refunded.`
      : `Refunded ${shown} ${currency}${note}; ${decimalString(total.minus(refunded), currency)} ${currency} remains refundable.`,
  };
}
