// Customers of a shop (with their wallet and affiliate columns).
import { sql, type Transaction } from 'kysely';
import type { CustomerRow, Database } from '../tables';
import { chunks, insertChunkRows } from './chunks';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type CustomerPageRow = PageRow<'customers'>;

/** One keyset page of a shop's customers: `limit + 1` rows matching the keyset's filters, in its order. */
export const customersPage = pageOf('customers');

export const customerById = byIdOf('customers');

/** How many customers of the shop the given affiliate referred. */
export async function referredCustomerCount(db: ReadDb, shopId: string, affiliateId: string): Promise<number> {
  const row = await inShop(db, shopId)
    .selectFrom('customers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('referred_by_customer_id', '=', affiliateId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export type NewCustomer = ShopRow<'customers'>;

export async function insertCustomers(
  trx: Transaction<Database>,
  shopId: string,
  rows: NewCustomer[],
): Promise<CustomerRow[]> {
  const inserted: CustomerRow[] = [];
  // In chunks: one INSERT may bind at most 65,535 parameters.
  for (const chunk of chunks(rows, insertChunkRows)) {
    inserted.push(...(await inShopForWrite(trx, shopId).insertInto('customers', chunk).returningAll().execute()));
  }
  return inserted;
}

export async function setReferrer(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
  referrerId: string,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set({ referred_by_customer_id: referrerId })
    .where('id', '=', customerId)
    .execute();
}

/** The shop's customer with this (lower-cased) email, locked for the transaction. */
export async function customerByEmailForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  email: string,
): Promise<CustomerRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('customers')
    .selectAll()
    .where('email', '=', email)
    .forUpdate()
    .executeTakeFirst();
}

/** Inserts the customer unless the email is taken (a concurrent order created it); returns the row if inserted. */
export async function insertCustomerIfAbsent(
  trx: Transaction<Database>,
  shopId: string,
  row: NewCustomer,
): Promise<CustomerRow | undefined> {
  return inShopForWrite(trx, shopId)
    .insertInto('customers', row)
    .onConflict((oc) => oc.columns(['shop_id', 'email']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Adds a paid order to the customer's totals. */
export async function addCustomerOrder(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  amount: string,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set((eb) => ({
      total_spent: sql<string>`${eb.ref('total_spent')} + ${amount}::numeric`,
      total_orders: sql<number>`${eb.ref('total_orders')} + 1`,
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
}

/** Credits an active affiliate with a commission on a referred order. */
export async function creditAffiliate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  commission: string,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set((eb) => ({
      affiliate_balance: sql<string>`${eb.ref('affiliate_balance')} + ${commission}::numeric`,
      affiliate_lifetime_earnings: sql<string>`${eb.ref('affiliate_lifetime_earnings')} + ${commission}::numeric`,
      affiliate_referred_orders: sql<number>`${eb.ref('affiliate_referred_orders')} + 1`,
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
}
