// Resellers: the shop's tiers (with their live member counts), its program row, its resellers, and the lifetime
// figures a reseller's completed orders and refunds move.
import { sql, type Transaction } from 'kysely';
import type {
  Database,
  EnrollmentMode,
  ResellerProgramRow,
  ResellerRow,
  ResellerStatus,
  ResellerTierRow,
} from '../tables';
import { inShop, inShopForWrite, shopSingletonForUpdate, type ReadDb, type ShopRow } from './shop-scope';

// ---------------------------------------------------------------------------------------------------------------
// Tiers
// ---------------------------------------------------------------------------------------------------------------

export type TierWithCount = ResellerTierRow & { member_count: number };

/** Statuses whose resellers are members of their tier (enrolled: accepted or approved, suspended or not). */
export const memberStatuses: readonly ResellerStatus[] = ['ACTIVE', 'SUSPENDED'];

/** Every tier of the shop, by sort_order (ties by id), each with its live member count. */
export async function tiersWithMemberCounts(db: ReadDb, shopId: string): Promise<TierWithCount[]> {
  const tiers = await inShop(db, shopId)
    .selectFrom('reseller_tiers')
    .selectAll()
    .orderBy('sort_order')
    .orderBy('id')
    .execute();
  const counts = await inShop(db, shopId)
    .selectFrom('resellers')
    .select(['tier_id', sql<string>`count(*)`.as('n')])
    .where('status', 'in', memberStatuses)
    .groupBy('tier_id')
    .execute();
  const byTier = new Map(counts.map((c) => [c.tier_id, Number(c.n)]));
  return tiers.map((t) => ({ ...t, member_count: byTier.get(t.id) ?? 0 }));
}

/** Every tier of the shop (no counts), by sort_order then id. */
export async function tiersOfShop(db: ReadDb, shopId: string): Promise<ResellerTierRow[]> {
  return inShop(db, shopId).selectFrom('reseller_tiers').selectAll().orderBy('sort_order').orderBy('id').execute();
}

export async function tierById(db: ReadDb, shopId: string, id: string): Promise<ResellerTierRow | undefined> {
  return inShop(db, shopId).selectFrom('reseller_tiers').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function tierByName(db: ReadDb, shopId: string, name: string): Promise<ResellerTierRow | undefined> {
  return inShop(db, shopId).selectFrom('reseller_tiers').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function insertTier(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'reseller_tiers'>,
): Promise<ResellerTierRow> {
  return inShopForWrite(trx, shopId).insertInto('reseller_tiers', row).returningAll().executeTakeFirstOrThrow();
}

// ---------------------------------------------------------------------------------------------------------------
// Program
// ---------------------------------------------------------------------------------------------------------------

/** When the shop was created: the program a shop never wrote is dated from it (it has existed, unstored, since). */
export async function shopCreatedAt(db: ReadDb, shopId: string): Promise<Date | undefined> {
  const row = await db.selectFrom('shops').select('created_at').where('id', '=', shopId).executeTakeFirst();
  return row?.created_at;
}

export async function programOfShop(db: ReadDb, shopId: string): Promise<ResellerProgramRow | undefined> {
  return inShop(db, shopId).selectFrom('reseller_programs').selectAll().executeTakeFirst();
}

/** The program row, inserted (with the defaults) when the shop has none yet, locked until the transaction ends. */
export async function programForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  fresh: ShopRow<'reseller_programs'>,
): Promise<ResellerProgramRow> {
  return shopSingletonForUpdate(trx, shopId, 'reseller_programs', fresh);
}

export interface ProgramChanges {
  enabled?: boolean;
  enrollment_mode?: EnrollmentMode;
  application_message?: string | null;
  require_application_note?: boolean;
  default_tier_id?: string | null;
}

export async function updateProgram(
  trx: Transaction<Database>,
  shopId: string,
  changes: ProgramChanges,
  now: Date,
): Promise<ResellerProgramRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('reseller_programs')
    .set({ ...changes, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

// ---------------------------------------------------------------------------------------------------------------
// Resellers
// ---------------------------------------------------------------------------------------------------------------

export type ResellerWithTier = ResellerRow & { tier_name: string; tier_discount_percent: string };

function withTier(db: ReadDb, shopId: string) {
  return inShop(db, shopId)
    .selectFrom('resellers as r')
    .innerJoin('reseller_tiers as t', (j) => j.onRef('t.shop_id', '=', 'r.shop_id').onRef('t.id', '=', 'r.tier_id'))
    .selectAll('r')
    .select(['t.name as tier_name', 't.discount_percent as tier_discount_percent']);
}

export async function resellerById(db: ReadDb, shopId: string, id: string): Promise<ResellerWithTier | undefined> {
  return withTier(db, shopId).where('r.id', '=', id).executeTakeFirst();
}

export async function resellerByEmail(
  db: ReadDb,
  shopId: string,
  email: string,
): Promise<ResellerWithTier | undefined> {
  return withTier(db, shopId).where('r.email', '=', email).executeTakeFirst();
}

/** The reseller row, locked until the transaction ends (moves of one reseller run one at a time). */
export async function resellerByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<ResellerRow | undefined> {
  return inShop(trx, shopId).selectFrom('resellers').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function resellerByEmailForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  email: string,
): Promise<ResellerRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('resellers')
    .selectAll()
    .where('email', '=', email)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Inserts the reseller unless the shop already has one with this email (then nothing: undefined). A concurrent
 * insert of the same email waits for the other transaction and then finds its row, so two invitations of one
 * email never both insert.
 */
export async function insertResellerIfAbsent(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'resellers'>,
): Promise<ResellerRow | undefined> {
  return inShopForWrite(trx, shopId)
    .insertInto('resellers', row)
    .onConflict((oc) => oc.columns(['shop_id', 'email']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export interface ResellerChanges {
  status?: ResellerStatus;
  tier_id?: string;
  application_note?: string | null;
  approved_at?: Date | null;
  suspended_at?: Date | null;
  rejected_at?: Date | null;
}

export async function updateReseller(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  changes: ResellerChanges,
  now: Date,
): Promise<ResellerRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('resellers')
    .set({ ...changes, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Adds to the lifetime figures (revenue may be negative: a refund), returning the row as it now is. */
export async function addToLifetimeFigures(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  delta: { revenue: string; orders: number },
  now: Date,
): Promise<ResellerRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('resellers')
    .set({
      lifetime_revenue: sql<string>`lifetime_revenue + ${delta.revenue}::numeric`,
      lifetime_orders: sql<number>`lifetime_orders + ${delta.orders}`,
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface ResellerFilter {
  status?: ResellerStatus;
  /** Lower-cased; matched as a substring of the email. */
  search?: string;
}

function filtered(db: ReadDb, shopId: string, filter: ResellerFilter) {
  let q = withTier(db, shopId);
  if (filter.status !== undefined) q = q.where('r.status', '=', filter.status);
  if (filter.search !== undefined) q = q.where(sql<boolean>`strpos(r.email, ${filter.search}) > 0`);
  return q;
}

/** One page of the shop's resellers, newest first (ties by id, descending). */
export async function resellersPage(
  db: ReadDb,
  shopId: string,
  filter: ResellerFilter,
  page: { offset: number; limit: number },
): Promise<ResellerWithTier[]> {
  return filtered(db, shopId, filter)
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id', 'desc')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}

export async function resellerCount(db: ReadDb, shopId: string, filter: ResellerFilter): Promise<number> {
  let q = inShop(db, shopId)
    .selectFrom('resellers as r')
    .select(sql<string>`count(*)`.as('n'));
  if (filter.status !== undefined) q = q.where('r.status', '=', filter.status);
  if (filter.search !== undefined) q = q.where(sql<boolean>`strpos(r.email, ${filter.search}) > 0`);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The ACTIVE reseller with this (lower-cased) email, with its tier's percent: whom wholesale pricing is for. */
/** The ACTIVE reseller with this (lower-cased) email and its tier, held (FOR SHARE) until the write commits. */
export function activeResellerByEmailQuery(db: ReadDb, shopId: string, email: string) {
  return withTier(db, shopId).where('r.email', '=', email).where('r.status', '=', 'ACTIVE').forShare();
}

export async function activeResellerByEmail(
  trx: Transaction<Database>,
  shopId: string,
  email: string,
): Promise<ResellerWithTier | undefined> {
  return activeResellerByEmailQuery(trx, shopId, email).executeTakeFirst();
}
