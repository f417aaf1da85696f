// Sends the email-marketing sync outbox (src/domain/store/email-marketing-sync.ts). One round: claim due syncs (SKIP
// LOCKED, with a lease), call each provider outside any transaction, then record the answer in one transaction, only
// if this worker still holds the lease. A 2xx is SYNCED and moves the setting's last_synced_at to now; a 429, a 5xx,
// a time-out or a network error is retried on RETRY_SCHEDULE_MS (then FAILED); any other answer (a 4xx: a bad key,
// an unknown list) is FAILED at once. A setting disabled, switched off or left without a key meanwhile CANCELS the
// row unsent. The key is opened only for the call and never logged; an answer that echoes it is stored redacted.
import type { Kysely, Transaction } from 'kysely';
import type { Database, EmailMarketingProvider, EmailMarketingSyncStatus } from '../../db/tables';
import {
  claimDueEmailMarketingSyncs,
  syncSettingById,
  touchEmailMarketingLastSynced,
  type ClaimedEmailMarketingSync,
} from '../../db/queries/email-marketing-sync';
import { settleLeasedRow } from '../../db/queries/leased-queue';
import { emailMarketingKeyContext } from '../domain/store/email-marketing-sync';
import { ProviderRequestError, providerRequest, syncBlocker } from '../platform/email-marketing-providers';
import { sendOutbound, type OutboundOutcome } from '../platform/outbound-http';
import type { Clock } from '../platform/clock';
import type { SecretBox } from '../platform/secret-box';
import { leasedQueueJob, scheduledDelayMs, type LeasedQueueOptions } from './leased-queue';
import type { Job } from './worker';

/** Waits before the 2nd ... 6th attempt (±10% jitter); after the 6th the sync is FAILED. */
export const RETRY_SCHEDULE_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000];
const JITTER = 0.1;
const ERROR_CHARS = 1000;

export interface EmailMarketingSyncOptions extends LeasedQueueOptions {
  secrets: SecretBox;
  /** Base URL overrides per provider (EMAIL_MARKETING_BASE_URLS); a provider with one may be on a private address. */
  baseUrls: Partial<Record<EmailMarketingProvider, string>>;
  /** Deliver to private addresses without an override too (WEBHOOK_ALLOW_PRIVATE_TARGETS). */
  allowPrivateTargets: boolean;
  /** Total time a call may take (default 10 s). */
  timeoutMs?: number;
  random?: () => number;
}

type Verdict =
  | { kind: 'synced'; status: number }
  | { kind: 'retry'; status: number | null; error: string }
  | { kind: 'fail'; status: number | null; error: string }
  | { kind: 'cancel'; error: string };

function verdictOf(outcome: OutboundOutcome, redact: (s: string) => string): Verdict {
  if (outcome.kind === 'refused') return { kind: 'retry', status: null, error: `refused: ${outcome.reason}` };
  if (outcome.kind === 'error') return { kind: 'retry', status: null, error: `${outcome.code}: ${outcome.message}` };
  const text = redact(`status ${outcome.status}: ${outcome.body}`).slice(0, ERROR_CHARS);
  if (outcome.status >= 200 && outcome.status < 300) return { kind: 'synced', status: outcome.status };
  if (outcome.status === 429 || outcome.status === 408 || outcome.status >= 500)
    return { kind: 'retry', status: outcome.status, error: text };
  return { kind: 'fail', status: outcome.status, error: text };
}

export function emailMarketingSyncJob(db: Kysely<Database>, options: EmailMarketingSyncOptions): Job {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const random = options.random ?? Math.random;

  async function call(claim: ClaimedEmailMarketingSync): Promise<Verdict> {
    const setting = await syncSettingById(db, claim.shop_id, claim.setting_id);
    if (!setting) return { kind: 'cancel', error: 'the setting is gone' };
    const blocker = syncBlocker({ ...setting, hasKey: setting.sealed_key !== null });
    if (blocker !== null) return { kind: 'cancel', error: blocker };
    let apiKey: string;
    try {
      apiKey = options.secrets.open(setting.sealed_key!, emailMarketingKeyContext(claim.shop_id, setting.id));
    } catch {
      // Sealed under another WEBHOOK_SECRETS_KEY: retrying cannot help; the operator sets the key again.
      return { kind: 'fail', status: null, error: 'the stored API key cannot be decrypted: set it again' };
    }
    const redact = (s: string) => s.split(apiKey).join('[redacted]');
    let request;
    try {
      request = providerRequest(
        {
          provider: setting.provider,
          apiKey,
          listId: setting.list_id!,
          email: claim.email,
          doubleOptIn: setting.double_opt_in,
        },
        options.baseUrls,
      );
    } catch (err) {
      if (err instanceof ProviderRequestError) return { kind: 'fail', status: null, error: err.message };
      throw err;
    }
    const outcome = await sendOutbound(request, {
      allowPrivateTargets: options.allowPrivateTargets || options.baseUrls[setting.provider] !== undefined,
      timeoutMs,
    });
    const verdict = verdictOf(outcome, redact);
    return verdict;
  }

  async function record(
    trx: Transaction<Database>,
    claim: ClaimedEmailMarketingSync,
    attemptsBefore: number,
    verdict: Verdict,
    clock: Clock,
  ): Promise<void> {
    const now = clock.now();
    const attempts = verdict.kind === 'cancel' ? attemptsBefore : attemptsBefore + 1;
    const delay = verdict.kind === 'retry' ? scheduledDelayMs(RETRY_SCHEDULE_MS, attempts, random, JITTER) : undefined;
    const status: EmailMarketingSyncStatus =
      verdict.kind === 'synced'
        ? 'SYNCED'
        : verdict.kind === 'cancel'
          ? 'CANCELLED'
          : delay !== undefined
            ? 'RETRYING'
            : 'FAILED';
    await settleLeasedRow(trx, 'email_marketing_syncs', claim.shop_id, claim.id, {
      status,
      attempts,
      next_attempt_at: delay === undefined ? null : new Date(now.getTime() + delay),
      last_status: verdict.kind === 'cancel' ? null : verdict.status,
      last_error: verdict.kind === 'synced' ? null : verdict.error,
      synced_at: verdict.kind === 'synced' ? now : null,
      updated_at: now,
    });
    if (verdict.kind === 'synced') await touchEmailMarketingLastSynced(trx, claim.shop_id, claim.setting_id, now);
    if (status === 'FAILED')
      options.logger.warn('email-marketing sync failed', {
        sync_id: claim.id,
        setting_id: claim.setting_id,
        attempts,
      });
  }

  return leasedQueueJob(db, options, {
    name: 'email-marketing-sync',
    table: 'email_marketing_syncs',
    maxAttempts: RETRY_SCHEDULE_MS.length + 1,
    noun: 'email-marketing sync',
    idField: 'sync_id',
    claim: claimDueEmailMarketingSyncs,
    send: call,
    record,
  });
}
