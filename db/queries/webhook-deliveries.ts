// Webhook deliveries (one per event and endpoint) and their log (one row per attempt).
import { sql, type Kysely, type Transaction, type Updateable } from 'kysely';
import type {
  Database,
  DeliveryStatus,
  WebhookAttemptErrorCode,
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
  /** W3C traceparent of the request that wrote the event (tracing on), which the delivery span links to. */
  traceparent: string | null;
}

export interface DeliveryLease {
  /** Due by this time: the shop's clock (a test shop's may run ahead). */
  now: Date;
  /** Real time, which leases are held on (`until` is real time too): transport, not the shop's business. */
  realNow: Date;
  until: Date;
  token: string;
  /**
   * Attempts an automatic delivery may make in all; a delivery whose last claim's outcome was never recorded (its
   * lease ran out) is given up (FAILED) once it has made this many, a manual retry after its one attempt.
   */
  maxAttempts: number;
  /** At most this many deliveries. */
  limit: number;
  /** Only this shop's (a shop whose clock runs ahead), else every shop's. */
  shopId?: string;
  /** Each endpoint's own share: an endpoint with fewer than this many in flight (`inFlight`) may always take more. */
  perEndpoint: number;
  /** Beyond its share, an endpoint may borrow shared slots up to this many in flight in all. */
  maxPerEndpoint: number;
  /** Shared slots free to borrow (the worker's pool less what it has in flight; may be 0 or less: none). */
  borrowable: number;
  /** Attempts this worker has in flight, per endpoint id. */
  inFlight: ReadonlyMap<string, number>;
}

/**
 * Claims due deliveries of every shop (the worker serves them all), or of one, for the lease, in one statement:
 * rows another worker holds are skipped (SKIP LOCKED while claiming, the lease after), and a lease that ran out is
 * taken over, so a worker that died mid-attempt delays its deliveries, never loses them. Deliveries to disabled
 * endpoints wait.
 * Each claim counts an attempt before it is made (`attempts`, returned with it): an attempt whose outcome could not
 * be recorded still counts, so a delivery whose outcome can never be recorded is sent at most `maxAttempts` times
 * (a manual retry once), then given up here (FAILED, its queued log entry too) instead of being sent again each
 * time its lease runs out. At least once still holds: it was sent each of those times.
 * Shares: every endpoint may fill its own share (`perEndpoint`) whatever the others do, and the candidates of
 * endpoints below their share come first, so a slow endpoint's backlog, oldest in the queue, cannot fill the worker
 * while other endpoints' deliveries wait behind it. Shared slots left (`borrowable`) go to endpoints beyond their
 * share, the least busy first: one fast endpoint alone gets the whole pool, and a slow one, whose attempts linger,
 * borrows only what nobody else is due to use.
 * Tenancy: each row carries its shop; the joins match endpoints and events on (shop_id, id), and everything the
 * worker writes afterwards names the shop.
 */
export async function claimDueDeliveries(db: Kysely<Database>, lease: DeliveryLease): Promise<ClaimedDelivery[]> {
  const { now } = lease;
  const ofShop = lease.shopId === undefined ? sql`` : sql`and d.shop_id = ${lease.shopId}`;
  const busy = JSON.stringify([...lease.inFlight].map(([endpoint_id, n]) => ({ endpoint_id, n })));
  // Without shared slots to borrow, an endpoint at its share has nothing to claim: its rows are not candidates.
  const cap = lease.borrowable > 0 ? lease.maxPerEndpoint : lease.perEndpoint;
  const { rows } = await sql<ClaimedDelivery>`
    with busy as (
      select * from jsonb_to_recordset(${busy}::jsonb) as b(endpoint_id text, n int)
    ), lost as (
      select d.id, d.shop_id, d.pending_attempt_id from webhook_deliveries d
      where d.next_attempt_at <= ${now} and d.pending_attempt_id is not null and d.lease_token is not null
        and d.lease_until <= ${lease.realNow} and (d.manual or d.attempts >= ${lease.maxAttempts}) ${ofShop}
      for update of d skip locked
    ), given_up as (
      update webhook_deliveries d set status = 'FAILED', next_attempt_at = null, pending_attempt_id = null,
        manual = false, lease_until = null, lease_token = null, updated_at = ${now}
      from lost where d.shop_id = lost.shop_id and d.id = lost.id
    ), given_up_attempts as (
      update webhook_attempts a set status = 'FAILED', next_retry_at = null
      from lost where a.shop_id = lost.shop_id and a.id = lost.pending_attempt_id
    ), due as (
      select d.id, d.endpoint_id, d.next_attempt_at, coalesce(b.n, 0) as n from webhook_deliveries d
      join webhook_endpoints e on e.shop_id = d.shop_id and e.id = d.endpoint_id
      left join busy b on b.endpoint_id = d.endpoint_id
      where d.next_attempt_at <= ${now} and d.pending_attempt_id is not null
        and (d.lease_until is null or d.lease_until <= ${lease.realNow}) and e.enabled ${ofShop}
        and (d.lease_token is null or not (d.manual or d.attempts >= ${lease.maxAttempts}))
        and coalesce(b.n, 0) < ${cap}
      order by coalesce(b.n, 0) >= ${lease.perEndpoint}, d.next_attempt_at, d.id
      limit ${lease.limit}
      for update of d skip locked
    ), ranked as (
      select due.id, due.next_attempt_at,
        due.n + row_number() over (partition by due.endpoint_id order by due.next_attempt_at, due.id) as nth
      from due
    ), own_share as (
      select id from ranked where nth <= ${lease.perEndpoint}
    ), borrowed as (
      select id from ranked where nth > ${lease.perEndpoint} and nth <= ${cap}
      order by nth, next_attempt_at, id
      limit greatest(0, ${lease.borrowable} - (select count(*) from own_share))
    ), claimed as (
      update webhook_deliveries d set lease_until = ${lease.until}, lease_token = ${lease.token},
        attempts = d.attempts + 1
      from (select id from own_share union all select id from borrowed) picked where d.id = picked.id
      returning d.id, d.shop_id, d.endpoint_id, d.event_id, d.attempts, d.manual, d.pending_attempt_id
    )
    select c.*, ev.type as event_type, ev.data, ev.livemode, ev.traceparent, e.url, e.secret, e.previous_secret,
      e.previous_secret_expires_at
    from claimed c
    join webhook_endpoints e on e.shop_id = c.shop_id and e.id = c.endpoint_id
    join events ev on ev.shop_id = c.shop_id and ev.id = c.event_id
    order by c.id`.execute(db);
  return rows;
}

/** Who holds a claimed delivery: its shop, id, the attempt it was claimed for and the lease's token. */
export interface LeasedDelivery {
  shopId: string;
  deliveryId: string;
  attemptId: string;
  leaseToken: string;
}

export interface DeliveredOutcome extends LeasedDelivery {
  /** The recording worker's time (its clock, or the shop's test clock). */
  now: Date;
  url: string;
  responseStatus: number;
  responseBody: string;
  durationMs: number;
  attemptedAt: Date;
}

/**
 * Settles delivered attempts (counted when claimed), any number in one statement (the common case): each delivery
 * becomes SUCCEEDED only
 * while its lease token and queued attempt are still the ones it was claimed with, and its log entry is written in
 * the same statement (a data-modifying CTE: both or neither). Returns the ids of the deliveries settled; one
 * missing had its lease taken over. Every part names the shop, as the shop scope would.
 */
export async function settleDelivered(
  db: Kysely<Database>,
  outcomes: readonly DeliveredOutcome[],
): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const json = JSON.stringify(
    outcomes.map((o) => ({
      shop_id: o.shopId,
      id: o.deliveryId,
      attempt_id: o.attemptId,
      token: o.leaseToken,
      url: o.url,
      response_status: o.responseStatus,
      response_body: o.responseBody,
      duration_ms: o.durationMs,
      attempted_at: o.attemptedAt.toISOString(),
      recorded_at: o.now.toISOString(),
    })),
  );
  const { rows } = await sql<{ id: string }>`
    with outcome as (
      select * from jsonb_to_recordset(${json}::jsonb) as o(shop_id text, id text, attempt_id text, token text,
        url text, response_status int, response_body text, duration_ms int, attempted_at timestamptz,
        recorded_at timestamptz)
    ), settled as (
      update webhook_deliveries d set status = 'SUCCEEDED', next_attempt_at = null,
        pending_attempt_id = null, manual = false, lease_until = null, lease_token = null, updated_at = o.recorded_at
      from outcome o
      where d.shop_id = o.shop_id and d.id = o.id and d.lease_token = o.token and d.pending_attempt_id = o.attempt_id
      returning o.*
    )
    update webhook_attempts a set status = 'SUCCEEDED', url = s.url, response_status = s.response_status,
      response_body = s.response_body, duration_ms = s.duration_ms, error_code = null, error = null,
      next_retry_at = null, attempted_at = s.attempted_at
    from settled s
    where a.shop_id = s.shop_id and a.id = s.attempt_id
    returning a.delivery_id as id`.execute(db);
  return new Set(rows.map((r) => r.id));
}

/** The deliveries, locked, whose lease and queued attempt are still the ones given (the others were taken over). */
export async function leasedDeliveriesForUpdate(
  trx: Transaction<Database>,
  leased: readonly LeasedDelivery[],
): Promise<Pick<WebhookDeliveryRow, 'id' | 'shop_id' | 'attempts' | 'manual'>[]> {
  if (leased.length === 0) return [];
  const json = JSON.stringify(
    leased.map((l) => ({ shop_id: l.shopId, id: l.deliveryId, attempt_id: l.attemptId, token: l.leaseToken })),
  );
  const { rows } = await sql<Pick<WebhookDeliveryRow, 'id' | 'shop_id' | 'attempts' | 'manual'>>`
    select d.id, d.shop_id, d.attempts, d.manual from webhook_deliveries d
    join jsonb_to_recordset(${json}::jsonb) as l(shop_id text, id text, attempt_id text, token text)
      on d.shop_id = l.shop_id and d.id = l.id and d.lease_token = l.token and d.pending_attempt_id = l.attempt_id
    order by d.id
    for update of d`.execute(trx);
  return rows;
}

export interface FailedOutcome {
  /** The recording worker's time (its clock, or the shop's test clock). */
  now: Date;
  shopId: string;
  deliveryId: string;
  attemptId: string;
  status: 'RETRYING' | 'FAILED';
  attempts: number;
  url: string;
  responseStatus: number | null;
  responseBody: string | null;
  durationMs: number;
  errorCode: WebhookAttemptErrorCode | null;
  error: string | null;
  attemptedAt: Date;
  /** When the next attempt is due, and its queued log entry; null when this was the last. */
  next: { at: Date; attempt: ShopRow<'webhook_attempts'> } | null;
}

/**
 * Records failed attempts of locked, still-leased deliveries (leasedDeliveriesForUpdate), any number at once: their
 * log entries in one statement, the next attempts queued (one insert per shop), the deliveries rescheduled or FAILED
 * in one statement.
 */
export async function recordFailures(trx: Transaction<Database>, failures: readonly FailedOutcome[]): Promise<void> {
  if (failures.length === 0) return;
  const attempts = JSON.stringify(
    failures.map((f) => ({
      shop_id: f.shopId,
      id: f.attemptId,
      status: f.status,
      url: f.url,
      response_status: f.responseStatus,
      response_body: f.responseBody,
      duration_ms: f.durationMs,
      error_code: f.errorCode,
      error: f.error,
      next_retry_at: f.next?.at.toISOString() ?? null,
      attempted_at: f.attemptedAt.toISOString(),
    })),
  );
  await sql`
    update webhook_attempts a set status = o.status, url = o.url, response_status = o.response_status,
      response_body = o.response_body, duration_ms = o.duration_ms, error_code = o.error_code, error = o.error,
      next_retry_at = o.next_retry_at, attempted_at = o.attempted_at
    from jsonb_to_recordset(${attempts}::jsonb) as o(shop_id text, id text, status text, url text,
      response_status int, response_body text, duration_ms int, error_code text, error text,
      next_retry_at timestamptz, attempted_at timestamptz)
    where a.shop_id = o.shop_id and a.id = o.id`.execute(trx);
  const queued = new Map<string, ShopRow<'webhook_attempts'>[]>();
  for (const f of failures) if (f.next) queued.set(f.shopId, [...(queued.get(f.shopId) ?? []), f.next.attempt]);
  for (const [shopId, rows] of queued) await inShopForWrite(trx, shopId).insertInto('webhook_attempts', rows).execute();
  const deliveries = JSON.stringify(
    failures.map((f) => ({
      shop_id: f.shopId,
      id: f.deliveryId,
      status: f.status,
      attempts: f.attempts,
      next_attempt_at: f.next?.at.toISOString() ?? null,
      pending_attempt_id: f.next ? f.next.attempt.id : null,
      recorded_at: f.now.toISOString(),
    })),
  );
  await sql`
    update webhook_deliveries d set status = o.status, attempts = o.attempts, next_attempt_at = o.next_attempt_at,
      pending_attempt_id = o.pending_attempt_id, manual = false, lease_until = null, lease_token = null,
      updated_at = o.recorded_at
    from jsonb_to_recordset(${deliveries}::jsonb) as o(shop_id text, id text, status text, attempts int,
      next_attempt_at timestamptz, pending_attempt_id text, recorded_at timestamptz)
    where d.shop_id = o.shop_id and d.id = o.id`.execute(trx);
}
