// Resellers through an order's life: wholesale pricing when the order is created, lifetime figures and tier
// auto-advance when it completes, revenue taken back when it is refunded. Each runs in the caller's transaction.
//
// Wholesale pricing: an order (POST /orders) whose buyer email belongs to an ACTIVE reseller gets the reseller's
// tier `discount_percent` off its goods after any coupon (decimal arithmetic, rounded to the currency's minor unit;
// src/domain/catalog/pricing.ts), shown in the order's `discount`. The order records the reseller and the percent
// (orders.reseller_id / reseller_discount_percent). The status is read under a share lock, so a suspension waits for
// an order being priced, and every order created after the suspension commits pays full price.
//
// Revenue: when such an order completes, the reseller's lifetime_revenue grows by the order total and
// lifetime_orders by 1 (whatever the reseller's status is by then: the order was a reseller's order); a refund of
// it takes its amount back from lifetime_revenue (lifetime_orders counts completed orders and does not change).
//
// Auto-advance, after a completion: the reseller moves to the highest tier (greatest sort_order, then greatest id)
// whose thresholds its figures meet, when that tier ranks above its current one (auto-advance promotes; it never
// moves a reseller down, and a refund moves no one). A tier's condition: with `auto_advance_requires_both` false,
// any of its non-null thresholds met (revenue >= auto_advance_revenue, or orders >= auto_advance_orders); with it
// true, every non-null threshold met. A null threshold is not part of the condition; a tier with both null never
// auto-advances anyone.
import Decimal from 'decimal.js';
import * as resellers from '../../../db/queries/resellers';
import type { OrderRow, ResellerRow, ResellerTierRow } from '../../../db/tables';
import type { ShopWrite } from '../../platform/unit-of-work';

export interface Wholesale {
  reseller_id: string;
  /** The tier's percent, as stored (numeric text). */
  reseller_discount_percent: string;
}

/**
 * What a new order is priced with: its buyer's ACTIVE reseller's tier percent (the reseller as the order read it
 * with its buyer, src/domain/customers/buyers.ts admitOrderBuyer), or null.
 */
export function wholesaleOf(reseller: { id: string; tier_discount_percent: string } | undefined): Wholesale | null {
  if (!reseller) return null;
  return { reseller_id: reseller.id, reseller_discount_percent: reseller.tier_discount_percent };
}

/** The order columns of a wholesale (or retail: both null) order. */
export function wholesaleColumns(
  w: Wholesale | null,
): Wholesale | { reseller_id: null; reseller_discount_percent: null } {
  return w ?? { reseller_id: null, reseller_discount_percent: null };
}

/** Whether a tier's thresholds are met by these figures (see the header). */
export function tierQualifies(
  tier: Pick<ResellerTierRow, 'auto_advance_revenue' | 'auto_advance_orders' | 'auto_advance_requires_both'>,
  figures: { revenue: Decimal.Value; orders: number },
): boolean {
  const conditions: boolean[] = [];
  if (tier.auto_advance_revenue !== null) conditions.push(new Decimal(figures.revenue).gte(tier.auto_advance_revenue));
  if (tier.auto_advance_orders !== null) conditions.push(figures.orders >= tier.auto_advance_orders);
  if (conditions.length === 0) return false;
  return tier.auto_advance_requires_both ? conditions.every(Boolean) : conditions.some(Boolean);
}

const ranksAbove = (a: ResellerTierRow, b: ResellerTierRow) =>
  a.sort_order !== b.sort_order ? a.sort_order > b.sort_order : a.id > b.id;

/** The tier auto-advance moves the reseller to, or null when it stays (see the header). */
export function advanceTarget(
  tiers: readonly ResellerTierRow[],
  currentTierId: string,
  figures: { revenue: Decimal.Value; orders: number },
): ResellerTierRow | null {
  const current = tiers.find((t) => t.id === currentTierId);
  let best: ResellerTierRow | null = null;
  for (const t of tiers) if (tierQualifies(t, figures) && (best === null || ranksAbove(t, best))) best = t;
  if (best === null || best.id === currentTierId) return null;
  if (current && !ranksAbove(best, current)) return null;
  return best;
}

/** A completed order of a reseller: lifetime figures grow, then auto-advance. */
export async function countResellerOrder(w: ShopWrite, order: OrderRow): Promise<void> {
  if (order.reseller_id === null) return;
  const { trx, shopId, now } = w;
  const row = await resellers.addToLifetimeFigures(
    trx,
    shopId,
    order.reseller_id,
    { revenue: new Decimal(order.total).toFixed(), orders: 1 },
    now,
  );
  await autoAdvance(w, row);
}

async function autoAdvance(w: ShopWrite, row: ResellerRow): Promise<void> {
  const { trx, shopId, effects, now } = w;
  const tiers = await resellers.tiersOfShop(trx, shopId);
  const target = advanceTarget(tiers, row.tier_id, { revenue: row.lifetime_revenue, orders: row.lifetime_orders });
  if (!target) return;
  await resellers.updateReseller(trx, shopId, row.id, { tier_id: target.id }, now);
  effects.audit({
    action: 'reseller.tier_advanced',
    resourceType: 'reseller',
    resourceId: row.id,
    detail: { from_tier_id: row.tier_id, to_tier_id: target.id },
  });
}

/** A refund of a reseller's order takes its amount back from the reseller's lifetime revenue. */
export async function refundResellerRevenue(w: ShopWrite, order: OrderRow, amount: Decimal.Value): Promise<void> {
  if (order.reseller_id === null) return;
  const { trx, shopId, now } = w;
  await resellers.addToLifetimeFigures(
    trx,
    shopId,
    order.reseller_id,
    { revenue: new Decimal(amount).negated().toFixed(), orders: 0 },
    now,
  );
}
