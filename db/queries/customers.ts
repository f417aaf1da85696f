// Customers of a shop (with their wallet and affiliate columns).
import type { Transaction } from 'kysely';
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
