// The payment providers' webhook routes, outside /dev/v1: POST /webhooks/gateways/<code>/<shop id>, the address
// `gateway connect` prints. Each event is verified with the shop's own connection (Stripe-Signature, PayPal's
// verification call, BTCPay-Sig), translated into our words and queued in the shop's gateway_events inbox in one
// short transaction; the worker applies it (src/worker/gateway-events.ts). So the route answers fast, a redelivery
// is the same inbox row (nothing twice), and nothing here completes an order by itself.
// Answers: 200 queued (or already known); 400 not verifiably the provider's (bad or stale signature, malformed);
// 404 no such shop or the shop has not connected that provider; 502 the provider could not be asked to verify (PayPal):
// the provider sends it again. A refusal changes nothing and is logged without the body or any secret.
import express, { Router, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { insertGatewayEvents } from '../../db/queries/gateway-events';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import type { Gateways } from '../integrations/gateway-accounts';
import { newId } from '../ids';
import { ProviderError, WebhookRejected } from '../integrations/gateway-provider';
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';
import { ApiError } from '../errors';
import { bodyLimitBytes } from './body';
import { errorBody } from './errors';

export interface GatewayWebhookDeps {
  db: Kysely<Database>;
  gateways: Gateways;
  logger: Logger;
  clock: Clock;
  publicUrl: string;
}

/** A refusal in the API's error envelope (code, message, doc_url), as every other route answers one. */
function refuse(res: Response, publicUrl: string, error: ApiError) {
  res.status(error.status).set(error.headers).json(errorBody(error, publicUrl));
}

export function gatewayWebhookRouter(deps: GatewayWebhookDeps): Router {
  const router = Router();
  const raw = express.raw({ type: () => true, limit: bodyLimitBytes });
  router.post('/webhooks/gateways/:code/:shopId', raw, async (req: Request, res: Response) => {
    const code = String(req.params.code).toUpperCase();
    const shopId = String(req.params.shopId);
    const where = { gateway: code, shop_id: shopId, request_id: res.locals.requestId as string | undefined };
    const provider = deps.gateways.provider(code);
    const shop = provider && /^[A-Za-z0-9_-]{1,64}$/.test(shopId) ? await shopById(deps.db, shopId) : undefined;
    const account = shop && provider ? await deps.gateways.account(deps.db, shop, provider.code) : undefined;
    if (!provider || !shop || !account) {
      deps.logger.warn('gateway webhook refused: no such connection', where);
      refuse(res, deps.publicUrl, new ApiError('NOT_FOUND', 'No such gateway connection.'));
      return;
    }
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    let notices;
    try {
      notices = await provider.parseWebhook(account, body, req.headers);
    } catch (err) {
      if (err instanceof WebhookRejected) {
        deps.logger.warn("gateway webhook refused: not verifiably the provider's", { ...where, reason: err.message });
        refuse(res, deps.publicUrl, new ApiError('BAD_REQUEST', 'The webhook could not be verified.'));
        return;
      }
      if (err instanceof ProviderError) {
        deps.logger.warn('gateway webhook not verified: provider unreachable', { ...where, reason: err.message });
        const unavailable = new ApiError('GATEWAY_UNAVAILABLE', `${code} could not be asked to verify the webhook.`, {
          headers: { 'Retry-After': '30' },
        });
        refuse(res, deps.publicUrl, unavailable);
        return;
      }
      throw err;
    }
    const now = deps.clock.now();
    const queued = await deps.db.transaction().execute((trx) =>
      insertGatewayEvents(
        trx,
        shop.id,
        notices.map((n) => ({ id: newId('gwe'), gateway: provider.code, event_id: n.eventId, notice: n })),
        now,
      ),
    );
    deps.logger.info('gateway webhook received', {
      ...where,
      events: notices.map((n) => `${n.kind}:${n.eventId}`).join(','),
      queued,
    });
    res.status(200).json({ received: true, queued });
  });
  return router;
}
