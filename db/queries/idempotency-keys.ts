// Idempotency keys: every statement src/platform/idempotency.ts needs, one small function each. A key is
// identified by its scope (credential, operation, key); the owner of a `processing` row is whoever set its
// current `locked_at`, so every owner-only change compares that value (compare-and-set).
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

/**
 * Claims the key (a `processing` row), or returns the row that holds it, in one round trip. Run outside a
 * transaction so the claim is visible to concurrent requests at once. `claimed` says which; `row` is undefined
 * only when a concurrent request created the row after this statement's snapshot (read it again).
 */
export async function claimOrFetchIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  claim: { fingerprint: string; lockedAt: Date; expiresAt: Date },
): Promise<{ claimed: true } | { claimed: false; row: IdempotencyKeyRow | undefined }> {
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
          created_at: claim.lockedAt,
          expires_at: claim.expiresAt,
        })
        .onConflict((oc) => oc.columns(['credential_id', 'operation_id', 'key']).doNothing())
        .returningAll(),
    )
    .selectFrom('claimed')
    .selectAll()
    .select(sql<boolean>`true`.as('is_claim'))
    .unionAll((qb) =>
      qb
        .selectFrom('idempotency_keys')
        .selectAll()
        .select(sql<boolean>`false`.as('is_claim'))
        .where(inScope(scope)),
    )
    .execute();
  const [first] = rows;
  if (first?.is_claim) return { claimed: true };
  if (!first) return { claimed: false, row: undefined };
  const { is_claim: _claim, ...row } = first;
  return { claimed: false, row: row as IdempotencyKeyRow };
}

export async function idempotencyKeyByScope(
  db: Kysely<Database>,
  scope: IdempotencyScope,
): Promise<IdempotencyKeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where(inScope(scope)).executeTakeFirst();
}

/** Takes over a stale `processing` row: true when its lock was still `expectedLockedAt` and is now `lockedAt`. */
export async function takeOverIdempotencyLock(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  expectedLockedAt: Date,
  lockedAt: Date,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ locked_at: lockedAt })
    .where(inScope(scope))
    .where('state', '=', 'processing')
    .where('locked_at', '=', expectedLockedAt)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Stores the response and marks the key completed, if the caller still owns the lock. Called with the handler's
 * transaction, so the response commits (or not) together with the change it describes.
 */
export async function completeIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  lockedAt: Date,
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
    .where('state', '=', 'processing')
    .where('locked_at', '=', lockedAt)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Releases a key whose request produced nothing to replay (5xx, 401/403/429), if the caller still owns it. */
export async function releaseIdempotencyKey(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  lockedAt: Date,
): Promise<boolean> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where(inScope(scope))
    .where('state', '=', 'processing')
    .where('locked_at', '=', lockedAt)
    .executeTakeFirst();
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

/** Inserts a row as given: for tests and tools that need a particular state (a stale lock). */
export async function insertIdempotencyKey(
  db: Kysely<Database>,
  row: Omit<IdempotencyKeyRow, 'response_headers' | 'completed_at'> & {
    response_headers?: Record<string, string> | null;
    completed_at?: Date | null;
  },
): Promise<void> {
  await db
    .insertInto('idempotency_keys')
    .values({ ...row, response_headers: row.response_headers ? JSON.stringify(row.response_headers) : null })
    .execute();
}
