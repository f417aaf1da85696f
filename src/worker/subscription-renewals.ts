// The subscription renewal job: resumes paused subscriptions at their `resume_at`, issues each renewal invoice when
// a period ends, and settles invoices the expiry job voided unpaid (PAST_DUE, then CANCELLED): see
// src/domain/subscriptions/renewals.ts. One transaction per batch. Subscriptions are claimed with FOR UPDATE SKIP
// LOCKED, so any number of workers renew disjoint subscriptions, and the completion of a renewal invoice (which
// takes the same row lock) never interleaves with a renewal of the same subscription. Each subscription's cycle is
// a write of its shop (workerWrite): its events go through the default sinks, in the batch's transaction.
import type { Kysely } from 'kysely';
import { subscriptionsDueForUpdate } from '../../db/queries/subscriptions';
import type { Database } from '../../db/tables';
import { workerWrite } from '../domain/effects';
import { runRenewalCycle } from '../domain/subscriptions/renewals';
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';
import type { Job } from './worker';

export interface SubscriptionRenewalOptions {
  clock: Clock;
  logger: Logger;
  checkoutBaseUrl: string;
  batchSize?: number;
}

export function subscriptionRenewalJob(db: Kysely<Database>, options: SubscriptionRenewalOptions): Job {
  return {
    name: 'subscription-renewals',
    onShopClocks: true,
    runOnce: (scope) =>
      db.transaction().execute(async (trx) => {
        const clock = scope?.clock ?? options.clock;
        const due = await subscriptionsDueForUpdate(trx, clock.now(), options.batchSize ?? 50, scope?.shopId);
        let changed = 0;
        let invoices = 0;
        for (const sub of due) {
          const outcome = await workerWrite(trx, sub.shop_id, 'subscription-renewals', clock, (w) =>
            runRenewalCycle(w, sub, { checkoutBaseUrl: options.checkoutBaseUrl }),
          );
          if (outcome.resumed || outcome.expiredInvoice || outcome.invoiceId !== null) changed++;
          if (outcome.invoiceId !== null) invoices++;
        }
        if (changed > 0) options.logger.info('subscription renewals', { subscriptions: changed, invoices });
        return changed;
      }),
  };
}
