// The hosted checkout (`/invoice/:uniqid`) and the SANDBOX gateway's own payment page (`/sandbox/checkout/...`):
// HTML pages for buyers, outside the /dev/v1 API. The uniqid and the session id are the only credentials here.
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import { activeGateways } from '../../db/queries/gateways';
import { attachmentForDownload, itemsOfOrders, orderByUniqid } from '../../db/queries/orders';
import { attemptsOfOrder } from '../../db/queries/payment-attempts';
import { shopById } from '../../db/queries/shops';
import { ApiError } from '../errors';
import { checkoutUrl } from '../views/order';
import { deliveredFiles, invoicePage, messagePage, sandboxPage } from './pages';
import { CheckoutRefusal, sandboxSession, settleSandboxPayment, startPayment, type CheckoutDeps } from './payments';

// No script runs on these pages even if a value escaped its escaping; nobody frames them (clickjacking a Pay button).
const securityHeaders = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // The invoice address is what grants access to its deliveries: never leak it to a linked site.
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(securityHeaders).type('html').send(html);
}

const requestIdOf = (res: Response): string => String(res.locals.requestId ?? '');

export function checkoutRouter(deps: CheckoutDeps): Router {
  const { db, services } = deps;
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '2kb', parameterLimit: 10 });

  const route =
    (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
    async (req, res) => {
      try {
        await fn(req, res);
      } catch (err) {
        if (err instanceof CheckoutRefusal) return sendPage(res, err.status, messagePage(err.title, err.message));
        if (err instanceof ApiError && err.status < 500)
          return sendPage(res, err.status, messagePage('Request refused', err.message));
        services.logger.error('checkout page failed', {
          request_id: requestIdOf(res),
          path: req.path,
          error: (err as Error)?.stack ?? String(err),
        });
        sendPage(res, 500, messagePage('Something went wrong', 'Please try again in a moment.'));
      }
    };

  const param = (req: Request, name: string): string => String(req.params[name] ?? '');
  const invoicePath = (uniqid: string) => `/invoice/${encodeURIComponent(uniqid)}`;
  const invoiceUrl = (uniqid: string) => checkoutUrl(services.config.checkoutBaseUrl, encodeURIComponent(uniqid));

  async function findInvoice(uniqid: string) {
    const order = await orderByUniqid(db, uniqid);
    if (!order) throw new CheckoutRefusal(404, 'Invoice not found', 'There is no invoice at this address.');
    const items = (await itemsOfOrders(db, order.shop_id, [order.id])).get(order.id) ?? [];
    return { order, items };
  }

  router.get(
    '/invoice/:uniqid',
    route(async (req, res) => {
      const { order, items } = await findInvoice(param(req, 'uniqid'));
      const [shop, gateways, attempts] = await Promise.all([
        shopById(db, order.shop_id),
        order.status === 'PENDING' ? activeGateways(db, order.shop_id) : Promise.resolve([]),
        attemptsOfOrder(db, order.shop_id, order.id),
      ]);
      sendPage(
        res,
        200,
        invoicePage({
          shopName: shop?.name ?? '',
          order,
          items,
          gateways,
          latestAttempt: attempts[0],
          path: invoicePath(order.uniqid),
        }),
      );
    }),
  );

  router.post(
    '/invoice/:uniqid/pay',
    form,
    route(async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const gateway = typeof body.gateway === 'string' ? body.gateway.trim().toUpperCase() : '';
      res.redirect(303, await startPayment(deps, param(req, 'uniqid'), gateway, requestIdOf(res)));
    }),
  );

  router.get(
    '/invoice/:uniqid/files/:attachmentId',
    route(async (req, res) => {
      const { order, items } = await findInvoice(param(req, 'uniqid'));
      const attachmentId = param(req, 'attachmentId');
      // Only what this invoice delivered: the attachment id alone (of this shop) grants nothing.
      const delivered = items.some(
        (item) =>
          item.delivery_status === 'DELIVERED' &&
          deliveredFiles(item.delivered_items).some((f) => f.id === attachmentId),
      );
      const file = delivered ? await attachmentForDownload(db, order.shop_id, attachmentId) : undefined;
      if (!file) throw new CheckoutRefusal(404, 'File not found', 'This invoice delivered no such file.');
      res
        .status(200)
        .set({ ...securityHeaders, 'Content-Security-Policy': "default-src 'none'; sandbox" })
        // Always a download, never rendered on this origin, whatever type the merchant gave it.
        .attachment(file.filename)
        .type(file.content_type || 'application/octet-stream')
        .send(Buffer.from(file.content));
    }),
  );

  router.get(
    '/sandbox/checkout/:sessionId',
    route(async (req, res) => {
      const attempt = await sandboxSession(db, param(req, 'sessionId'));
      sendPage(
        res,
        200,
        sandboxPage({
          attempt,
          currency: attempt.currency,
          path: `/sandbox/checkout/${encodeURIComponent(param(req, 'sessionId'))}`,
          invoiceUrl: invoiceUrl(attempt.uniqid),
        }),
      );
    }),
  );

  for (const [action, outcome] of [
    ['pay', 'PAID'],
    ['fail', 'FAILED'],
  ] as const) {
    router.post(
      `/sandbox/checkout/:sessionId/${action}`,
      route(async (req, res) => {
        const uniqid = await settleSandboxPayment(deps, param(req, 'sessionId'), outcome, requestIdOf(res));
        res.redirect(303, invoiceUrl(uniqid));
      }),
    );
  }
  return router;
}
