// Applies the verified provider webhooks the routes queued (gateway_events), with the leased-queue protocol: a
// session event whose state says "look again" (PayPal's approval, every BTCPay event) is read from the provider
// first, outside any transaction (reading a PayPal session captures it, once); then the notice is applied in the
// shop's transaction (src/domain/payments/notices.ts). A provider that cannot be reached is tried again later.
import type { Kysely, Transaction } from 'kysely';
import { claimGatewayEvents, type GatewayEventClaim } from '../../db/queries/gateway-events';
import { settleLeasedRow } from '../../db/queries/leased-queue';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { workerWrite } from '../domain/effects';
import { applyNotice } from '../domain/support/gateway-notices';
import type { Gateways } from '../integrations/gateway-accounts';
import { isProviderCode, type ProviderNotice, type SessionState } from '../integrations/gateway-provider';
import type { Clock } from '../platform/clock';
import { leasedQueueJob, scheduledDelayMs, type LeasedQueueOptions } from './leased-queue';
import type { Job } from './worker';

/** Waits before the 2nd ... 8th attempt to read a provider that failed (±10%); then the event is FAILED. */
export const RETRY_SCHEDULE_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000];
const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

export interface GatewayEventOptions extends LeasedQueueOptions {
  gateways: Gateways;
  checkoutBaseUrl: string;
  random?: () => number;
}

type Verdict = { kind: 'apply'; notice: ProviderNotice } | { kind: 'retry'; error: string };

/** Reads the session again where the event only says something happened: the provider's state is what counts. */
async function lookAgain(
  db: Kysely<Database>,
  gateways: Gateways,
  claim: GatewayEventClaim,
  notice: ProviderNotice,
): Promise<ProviderNotice> {
  if (notice.kind !== 'SESSION' || notice.state.status !== 'OPEN' || !isProviderCode(claim.gateway)) return notice;
  const shop = await shopById(db, claim.shop_id);
  const account = shop && (await gateways.account(db, shop, claim.gateway));
  if (!account) return notice;
  const state: SessionState = await gateways.provider(claim.gateway)!.readSession(account, notice.sessionId);
  return { ...notice, state };
}

export function gatewayEventJob(db: Kysely<Database>, options: GatewayEventOptions): Job {
  const random = options.random ?? Math.random;
  return leasedQueueJob<GatewayEventClaim, Verdict>(db, options, {
    name: 'gateway-events',
    table: 'gateway_events',
    noun: 'gateway event',
    idField: 'gateway_event_id',
    maxAttempts: MAX_ATTEMPTS,
    claim: (trx, lease) => claimGatewayEvents(trx, lease),
    async send(claim) {
      try {
        return { kind: 'apply', notice: await lookAgain(db, options.gateways, claim, claim.notice as ProviderNotice) };
      } catch (err) {
        return { kind: 'retry', error: (err as Error)?.message ?? String(err) };
      }
    },
    async record(trx: Transaction<Database>, claim, attemptsBefore, verdict, clock: Clock) {
      const now = clock.now();
      const attempts = attemptsBefore + 1;
      if (verdict.kind === 'retry') {
        const delay = scheduledDelayMs(RETRY_SCHEDULE_MS, attempts, random);
        await settleLeasedRow(trx, 'gateway_events', claim.shop_id, claim.id, {
          status: delay === undefined ? 'FAILED' : 'RETRYING',
          attempts,
          next_attempt_at: delay === undefined ? null : new Date(now.getTime() + delay),
          last_error: verdict.error.slice(0, 1000),
          updated_at: now,
        });
        options.logger.warn('gateway event: provider not reached', {
          gateway: claim.gateway,
          shop_id: claim.shop_id,
          event_id: claim.event_id,
          error: verdict.error,
        });
        return;
      }
      const outcome = await workerWrite(trx, claim.shop_id, 'gateway-event', clock, (w) =>
        applyNotice(w, claim.gateway, verdict.notice, { checkoutBaseUrl: options.checkoutBaseUrl }),
      );
      await settleLeasedRow(trx, 'gateway_events', claim.shop_id, claim.id, {
        status: 'SUCCEEDED',
        attempts,
        next_attempt_at: null,
        last_error: outcome.startsWith('ignored') ? outcome.slice(0, 1000) : null,
        updated_at: now,
      });
      options.logger.info('gateway event applied', {
        gateway: claim.gateway,
        shop_id: claim.shop_id,
        event_id: claim.event_id,
        kind: verdict.notice.kind,
        outcome,
      });
    },
  });
}
