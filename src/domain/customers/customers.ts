// Customer rules: the list's allow-list of filters and sorts, the affiliate summary, new customer rows.
import type { ReadDb } from '../../../db/queries/shop-scope';
import * as customers from '../../../db/queries/customers';
import { NotFoundError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { customerView } from '../../views/customer';
import type { AffiliateFigures } from '../../views/affiliate';

export type CustomerView = ReturnType<typeof customerView>;

/** `GET /customers`: what can be filtered and sorted (documented on the CustomerFilters / CustomerSorts parameters). */
export const customerList: ListSpec = {
  name: 'customers',
  filters: {
    email: { column: 'email', type: 'email', description: 'exact email (case-insensitive)' },
    country: { column: 'country', type: 'country', description: 'ISO 3166-1 alpha-2' },
    is_affiliate: { column: 'is_affiliate', type: 'boolean' },
    blacklisted: { column: 'blacklisted', type: 'boolean' },
    created_after: { column: 'created_at', type: 'timestamp', op: '>=', description: 'created at or after' },
    created_before: { column: 'created_at', type: 'timestamp', op: '<', description: 'created before' },
    min_total_spent: { column: 'total_spent', type: 'decimal', op: '>=', description: 'lifetime spend at least' },
  },
  sorts: {
    created_at: { column: 'created_at', cast: 'timestamptz' },
    updated_at: { column: 'updated_at', cast: 'timestamptz' },
    email: { column: 'email', cast: 'text' },
    total_spent: { column: 'total_spent', cast: 'numeric' },
  },
  defaultSort: '-created_at',
};

/** `GET /customers`: a page of customers with their wallets. */
export const customerCursorList: CursorList<customers.CustomerPageRow, CustomerView> = {
  spec: customerList,
  page: customers.customersPage,
  view: (rows) => rows.map((row) => customerView(row)),
};

export async function getCustomer(
  db: ReadDb,
  shopId: string,
  id: string,
  options: {
    /**
     * Given when the caller asked for the affiliate summary: the affiliate list's own figures
     * (src/domain/affiliates/affiliates.ts), so both always show the same. Passed in, because the affiliate
     * program stands on customers, not under them.
     */
    affiliateFigures?: (db: ReadDb, shopId: string, customerId: string) => Promise<AffiliateFigures | undefined>;
  },
): Promise<CustomerView> {
  const row = await customers.customerById(db, shopId, id);
  if (!row) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  if (!options.affiliateFigures) return customerView(row);
  const figures = row.is_affiliate ? await options.affiliateFigures(db, shopId, row.id) : undefined;
  return customerView(row, { referredCustomers: figures?.referredCustomers ?? 0, figures });
}

export interface NewCustomerInput {
  email: string;
  name?: string | null;
  phone?: string | null;
  country?: string | null;
  note?: string | null;
  wallet_balance?: string;
  affiliate?: {
    code: string;
    status?: 'ACTIVE' | 'SUSPENDED';
    commission_percent?: string;
    balance?: string;
    lifetime_earnings?: string;
    referred_orders?: number;
  };
  created_at?: Date | string;
  updated_at?: Date | string;
}

/**
 * A row for a new customer of the shop: a new id and wallet, the email lower-cased. `now` is when an affiliate made
 * with the customer became one if the input gives no creation time.
 */
export function newCustomerRow(shop: { currency: string }, input: NewCustomerInput, now: Date): customers.NewCustomer {
  const a = input.affiliate;
  return {
    id: newId('cus'),
    email: input.email.toLowerCase(),
    name: input.name ?? null,
    phone: input.phone ?? null,
    country: input.country ?? null,
    note: input.note ?? null,
    wallet_id: newId('wal'),
    wallet_currency: shop.currency,
    wallet_balance: input.wallet_balance ?? '0',
    is_affiliate: a !== undefined,
    affiliate_code: a?.code ?? null,
    affiliate_status: a ? (a.status ?? 'ACTIVE') : null,
    affiliate_commission_percent: a ? (a.commission_percent ?? '10') : null,
    affiliate_balance: a?.balance ?? '0',
    affiliate_lifetime_earnings: a?.lifetime_earnings ?? '0',
    affiliate_referred_orders: a?.referred_orders ?? 0,
    // An affiliate made with the customer (fixtures) became one when it was created.
    affiliate_approved_at: a ? (input.created_at ?? now) : null,
    ...(input.created_at !== undefined ? { created_at: input.created_at } : {}),
    ...(input.updated_at !== undefined
      ? { updated_at: input.updated_at }
      : input.created_at !== undefined
        ? { updated_at: input.created_at }
        : {}),
  };
}

/**
 * The shop's customer with this email, created (empty wallet in the shop currency) when there is none. `created`
 * says whether this call made it, for the caller's `customer:created`. A concurrent creator's row is reused: the
 * insert waits for it and does nothing, and the locked read then sees it.
 */
export async function customerForEmail(
  w: ShopWrite,
  shop: { currency: string },
  email: string,
): Promise<{ customer: customers.CustomerAccountRow; created: boolean }> {
  const { customer, created } = await customers.upsertBuyer(
    w.trx,
    w.shopId,
    newCustomerRow(shop, { email: email.toLowerCase() }, w.now),
    {},
  );
  return { customer, created };
}
