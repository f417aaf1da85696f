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

/** Returns the updated shop, or undefined when there is no such shop. A test twin follows its live shop. */
export async function updateShopStatus(
  db: Kysely<Database>,
  id: string,
  status: Shop['status'],
): Promise<Shop | undefined> {
  const rows = await db
    .updateTable('shops')
    .set({ status, updated_at: sql<Date>`now()` })
    .where((eb) => eb.or([eb('id', '=', id), eb('live_shop_id', '=', id)]))
    .returningAll()
    .execute();
  return rows.find((r) => r.id === id);
}

export async function shopCount(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('shops')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The oldest live shops' ids, oldest first (the start banner names them: a key is created for a shop). */
export async function oldestLiveShopIds(db: Kysely<Database>, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('shops')
    .select('id')
    .where('livemode', '=', true)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
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

/** The live shop's test twin, created on first use; concurrent callers get the same one. */
export async function testTwinOf(trx: Kysely<Database>, liveShopId: string, newShopId: string): Promise<Shop> {
  await sql`insert into shops (id, name, plan, currency, status, tax_rate, tax_inclusive, livemode, live_shop_id)
    select ${newShopId}, name, plan, currency, status, tax_rate, tax_inclusive, false, id
    from shops where id = ${liveShopId} and livemode
    on conflict (live_shop_id) do nothing`.execute(trx);
  return trx.selectFrom('shops').selectAll().where('live_shop_id', '=', liveShopId).executeTakeFirstOrThrow();
}

/** The test twin of this live shop, if it has one. */
export async function existingTestTwinOf(db: Kysely<Database>, liveShopId: string): Promise<Shop | undefined> {
  return db.selectFrom('shops').selectAll().where('live_shop_id', '=', liveShopId).executeTakeFirst();
}

/**
 * Moves a test shop's clock forward by `ms` (never a live shop's: the query and a check refuse it), unless that takes
 * its offset past `maxOffsetMs`: undefined then, and nothing moved.
 */
export async function advanceShopClock(
  db: Kysely<Database>,
  shopId: string,
  ms: number,
  maxOffsetMs: number,
): Promise<Shop | undefined> {
  return db
    .updateTable('shops')
    .set({ clock_offset_ms: sql`clock_offset_ms + ${ms}` })
    .where('id', '=', shopId)
    .where('livemode', '=', false)
    .where(sql<boolean>`clock_offset_ms + ${ms} <= ${maxOffsetMs}`)
    .returningAll()
    .executeTakeFirst();
}

/** The shops whose clock runs ahead of real time (test shops whose test clock moved), with how far. */
export async function shopsWithClockAhead(db: Kysely<Database>): Promise<{ id: string; offsetMs: number }[]> {
  const rows = await db
    .selectFrom('shops')
    .select(['id', 'clock_offset_ms'])
    .where('clock_offset_ms', '>', '0')
    .execute();
  return rows.map((r) => ({ id: r.id, offsetMs: Number(r.clock_offset_ms) }));
}
