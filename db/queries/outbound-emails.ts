// The mail queue (outbound_emails): rows written in the transaction of the change that sends them, claimed by the
// mail worker with FOR UPDATE SKIP LOCKED and a lease, then settled as SENT, RECORDED (no SMTP server configured:
// the row is the record) or FAILED, or put back in the queue for a later attempt.
import { sql, type Transaction, type Updateable } from 'kysely';
import type { Database, OutboundEmailRow, OutboundEmailsTable } from '../tables';
import { executeBatch, shaped, type ShapedQuery } from './batch';
import { addRowValues, definedColumns, rowPlaceholders } from './prepared';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** A message as the shop sees it in either mode: what a live shop sends, and what a test shop sends. */
export interface RenderedForModes {
  live: { subject: string; html: string; text: string };
  test: { subject: string; html: string; text: string };
}

export type NewEmail = Omit<ShopRow<'outbound_emails'>, 'subject' | 'html' | 'text'> & { rendered: RenderedForModes };

/**
 * The insert of messages queued for the shop; the statement reads the shop's mode and keeps the rendering made for
 * it, so queueing costs no look-up of the shop. A shop that does not exist has no mode: the insert is refused.
 */
export function emailsInsert(shopId: string, rows: readonly NewEmail[]): ShapedQuery {
  const values: Record<string, unknown> = { $shop: shopId };
  rows.forEach(({ rendered, ...row }, n) => {
    addRowValues(values, row, `m${n}.`);
    for (const mode of ['live', 'test'] as const) addRowValues(values, rendered[mode], `m${n}.${mode}.`);
  });
  const shape = rows.map(({ rendered: _, ...row }) => definedColumns(row));
  return shaped('outbound_emails.insert', shape, values, (db, p, shape) => {
    const livemode = sql<boolean>`(select livemode from shops where id = ${p('$shop')})`;
    // case without else: no mode, no text, and the not-null columns refuse the row.
    const inMode = (n: number, name: string) =>
      sql<string>`case ${livemode} when true then ${p(`m${n}.live.${name}`)} when false then ${p(`m${n}.test.${name}`)} end` as unknown as string;
    return inShopForWrite(db as Transaction<Database>, p('$shop')).insertInto(
      'outbound_emails',
      shape.map((columns, n) => ({
        ...rowPlaceholders<Omit<NewEmail, 'rendered'>>(p, columns, `m${n}.`),
        subject: inMode(n, 'subject'),
        html: inMode(n, 'html'),
        text: inMode(n, 'text'),
      })),
    );
  });
}

/** Queues messages by a statement of their own (the flush's writes add `emailsInsert` to its statement instead). */
export async function insertEmails(
  trx: Transaction<Database>,
  shopId: string,
  rows: readonly NewEmail[],
): Promise<void> {
  await executeBatch(trx, [{ steps: [{ name: 'new_emails', query: emailsInsert(shopId, rows) }] }]);
}

/**
 * One claim of mail: due at `now` (the shop's clock: next_attempt_at is when the business wants it sent), held until
 * `until`. The lease is transport, not business: `realNow` and `until` are real time even when a test shop's clock
 * runs ahead, so advancing it never ends a lease early and hands the message to a second worker.
 */
export interface MailLease {
  now: Date;
  realNow: Date;
  until: Date;
  /** Attempts a message may make in all; past them one whose outcome was never recorded is given up (FAILED). */
  maxAttempts: number;
  limit: number;
  /** Only this shop's (a shop whose clock runs ahead), else every shop's. */
  shopId?: string;
}

/** last_error of a message given up because the outcome of its last attempt was never recorded. */
export const UNRECORDED_MAIL_ERROR = 'given up: the outcome of the last attempt could not be recorded';

/**
 * Claims up to `limit` due QUEUED messages of every shop (the worker serves them all), or of one: rows another worker
 * is claiming are skipped (SKIP LOCKED), and a row under a lease that has not run out is not due, so no other worker
 * takes it while the lease holds, and a worker that died holding it only delays it. `lease_until` is the claim's
 * token: the outcome is written only while it is still the claimer's. The claim counts the attempt (`attempts`
 * returned includes it), so an attempt whose outcome was lost still counts; a message whose lease ran out after its
 * last allowed attempt is given up here (FAILED), not sent again at every lease expiry. At least once still holds.
 */
export async function claimDueEmails(trx: Transaction<Database>, lease: MailLease): Promise<OutboundEmailRow[]> {
  const ofShop = lease.shopId === undefined ? sql`` : sql`and shop_id = ${lease.shopId}`;
  const { rows } = await sql<OutboundEmailRow>`
    with lost as (
      select id from outbound_emails
      where status = 'QUEUED' and next_attempt_at <= ${lease.now} and lease_until <= ${lease.realNow}
        and attempts >= ${lease.maxAttempts} ${ofShop}
      for update skip locked
    ), given_up as (
      update outbound_emails e set status = 'FAILED', next_attempt_at = null, lease_until = null,
        last_error = ${UNRECORDED_MAIL_ERROR}
      from lost where e.id = lost.id
    ), due as (
      select id from outbound_emails
      where status = 'QUEUED' and next_attempt_at <= ${lease.now}
        and (lease_until is null or (lease_until <= ${lease.realNow} and attempts < ${lease.maxAttempts})) ${ofShop}
      order by next_attempt_at, id
      limit ${lease.limit}
      for update skip locked
    )
    update outbound_emails e set lease_until = ${lease.until}, attempts = e.attempts + 1
    from due where e.id = due.id
    returning e.*`.execute(trx);
  return rows;
}

export interface EmailDelivered {
  /** SENT: an SMTP server accepted it; RECORDED: no SMTP server is configured, the row is the record. */
  status: 'SENT' | 'RECORDED';
  attempts: number;
  providerMessageId: string | null;
  sentAt: Date | null;
}

/** Settles a claimed message as handed on; false when the claim (`leaseUntil`) is no longer this worker's. */
export function markEmailSent(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  leaseUntil: Date,
  outcome: EmailDelivered,
): Promise<boolean> {
  return settleClaimedEmail(trx, shopId, id, leaseUntil, {
    status: outcome.status,
    attempts: outcome.attempts,
    provider_message_id: outcome.providerMessageId,
    sent_at: outcome.sentAt,
    last_error: null,
    next_attempt_at: null,
  });
}

export interface EmailAttemptFailed {
  attempts: number;
  error: string;
  /** When to try again; null: no attempt is left, the message is FAILED. */
  nextAttemptAt: Date | null;
}

/** Records a failed attempt: back in the queue until `nextAttemptAt`, or FAILED; false when the claim was lost. */
export function markEmailAttemptFailed(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  leaseUntil: Date,
  outcome: EmailAttemptFailed,
): Promise<boolean> {
  return settleClaimedEmail(trx, shopId, id, leaseUntil, {
    status: outcome.nextAttemptAt ? 'QUEUED' : 'FAILED',
    attempts: outcome.attempts,
    last_error: outcome.error,
    next_attempt_at: outcome.nextAttemptAt,
  });
}

/** The one guarded write of an attempt's outcome: only while the message is still QUEUED under this claim. */
async function settleClaimedEmail(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  leaseUntil: Date,
  changes: Omit<Updateable<OutboundEmailsTable>, 'id' | 'shop_id' | 'lease_until'>,
): Promise<boolean> {
  const r = await inShopForWrite(trx, shopId)
    .updateTable('outbound_emails')
    .set({ ...changes, lease_until: null })
    .where('id', '=', id)
    .where('status', '=', 'QUEUED')
    .where('lease_until', '=', leaseUntil)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** A shop's messages, newest first. */
export async function emailsOfShop(db: ReadDb, shopId: string, limit = 100): Promise<OutboundEmailRow[]> {
  return inShop(db, shopId)
    .selectFrom('outbound_emails')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * Every shop's messages, newest first, each with the mode of the shop that queued it (`livemode`: of that mode
 * only): the operator's view through the CLI.
 */
export async function allEmails(
  db: ReadDb,
  options: { livemode?: boolean; limit?: number } = {},
): Promise<(OutboundEmailRow & { livemode: boolean })[]> {
  let query = db
    .selectFrom('outbound_emails')
    .innerJoin('shops', 'shops.id', 'outbound_emails.shop_id')
    .selectAll('outbound_emails')
    .select('shops.livemode');
  if (options.livemode !== undefined) query = query.where('shops.livemode', '=', options.livemode);
  return query
    .orderBy('outbound_emails.created_at', 'desc')
    .orderBy('outbound_emails.id', 'desc')
    .limit(options.limit ?? 100)
    .execute();
}
