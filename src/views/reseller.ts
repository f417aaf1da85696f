// Reseller rows -> the Reseller, ResellerProgram and ResellerTier objects of the contract. Timestamps are ISO 8601
// strings; revenue figures are decimal strings (at least two decimals), the tier's percent a JSON number.
import Decimal from 'decimal.js';
import type { ResellerWithTier, TierWithCount } from '../../db/queries/resellers';
import type { ResellerProgramRow } from '../../db/tables';
import { jsonAmount } from '../platform/money';

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d === null ? null : d.toISOString());

/** A decimal string with at least two decimals and no more than it holds (`0.00`, `12.50`, `0.12345678`). */
export function revenueString(value: Decimal.Value): string {
  const d = new Decimal(value);
  return d.toFixed(Math.max(2, d.decimalPlaces()));
}

export function resellerView(row: ResellerWithTier) {
  return {
    id: row.id,
    customer_id: row.customer_id,
    email: row.email,
    status: row.status,
    tier: { id: row.tier_id, name: row.tier_name, discount_percent: jsonAmount(row.tier_discount_percent) },
    application_note: row.application_note,
    lifetime_revenue: revenueString(row.lifetime_revenue),
    lifetime_orders: row.lifetime_orders,
    approved_at: isoOrNull(row.approved_at),
    suspended_at: isoOrNull(row.suspended_at),
    rejected_at: isoOrNull(row.rejected_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export type ResellerView = ReturnType<typeof resellerView>;

export function resellerProgramView(row: ResellerProgramRow) {
  return {
    id: row.id,
    enabled: row.enabled,
    enrollment_mode: row.enrollment_mode,
    application_message: row.application_message,
    require_application_note: row.require_application_note,
    default_tier_id: row.default_tier_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export type ResellerProgramView = ReturnType<typeof resellerProgramView>;

export function resellerTierView(row: TierWithCount, defaultTierId: string | null) {
  return {
    id: row.id,
    name: row.name,
    discount_percent: jsonAmount(row.discount_percent),
    auto_advance_revenue: row.auto_advance_revenue === null ? null : revenueString(row.auto_advance_revenue),
    auto_advance_orders: row.auto_advance_orders,
    auto_advance_requires_both: row.auto_advance_requires_both,
    sort_order: row.sort_order,
    member_count: row.member_count,
    is_default: row.id === defaultTierId,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
