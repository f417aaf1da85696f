// Webhook deliveries (one per event and endpoint) and their log (one row per attempt).
import { sql, type Kysely, type Transaction, type Updateable } from 'kysely';
import type {
  Database,
  DeliveryStatus,
  WebhookAttemptRow,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookDeliveryRow,
} from '../tables';
import { byIdOf } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export async function insertAttempts(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'webhook_attempts'>[],
): Promise<WebhookAttemptRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId).insertInto('webhook_attempts', rows).returningAll().execute();
}

export const attemptById = byIdOf('webhook_attempts');

export async function deliveryForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<WebhookDeliveryRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function updateDelivery(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  changes: Omit<Updateable<WebhookDeliveriesTable>, 'id' | 'shop_id'>,
): Promise<void> {
  await inShopForWrite(trx, shopId).updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
}

export async function updateAttempt(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  changes: Omit<Updateable<WebhookAttemptsTable>, 'id' | 'shop_id'>,
): Promise<WebhookAttemptRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('webhook_attempts')
    .set(changes)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface AttemptFilter {
  endpointId?: string;
  status?: DeliveryStatus;
}

/** One page of the shop's delivery log, newest first, and how many entries match in all. */
export async function attemptsPage(
  db: ReadDb,
  shopId: string,
  filter: AttemptFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: WebhookAttemptRow[]; total: number }> {
  let q = inShop(db, shopId).selectFrom('webhook_attempts');
  if (filter.endpointId !== undefined) q = q.where('endpoint_id', '=', filter.endpointId);
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** What a worker needs to make one attempt of a claimed delivery. */
export interface ClaimedDelivery {
  id: string;
  shop_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** The event's mode, which its body says. */
  livemode: boolean;
  attempts: number;
  manual: boolean;
  pending_attempt_id: string;
  url: string;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: Date | null;
  /** JSON text of the event's data. */
  data: string;
}

/**
 * Claims up to `limit` due deliveries of every shop (the worker serves them all), or of one (`shopId`: a shop whose
 * clock runs ahead), for `leaseMs`: rows another worker
 * holds are skipped (SKIP LOCKED while claiming, the lease after), and a lease that ran out is taken over, so a
 * worker that died mid-attempt delays its deliveries, never loses them. Deliveries to disabled endpoints wait.
 * Tenancy: each row carries its shop; the join matches endpoints and events on (shop_id, id), and everything the
 * worker writes afterwards goes through the shop scope.
 */
export async function claimDueDeliveries(
  trx: Transaction<Database>,
  now: Date,
  leaseUntil: Date,
  leaseToken: string,
  limit: number,
  shopId?: string,
): Promise<ClaimedDelivery[]> {
  const ofShop = shopId === undefined ? sql`` : sql`and d.shop_id = ${shopId}`;
  const { rows } = await sql<ClaimedDelivery>`
    with due as (
      select d.id from webhook_deliveries d
      join webhook_endpoints e on e.shop_id = d.shop_id and e.id = d.endpoint_id
      where d.next_attempt_at <= ${now} and d.pending_attempt_id is not null
        and (d.lease_until is null or d.lease_until <= ${now}) and e.enabled ${ofShop}
      order by d.next_attempt_at, d.id
      limit ${limit}
      for update of d skip locked
    ), claimed as (
      update webhook_deliveries d set lease_until = ${leaseUntil}, lease_token = ${leaseToken}
      from due where d.id = due.id
      returning d.id, d.shop_id, d.endpoint_id, d.event_id, d.attempts, d.manual, d.pending_attempt_id
    )
    select c.*, ev.type as event_type, ev.data, ev.livemode, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at
    from claimed c
    join webhook_endpoints e on e.shop_id = c.shop_id and e.id = c.endpoint_id
    join events ev on ev.shop_id = c.shop_id and ev.id = c.event_id`.execute(trx);
  return rows;
}

/** The delivery, locked, if this worker's lease on it still holds (else another worker has taken it over). */
export async function leasedDeliveryForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  leaseToken: string,
): Promise<WebhookDeliveryRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .forUpdate()
    .executeTakeFirst();
}

export interface DeliveredOutcome {
  url: string;
  responseStatus: number;
  responseBody: string;
  durationMs: number;
  attemptedAt: Date;
  now: Date;
}

/**
 * Settles a delivered attempt in one statement (the common case, so one round trip instead of a transaction of
 * five): the delivery becomes SUCCEEDED only while this worker's lease token and queued attempt are still its own,
 * and its log entry is written in the same statement (a data-modifying CTE: both or neither). False when the lease
 * was taken over. Both parts name the shop, as the shop scope would.
 */
export async function settleDelivered(
  db: Kysely<Database>,
  shopId: string,
  deliveryId: string,
  attemptId: string,
  leaseToken: string,
  o: DeliveredOutcome,
): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    with settled as (
      update webhook_deliveries set status = 'SUCCEEDED', attempts = attempts + 1, next_attempt_at = null,
        pending_attempt_id = null, manual = false, lease_until = null, lease_token = null, updated_at = ${o.now}
      where shop_id = ${shopId} and id = ${deliveryId} and lease_token = ${leaseToken}
        and pending_attempt_id = ${attemptId}
      returning id
    )
    update webhook_attempts set status = 'SUCCEEDED', url = ${o.url}, response_status = ${o.responseStatus},
      response_body = ${o.responseBody}, duration_ms = ${o.durationMs}, error_code = null, error = null,
      next_retry_at = null,
      attempted_at = ${o.attemptedAt}
    where shop_id = ${shopId} and id = ${attemptId} and exists (select 1 from settled)
    returning id`.execute(db);
  return rows.length === 1;
}
