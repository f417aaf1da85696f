// The calendar of subscriptions: billing intervals (a product's, or a variant's own), how a period ends, and the
// renewal rules' numbers. Documented on the Subscription schema in openapi.yaml.
import type { BillingInterval, ProductRow, ProductVariantRow } from '../../../db/tables';

/** How long a renewal invoice stays payable before the expiry job voids it (as ORDER_TTL_MINUTES does for orders). */
export const RENEWAL_PAYMENT_WINDOW_MS = 7 * 24 * 3_600_000;

/** Renewal invoices expiring unpaid in a row that cancel the subscription (the first ones make it PAST_DUE). */
export const MAX_UNPAID_RENEWALS = 3;

/** A SUBSCRIPTION product that names no interval bills monthly. */
export const DEFAULT_BILLING: Billing = { interval: 'MONTH', count: 1 };

export interface Billing {
  interval: BillingInterval;
  count: number;
}

type Billable = Pick<ProductRow, 'billing_interval' | 'billing_interval_count'>;

/** The variant's own interval, else its product's, else monthly. */
export function billingOf(product: Billable, variant: Pick<ProductVariantRow, keyof Billable> | null): Billing {
  if (variant?.billing_interval && variant.billing_interval_count)
    return { interval: variant.billing_interval, count: variant.billing_interval_count };
  if (product.billing_interval && product.billing_interval_count)
    return { interval: product.billing_interval, count: product.billing_interval_count };
  return DEFAULT_BILLING;
}

/**
 * The end of a period that starts at `start`, in UTC calendar terms: DAY and WEEK add whole days; MONTH and YEAR
 * keep the day of the month, clamped to the last day of a shorter month (Jan 31 + 1 month = Feb 28 or 29), at the
 * same time of day.
 */
export function addInterval(start: Date, interval: BillingInterval, count: number): Date {
  const d = new Date(start.getTime());
  switch (interval) {
    case 'DAY':
      return new Date(d.getTime() + count * 86_400_000);
    case 'WEEK':
      return new Date(d.getTime() + count * 7 * 86_400_000);
    case 'MONTH':
      return addMonths(d, count);
    case 'YEAR':
      return addMonths(d, count * 12);
  }
}

function addMonths(d: Date, months: number): Date {
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months;
  const year = Math.floor(total / 12);
  const month = total % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(d.getUTCDate(), lastDay),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
      d.getUTCMilliseconds(),
    ),
  );
}

/** The later of two times. */
export function later(a: Date, b: Date): Date {
  return a.getTime() >= b.getTime() ? a : b;
}
