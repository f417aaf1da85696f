// Credentials (API keys, OAuth access tokens), looked up by the hash of the presented secret.
import { sql, type Kysely } from 'kysely';
import type { Credential, Database, Shop } from '../tables';
import { prepare } from './prepared';
import { inShop, type ReadDb } from './shop-scope';

/**
 * What authentication needs of a credential and its shop, and nothing more: this runs on every request, and each
 * column costs its parsing (the full rows, 17 columns with five timestamps, cost about 0.2 ms per request).
 */
export interface CredentialWithShop {
  credential: Pick<Credential, 'id' | 'kind' | 'scopes'>;
  shop: Pick<Shop, 'id' | 'plan' | 'status' | 'currency' | 'livemode'> & {
    /** How far the shop's clock runs ahead of real time, in ms (0 for live shops). */
    clockOffsetMs: number;
  };
}

export async function insertCredential(
  db: Kysely<Database>,
  row: Pick<Credential, 'id' | 'shop_id' | 'kind' | 'name' | 'token_hash' | 'display_prefix' | 'scopes'>,
): Promise<Credential> {
  return db.insertInto('credentials').values(row).returningAll().executeTakeFirstOrThrow();
}

interface LiveCredentialRow {
  id: string;
  kind: Credential['kind'];
  scopes: string[];
  shop_id: string;
  plan: Shop['plan'];
  status: Shop['status'];
  currency: string;
  livemode: boolean;
  clock_offset_ms: string;
}
let liveByHash: ((db: Kysely<Database>, tokenHash: string, now: Date) => Promise<LiveCredentialRow[]>) | undefined;

/** The live (not revoked, not expired, of a live grant) credential with this hash and its shop, in one round trip. */
export async function liveCredentialWithShopByHash(
  db: Kysely<Database>,
  tokenHash: string,
  /** The injectable clock's time (an access token's expiry is judged by it, as it was set by it). */
  now: Date,
): Promise<CredentialWithShop | undefined> {
  // Built and compiled on the first call only (db/queries/prepared.ts): this runs on every request.
  liveByHash ??= prepare(['tokenHash', 'now'], (db, tokenHash, now) =>
    db
      .selectFrom('credentials as c')
      .innerJoin('shops as s', 's.id', 'c.shop_id')
      // An OAuth access token lives only while its grant (token family) does, and until it expires; API keys have
      // neither (the left join finds no grant).
      .leftJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'c.shop_id').onRef('g.id', '=', 'c.grant_id'))
      .select([
        'c.id',
        'c.kind',
        'c.scopes',
        'c.shop_id',
        's.plan',
        's.status',
        's.currency',
        's.livemode',
        's.clock_offset_ms',
      ])
      .where('c.token_hash', '=', tokenHash)
      .where('c.revoked_at', 'is', null)
      .where('g.revoked_at', 'is', null)
      .where((eb) => eb.or([eb('c.expires_at', 'is', null), eb('c.expires_at', '>', now as unknown as Date)])),
  );
  const row = (await liveByHash(db, tokenHash, now))[0];
  if (!row) return undefined;
  return {
    credential: { id: row.id, kind: row.kind, scopes: row.scopes },
    shop: {
      id: row.shop_id,
      plan: row.plan,
      status: row.status,
      currency: row.currency,
      livemode: row.livemode,
      clockOffsetMs: Number(row.clock_offset_ms),
    },
  };
}

/** The rest of a credential's account that authentication does not load (for GET /me and /me/capabilities). */
export async function accountOfCredential(
  db: ReadDb,
  shopId: string,
  credentialId: string,
): Promise<
  { credential: Pick<Credential, 'name'>; shop: Pick<Shop, 'name' | 'created_at' | 'live_shop_id'> } | undefined
> {
  const row = await inShop(db, shopId)
    .selectFrom('credentials as c')
    .innerJoin('shops as s', 's.id', 'c.shop_id')
    .select(['c.name', 's.name as shop_name', 's.created_at', 's.live_shop_id'])
    .where('c.id', '=', credentialId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    credential: { name: row.name },
    shop: { name: row.shop_name, created_at: row.created_at, live_shop_id: row.live_shop_id },
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
