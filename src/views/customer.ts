// Customer rows -> the Customer object of the contract. Amounts are exact decimals in the database and JSON numbers
// with the same digits here; timestamps are Unix seconds.
import Decimal from 'decimal.js';
import { jsonAmount } from '../platform/money';
import type { CustomerFigures, CustomerRow } from '../../db/tables';
import type { AffiliateFigures } from './affiliate';
import { unixSeconds } from './time';

export interface AffiliateFacts {
  referredCustomers: number;
  /** An affiliate's figures (src/domain/affiliates/affiliates.ts: the same as the affiliate list's); required for an affiliate. */
  figures?: AffiliateFigures;
}

export function affiliateSummaryView(row: CustomerRow, facts: AffiliateFacts) {
  if (!row.is_affiliate || row.affiliate_code === null || row.affiliate_status === null) return null;
  const f = facts.figures;
  if (!f) throw new Error(`customer ${row.id}: an affiliate summary needs the affiliate's figures`);
  return {
    code: row.affiliate_code,
    status: row.affiliate_status,
    commission_percent: jsonAmount(row.affiliate_commission_percent ?? '0'),
    balance: jsonAmount(f.balance),
    lifetime_earnings: jsonAmount(f.lifetimeEarnings),
    referred_customers: f.referredCustomers,
    referred_orders: f.referredOrders,
  };
}

/**
 * `affiliate` is present only when asked for (`include_affiliate=true`): pass the facts then. The figures
 * (`total_spent`, `total_orders`, `blacklisted`) are computed by db/queries/customers.ts, never stored.
 */
export function customerView(row: CustomerRow & CustomerFigures, affiliate?: AffiliateFacts) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    phone: row.phone,
    country: row.country,
    total_spent: jsonAmount(row.total_spent),
    total_orders: row.total_orders,
    wallet: {
      id: row.wallet_id,
      balance: jsonAmount(row.wallet_balance),
      available_balance: jsonAmount(new Decimal(row.wallet_balance).minus(row.wallet_held)),
      currency: row.wallet_currency,
    },
    is_affiliate: row.is_affiliate,
    blacklisted: row.blacklisted,
    note: row.note,
    ...(affiliate ? { affiliate: affiliateSummaryView(row, affiliate) } : {}),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}
