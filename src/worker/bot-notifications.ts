// Sends the Telegram bot notification outbox (src/domain/store/bot-notifications.ts). One round: claim due messages of
// every shop (SKIP LOCKED, with a lease), send each outside any transaction through the Telegram Bot API
// (`POST {TELEGRAM_API_URL}/bot<token>/sendMessage`, JSON { chat_id, text }), then record the answer in one
// transaction, only if this worker still holds the lease (else the worker that took it over records its own).
//
// Answers: 200 with `ok: true` -> SENT. 429 -> tried again after Telegram's `parameters.retry_after` seconds. 5xx,
// a time-out, a network error or an unreadable answer -> tried again on BOT_RETRY_SCHEDULE_MS, FAILED after the last
// attempt. Any other 4xx (400 chat not found, 401/404 a revoked token, 403 the user blocked the bot) -> FAILED at
// once: sending again would get the same answer. The token is part of the URL: it is never logged, and every error
// text recorded or logged has it (and any `/bot…/` path) redacted.
import type { Kysely, Transaction } from 'kysely';
import type { BotNotificationStatus, Database } from '../../db/tables';
import { claimDueBotNotifications, type ClaimedBotNotification } from '../../db/queries/bot-notifications';
import { settleLeasedRow } from '../../db/queries/leased-queue';
import { botTokenContext } from '../domain/store/bot-notifications';
import { sendOutbound, type OutboundOutcome } from '../platform/outbound-http';
import type { Clock } from '../platform/clock';
import type { SecretBox } from '../platform/secret-box';
import { leasedQueueJob, scheduledDelayMs, type LeasedQueueOptions } from './leased-queue';
import type { Job } from './worker';

/** Waits after the 1st, 2nd, … failed attempt (5xx, network); after the last one the message is FAILED. */
export const BOT_RETRY_SCHEDULE_MS = [10_000, 60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000] as const;
/** Attempts of one message in all (429s included), then FAILED. */
export const BOT_MAX_ATTEMPTS = BOT_RETRY_SCHEDULE_MS.length + 1;
/** A 429 without a usable retry_after waits this long; a longer retry_after is cut to RETRY_AFTER_MAX_MS. */
const RETRY_AFTER_DEFAULT_MS = 30_000;
const RETRY_AFTER_MAX_MS = 3_600_000;
const JITTER = 0.1;
const ERROR_CHARS = 1000;

export interface BotNotificationOptions extends LeasedQueueOptions {
  secrets: SecretBox;
  /** TELEGRAM_API_URL, without a trailing slash. */
  apiUrl: string;
  /** Total time an attempt may take (default 10 s). */
  timeoutMs?: number;
  random?: () => number;
}

/** `text` without the token, nor any `/bot<something>/` path segment that could carry one. */
export function redactToken(text: string, token: string | undefined): string {
  const bare = token ? text.split(token).join('<token>') : text;
  return bare.replace(/\/bot[^/\s]+\//g, '/bot<token>/');
}

type Verdict =
  { kind: 'sent' } | { kind: 'retry'; error: string; afterMs?: number } | { kind: 'failed'; error: string };

function telegramAnswer(body: string): { ok?: unknown; description?: unknown; retryAfter?: number } {
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    if (typeof json !== 'object' || json === null) return {};
    const parameters = json.parameters as Record<string, unknown> | undefined;
    const retryAfter = parameters?.retry_after;
    return {
      ok: json.ok,
      description: json.description,
      retryAfter: typeof retryAfter === 'number' && Number.isFinite(retryAfter) ? retryAfter : undefined,
    };
  } catch {
    return {};
  }
}

/** How an attempt ended. Pure: exported for the tests of the decision table. */
export function verdictOf(outcome: OutboundOutcome): Verdict {
  if (outcome.kind === 'refused') return { kind: 'retry', error: `refused: ${outcome.reason}` };
  if (outcome.kind === 'error') return { kind: 'retry', error: `${outcome.code}: ${outcome.message}` };
  const answer = telegramAnswer(outcome.body);
  const what = `status ${outcome.status}${typeof answer.description === 'string' ? `: ${answer.description}` : ''}`;
  if (outcome.status === 200 && answer.ok === true) return { kind: 'sent' };
  if (outcome.status === 429) {
    const afterMs =
      answer.retryAfter !== undefined && answer.retryAfter >= 0
        ? Math.min(Math.ceil(answer.retryAfter * 1000), RETRY_AFTER_MAX_MS)
        : RETRY_AFTER_DEFAULT_MS;
    return { kind: 'retry', error: what, afterMs };
  }
  if (outcome.status >= 400 && outcome.status < 500) return { kind: 'failed', error: what };
  return { kind: 'retry', error: outcome.status === 200 ? `${what} (no "ok": true)` : what };
}

export function botNotificationJob(db: Kysely<Database>, options: BotNotificationOptions): Job {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const random = options.random ?? Math.random;

  /** The verdict, and the error text to record (the token redacted). */
  async function send(claim: ClaimedBotNotification): Promise<{ verdict: Verdict; error: string | null }> {
    let token: string | undefined;
    let verdict: Verdict;
    try {
      token = claim.token_sealed
        ? options.secrets.open(claim.token_sealed, botTokenContext(claim.shop_id, claim.bot_id))
        : undefined;
    } catch {
      token = undefined;
    }
    if (token === undefined) {
      verdict = { kind: 'failed', error: 'the bot has no usable token' };
    } else {
      // chat_id: the user's Telegram id, digits only (the column's check), written as a JSON number exactly.
      const body = `{"chat_id":${claim.chat_id},"text":${JSON.stringify(claim.text)}}`;
      const outcome = await sendOutbound(
        { url: `${options.apiUrl}/bot${token}/sendMessage`, headers: {}, body },
        // The address is the operator's TELEGRAM_API_URL, not a merchant's: no private-address check.
        { allowPrivateTargets: true, timeoutMs, maxBodyBytes: 4096 },
      );
      verdict = verdictOf(outcome);
    }
    const error = verdict.kind === 'sent' ? null : redactToken(verdict.error, token).slice(0, ERROR_CHARS);
    return { verdict, error };
  }

  async function record(
    trx: Transaction<Database>,
    claim: ClaimedBotNotification,
    attemptsBefore: number,
    { verdict, error }: { verdict: Verdict; error: string | null },
    clock: Clock,
  ): Promise<void> {
    const now = clock.now();
    const attemptsMade = attemptsBefore + 1;
    let status: BotNotificationStatus;
    let nextAt: Date | null = null;
    if (verdict.kind === 'sent') status = 'SENT';
    else if (verdict.kind === 'failed' || attemptsMade >= BOT_MAX_ATTEMPTS) status = 'FAILED';
    else {
      status = 'RETRYING';
      // Telegram's own wait for a 429, as it asks; else the schedule, with jitter.
      const delay = verdict.afterMs ?? scheduledDelayMs(BOT_RETRY_SCHEDULE_MS, attemptsMade, random, JITTER)!;
      nextAt = new Date(now.getTime() + delay);
    }
    await settleLeasedRow(trx, 'bot_notifications', claim.shop_id, claim.id, {
      status,
      attempts: attemptsMade,
      next_attempt_at: nextAt,
      last_error: error,
      sent_at: status === 'SENT' ? now : null,
      updated_at: now,
    });
    const fields = { notification_id: claim.id, shop_id: claim.shop_id, status, attempts: attemptsMade };
    if (status === 'SENT') options.logger.info('bot notification sent', fields);
    else options.logger.warn('bot notification not sent', { ...fields, error });
  }

  return leasedQueueJob(db, options, {
    name: 'bot-notifications',
    table: 'bot_notifications',
    maxAttempts: BOT_MAX_ATTEMPTS,
    noun: 'bot notification',
    idField: 'notification_id',
    claim: claimDueBotNotifications,
    send,
    record,
    errorText: (err) => redactToken(String((err as Error)?.message), undefined),
  });
}
