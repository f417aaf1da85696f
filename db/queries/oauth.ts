// OAuth 2.0: apps (global rows), grants (one approval = one token family), authorization codes, refresh tokens and
// the access tokens (credentials of kind oauth_access_token) of a grant. Codes and tokens are looked up by the hash of
// the presented secret: the secret decides the shop, so those look-ups cannot start from a shop (tenancy test d).
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import type {
  Database,
  OAuthClientRow,
  OAuthClientsTable,
  OAuthCodeRow,
  OAuthGrantRevokedReason,
  OAuthGrantRow,
  OAuthRefreshTokenRow,
} from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

// --- apps ---------------------------------------------------------------------------------------------------------

export async function clientById(db: ReadDb, id: string): Promise<OAuthClientRow | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertClient(db: Kysely<Database>, row: Insertable<OAuthClientsTable>): Promise<OAuthClientRow> {
  return db.insertInto('oauth_clients').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function allClients(db: ReadDb): Promise<OAuthClientRow[]> {
  return db.selectFrom('oauth_clients').selectAll().orderBy('created_at').orderBy('id').execute();
}

/** Marks the app revoked; returns it, or undefined when no live app has this id. */
export async function revokeClientRow(
  trx: Transaction<Database>,
  id: string,
  now: Date,
): Promise<OAuthClientRow | undefined> {
  return trx
    .updateTable('oauth_clients')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

// --- grants -------------------------------------------------------------------------------------------------------

export async function insertGrant(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'oauth_grants'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('oauth_grants', row).execute();
}

export async function grantsOfShop(db: ReadDb, shopId: string): Promise<OAuthGrantRow[]> {
  return inShop(db, shopId).selectFrom('oauth_grants').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function grantById(db: ReadDb, shopId: string, id: string): Promise<OAuthGrantRow | undefined> {
  return inShop(db, shopId).selectFrom('oauth_grants').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Revokes a grant and every token of its family (its refresh tokens and access tokens). Authentication refuses the
 * access tokens of a revoked grant through its join anyway; their own revoked_at is set too so listings say so.
 * Returns whether the grant was live.
 */
export async function revokeGrantFamily(
  trx: Transaction<Database>,
  shopId: string,
  grantId: string,
  reason: OAuthGrantRevokedReason,
  now: Date,
): Promise<boolean> {
  const scope = inShopForWrite(trx, shopId);
  const revoked = await scope
    .updateTable('oauth_grants')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  await scope
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
  await scope
    .updateTable('credentials')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
  return revoked !== undefined;
}

/** The live grants of an app (in one shop, or in every shop when shopId is undefined): operator revocation. */
export async function liveGrantsOfClient(
  db: ReadDb,
  clientId: string,
  shopId: string | undefined,
): Promise<{ id: string; shop_id: string }[]> {
  if (shopId !== undefined) {
    return inShop(db, shopId)
      .selectFrom('oauth_grants')
      .select(['id', 'shop_id'])
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute();
  }
  return db
    .selectFrom('oauth_grants')
    .select(['id', 'shop_id'])
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .execute();
}

// --- codes --------------------------------------------------------------------------------------------------------

export async function insertCode(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'oauth_codes'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('oauth_codes', row).execute();
}

/**
 * The code with this hash, locked: a second exchange of the same code waits here for the first to commit, then
 * sees it used. With its grant's revocation time.
 */
export async function codeByHashForUpdate(
  trx: Transaction<Database>,
  codeHash: string,
): Promise<(OAuthCodeRow & { grant_scopes: string[]; grant_revoked_at: Date | null }) | undefined> {
  return trx
    .selectFrom('oauth_codes as c')
    .innerJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'c.shop_id').onRef('g.id', '=', 'c.grant_id'))
    .selectAll('c')
    .select(['g.scopes as grant_scopes', 'g.revoked_at as grant_revoked_at'])
    .where('c.code_hash', '=', codeHash)
    .forUpdate('c')
    .executeTakeFirst();
}

export async function markCodeUsed(trx: Transaction<Database>, shopId: string, id: string, now: Date): Promise<void> {
  await inShopForWrite(trx, shopId).updateTable('oauth_codes').set({ used_at: now }).where('id', '=', id).execute();
}

// --- refresh tokens -----------------------------------------------------------------------------------------------

export async function insertRefreshToken(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'oauth_refresh_tokens'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).insertInto('oauth_refresh_tokens', row).execute();
}

/** The refresh token with this hash, locked (two uses at once: the second waits and then sees it used). */
export async function refreshTokenByHashForUpdate(
  trx: Transaction<Database>,
  tokenHash: string,
): Promise<(OAuthRefreshTokenRow & { client_id: string; grant_revoked_at: Date | null }) | undefined> {
  return trx
    .selectFrom('oauth_refresh_tokens as r')
    .innerJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'r.shop_id').onRef('g.id', '=', 'r.grant_id'))
    .selectAll('r')
    .select(['g.client_id', 'g.revoked_at as grant_revoked_at'])
    .where('r.token_hash', '=', tokenHash)
    .forUpdate('r')
    .executeTakeFirst();
}

export async function markRefreshTokenUsed(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('oauth_refresh_tokens')
    .set({ used_at: now })
    .where('id', '=', id)
    .execute();
}

// --- access tokens ------------------------------------------------------------------------------------------------

export async function insertAccessToken(
  trx: Transaction<Database>,
  shopId: string,
  row: Omit<ShopRow<'credentials'>, 'kind'>,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .insertInto('credentials', { ...row, kind: 'oauth_access_token' })
    .execute();
}

/** An access token by its hash, with its app (for revocation by the app that holds it). */
export async function accessTokenByHash(
  db: ReadDb,
  tokenHash: string,
): Promise<{ id: string; shop_id: string; client_id: string; revoked_at: Date | null } | undefined> {
  return db
    .selectFrom('credentials as c')
    .innerJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'c.shop_id').onRef('g.id', '=', 'c.grant_id'))
    .select(['c.id', 'c.shop_id', 'g.client_id', 'c.revoked_at'])
    .where('c.token_hash', '=', tokenHash)
    .where('c.kind', '=', 'oauth_access_token')
    .executeTakeFirst();
}

export async function revokeAccessToken(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('credentials')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/** The app an access token was issued to (GET /me/capabilities); undefined for an API key. */
export async function clientOfCredential(
  db: ReadDb,
  shopId: string,
  credentialId: string,
): Promise<{ id: string; name: string } | undefined> {
  return inShop(db, shopId)
    .selectFrom('credentials as c')
    .innerJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'c.shop_id').onRef('g.id', '=', 'c.grant_id'))
    .innerJoin('oauth_clients as a', 'a.id', 'g.client_id')
    .select(['a.id', 'a.name'])
    .where('c.id', '=', credentialId)
    .executeTakeFirst();
}

/** Tokens issued under a grant (tests and the CLI's grant listing). */
export async function liveTokenCountsOfGrant(
  db: ReadDb,
  shopId: string,
  grantId: string,
): Promise<{ access: number; refresh: number }> {
  const scope = inShop(db, shopId);
  const [a, r] = await Promise.all([
    scope
      .selectFrom('credentials')
      .select(sql<string>`count(*)`.as('n'))
      .where('grant_id', '=', grantId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow(),
    scope
      .selectFrom('oauth_refresh_tokens')
      .select(sql<string>`count(*)`.as('n'))
      .where('grant_id', '=', grantId)
      .where('revoked_at', 'is', null)
      .where('used_at', 'is', null)
      .executeTakeFirstOrThrow(),
  ]);
  return { access: Number(a.n), refresh: Number(r.n) };
}
