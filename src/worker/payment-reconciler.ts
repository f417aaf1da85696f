// The reconciler: reads, with back-off, the provider state of every payment attempt still open a few minutes after
// its session started, so an invoice paid while our webhook route was down (or whose webhooks never came) completes
// anyway, through the same settlement rule as a webhook (src/domain/payments/settlement.ts). It also gives back,
// through the provider, the money of attempts flagged as not paying their invoice (a second payment, a late, short or
// wrong-currency one), and re-finds the session of an attempt whose session id was never recorded (a crash between
// the provider's answer and our write: the provider's idempotency key, derived from the attempt id, returns the same
// session). Each attempt is claimed with SKIP LOCKED and a lease on real time; its due time is the shop's clock.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { orderById } from '../../db/queries/orders';
import * as attempts from '../../db/queries/payment-attempts';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { workerWrite } from '../domain/effects';
import { applySessionState } from '../domain/support/gateway-notices';
import { sessionReturnUrls } from '../domain/payments/provider-sessions';
import type { Gateways } from '../integrations/gateway-accounts';
import { settleFlaggedReturn, MAX_LOOKS, nextLookMs, type ReturnOutcome } from '../domain/orders/settlement';
import { isProviderCode, ProviderError, providerCodes } from '../integrations/gateway-provider';
import type { Clock } from '../platform/clock';
import { decimalString } from '../platform/money';
import type { Job, JobContext } from './worker';

export interface ReconcilerOptions extends JobContext {
  gateways: Gateways;
  checkoutBaseUrl: string;
  batch?: number;
}

export function paymentReconcilerJob(db: Kysely<Database>, options: ReconcilerOptions): Job {
  const leaseMs = options.leaseMs ?? 60_000;
  const { gateways, logger } = options;

  async function reconcile(claim: attempts.ReconcileClaim, token: string, clock: Clock): Promise<void> {
    const release = (set: Parameters<typeof attempts.releaseReconcileLease>[4]) =>
      db.transaction().execute((trx) => attempts.releaseReconcileLease(trx, claim.shop_id, claim.id, token, set));
    const later = () => {
      const now = clock.now();
      return claim.reconcile_count >= MAX_LOOKS ? null : new Date(now.getTime() + nextLookMs(claim.reconcile_count));
    };
    const attempt = await attempts.attemptById(db, claim.shop_id, claim.id);
    const shop = await shopById(db, claim.shop_id);
    const order = attempt && (await orderById(db, claim.shop_id, attempt.order_id));
    if (!attempt || !shop || !order || !isProviderCode(attempt.gateway)) {
      await release({ reconcile_at: null });
      return;
    }
    // A flagged payment's outcome is recorded with the event that tells the merchant, only while this lease holds.
    const returnSettled = (set: Parameters<typeof release>[0], outcome: ReturnOutcome) =>
      db.transaction().execute((trx) =>
        workerWrite(trx, shop.id, 'payment-reconciler', clock, async (w) => {
          if (await attempts.releaseReconcileLease(trx, shop.id, attempt.id, token, set))
            await settleFlaggedReturn(w, order, attempt, outcome);
        }),
      );
    const code = attempt.gateway;
    const provider = gateways.provider(code)!;
    const account = await gateways.account(db, shop, code);
    if (!account) {
      await release({ reconcile_at: later(), last_error: `${code} is not connected` });
      return;
    }
    try {
      if (attempt.flag !== null && attempt.return_status === 'PENDING') {
        // The money of a payment that did not pay its invoice goes back, once (the key is derived from the attempt).
        const refund = await provider.refund(account, {
          refundId: `ret_${attempt.id}`,
          paymentRef: attempt.payment_ref!,
          sessionId: attempt.session_id ?? '',
          amount: decimalString(attempt.paid_amount!, attempt.paid_currency!),
          currency: attempt.paid_currency!,
          reason: `Payment ${attempt.flag.toLowerCase()}: invoice ${order.uniqid} was not paid by it`,
        });
        await returnSettled(
          { reconcile_at: null, last_error: null },
          {
            status: 'REFUNDED',
            providerRefundId: refund.providerRefundId,
          },
        );
        logger.info('payment given back', {
          attempt_id: attempt.id,
          flag: attempt.flag,
          refund: refund.providerRefundId,
        });
        return;
      }
      if (attempt.status !== 'PENDING') {
        await release({ reconcile_at: null });
        return;
      }
      let sessionId = attempt.session_id;
      if (sessionId === null) {
        const session = await provider.startSession(account, {
          attemptId: attempt.id,
          shopId: shop.id,
          orderUniqid: order.uniqid,
          description: order.developer_title ?? `Order ${order.uniqid}`,
          amount: attempt.amount,
          currency: order.currency,
          customerEmail: order.customer_email ?? undefined,
          coin: order.blockchain ?? undefined,
          ...sessionReturnUrls(options.checkoutBaseUrl, order.uniqid, attempt.id),
        });
        sessionId = session.sessionId;
        await db.transaction().execute((trx) =>
          attempts.releaseReconcileLease(trx, shop.id, attempt.id, token, {
            session_id: session.sessionId,
            session_url: session.checkoutUrl,
            reconcile_at: clock.now(),
          }),
        );
        return;
      }
      const state = await provider.readSession(account, sessionId);
      await db.transaction().execute(async (trx) => {
        await workerWrite(trx, shop.id, 'payment-reconciler', clock, (w) =>
          applySessionState(w, code, sessionId, state, { checkoutBaseUrl: options.checkoutBaseUrl }, attempt.id),
        );
        const after = await attempts.attemptById(trx, shop.id, attempt.id);
        const open = after?.status === 'PENDING';
        await attempts.releaseReconcileLease(trx, shop.id, attempt.id, token, {
          reconcile_at: open ? later() : (after?.reconcile_at ?? null),
          last_error: null,
        });
      });
    } catch (err) {
      const refused = err instanceof ProviderError && err.failure === 'refused';
      const message = (err as Error)?.message ?? String(err);
      // A provider's "no" to giving money back is the merchant's to handle; anything else is tried again later.
      if (refused && attempt.flag !== null)
        await returnSettled({ reconcile_at: null, last_error: message }, { status: 'FAILED' });
      else await release({ reconcile_at: later(), last_error: message.slice(0, 1000) });
      logger.warn('payment reconciliation failed', { attempt_id: attempt.id, gateway: code, error: message });
    }
  }

  return {
    name: 'payment-reconciler',
    onShopClocks: true,
    async runOnce(scope) {
      const clock = scope?.clock ?? options.clock;
      const realNow = options.clock.now();
      const token = randomUUID();
      const claimed = await db.transaction().execute((trx) =>
        attempts.claimReconcilableAttempts(trx, providerCodes, {
          now: clock.now(),
          realNow,
          until: new Date(realNow.getTime() + leaseMs),
          token,
          limit: options.batch ?? 20,
          shopId: scope?.shopId,
        }),
      );
      await Promise.all(
        claimed.map((c) =>
          reconcile(c, token, clock).catch((err: unknown) =>
            logger.warn('payment reconciliation could not be recorded', {
              attempt_id: c.id,
              error: (err as Error)?.message,
            }),
          ),
        ),
      );
      return claimed.length;
    },
  };
}
