// The mail queue (outbound_emails): rows written in the transaction of the change that sends them, claimed by the
// mail worker with FOR UPDATE SKIP LOCKED and a lease, then settled as SENT, RECORDED (no SMTP server configured:
// the row is the record) or FAILED, or put back in the queue for a later attempt.
import { sql, type Transaction, type Updateable } from 'kysely';
import type { Database, OutboundEmailRow, OutboundEmailsTable } from '../tables';
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
export function emailsInsert(trx: Transaction<Database>, shopId: string, rows: readonly NewEmail[]) {
  const livemode = sql<boolean>`(select livemode from shops where id = ${shopId})`;
  // case without else: no mode, no text, and the not-null columns refuse the row.
  const inMode = (live: string, test: string) =>
    sql<string>`case ${livemode} when true then ${live} when false then ${test} end` as unknown as string;
  return inShopForWrite(trx, shopId).insertInto(
    'outbound_emails',
    rows.map(({ rendered, ...row }) => ({
      ...row,
      subject: inMode(rendered.live.subject, rendered.test.subject),
      html: inMode(rendered.live.html, rendered.test.html),
      text: inMode(rendered.live.text, rendered.test.text),
    })),
  );
}

/**
 * Claims up to `limit` due QUEUED messages of every shop (the worker serves them all), or of one (`shopId`: a shop
 * whose clock runs ahead), until `leaseUntil`: rows
 * another worker is claiming are skipped (SKIP LOCKED), and a claimed row's next_attempt_at moves to the end of its
 * lease, so no other worker takes it while the lease holds, and a worker that died holding it only delays it.
 * `lease_until` is the claim's token: the outcome is written only while it is still the claimer's.
 */
export async function claimDueEmails(
  trx: Transaction<Database>,
  now: Date,
  leaseUntil: Date,
  limit: number,
  shopId?: string,
): Promise<OutboundEmailRow[]> {
  return trx
    .with(
      (cte) => cte('due').materialized(),
      (db) => {
        let due = db.selectFrom('outbound_emails').select('id');
        if (shopId !== undefined) due = due.where('shop_id', '=', shopId);
        return due
          .where('status', '=', 'QUEUED')
          .where('next_attempt_at', '<=', now)
          .orderBy('next_attempt_at')
          .orderBy('id')
          .limit(limit)
          .forUpdate()
          .skipLocked();
      },
    )
    .updateTable('outbound_emails')
    .set({ lease_until: leaseUntil, next_attempt_at: leaseUntil })
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .returningAll()
    .execute();
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
