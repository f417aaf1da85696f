// Idempotency keys: every statement src/platform/idempotency.ts needs, one small function each. A key is
// identified by its scope (credential, operation, key). A `processing` row is a lease: its owner (a random token
// per request, with the lock time it claimed at) holds the key until `lease_expires_at` and renews that while its
// request runs; every owner-only change compares the owner (compare-and-set), and a lapsed lease is taken over.
// Lease times are the database's `now()`: the one clock every server shares. Each statement stands alone (no
// session state, no advisory lock), so all of this is correct behind a transaction-mode pooler.
import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { Database, IdempotencyKeyRow } from '../tables';

export interface IdempotencyScope {
  credentialId: string;
  operationId: string;
  key: string;
}

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** The exact JSON text of the body. */
  body: string;
}

/** The row of one scope, as a where-clause callback for select, update and delete. */
function inScope(scope: IdempotencyScope) {
  return (eb: ExpressionBuilder<Database, 'idempotency_keys'>) =>
    eb.and([
      eb('credential_id', '=', scope.credentialId),
      eb('operation_id', '=', scope.operationId),
      eb('key', '=', scope.key),
    ]);
}

/** Who holds a `processing` row: a request's own token, and the lock time it claimed at. */
export interface IdempotencyClaim {
  token: string;
  lockedAt: Date;
}

/**
 * The row is still `processing` under this owner. The lock time is compared too: a server from before leases (a
 * rolling deploy) takes a key over by changing only `locked_at`, and that must also end this owner's hold.
 */
function ownedBy(claim: IdempotencyClaim) {
  return (eb: ExpressionBuilder<Database, 'idempotency_keys'>) =>
    eb.and([eb('state', '=', 'processing'), eb('owner_token', '=', claim.token), eb('locked_at', '=', claim.lockedAt)]);
}

/** The end of a lease of `leaseMs` starting now, in database time. */
const leaseEnd = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`;

/** A row as the claim sees it: with whether its lease has lapsed by the database's clock. */
export type IdempotencyKeyState = IdempotencyKeyRow & { lease_lapsed: boolean };

const leaseLapsed = sql<boolean>`lease_expires_at <= now()`;

/**
 * Claims the key (a `processing` row leased to `claim` for `leaseMs`), or returns the row that holds it, in one
 * round trip. Run outside a transaction so the claim is visible to concurrent requests at once. `claimed` says
 * which; `row` is undefined only when a concurrent request created the row after this statement's snapshot (read it
 * again).
 */
export async function claimOrFetchIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  claim: IdempotencyClaim & { fingerprint: string; expiresAt: Date; leaseMs: number },
): Promise<{ claimed: true } | { claimed: false; row: IdempotencyKeyState | undefined }> {
  // A data-modifying CTE is invisible to the rest of its statement: the second SELECT sees only a row that
  // existed before, so at most one of the two parts returns a row.
  const rows = await db
    .with('claimed', (qc) =>
      qc
        .insertInto('idempotency_keys')
        .values({
          credential_id: scope.credentialId,
          operation_id: scope.operationId,
          key: scope.key,
          fingerprint: claim.fingerprint,
          state: 'processing',
          locked_at: claim.lockedAt,
          owner_token: claim.token,
          lease_expires_at: leaseEnd(claim.leaseMs),
          created_at: claim.lockedAt,
          expires_at: claim.expiresAt,
        })
        .onConflict((oc) => oc.columns(['credential_id', 'operation_id', 'key']).doNothing())
        .returningAll(),
    )
    .selectFrom('claimed')
    .selectAll()
    .select([sql<boolean>`true`.as('is_claim'), sql<boolean>`false`.as('lease_lapsed')])
    .unionAll((qb) =>
      qb
        .selectFrom('idempotency_keys')
        .selectAll()
        .select([sql<boolean>`false`.as('is_claim'), leaseLapsed.as('lease_lapsed')])
        .where(inScope(scope)),
    )
    .execute();
  const [first] = rows;
  if (first?.is_claim) return { claimed: true };
  if (!first) return { claimed: false, row: undefined };
  const { is_claim: _claim, ...row } = first;
  return { claimed: false, row: row as IdempotencyKeyState };
}

export async function idempotencyKeyByScope(
  db: Kysely<Database>,
  scope: IdempotencyScope,
): Promise<IdempotencyKeyState | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .select(leaseLapsed.as('lease_lapsed'))
    .where(inScope(scope))
    .executeTakeFirst();
}

/**
 * Takes over a `processing` row whose lease has lapsed, from the owner the caller saw (`previousToken`): true when
 * the row is now leased to `claim`. Two takers of one lapsed lease cannot both win: the second re-reads the row
 * after the first commits and finds a fresh lease under another owner.
 */
export async function takeOverIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  previousToken: string | null,
  claim: IdempotencyClaim,
  leaseMs: number,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ owner_token: claim.token, locked_at: claim.lockedAt, lease_expires_at: leaseEnd(leaseMs) })
    .where(inScope(scope))
    .where('state', '=', 'processing')
    .where(sql<boolean>`owner_token is not distinct from ${previousToken}`)
    .where(leaseLapsed)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Extends the owner's lease to `leaseMs` from now: false when it no longer holds the key (completed, released or
 * taken over). A statement of its own on the pool, never in the request's transaction, which others cannot see.
 */
export async function renewIdempotencyLease(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  claim: IdempotencyClaim,
  leaseMs: number,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ lease_expires_at: leaseEnd(leaseMs) })
    .where(inScope(scope))
    .where(ownedBy(claim))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Stores the response and marks the key completed, if the caller still owns it. Called with the handler's
 * transaction, so the response commits (or not) together with the change it describes: an owner whose key was
 * taken over gets false and must roll its change back. A lapsed lease nobody took over still completes (the
 * owner's heartbeat may only have been late; nobody else ran the request).
 */
export async function completeIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  claim: IdempotencyClaim,
  response: StoredResponse,
  completedAt: Date,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      state: 'completed',
      response_status: response.status,
      response_headers: JSON.stringify(response.headers),
      response_body: response.body,
      completed_at: completedAt,
    })
    .where(inScope(scope))
    .where(ownedBy(claim))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Releases a key whose request produced nothing to replay (5xx, 401/403/429), if the caller still owns it. */
export async function releaseIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  claim: IdempotencyClaim,
): Promise<boolean> {
  const result = await db.deleteFrom('idempotency_keys').where(inScope(scope)).where(ownedBy(claim)).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes this key's row if it has expired by `now` (so the key can be claimed afresh). */
export async function deleteExpiredIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  now: Date,
): Promise<boolean> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where(inScope(scope))
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes every row expired by `now`; returns how many. */
export async function deleteExpiredIdempotencyKeys(db: Kysely<Database>, now: Date): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Inserts a row as given: for tests and tools that need a particular state (a lapsed lease). Without
 * `lease_expires_at` the column's default applies (60 s from now, database time).
 */
export async function insertIdempotencyKey(
  db: Kysely<Database>,
  row: Omit<IdempotencyKeyRow, 'response_headers' | 'completed_at' | 'owner_token' | 'lease_expires_at'> & {
    response_headers?: Record<string, string> | null;
    completed_at?: Date | null;
    owner_token?: string | null;
    lease_expires_at?: Date;
  },
): Promise<void> {
  await db
    .insertInto('idempotency_keys')
    .values({ ...row, response_headers: row.response_headers ? JSON.stringify(row.response_headers) : null })
    .execute();
}
