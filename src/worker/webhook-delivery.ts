// Delivers the events outbox to webhook endpoints, as a pipeline rather than in rounds: attempts are in flight at
// once, each made outside any transaction (the network is never called while rows are locked); as attempts finish,
// their outcomes are recorded together (only where this worker still holds the lease) and their slots are claimed
// again (SKIP LOCKED, with a lease). Nothing waits for the slowest attempt. Every endpoint has a share of its own
// (`perEndpoint` in flight) that it may always fill, whatever the others hold; beyond it, endpoints borrow from a
// shared pool (`concurrency`), the least busy first. So a slow or hanging endpoint holds back only its own
// deliveries, and one fast endpoint alone gets the whole pool (a share of 16 capped one receiver at ~1,100/s). A 2xx
// within the timeout is delivered; anything else (another status, a redirect, a time-out, a refused target) is
// retried on the schedule below, then FAILED.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { STATUS_CODES } from 'node:http';
import type { Database, WebhookAttemptErrorCode } from '../../db/tables';
import {
  claimDueDeliveries,
  leasedDeliveriesForUpdate,
  recordFailures,
  settleDelivered,
  type ClaimedDelivery,
  type DeliveredOutcome,
  type FailedOutcome,
} from '../../db/queries/webhook-deliveries';
import { newId } from '../ids';
import { eventBody, queuedAttempt } from '../platform/events';
import { sendOutbound, type OutboundOptions, type OutboundOutcome } from '../platform/outbound-http';
import { endpointSecretContext, type SecretBox } from '../platform/secret-box';
import { signatureHeader } from '../platform/webhook-signature';
import type { Clock } from '../platform/clock';
import { observeWebhookAttempt } from '../platform/metrics';
import { jobSpan } from './job-span';
import type { Job, JobContext, JobScope } from './worker';

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
  /** The shared pool: attempts in flight at once beyond the endpoints' own shares, and one endpoint's most (default 64). */
  concurrency?: number;
  /** Each endpoint's own share, in flight whatever the others hold (default a quarter of `concurrency`). */
  perEndpoint?: number;
  /** While attempts are in flight and none finishes, new due deliveries are looked for this often (default 100 ms). */
  pollMs?: number;
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

/** An attempt under way: what was claimed, under which lease, on whose clock. */
interface Slot {
  claim: ClaimedDelivery;
  token: string;
  /** The job's, or the clock of the one shop a pass serves (src/worker/worker.ts). */
  clock: Clock;
}

interface Finished {
  slot: Slot;
  sentAt: Date;
  outcome: OutboundOutcome;
}

/** Outcomes recorded in one go at most (a statement's size stays bounded). */
const RECORD_BATCH = 500;

/**
 * The delivery job. `runOnce` claims due deliveries for the free slots, starts their attempts and returns once some
 * attempt has been recorded (how many were, since the last call), looking for new due deliveries every `pollMs`
 * meanwhile; it returns 0 only when nothing is in flight and nothing was due. Attempts it started go on after it
 * returns (the next call, or `settle`, reports them). Outcomes are recorded as attempts finish, whether or not a
 * call is under way.
 */
export function webhookDeliveryJob(db: Kysely<Database>, options: WebhookDeliveryOptions): Job {
  const leaseMs = options.leaseMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const random = options.random ?? Math.random;
  const concurrency = Math.max(1, options.concurrency ?? 64);
  const perEndpoint = Math.max(1, Math.min(concurrency, options.perEndpoint ?? Math.ceil(concurrency / 4)));
  /** Every endpoint's own share may go beyond the shared pool, up to this. */
  const maxInFlight = 4 * concurrency;
  const pollMs = options.pollMs ?? 100;

  /** Claimed and not yet recorded, by delivery id. */
  const slots = new Map<string, Slot>();
  /** Attempts under way (not yet finished), in all and per endpoint: what the slots and the caps count. */
  let attempting = 0;
  const perEndpointInFlight = new Map<string, number>();
  /** Attempts that finished since the last claim: a claim waits for enough of them to be worth a statement. */
  let freedSinceClaim = 0;
  const claimWorth = Math.max(1, Math.floor(perEndpoint / 4));
  const finished: Finished[] = [];
  let recording: Promise<void> | undefined;
  /** Attempts recorded (or given up on) since a call last reported them. */
  let handled = 0;
  const waiters = new Set<() => void>();

  const signingSecrets = new Map<string, { sealed: Buffer; previous: Buffer | null; opened: string[] }>();
  /** The endpoint's secrets, opened once per secret (not per delivery) and again after a rotation. */
  function secretsOf(claim: ClaimedDelivery): { current: string; previous: string | undefined } {
    let cached = signingSecrets.get(claim.endpoint_id);
    const previous = claim.previous_secret ? Buffer.from(claim.previous_secret) : null;
    if (
      !cached ||
      !cached.sealed.equals(claim.secret) ||
      (previous === null) !== (cached.previous === null) ||
      (previous !== null && !previous.equals(cached.previous!))
    ) {
      const context = endpointSecretContext(claim.shop_id, claim.endpoint_id);
      const opened = [options.secrets.open(claim.secret, context)];
      if (previous) opened.push(options.secrets.open(previous, context));
      if (signingSecrets.size >= 10_000) signingSecrets.clear();
      cached = { sealed: Buffer.from(claim.secret), previous, opened };
      signingSecrets.set(claim.endpoint_id, cached);
    }
    return { current: cached.opened[0]!, previous: cached.opened[1] };
  }

  function notify(): void {
    for (const wake of waiters) wake();
    waiters.clear();
  }

  /** Resolves when an attempt finishes or is recorded, or after `ms`; true if one did. */
  function progress(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        resolve(false);
      }, ms);
      waiters.add(wake);
    });
  }

  /** The attempt is over: its slot can be claimed again (its outcome may still be on its way to the database). */
  function attemptOver(slot: Slot): void {
    attempting--;
    freedSinceClaim++;
    const endpoint = slot.claim.endpoint_id;
    const n = (perEndpointInFlight.get(endpoint) ?? 1) - 1;
    if (n > 0) perEndpointInFlight.set(endpoint, n);
    else perEndpointInFlight.delete(endpoint);
    notify();
  }

  async function attempt(slot: Slot): Promise<void> {
    const { claim, clock } = slot;
    const sentAt = clock.now();
    // Tracing on: the attempt's span, in a trace of its own linked to the request that wrote the event.
    const span = jobSpan('webhook.deliver', claim.traceparent, {
      'webhook.event_type': claim.event_type,
      'webhook.delivery_id': claim.id,
      'webhook.attempt': claim.attempts, // counted when claimed
    });
    let outcome: OutboundOutcome;
    try {
      const { current, previous } = secretsOf(claim);
      const secrets = [current];
      if (previous && claim.previous_secret_expires_at && claim.previous_secret_expires_at > sentAt) {
        secrets.push(previous);
      }
      const body = eventBody(claim.event_type, claim.data, claim.livemode);
      // The signature's time is the transport's: real time (the job's clock), never a test shop's clock, which may run
      // days ahead; receivers refuse a timestamp minutes away from theirs. The body keeps the shop's times.
      const timestamp = Math.floor(options.clock.now().getTime() / 1000);
      outcome = await sendOutbound(
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
    } catch (err) {
      span?.fail(err);
      // Not recorded (a secret that does not open): the lease runs out and the delivery is attempted again.
      options.logger.warn('webhook attempt could not be made', {
        delivery_id: claim.id,
        error: (err as Error)?.message,
      });
      slots.delete(claim.id);
      handled++;
      attemptOver(slot);
      return;
    }
    const result = attemptError(outcome)?.code.toLowerCase() ?? 'delivered';
    observeWebhookAttempt(result, outcome.durationMs / 1000);
    span?.end(result);
    finished.push({ slot, sentAt, outcome });
    startRecording();
    attemptOver(slot);
  }

  function startRecording(): void {
    if (recording) return;
    recording = (async () => {
      while (finished.length > 0) {
        // Attempts that finish in the same turn of the event loop are recorded together.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const batch = finished.splice(0, RECORD_BATCH);
        try {
          await record(batch);
        } catch (err) {
          // Not recorded: the leases run out and the deliveries are attempted again (nothing is lost), each claim
          // counting an attempt, so one whose outcome can never be recorded is given up, not sent forever.
          for (const f of batch) {
            options.logger.warn('webhook attempt could not be recorded', {
              delivery_id: f.slot.claim.id,
              error: (err as Error)?.message,
            });
          }
        }
        for (const f of batch) slots.delete(f.slot.claim.id);
        handled += batch.length;
        notify();
      }
    })().finally(() => {
      recording = undefined;
      if (finished.length > 0) startRecording();
    });
  }

  const tookOver = (deliveryId: string) =>
    options.logger.warn('webhook attempt finished after its lease was taken over', { delivery_id: deliveryId });

  /** Delivered attempts settle in one statement; failed ones, rarer, in a transaction that also queues the next. */
  async function record(batch: readonly Finished[]): Promise<void> {
    const delivered: DeliveredOutcome[] = [];
    const failed: Finished[] = [];
    for (const f of batch) {
      const { outcome, slot } = f;
      if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) {
        delivered.push({
          shopId: slot.claim.shop_id,
          deliveryId: slot.claim.id,
          attemptId: slot.claim.pending_attempt_id,
          leaseToken: slot.token,
          now: slot.clock.now(),
          url: slot.claim.url,
          responseStatus: outcome.status,
          responseBody: outcome.body.slice(0, RESPONSE_LOG_CHARS),
          durationMs: outcome.durationMs,
          attemptedAt: f.sentAt,
        });
      } else failed.push(f);
    }
    if (delivered.length > 0) {
      const settled = await settleDelivered(db, delivered);
      // The lease ran out and another worker took the delivery over: its attempt is the one recorded.
      for (const d of delivered) if (!settled.has(d.deliveryId)) tookOver(d.deliveryId);
    }
    if (failed.length > 0) await recordFailed(failed);
  }

  async function recordFailed(failed: readonly Finished[]): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const held = await leasedDeliveriesForUpdate(
        trx,
        failed.map(({ slot }) => ({
          shopId: slot.claim.shop_id,
          deliveryId: slot.claim.id,
          attemptId: slot.claim.pending_attempt_id,
          leaseToken: slot.token,
        })),
      );
      const byId = new Map(held.map((d) => [d.id, d]));
      const outcomes: FailedOutcome[] = [];
      for (const { slot, sentAt, outcome } of failed) {
        const { claim } = slot;
        const delivery = byId.get(claim.id);
        if (!delivery) {
          tookOver(claim.id);
          continue;
        }
        const now = slot.clock.now();
        const attemptsMade = delivery.attempts; // this one included: the claim counted it
        const delay = delivery.manual ? undefined : retryDelayMs(attemptsMade, random);
        const nextAt = delay === undefined ? null : new Date(now.getTime() + delay);
        const failure = attemptError(outcome);
        outcomes.push({
          now,
          shopId: claim.shop_id,
          deliveryId: claim.id,
          attemptId: claim.pending_attempt_id,
          status: nextAt ? 'RETRYING' : 'FAILED',
          attempts: attemptsMade,
          url: claim.url, // where it went, if the endpoint's URL changed while it was queued
          responseStatus: outcome.kind === 'response' ? outcome.status : null,
          responseBody: outcome.kind === 'response' ? outcome.body.slice(0, RESPONSE_LOG_CHARS) : null,
          durationMs: outcome.durationMs,
          errorCode: failure?.code ?? null,
          error: failure?.message ?? null,
          attemptedAt: sentAt,
          next: nextAt
            ? {
                at: nextAt,
                attempt: queuedAttempt({
                  id: newId('whl'),
                  deliveryId: claim.id,
                  endpointId: claim.endpoint_id,
                  eventId: claim.event_id,
                  eventType: claim.event_type,
                  url: claim.url,
                  attempt: attemptsMade + 1,
                  dueAt: nextAt,
                }),
              }
            : null,
        });
      }
      await recordFailures(trx, outcomes);
    });
  }

  /**
   * Claims due deliveries for the free slots and starts their attempts; how many it started. Outcomes not yet
   * recorded count against the slots too, so a slow database holds the claims back rather than piling up outcomes.
   */
  async function fill(scope: JobScope | undefined): Promise<number> {
    // Answers already on their way are read first: on the embedded database, whose statements run on this thread,
    // a chain of claims and records would otherwise keep the receiving sockets waiting.
    await new Promise<void>((resolve) => setImmediate(resolve));
    // Own shares may take the worker past its pool (each endpoint keeps its share whatever the others hold), up to a
    // hard bound; outcomes not yet recorded count too, so a slow database holds the claims back.
    const free = Math.min(maxInFlight - attempting, 2 * maxInFlight - slots.size);
    if (free <= 0) return 0;
    freedSinceClaim = 0;
    const clock = scope?.clock ?? options.clock;
    const now = clock.now();
    // Due by the shop's clock; held on real time, so advancing a test clock never ends a lease early.
    const realNow = options.clock.now();
    const token = randomUUID();
    const claimed = await claimDueDeliveries(db, {
      now,
      realNow,
      until: new Date(realNow.getTime() + leaseMs),
      maxAttempts: MAX_ATTEMPTS,
      token,
      limit: free,
      shopId: scope?.shopId,
      perEndpoint,
      maxPerEndpoint: concurrency,
      borrowable: concurrency - attempting,
      inFlight: perEndpointInFlight,
    });
    for (const claim of claimed) {
      const slot: Slot = { claim, token, clock };
      slots.set(claim.id, slot);
      attempting++;
      perEndpointInFlight.set(claim.endpoint_id, (perEndpointInFlight.get(claim.endpoint_id) ?? 0) + 1);
      void attempt(slot);
    }
    return claimed.length;
  }

  function report(): number {
    const n = handled;
    handled = 0;
    return n;
  }

  return {
    name: 'webhook-delivery',
    onShopClocks: true,
    async runOnce(scope) {
      // A claim when nothing is under way, when enough attempts finished to fill a batch (a fast receiver is served
      // in batches, not one statement per delivery), and every `pollMs` while attempts are in flight: newly due
      // deliveries are taken on while a slow endpoint's attempts go on.
      if (attempting === 0 || freedSinceClaim >= claimWorth) await fill(scope);
      while (handled === 0 && slots.size > 0) {
        const woke = await progress(pollMs);
        if (!woke || attempting === 0 || freedSinceClaim >= claimWorth) await fill(scope);
      }
      return report();
    },
    async settle() {
      while (slots.size > 0) await progress(pollMs);
      return report();
    },
  };
}
