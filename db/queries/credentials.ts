// Credentials (API keys, OAuth access tokens), looked up by the hash of the presented secret.
import { sql, type Kysely } from 'kysely';
import type { Credential, Database, Shop } from '../tables';

export interface CredentialWithShop {
  credential: Credential;
  shop: Shop;
}

export async function insertCredential(
  db: Kysely<Database>,
  row: Pick<Credential, 'id' | 'shop_id' | 'kind' | 'name' | 'token_hash' | 'display_prefix' | 'scopes'>,
): Promise<Credential> {
  return db.insertInto('credentials').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The live (not revoked) credential with this hash and its shop, in one round trip. */
export async function liveCredentialWithShopByHash(
  db: Kysely<Database>,
  tokenHash: string,
): Promise<CredentialWithShop | undefined> {
  const row = await db
    .selectFrom('credentials as c')
    .innerJoin('shops as s', 's.id', 'c.shop_id')
    .select([
      'c.id',
      'c.shop_id',
      'c.kind',
      'c.name',
      'c.token_hash',
      'c.display_prefix',
      'c.scopes',
      'c.created_at',
      'c.last_used_at',
      'c.revoked_at',
      's.name as shop_name',
      's.plan as shop_plan',
      's.currency as shop_currency',
      's.status as shop_status',
      's.enabled_payment_methods as shop_payment_methods',
      's.created_at as shop_created_at',
      's.updated_at as shop_updated_at',
    ])
    .where('c.token_hash', '=', tokenHash)
    .where('c.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    credential: {
      id: row.id,
      shop_id: row.shop_id,
      kind: row.kind,
      name: row.name,
      token_hash: row.token_hash,
      display_prefix: row.display_prefix,
      scopes: row.scopes,
      created_at: row.created_at,
      last_used_at: row.last_used_at,
      revoked_at: row.revoked_at,
    },
    shop: {
      id: row.shop_id,
      name: row.shop_name,
      plan: row.shop_plan,
      currency: row.shop_currency,
      status: row.shop_status,
      enabled_payment_methods: row.shop_payment_methods,
      created_at: row.shop_created_at,
      updated_at: row.shop_updated_at,
    },
  };
}

/** Records use at most once a minute per credential, so a busy key does not write on every request. */
export async function touchCredential(db: Kysely<Database>, id: string): Promise<void> {
  await db
    .updateTable('credentials')
    .set({ last_used_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where((eb) =>
      eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 minute'`)]),
    )
    .execute();
}

/** Returns the revoked credential, or undefined when no live credential has this id. */
export async function revokeCredential(db: Kysely<Database>, id: string): Promise<Credential | undefined> {
  return db
    .updateTable('credentials')
    .set({ revoked_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function credentialsOfShop(db: Kysely<Database>, shopId: string): Promise<Credential[]> {
  return db
    .selectFrom('credentials')
    .selectAll()
    .where('shop_id', '=', shopId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
