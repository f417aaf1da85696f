// The leased outboxes (dynamic deliveries, bot notifications, email-marketing syncs) share one protocol, so it is
// written once: a worker claims due rows of every shop with FOR UPDATE SKIP LOCKED and a lease, sends them outside
// any transaction, then settles each in its shop, only while its lease still holds. The tables share the columns
// used here (status PENDING/RETRYING while due, attempts, next_attempt_at, lease_until, lease_token).
import { sql, type RawBuilder, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../tables';
import { inShop, inShopForWrite } from './shop-scope';

export type LeasedTable = 'dynamic_deliveries' | 'bot_notifications' | 'email_marketing_syncs' | 'gateway_events';

/**
 * One claim: due at `now` (the shop's clock), held until `until` by `token`, at most `limit` rows (of `shopId` only,
 * when given). Leases are transport, not business: `realNow` and `until` are real time even when a test shop's clock
 * runs ahead, so advancing it never ends a lease early.
 */
export interface Lease {
  now: Date;
  realNow: Date;
  until: Date;
  token: string;
  /**
   * Attempts a row may make in all. Each claim counts one before it is made, so an attempt whose outcome could not
   * be recorded (its lease ran out) still counts; a row whose lease ran out with this many made is given up (FAILED)
   * by the next claim instead of being sent again at every lease expiry forever.
   */
  maxAttempts: number;
  limit: number;
  shopId?: string;
}

/** last_error of a row given up because the outcome of its last attempt was never recorded. */
export const UNRECORDED_ERROR = 'given up: the outcome of the last attempt could not be recorded';

/**
 * `with due as (…), claimed as (…)`, for a query that selects from `claimed` (the claimed rows' `columns`). Rows
 * another worker holds are skipped (SKIP LOCKED while claiming, the lease after), and a lease that ran out is taken
 * over. Every shop's rows are claimed (the worker serves every shop): each carries its shop_id, and everything
 * written afterwards goes through the shop scope. The claim counts the attempt (`attempts` returned includes it);
 * a row whose lease ran out after its last allowed attempt is given up here (`lost`), not claimed. At least once
 * still holds: it was sent each of those times.
 */
export function claimedCte(table: LeasedTable, lease: Lease, columns: readonly string[]): RawBuilder<unknown> {
  const ofShop = lease.shopId === undefined ? sql`` : sql`and shop_id = ${lease.shopId}`;
  return sql`
    with lost as (
      select id from ${sql.table(table)}
      where status in ('PENDING', 'RETRYING') and next_attempt_at <= ${lease.now}
        and lease_token is not null and lease_until <= ${lease.realNow} and attempts >= ${lease.maxAttempts} ${ofShop}
      for update skip locked
    ), given_up as (
      update ${sql.table(table)} t set status = 'FAILED', next_attempt_at = null, lease_until = null,
        lease_token = null, last_error = ${UNRECORDED_ERROR}, updated_at = ${lease.now}
      from lost where t.id = lost.id
    ), due as (
      select id from ${sql.table(table)}
      where status in ('PENDING', 'RETRYING') and next_attempt_at <= ${lease.now}
        and (lease_until is null or lease_until <= ${lease.realNow})
        and (lease_token is null or attempts < ${lease.maxAttempts}) ${ofShop}
      order by next_attempt_at, id
      limit ${lease.limit}
      for update skip locked
    ), claimed as (
      update ${sql.table(table)} t set lease_until = ${lease.until}, lease_token = ${lease.token},
        attempts = t.attempts + 1
      from due where t.id = due.id
      returning ${sql.join(columns.map((c) => sql.ref(`t.${c}`)))}
    )`;
}

/** Claims due rows of `table` (see claimedCte), each with `columns`. */
export async function claimDue<C extends object>(
  trx: Transaction<Database>,
  table: LeasedTable,
  lease: Lease,
  columns: readonly (keyof C & string)[],
): Promise<C[]> {
  const { rows } = await sql<C>`${claimedCte(table, lease, columns)} select * from claimed`.execute(trx);
  return rows;
}

/**
 * The row's attempts so far (the one being recorded included: the claim counted it), locked, if this worker's lease
 * on it still holds (else another worker has taken it over, or it is settled).
 */
export async function leasedRowForUpdate(
  trx: Transaction<Database>,
  table: LeasedTable,
  shopId: string,
  id: string,
  leaseToken: string,
): Promise<{ attempts: number } | undefined> {
  return inShop(trx, shopId)
    .selectFrom(table)
    .select('attempts')
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .where('status', 'in', ['PENDING', 'RETRYING'])
    .forUpdate()
    .executeTakeFirst();
}

/** Records an attempt's outcome (`changes`) and releases the lease. */
export async function settleLeasedRow<T extends LeasedTable>(
  trx: Transaction<Database>,
  table: T,
  shopId: string,
  id: string,
  changes: Omit<Updateable<Database[T]>, 'id' | 'shop_id' | 'lease_until' | 'lease_token'>,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable(table as LeasedTable)
    .set({ ...changes, lease_until: null, lease_token: null } as never)
    .where('id', '=', id)
    .execute();
}
