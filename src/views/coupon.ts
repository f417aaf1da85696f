// Coupon rows -> the Coupon object of the contract. `value` is a decimal string: a FIXED coupon's with its
// currency's minor unit of decimals (`5.00` USD), a PERCENTAGE's with at least two (`10.00`, `12.50`, `33.333`).
import type { CouponRow } from '../../db/tables';
import { decimalString } from '../platform/money';
import { unixSeconds } from './time';

/** A percentage is shown like an amount of a two-decimal currency. */
const percentDecimals = 'USD';

export function couponValue(row: Pick<CouponRow, 'value' | 'currency'>): string {
  return decimalString(row.value, row.currency ?? percentDecimals);
}

export function couponView(row: CouponRow, productIds: readonly string[]) {
  return {
    id: row.id,
    code: row.code,
    type: row.type,
    value: couponValue(row),
    currency: row.currency,
    product_ids: [...productIds],
    max_uses: row.max_uses,
    uses: row.uses,
    expires_at: row.expires_at === null ? null : unixSeconds(row.expires_at),
    enabled: row.enabled,
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type CouponView = ReturnType<typeof couponView>;
