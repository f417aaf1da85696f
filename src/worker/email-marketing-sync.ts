// Sends the email-marketing sync outbox (src/domain/email-marketing-sync.ts). One round: claim due syncs (SKIP
// LOCKED, with a lease), call each provider outside any transaction, then record the answer in one transaction, only
// if this worker still holds the lease. A 2xx is SYNCED and moves the setting's last_synced_at to now; a 429, a 5xx,
// a time-out or a network error is retried on RETRY_SCHEDULE_MS (then FAILED); any other answer (a 4xx: a bad key,
// an unknown list) is FAILED at once. A setting disabled, switched off or left without a key meanwhile CANCELS the
// row unsent. The key is opened only for the call and never logged; an answer that echoes it is stored redacted.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, EmailMarketingProvider, EmailMarketingSyncStatus } from '../../db/tables';
import {
  claimDueEmailMarketingSyncs,
  leasedEmailMarketingSyncForUpdate,
  syncSettingById,
  touchEmailMarketingLastSynced,
  updateEmailMarketingSync,
  type ClaimedEmailMarketingSync,
} from '../../db/queries/email-marketing-sync';
import { emailMarketingKeyContext } from '../domain/email-marketing-sync';
import { ProviderRequestError, providerRequest, syncBlocker } from '../platform/email-marketing-providers';
import { sendOutbound, type OutboundOutcome } from '../platform/outbound-http';
import type { SecretBox } from '../platform/secret-box';
import type { Job, JobContext } from './worker';

/** Waits before the 2nd ... 6th attempt (±10% jitter); after the 6th the sync is FAILED. */
export const RETRY_SCHEDULE_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000];
const JITTER = 0.1;
const ERROR_CHARS = 1000;

export interface EmailMarketingSyncOptions extends JobContext {
  secrets: SecretBox;
  /** Base URL overrides per provider (EMAIL_MARKETING_BASE_URLS); a provider with one may be on a private address. */
  baseUrls: Partial<Record<EmailMarketingProvider, string>>;
  /** Deliver to private addresses without an override too (WEBHOOK_ALLOW_PRIVATE_TARGETS). */
  allowPrivateTargets: boolean;
  /** Total time a call may take (default 10 s). */
  timeoutMs?: number;
  /** Syncs claimed (and sent concurrently) per round (default 20). */
  batch?: number;
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
  const leaseMs = options.leaseMs ?? 60_000;
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

  async function attempt(claim: ClaimedEmailMarketingSync, token: string): Promise<void> {
    const verdict = await call(claim);
    await db.transaction().execute(async (trx) => {
      const sync = await leasedEmailMarketingSyncForUpdate(trx, claim.shop_id, claim.id, token);
      // The lease ran out and another worker took the row over: its attempt is the one recorded.
      if (!sync) {
        options.logger.warn('email-marketing sync finished after its lease was taken over', { sync_id: claim.id });
        return;
      }
      const now = options.clock.now();
      const attempts = verdict.kind === 'cancel' ? sync.attempts : sync.attempts + 1;
      const base = RETRY_SCHEDULE_MS[attempts - 1];
      const delay =
        verdict.kind === 'retry' && base !== undefined
          ? Math.round(base * (1 + JITTER * (2 * random() - 1)))
          : undefined;
      const status: EmailMarketingSyncStatus =
        verdict.kind === 'synced'
          ? 'SYNCED'
          : verdict.kind === 'cancel'
            ? 'CANCELLED'
            : delay !== undefined
              ? 'RETRYING'
              : 'FAILED';
      await updateEmailMarketingSync(trx, claim.shop_id, claim.id, {
        status,
        attempts,
        next_attempt_at: delay === undefined ? null : new Date(now.getTime() + delay),
        lease_until: null,
        lease_token: null,
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
    });
  }

  return {
    name: 'email-marketing-sync',
    async runOnce() {
      const now = options.clock.now();
      const token = randomUUID();
      const claimed = await db
        .transaction()
        .execute((trx) =>
          claimDueEmailMarketingSyncs(trx, now, new Date(now.getTime() + leaseMs), token, options.batch ?? 20),
        );
      await Promise.all(
        claimed.map((c) =>
          attempt(c, token).catch((err: unknown) =>
            // Not recorded: the lease runs out and the sync is tried again. Nothing is lost.
            options.logger.warn('email-marketing sync could not be recorded', {
              sync_id: c.id,
              error: (err as Error)?.message,
            }),
          ),
        ),
      );
      return claimed.length;
    },
  };
}
