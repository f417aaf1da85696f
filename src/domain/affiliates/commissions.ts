// Affiliate commission through an order's life: attribution when the order is created, one ACCRUAL ledger entry
// when it completes, one REVERSAL per refund. Each runs in the caller's transaction, under the order's row lock
// (creation inserts the order; completion and refunds lock it first), so the entries of one order are written one
// after another and each reversal sees the ones before it.
//
// A reversal is the refund's share of the accrual, computed on the cumulative refunded amount so the rounding
// never drifts: after refunds totalling R of an order of total T whose accrual was A, the reversals add up to
// round(A x R / T) (to the currency's minor unit, half away from zero); each refund's reversal is that target less
// what was reversed before. When the order is fully refunded (R = T) the reversals add up to A exactly.
import Decimal from 'decimal.js';
import * as affiliates from '../../../db/queries/affiliates';
import { setReferrer } from '../../../db/queries/customers';
import type { OrderRow } from '../../../db/tables';
import { ValidationError } from '../../errors';
import { newId } from '../../ids';
import { roundToMinor } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';

export interface Attribution {
  affiliate_customer_id: string | null;
  affiliate_code: string | null;
}

const none: Attribution = { affiliate_customer_id: null, affiliate_code: null };

/**
 * Who an order is attributed to: the ACTIVE affiliate whose `affiliate_code` the order sends (422 on
 * `affiliate_code` when there is none, or it is the buyer's own; a buyer referred by no one becomes referred by
 * it), otherwise the ACTIVE affiliate who referred the buyer, otherwise no one. The buyer's row is locked by the
 * caller (it was found or created for this order).
 */
export async function orderAttribution(
  w: ShopWrite,
  buyer: { id: string; referred_by_customer_id: string | null },
  affiliateCode: string | undefined,
): Promise<Attribution> {
  const { trx, shopId } = w;
  if (affiliateCode !== undefined) {
    const affiliate = await affiliates.affiliateByCode(trx, shopId, affiliateCode);
    if (!affiliate || affiliate.affiliate_status !== 'ACTIVE')
      throw new ValidationError([
        { field: 'affiliate_code', message: 'is not the code of an active affiliate of this shop' },
      ]);
    if (affiliate.id === buyer.id)
      throw new ValidationError([{ field: 'affiliate_code', message: "is the buyer's own affiliate code" }]);
    if (buyer.referred_by_customer_id === null) await setReferrer(trx, shopId, buyer.id, affiliate.id);
    return { affiliate_customer_id: affiliate.id, affiliate_code: affiliate.affiliate_code };
  }
  if (buyer.referred_by_customer_id === null || buyer.referred_by_customer_id === buyer.id) return none;
  const referrer = await affiliates.affiliateCustomerById(trx, shopId, buyer.referred_by_customer_id);
  if (!referrer?.is_affiliate || referrer.affiliate_status !== 'ACTIVE') return none;
  return { affiliate_customer_id: referrer.id, affiliate_code: referrer.affiliate_code };
}

/**
 * The ACCRUAL of a completed order attributed to an affiliate: its commission percent of the order total, rounded
 * to the currency's minor unit. Nothing when the affiliate is no longer an ACTIVE affiliate, or the order is not in
 * the affiliate's currency (its wallet's: commission is paid out there, and amounts of two currencies never add).
 */
export async function accrueCommission(w: ShopWrite, order: OrderRow): Promise<void> {
  if (order.affiliate_customer_id === null) return;
  const { trx, shopId, now } = w;
  const affiliate = await affiliates.affiliateCustomerById(trx, shopId, order.affiliate_customer_id);
  if (
    !affiliate?.is_affiliate ||
    affiliate.affiliate_status !== 'ACTIVE' ||
    affiliate.affiliate_commission_percent === null ||
    affiliate.wallet_currency !== order.currency
  )
    return;
  const amount = roundToMinor(
    new Decimal(order.total).times(affiliate.affiliate_commission_percent).dividedBy(100),
    order.currency,
  );
  await affiliates.insertCommission(trx, shopId, {
    id: newId('acm'),
    affiliate_customer_id: affiliate.id,
    kind: 'ACCRUAL',
    amount: amount.toFixed(),
    currency: order.currency,
    order_id: order.id,
    commission_percent: affiliate.affiliate_commission_percent,
    created_at: now,
  });
}

/**
 * The REVERSAL a refund makes of the order's accrual (nothing when the order earned no commission). `refundedTotal`
 * is the order's refunded sum including this refund. Written even when it reverses 0 (a tiny refund), so every
 * refund of an attributed order is in the ledger.
 */
export async function reverseCommission(
  w: ShopWrite,
  order: OrderRow,
  refund: { id: string; refundedTotal: Decimal.Value },
): Promise<void> {
  const { trx, shopId, now } = w;
  const commission = await affiliates.commissionOfOrder(trx, shopId, order.id);
  if (!commission) return;
  const total = new Decimal(order.total);
  const accrued = new Decimal(commission.accrual.amount);
  const target = total.isZero()
    ? accrued
    : Decimal.min(accrued, roundToMinor(accrued.times(refund.refundedTotal).dividedBy(total), order.currency));
  const already = new Decimal(commission.reversed).negated();
  const reversal = Decimal.max(0, target.minus(already));
  await affiliates.insertCommission(trx, shopId, {
    id: newId('acm'),
    affiliate_customer_id: commission.accrual.affiliate_customer_id,
    kind: 'REVERSAL',
    amount: reversal.isZero() ? '0' : reversal.negated().toFixed(),
    currency: commission.accrual.currency,
    order_id: order.id,
    refund_id: refund.id,
    created_at: now,
  });
}
