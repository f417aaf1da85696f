// Payment attempts: one row per payment started for an invoice at a gateway (a gateway session). An invoice may
// have several (a buyer retries, switches gateway); the order's completion is decided under the order's lock.
import type { Transaction } from 'kysely';
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
  set: Partial<Pick<ShopRow<'payment_attempts'>, 'status' | 'paid_at'>>,
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
