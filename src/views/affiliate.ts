// Affiliate rows and their figures -> the AffiliateCustomer and AffiliatePerformance objects of the contract.
// Amounts are exact decimals (JSON numbers with the stored digits); times are Unix seconds.
import type { AffiliateCustomerRow } from '../../db/queries/affiliates';
import { jsonAmount } from '../platform/money';
import { unixSeconds } from './time';

/** An affiliate's all-time figures: ledger sums plus what was imported with the customer (src/domain/affiliates/affiliates.ts). */
export interface AffiliateFigures {
  /** Unpaid commission (may be negative). */
  balance: string;
  lifetimeEarnings: string;
  referredOrders: number;
  /** Totals of the orders that earned commission, less their refunds. */
  referredRevenue: string;
  referredCustomers: number;
}

export function affiliateCustomerView(row: AffiliateCustomerRow, figures: AffiliateFigures) {
  if (!row.is_affiliate || row.affiliate_code === null || row.affiliate_status === null || !row.affiliate_approved_at)
    throw new Error(`customer ${row.id} is not an affiliate`);
  return {
    customer_id: row.id,
    email: row.email,
    code: row.affiliate_code,
    status: row.affiliate_status,
    commission_percent: jsonAmount(row.affiliate_commission_percent ?? '0'),
    balance: jsonAmount(figures.balance),
    lifetime_earnings: jsonAmount(figures.lifetimeEarnings),
    referred_orders: figures.referredOrders,
    referred_revenue: jsonAmount(figures.referredRevenue),
    currency: row.wallet_currency,
    approved_at: unixSeconds(row.affiliate_approved_at),
  };
}

export type AffiliateCustomerView = ReturnType<typeof affiliateCustomerView>;

/** One interval's (or the whole period's) figures, as decimal text. */
export interface PeriodFigures {
  orders: number;
  revenue: string;
  refunded: string;
  earned: string;
  reversed: string;
  paid: string;
}

function periodFields(f: PeriodFigures) {
  return {
    referred_orders: f.orders,
    referred_revenue: jsonAmount(f.revenue),
    refunded_amount: jsonAmount(f.refunded),
    commission_earned: jsonAmount(f.earned),
    commission_reversed: jsonAmount(f.reversed),
    commission_paid: jsonAmount(f.paid),
  };
}

export function affiliatePerformanceView(p: {
  customerId: string;
  currency: string;
  from: Date;
  to: Date;
  interval: 'day' | 'week' | 'month';
  referredCustomers: number;
  totals: PeriodFigures;
  balance: string;
  periods: { from: Date; to: Date; figures: PeriodFigures }[];
}) {
  const totals = periodFields(p.totals);
  return {
    customer_id: p.customerId,
    currency: p.currency,
    from: unixSeconds(p.from),
    to: unixSeconds(p.to),
    interval: p.interval,
    referred_customers: p.referredCustomers,
    referred_orders: totals.referred_orders,
    referred_revenue: totals.referred_revenue,
    refunded_amount: totals.refunded_amount,
    commission_earned: totals.commission_earned,
    commission_reversed: totals.commission_reversed,
    commission_paid: totals.commission_paid,
    balance: jsonAmount(p.balance),
    periods: p.periods.map((x) => ({ from: unixSeconds(x.from), to: unixSeconds(x.to), ...periodFields(x.figures) })),
  };
}
