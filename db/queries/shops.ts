// Shops: the tenant every other row belongs to.
import { sql, type Kysely } from 'kysely';
import type { Database, Shop } from '../tables';

export async function insertShop(
  db: Kysely<Database>,
  shop: { id: string; name: string; plan: Shop['plan']; currency: string },
): Promise<Shop> {
  return db.insertInto('shops').values(shop).returningAll().executeTakeFirstOrThrow();
}

export async function shopById(db: Kysely<Database>, id: string): Promise<Shop | undefined> {
  return db.selectFrom('shops').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Returns the updated shop, or undefined when there is no such shop. */
export async function updateShopStatus(
  db: Kysely<Database>,
  id: string,
  status: Shop['status'],
): Promise<Shop | undefined> {
  return db
    .updateTable('shops')
    .set({ status, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function shopCount(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('shops')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Sets the shop's tax rate (percent) and whether prices contain it; undefined when there is no such shop. */
export async function updateShopTax(
  db: Kysely<Database>,
  id: string,
  tax: { rate: string; inclusive: boolean },
): Promise<Shop | undefined> {
  return db
    .updateTable('shops')
    .set({ tax_rate: tax.rate, tax_inclusive: tax.inclusive, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}
