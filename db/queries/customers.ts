// Customers of a shop (with their wallet and affiliate columns).
import type { Insertable, Kysely } from 'kysely';
import type { CustomerRow, CustomersTable, Database } from '../tables';
import { chunks, insertChunkRows } from './chunks';
import { applyKeyset, type Keyset } from './keyset';

export type CustomerPageRow = CustomerRow & { cursor_value: string };

/** One keyset page of a shop's customers: `limit + 1` rows matching the keyset's filters, in its order. */
export async function customersPage(db: Kysely<Database>, shopId: string, keyset: Keyset): Promise<CustomerPageRow[]> {
  return applyKeyset(db.selectFrom('customers').selectAll().where('shop_id', '=', shopId), keyset).execute();
}

export async function customerById(db: Kysely<Database>, shopId: string, id: string): Promise<CustomerRow | undefined> {
  return db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst();
}

/** How many customers of the shop the given affiliate referred. */
export async function referredCustomerCount(
  db: Kysely<Database>,
  shopId: string,
  affiliateId: string,
): Promise<number> {
  const row = await db
    .selectFrom('customers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('shop_id', '=', shopId)
    .where('referred_by_customer_id', '=', affiliateId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export type NewCustomer = Insertable<CustomersTable>;

export async function insertCustomers(db: Kysely<Database>, rows: NewCustomer[]): Promise<CustomerRow[]> {
  const inserted: CustomerRow[] = [];
  // In chunks: one INSERT may bind at most 65,535 parameters.
  for (const chunk of chunks(rows, insertChunkRows)) {
    inserted.push(...(await db.insertInto('customers').values(chunk).returningAll().execute()));
  }
  return inserted;
}

export async function setReferrer(
  db: Kysely<Database>,
  shopId: string,
  customerId: string,
  referrerId: string,
): Promise<void> {
  await db
    .updateTable('customers')
    .set({ referred_by_customer_id: referrerId })
    .where('shop_id', '=', shopId)
    .where('id', '=', customerId)
    .execute();
}
