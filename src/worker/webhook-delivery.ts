// Delivers the events outbox to webhook endpoints. One round: claim due deliveries (SKIP LOCKED, with a lease), make
// one attempt of each outside any transaction (the network is never called while rows are locked), then record the
// outcome, only if this worker still holds the lease. A 2xx within the timeout is delivered; anything else (another
// status, a redirect, a time-out, a refused target) is retried on the schedule below, then FAILED.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { STATUS_CODES } from 'node:http';
import type { Database, DeliveryStatus, WebhookAttemptErrorCode } from '../../db/tables';
import {
  claimDueDeliveries,
  insertAttempts,
  leasedDeliveryForUpdate,
  settleDelivered,
  updateAttempt,
  updateDelivery,
  type ClaimedDelivery,
} from '../../db/queries/webhook-deliveries';
import { newId } from '../ids';
import { eventBody, queuedAttempt } from '../platform/events';
import { sendOutbound, type OutboundOptions, type OutboundOutcome } from '../platform/outbound-http';
import { endpointSecretContext, type SecretBox } from '../platform/secret-box';
import { signatureHeader } from '../platform/webhook-signature';
import type { Clock } from '../platform/clock';
import type { Job, JobContext } from './worker';

/**
 * Wait before each automatic retry, after attempt 1, 2, …: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; 8 attempts in
 * all over about 28 hours (documented in openapi.yaml's introduction). Each wait is jittered by up to ±10%, so
 * endpoints that failed together are not retried in step.
 */
export const retrySchedule: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];
export const MAX_ATTEMPTS = retrySchedule.length + 1;
export const JITTER = 0.1;

/** Milliseconds to wait after the `attemptsMade`-th failed attempt, or undefined when it was the last. */
export function retryDelayMs(attemptsMade: number, random: () => number = Math.random): number | undefined {
  const base = retrySchedule[attemptsMade - 1];
  if (base === undefined) return undefined;
  return Math.round(base * (1 + JITTER * (2 * random() - 1)));
}

/** The log keeps this much of an answer (the API shows the first 1 KiB of it). */
export const RESPONSE_LOG_CHARS = 4096;

export interface WebhookDeliveryOptions extends JobContext {
  secrets: SecretBox;
  allowPrivateTargets: boolean;
  /** Total time an attempt may take (default 10 s). */
  timeoutMs?: number;
  /** Deliveries claimed (and attempted concurrently) per round (default 20). */
  batch?: number;
  random?: () => number;
  /** Name resolution; tests inject one so that no look-up leaves the machine. */
  lookup?: OutboundOptions['lookup'];
}

/** Every code an attempt's `error.code` can have: the contract's enum and migration 0026's check list. */
export const attemptErrorCodes = [
  'CONNECTION_REFUSED',
  'CONNECT_TIMEOUT',
  'TIMEOUT',
  'DNS_FAILURE',
  'TLS_ERROR',
  'CONNECTION_RESET',
  'HOST_UNREACHABLE',
  'INVALID_RESPONSE',
  'NETWORK_ERROR',
  'PRIVATE_TARGET_REFUSED',
  'INVALID_TARGET',
  'HTTP_ERROR',
] as const satisfies readonly WebhookAttemptErrorCode[];
// Fails to compile when the type names a code this list lacks.
const everyCodeListed: Exclude<WebhookAttemptErrorCode, (typeof attemptErrorCodes)[number]> extends never
  ? true
  : never = true;
void everyCodeListed;

export interface AttemptError {
  code: WebhookAttemptErrorCode;
  /** What happened, for the merchant: host and port at most, never the path, a header, the signature or a secret. */
  message: string;
}

/** The delivery log keeps this much of an error's message. */
const ERROR_MESSAGE_CHARS = 500;

/** Why an attempt failed, for its log entry; null when it was delivered (a 2xx). */
export function attemptError(outcome: OutboundOutcome): AttemptError | null {
  if (outcome.kind === 'response') {
    const { status } = outcome;
    if (status >= 200 && status < 300) return null;
    const name = STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : '';
    const expected =
      status >= 300 && status < 400
        ? 'redirects are not followed: answer 2xx at the registered URL'
        : 'only a 2xx counts as delivered';
    return { code: 'HTTP_ERROR', message: `the endpoint answered ${status}${name}; ${expected}` };
  }
  const message =
    outcome.kind === 'refused'
      ? `refused: ${outcome.reason}${outcome.code === 'PRIVATE_TARGET_REFUSED' ? '; private targets are not allowed' : ''}`
      : outcome.message;
  return { code: outcome.code, message: message.slice(0, ERROR_MESSAGE_CHARS) };
}

/**
 * Why a dynamic-delivery call failed, as that queue's one-line `last_error`, or null when the target answered with a
 * status the caller judges (webhook attempts keep a code and a message instead: attemptError).
 */
export function failureText(outcome: OutboundOutcome): string | null {
  if (outcome.kind === 'refused') return `refused: ${outcome.reason}`;
  if (outcome.kind === 'error') return `${outcome.code}: ${outcome.message}`;
  if (outcome.status >= 300 && outcome.status < 400) return `redirect (${outcome.status}) not followed`;
  return null;
}

export function webhookDeliveryJob(db: Kysely<Database>, options: WebhookDeliveryOptions): Job {
  const leaseMs = options.leaseMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const random = options.random ?? Math.random;

  /** `clock`: the job's, or the clock of the one shop a pass serves (src/worker/worker.ts). */
  async function attempt(claim: ClaimedDelivery, token: string, clock: Clock): Promise<void> {
    const sentAt = clock.now();
    const context = endpointSecretContext(claim.shop_id, claim.endpoint_id);
    const secrets = [options.secrets.open(claim.secret, context)];
    if (claim.previous_secret && claim.previous_secret_expires_at && claim.previous_secret_expires_at > sentAt) {
      secrets.push(options.secrets.open(claim.previous_secret, context));
    }
    const body = eventBody(claim.event_type, claim.data, claim.livemode);
    const timestamp = Math.floor(sentAt.getTime() / 1000);
    const outcome = await sendOutbound(
      {
        url: claim.url,
        headers: {
          'webhook-id': claim.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, claim.event_id, timestamp, body),
        },
        body,
      },
      { allowPrivateTargets: options.allowPrivateTargets, timeoutMs, lookup: options.lookup },
    );
    await recordOutcome(claim, token, sentAt, outcome, clock);
  }

  /** A delivered attempt settles in one statement; a failed one, rarer, in a transaction that also queues the next. */
  async function recordOutcome(
    claim: ClaimedDelivery,
    token: string,
    sentAt: Date,
    outcome: OutboundOutcome,
    clock: Clock,
  ): Promise<void> {
    const now = clock.now();
    const delivered = outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300;
    if (delivered) {
      const settled = await settleDelivered(db, claim.shop_id, claim.id, claim.pending_attempt_id, token, {
        url: claim.url,
        responseStatus: outcome.status,
        responseBody: outcome.body.slice(0, RESPONSE_LOG_CHARS),
        durationMs: outcome.durationMs,
        attemptedAt: sentAt,
        now,
      });
      if (!settled)
        options.logger.warn('webhook attempt finished after its lease was taken over', { delivery_id: claim.id });
      return;
    }
    await db.transaction().execute(async (trx) => {
      const delivery = await leasedDeliveryForUpdate(trx, claim.shop_id, claim.id, token);
      // The lease ran out and another worker took the delivery over: its attempt is the one recorded.
      if (!delivery || delivery.pending_attempt_id !== claim.pending_attempt_id) {
        options.logger.warn('webhook attempt finished after its lease was taken over', { delivery_id: claim.id });
        return;
      }
      const attemptsMade = delivery.attempts + 1;
      const delay = delivery.manual ? undefined : retryDelayMs(attemptsMade, random);
      const status: DeliveryStatus = delay === undefined ? 'FAILED' : 'RETRYING';
      const nextAt = delay === undefined ? null : new Date(now.getTime() + delay);
      const failure = attemptError(outcome);
      await updateAttempt(trx, claim.shop_id, claim.pending_attempt_id, {
        url: claim.url, // where it went, if the endpoint's URL changed while it was queued
        status,
        response_status: outcome.kind === 'response' ? outcome.status : null,
        response_body: outcome.kind === 'response' ? outcome.body.slice(0, RESPONSE_LOG_CHARS) : null,
        duration_ms: outcome.durationMs,
        error_code: failure?.code ?? null,
        error: failure?.message ?? null,
        next_retry_at: nextAt,
        attempted_at: sentAt,
      });
      let nextAttemptId: string | null = null;
      if (nextAt) {
        nextAttemptId = newId('whl');
        await insertAttempts(trx, claim.shop_id, [
          queuedAttempt({
            id: nextAttemptId,
            deliveryId: claim.id,
            endpointId: claim.endpoint_id,
            eventId: claim.event_id,
            eventType: claim.event_type,
            url: claim.url,
            attempt: attemptsMade + 1,
            dueAt: nextAt,
          }),
        ]);
      }
      await updateDelivery(trx, claim.shop_id, claim.id, {
        status,
        attempts: attemptsMade,
        next_attempt_at: nextAt,
        pending_attempt_id: nextAttemptId,
        manual: false,
        lease_until: null,
        lease_token: null,
        updated_at: now,
      });
    });
  }

  return {
    name: 'webhook-delivery',
    onShopClocks: true,
    async runOnce(scope) {
      const clock = scope?.clock ?? options.clock;
      const now = clock.now();
      const token = randomUUID();
      const leaseUntil = new Date(now.getTime() + leaseMs);
      const batch = options.batch ?? 20;
      const claimed = await db
        .transaction()
        .execute((trx) => claimDueDeliveries(trx, now, leaseUntil, token, batch, scope?.shopId));
      await Promise.all(
        claimed.map((c) =>
          attempt(c, token, clock).catch((err: unknown) =>
            // Not recorded: the lease runs out and the delivery is attempted again. Nothing is lost.
            options.logger.warn('webhook attempt could not be recorded', {
              delivery_id: c.id,
              error: (err as Error)?.message,
            }),
          ),
        ),
      );
      return claimed.length;
    },
  };
}
