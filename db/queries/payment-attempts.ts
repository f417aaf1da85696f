// Payment attempts: one row per payment started for an invoice at a gateway (a gateway session). An invoice may
// have several (a buyer retries, switches gateway); the order's completion is decided under the order's lock.
import { sql, type Transaction } from 'kysely';
import type { Database, PaymentAttemptRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export async function insertPaymentAttempt(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'payment_attempts'>,
): Promise<PaymentAttemptRow> {
  return inShopForWrite(trx, shopId).insertInto('payment_attempts', row).returningAll().executeTakeFirstOrThrow();
}

/** A gateway's session and the invoice it pays, of any shop: the gateway's callback knows only its session id. */
export async function attemptBySession(
  db: ReadDb,
  gateway: string,
  sessionId: string,
): Promise<(PaymentAttemptRow & { uniqid: string; currency: string; livemode: boolean }) | undefined> {
  // unscopedByDesign: a gateway addresses its session by the session id alone; the row then names its shop.
  return db
    .selectFrom('payment_attempts as a')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'a.shop_id').onRef('o.id', '=', 'a.order_id'))
    .innerJoin('shops as s', 's.id', 'a.shop_id')
    .selectAll('a')
    .select(['o.uniqid', 'o.currency', 's.livemode'])
    .where('a.gateway', '=', gateway)
    .where('a.session_id', '=', sessionId)
    .executeTakeFirst();
}

/** The attempt, locked until the transaction ends (take the order's lock first: one lock order, no deadlock). */
export async function attemptByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<PaymentAttemptRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('payment_attempts')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function updatePaymentAttempt(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: Partial<
    Pick<
      ShopRow<'payment_attempts'>,
      | 'status'
      | 'paid_at'
      | 'session_id'
      | 'session_url'
      | 'payment_ref'
      | 'paid_amount'
      | 'paid_currency'
      | 'flag'
      | 'return_status'
      | 'reconcile_at'
      | 'lease_until'
      | 'lease_token'
      | 'last_error'
    >
  >,
): Promise<PaymentAttemptRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('payment_attempts')
    .set(set)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The invoice's attempts, newest first. */
export async function attemptsOfOrder(db: ReadDb, shopId: string, orderId: string): Promise<PaymentAttemptRow[]> {
  return inShop(db, shopId)
    .selectFrom('payment_attempts')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** The shop's attempt at this gateway's session. */
export async function attemptOfSession(
  db: ReadDb,
  shopId: string,
  gateway: string,
  sessionId: string,
): Promise<PaymentAttemptRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('payment_attempts')
    .selectAll()
    .where('gateway', '=', gateway)
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
}

/** The shop's attempt whose provider payment (what refunds and disputes name) is this one. */
export async function attemptOfPayment(
  db: ReadDb,
  shopId: string,
  gateway: string,
  paymentRef: string,
): Promise<PaymentAttemptRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('payment_attempts')
    .selectAll()
    .where('gateway', '=', gateway)
    .where('payment_ref', '=', paymentRef)
    .executeTakeFirst();
}

/** The attempt of the shop, unlocked. */
export async function attemptById(db: ReadDb, shopId: string, id: string): Promise<PaymentAttemptRow | undefined> {
  return inShop(db, shopId).selectFrom('payment_attempts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** An attempt the reconciler claimed, with what it needs to call the provider again. */
export interface ReconcileClaim {
  id: string;
  shop_id: string;
  order_id: string;
  gateway: string;
  session_id: string | null;
  reconcile_count: number;
}

/**
 * Attempts due for the reconciler (reconcile_at reached on the shop's clock `now`), at `gateways`, claimed with
 * SKIP LOCKED and a lease on real time (another worker's live lease is skipped, a lapsed one taken over).
 */
export async function claimReconcilableAttempts(
  trx: Transaction<Database>,
  gateways: readonly string[],
  lease: { now: Date; realNow: Date; until: Date; token: string; limit: number; shopId?: string },
): Promise<ReconcileClaim[]> {
  const ofShop = lease.shopId === undefined ? sql`` : sql`and shop_id = ${lease.shopId}`;
  const { rows } = await sql<ReconcileClaim>`
    with due as (
      select id from payment_attempts
      where reconcile_at is not null and reconcile_at <= ${lease.now}
        and gateway in (${sql.join(gateways)})
        and (lease_until is null or lease_until <= ${lease.realNow}) ${ofShop}
      order by reconcile_at, id
      limit ${lease.limit}
      for update skip locked
    )
    update payment_attempts a set lease_until = ${lease.until}, lease_token = ${lease.token},
      reconcile_count = a.reconcile_count + 1
    from due where a.id = due.id
    returning a.id, a.shop_id, a.order_id, a.gateway, a.session_id, a.reconcile_count`.execute(trx);
  return rows;
}

/** Ends the reconciler's lease on the attempt with `set`, if `token` still holds it; false when it does not. */
export async function releaseReconcileLease(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  token: string,
  set: Partial<
    Pick<ShopRow<'payment_attempts'>, 'reconcile_at' | 'return_status' | 'last_error' | 'session_id' | 'session_url'>
  >,
): Promise<boolean> {
  const result = await inShopForWrite(trx, shopId)
    .updateTable('payment_attempts')
    .set({ ...set, lease_until: null, lease_token: null })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * The lease of a paid attempt's refunds at its provider: one refund at a time asks the provider (src/domain/orders/
 * provider-refunds.ts). Taken only when free or run out; false when another holds it.
 */
export async function takeRefundLease(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  lease: { token: string; now: Date; until: Date },
): Promise<boolean> {
  const result = await inShopForWrite(trx, shopId)
    .updateTable('payment_attempts')
    .set({ lease_until: lease.until, lease_token: lease.token })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', lease.now)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives the refund lease back, if this token still holds it. */
export async function releaseRefundLease(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  token: string,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('payment_attempts')
    .set({ lease_until: null, lease_token: null })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .execute();
}

/** Settles how a flagged payment's money went back, once: false when it was settled already. */
export async function settleReturnStatus(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  status: 'REFUNDED' | 'FAILED',
): Promise<boolean> {
  const result = await inShopForWrite(trx, shopId)
    .updateTable('payment_attempts')
    .set({ return_status: status })
    .where('id', '=', id)
    .where('return_status', '=', 'PENDING')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Removes an attempt whose provider session could not be opened (still PENDING, no session): nothing is left. */
export async function deletePendingAttempt(trx: Transaction<Database>, shopId: string, id: string): Promise<void> {
  await inShopForWrite(trx, shopId)
    .deleteFrom('payment_attempts')
    .where('id', '=', id)
    .where('status', '=', 'PENDING')
    .where('session_id', 'is', null)
    .execute();
}
