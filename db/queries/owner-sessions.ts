// Shop owner accounts, their consent-page sessions, failed sign-ins, and the session trail (migration 0022).
// An account is found by its email, and a session by the hash of its cookie's token, before any shop is known: the
// email or the token decides the shop (tenancy test d lists those two look-ups).
import { sql, type Transaction } from 'kysely';
import type { AuditEntryRow, Database, OwnerAccountRow, OwnerSessionRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

// --- accounts -----------------------------------------------------------------------------------------------------

export async function insertOwnerAccount(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'owner_accounts'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('owner_accounts', row).execute();
}

/** The account with this (lower-case) email, in whichever shop it is. */
export async function ownerAccountByEmail(db: ReadDb, email: string): Promise<OwnerAccountRow | undefined> {
  return db.selectFrom('owner_accounts').selectAll().where('email', '=', email).executeTakeFirst();
}

/** The emails of the shop's owners with these ids (the actors of a session trail), by id. */
export async function ownerEmails(db: ReadDb, shopId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await inShop(db, shopId)
    .selectFrom('owner_accounts')
    .select(['id', 'email'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r.email]));
}

// --- sessions -----------------------------------------------------------------------------------------------------

export async function insertOwnerSession(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'owner_sessions'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('owner_sessions', row).execute();
}

/** The live session (not ended, not expired, its account not disabled) whose token has this hash, with its email. */
export async function liveOwnerSessionByTokenHash(
  db: ReadDb,
  tokenHash: string,
  now: Date,
): Promise<(OwnerSessionRow & { email: string }) | undefined> {
  return db
    .selectFrom('owner_sessions as s')
    .innerJoin('owner_accounts as o', (j) => j.onRef('o.shop_id', '=', 's.shop_id').onRef('o.id', '=', 's.owner_id'))
    .selectAll('s')
    .select('o.email')
    .where('s.token_hash', '=', tokenHash)
    .where('s.ended_at', 'is', null)
    .where('s.expires_at', '>', now)
    .where('o.disabled_at', 'is', null)
    .executeTakeFirst();
}

/** Ends a live session; returns whether it was live. */
export async function endOwnerSession(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  now: Date,
): Promise<boolean> {
  const ended = await inShopForWrite(trx, shopId)
    .updateTable('owner_sessions')
    .set({ ended_at: now })
    .where('id', '=', id)
    .where('ended_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return ended !== undefined;
}

export async function ownerSessionById(db: ReadDb, shopId: string, id: string): Promise<OwnerSessionRow | undefined> {
  return inShop(db, shopId).selectFrom('owner_sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The session, locked until the transaction ends (a revocation and a sign-out of it do not interleave). */
export async function ownerSessionByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<OwnerSessionRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('owner_sessions')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** The audit entries of a session, oldest first (ties on id), at most `limit`. */
export async function auditEntriesOfSession(
  db: ReadDb,
  shopId: string,
  sessionId: string,
  limit: number,
): Promise<AuditEntryRow[]> {
  return inShop(db, shopId)
    .selectFrom('audit_entries')
    .selectAll()
    .where('session_id', '=', sessionId)
    .orderBy('occurred_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

// --- failed sign-ins ----------------------------------------------------------------------------------------------

/**
 * Serializes the sign-ins of one email and of one IP until the transaction ends (advisory locks, always taken in
 * this order), so concurrent attempts count each other's failures and cannot overrun the limit together.
 */
export async function lockSignInAttempts(trx: Transaction<Database>, ip: string, email: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`owner-sign-in:email:${email}`}, 0))`.execute(trx);
  await sql`select pg_advisory_xact_lock(hashtextextended(${`owner-sign-in:ip:${ip}`}, 0))`.execute(trx);
}

/** Failed sign-ins since `since` from this IP and for this email. */
export async function signInFailureCounts(
  trx: Transaction<Database>,
  ip: string,
  email: string,
  since: Date,
): Promise<{ ip: number; email: number }> {
  const row = await trx
    .selectFrom('owner_sign_in_failures')
    .select([
      sql<string>`count(*) filter (where ip = ${ip})`.as('by_ip'),
      sql<string>`count(*) filter (where email = ${email})`.as('by_email'),
    ])
    .where('failed_at', '>', since)
    .where((eb) => eb.or([eb('ip', '=', ip), eb('email', '=', email)]))
    .executeTakeFirstOrThrow();
  return { ip: Number(row.by_ip), email: Number(row.by_email) };
}

export async function insertSignInFailure(
  trx: Transaction<Database>,
  ip: string,
  email: string,
  now: Date,
): Promise<void> {
  await trx.insertInto('owner_sign_in_failures').values({ ip, email, failed_at: now }).execute();
}

/** A successful sign-in forgives the account's earlier failures (not the IP's). */
export async function clearSignInFailuresOfEmail(trx: Transaction<Database>, email: string): Promise<void> {
  await trx.deleteFrom('owner_sign_in_failures').where('email', '=', email).execute();
}

/** Deletes failures older than `before` (they no longer count); returns how many. */
export async function deleteOldSignInFailures(trx: Transaction<Database>, before: Date): Promise<number> {
  const r = await trx.deleteFrom('owner_sign_in_failures').where('failed_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
