// The mail job: sends the queued mail (src/mail/queue.ts) after commit. It claims due rows with FOR UPDATE SKIP
// LOCKED and a lease (on real time, even for a shop whose test clock runs ahead), commits the claim, talks to the
// SMTP server outside any transaction, then settles each row if its claim is still its own. Without SMTP_URL nothing
// is sent: the rows are settled as RECORDED, and the table (readable with `npm run cli -- emails list`) is the
// record. Delivery is at least once: a worker that dies, or loses its lease, after the server accepted a message and
// before the row is settled sends it again once the lease runs out; each claim counts an attempt, so a message whose
// outcome can never be recorded is given up (FAILED) after MAIL_MAX_ATTEMPTS sends.
import type { Kysely } from 'kysely';
import type nodemailer from 'nodemailer';
import { claimDueEmails, markEmailAttemptFailed, markEmailSent } from '../../db/queries/outbound-emails';
import type { Database, OutboundEmailRow } from '../../db/tables';
import type { Clock } from '../platform/clock';
import { jobSpan } from './job-span';
import type { Job, JobContext } from './worker';

/** Wait before the next attempt after attempt 1, 2, 3, 4 failed: 1 min, 5 min, 30 min, 2 h. */
export const mailRetrySchedule: readonly number[] = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000];
/** Attempt 5 failing makes the message FAILED. */
export const MAIL_MAX_ATTEMPTS = mailRetrySchedule.length + 1;

/** Milliseconds to wait after the `attemptsMade`-th failed attempt, or undefined when it was the last. */
export function mailRetryDelayMs(attemptsMade: number): number | undefined {
  return mailRetrySchedule[attemptsMade - 1];
}

/** last_error keeps this much of an error message. */
const ERROR_CHARS = 1000;

export interface MailJobOptions extends JobContext {
  /** smtp:// or smtps:// URL of the server to send through; unset: messages are RECORDED, not sent. */
  smtpUrl?: string;
  /** The From header of every message. */
  from: string;
  /** Messages claimed (and sent concurrently) per round (default 20). */
  batch?: number;
  /** Time one message may take to send before it counts as failed (default 30 s, at most half the lease). */
  sendTimeoutMs?: number;
}

/** The password of an SMTP URL, as written and decoded. */
function urlSecrets(smtpUrl: string): string[] {
  const { password } = new URL(smtpUrl);
  if (!password) return [];
  return [...new Set([password, decodeURIComponent(password)])].filter((p) => p.length > 0);
}

type SendOutcome = { ok: true; messageId: string | null } | { ok: false; error: string };

export function mailJob(db: Kysely<Database>, ctx: MailJobOptions): Job {
  const leaseMs = ctx.leaseMs ?? 60_000;
  const sendTimeoutMs = Math.min(ctx.sendTimeoutMs ?? 30_000, Math.floor(leaseMs / 2));
  const batch = ctx.batch ?? 20;
  // One transport for the life of the job. The timeouts keep a stalled server from outlasting the lease. nodemailer
  // (and iconv-lite under it: ~1.1 MB of code) is loaded only when there is an SMTP server to talk to.
  const transport = ctx.smtpUrl
    ? (require('nodemailer') as typeof nodemailer).createTransport({
        url: ctx.smtpUrl,
        connectionTimeout: Math.min(10_000, sendTimeoutMs),
        greetingTimeout: Math.min(10_000, sendTimeoutMs),
        socketTimeout: sendTimeoutMs,
      })
    : undefined;

  // An error message never carries the server's credentials into last_error (which the CLI prints).
  const secrets = ctx.smtpUrl ? urlSecrets(ctx.smtpUrl) : [];
  const redact = (text: string) => secrets.reduce((t, secret) => t.split(secret).join('***'), text);

  async function send(row: OutboundEmailRow): Promise<SendOutcome> {
    if (!transport) return { ok: true, messageId: null };
    try {
      const info = await transport.sendMail({
        from: ctx.from,
        to: row.to_address,
        subject: row.subject,
        html: row.html,
        text: row.text,
        headers: { 'X-Mail-Id': row.id },
        signal: AbortSignal.timeout(sendTimeoutMs),
      });
      return { ok: true, messageId: info.messageId ?? null };
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const text = [e.code, e.message].filter(Boolean).join(': ') || String(err);
      return { ok: false, error: redact(text).slice(0, ERROR_CHARS) };
    }
  }

  /** Tracing on: a span per message, its statements under it, linked to the request that queued it. */
  async function handle(row: OutboundEmailRow, leaseUntil: Date, clock: Clock): Promise<void> {
    const span = jobSpan('job mail', row.traceparent, { email_id: row.id });
    if (!span) {
      await handleIn(row, leaseUntil, clock);
      return;
    }
    try {
      const sent = await span.run(() => handleIn(row, leaseUntil, clock));
      span.end(sent);
    } catch (err) {
      span.fail(err);
      throw err;
    }
  }

  /** `clock`: the job's, or the clock of the one shop a pass serves (src/worker/worker.ts). Answers the outcome. */
  async function handleIn(row: OutboundEmailRow, leaseUntil: Date, clock: Clock): Promise<'sent' | 'failed'> {
    const outcome = await send(row); // outside any transaction
    const now = clock.now();
    const attempts = row.attempts; // this one included: the claim counted it
    const settled = await db.transaction().execute(async (trx) => {
      if (outcome.ok) {
        return markEmailSent(trx, row.shop_id, row.id, leaseUntil, {
          status: transport ? 'SENT' : 'RECORDED',
          attempts,
          providerMessageId: outcome.messageId,
          sentAt: transport ? now : null,
        });
      }
      const delay = mailRetryDelayMs(attempts);
      return markEmailAttemptFailed(trx, row.shop_id, row.id, leaseUntil, {
        attempts,
        error: outcome.error,
        nextAttemptAt: delay === undefined ? null : new Date(now.getTime() + delay),
      });
    });
    if (!settled) {
      ctx.logger.warn('mail attempt finished after its lease was taken over', { email_id: row.id });
    } else if (!outcome.ok) {
      ctx.logger.warn('mail attempt failed', { email_id: row.id, attempts, error: outcome.error });
    }
    return outcome.ok ? 'sent' : 'failed';
  }

  return {
    name: 'mail',
    onShopClocks: true,
    async runOnce(scope) {
      const clock = scope?.clock ?? ctx.clock;
      // Due on the shop's clock; leased on real time (the job's clock), which a test clock never moves.
      const realNow = ctx.clock.now();
      const leaseUntil = new Date(realNow.getTime() + leaseMs);
      const claimed = await db.transaction().execute((trx) =>
        claimDueEmails(trx, {
          now: clock.now(),
          realNow,
          until: leaseUntil,
          maxAttempts: MAIL_MAX_ATTEMPTS,
          limit: batch,
          shopId: scope?.shopId,
        }),
      );
      await Promise.all(
        claimed.map((row) =>
          handle(row, leaseUntil, clock).catch((err: unknown) =>
            // Not settled: the lease runs out and the message is tried again (nothing is lost), each claim counting
            // an attempt, so one whose outcome can never be recorded is given up after MAIL_MAX_ATTEMPTS.
            ctx.logger.warn('mail attempt could not be recorded', {
              email_id: row.id,
              error: (err as Error)?.message,
            }),
          ),
        ),
      );
      return claimed.length;
    },
  };
}
