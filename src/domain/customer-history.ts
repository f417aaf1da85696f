// A customer's past, for fixtures and tests: since `total_spent`, `total_orders` and `blacklisted` are computed
// (from paid orders and the blacklist, db/queries/customers.ts), a customer "who spent 120.50 over 3 orders" or "who
// is blacklisted" is seeded as what those figures are computed from: paid orders and a blacklist entry. Nothing
// here writes a figure itself.
import type { Transaction } from 'kysely';
import Decimal from 'decimal.js';
import { insertOrder } from '../../db/queries/orders';
import type { Database } from '../../db/tables';
import { newId, newUniqid } from '../ids';
import { addBlacklistEntries } from './blacklist';

export interface CustomerPast {
  customerId: string;
  /** Lower-cased. */
  email: string;
  /** Lifetime spend, in the shop currency (decimal text). */
  total_spent?: string;
  /** Paid orders; defaults to 1 when `total_spent` is above 0, else 0. */
  total_orders?: number;
  /** An EMAIL blacklist entry for the customer's email. */
  blacklisted?: boolean;
}

/** Why the past cannot be seeded, or null. */
export function customerPastProblem(p: Omit<CustomerPast, 'customerId' | 'email'>): string | null {
  if (p.total_orders === 0 && p.total_spent !== undefined && new Decimal(p.total_spent).gt(0))
    return 'total_spent above 0 needs total_orders of at least 1';
  if (p.total_orders !== undefined && p.total_orders > 1000) return 'total_orders must be at most 1000';
  return null;
}

/**
 * Writes the customers' pasts: `total_orders` paid (COMPLETED, kind PAYMENT, titled "Earlier purchases") orders of
 * the customer in the shop currency, the first of `total_spent`, the others of 0, completed at `at`; and an EMAIL
 * blacklist entry for a blacklisted one.
 */
export async function seedCustomerPasts(
  trx: Transaction<Database>,
  shop: { id: string; currency: string },
  pasts: readonly CustomerPast[],
  at: Date = new Date(),
): Promise<void> {
  for (const p of pasts) {
    const problem = customerPastProblem(p);
    if (problem) throw new Error(`customer ${p.email}: ${problem}`);
    const spent = p.total_spent ?? '0';
    const count = p.total_orders ?? (new Decimal(spent).gt(0) ? 1 : 0);
    for (let i = 0; i < count; i++) {
      const total = i === 0 ? spent : '0';
      await insertOrder(trx, shop.id, {
        id: newId('ord'),
        uniqid: newUniqid(),
        kind: 'PAYMENT',
        customer_id: p.customerId,
        customer_email: p.email,
        currency: shop.currency,
        status: 'COMPLETED',
        status_details: 'Paid',
        payment_status: 'PAID',
        subtotal: total,
        total,
        is_developer_invoice: false,
        developer_title: 'Earlier purchases',
        completed_at: at,
        created_at: at,
        updated_at: at,
      });
    }
  }
  const blacklisted = pasts.filter((p) => p.blacklisted === true);
  await addBlacklistEntries(
    trx,
    shop.id,
    blacklisted.map((p) => ({ type: 'EMAIL', value: p.email, note: null })),
    at,
  );
}
