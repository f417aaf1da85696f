// Subscription rows -> the contract's Subscription. Times are Unix seconds; `price` is what each renewal bills
// before tax (the line's unit price times its quantity), an exact JSON number.
import Decimal from 'decimal.js';
import type { SubscriptionRow } from '../../db/tables';
import { jsonAmount, roundToMinor } from '../platform/money';
import { unixSeconds } from './time';

const seconds = (d: Date | null) => (d === null ? null : unixSeconds(d));

export function subscriptionView(row: SubscriptionRow) {
  return {
    id: row.id,
    customer_id: row.customer_id,
    customer_email: row.customer_email,
    product_id: row.product_id,
    variant_id: row.variant_id,
    status: row.status,
    price: jsonAmount(roundToMinor(new Decimal(row.unit_price).times(row.quantity), row.currency)),
    currency: row.currency,
    interval: row.interval,
    interval_count: row.interval_count,
    current_period_start: unixSeconds(row.current_period_start),
    current_period_end: unixSeconds(row.current_period_end),
    cancel_at_period_end: row.cancel_at_period_end,
    paused_at: seconds(row.paused_at),
    resume_at: seconds(row.resume_at),
    custom_fields: row.custom_fields,
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type SubscriptionView = ReturnType<typeof subscriptionView>;
