// The hosted checkout (`/invoice/:uniqid`), payment-link pages (`/link/:uniqid`) and the SANDBOX gateway's own
// payment page (`/sandbox/checkout/...`): HTML pages for buyers, outside the /dev/v1 API. The uniqid and the session id are the only credentials here.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { activeGateways } from '../../../db/queries/gateways';
import { attachmentForDownload, itemsOfOrders, orderByUniqid } from '../../../db/queries/orders';
import { attemptsOfOrder } from '../../../db/queries/payment-attempts';
import { paymentLinkByUniqid } from '../../../db/queries/payment-links';
import { shopById } from '../../../db/queries/shops';
import { pageBrandOf } from '../../domain/store/settings';
import { clockAhead } from '../../platform/clock';
import { canonicalIp } from '../../domain/customers/blacklist';
import {
  linkUnavailability,
  orderFromPaymentLink,
  paymentLinkOffer,
  PaymentLinkUnavailable,
} from '../../domain/orders/payment-link-orders';
import type { PaymentLinkRow } from '../../../db/tables';
import { ApiError, ValidationError } from '../../errors';
import { guardPages, pageForm, refusalTitle } from '../../http/page-guard';
import { idShape, uniqidShape } from '../../ids';
import { sandboxSessionShape } from '../../domain/payments/gateways';
import { checkoutUrl } from '../../views/order';
import {
  deliveredFiles,
  invoicePage,
  messagePage,
  optionFieldPrefix,
  paymentLinkPage,
  sandboxPage,
  type PaymentLinkPage,
  unavailableLinkMessage,
} from './pages';
import {
  CheckoutRefusal,
  checkoutOrigin,
  notFound,
  sandboxSession,
  settleReturn,
  settleSandboxPayment,
  startPayment,
  type CheckoutDeps,
} from './payments';
import { closeDisputeOnSession, openDisputeOnSession, sandboxDisputeSection } from './disputes';

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

// What the contract accepts as an email (CreateOrderRequest.email): one @, no spaces, at most 254 characters.
const emailShape = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The browser's address (behind a proxy only as far as TRUST_PROXY lets express believe it), for the blacklist. */
function buyerIp(req: Request): string | undefined {
  const ip = req.ip?.replace(/^::ffff:/, '');
  return ip && canonicalIp(ip) !== null ? ip : undefined;
}

/** The buyer's email from a form, or a 400 page asking again. */
function buyerEmail(body: Record<string, unknown>): string {
  const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : '';
  if (email.length > 254 || !emailShape.test(email))
    throw new CheckoutRefusal(400, 'Email needed', 'Enter the email address the receipt and your items go to.');
  return email;
}

/** The variant field options chosen on a link's form (field name -> option value); "Choose…" is no choice. */
function chosenOptions(body: Record<string, unknown>): Record<string, string> {
  const options: Record<string, string> = {};
  for (const [name, value] of Object.entries(body))
    if (name.startsWith(optionFieldPrefix) && typeof value === 'string' && value !== '')
      options[name.slice(optionFieldPrefix.length)] = value;
  return options;
}

const chooseVariant = 'Variant: choose one of the variants listed.';

/**
 * The order's refusal of a link's choices, in the buyer's words (`Size is required: choose one of M, XL`), or
 * undefined when it is not about what the buyer chose. Other details (the merchant's catalog, not the buyer's
 * choice) keep the refusal's own message.
 */
function choiceProblems(err: unknown, link: PaymentLinkRow): string[] | undefined {
  // A variant id the product has not, sent for a link that lets the buyer choose.
  if (err instanceof ApiError && err.code === 'VARIANT_NOT_FOUND' && link.variant_id === null) return [chooseVariant];
  if (!(err instanceof ValidationError)) return undefined;
  const at = 'items[0].options.';
  return (err.details ?? []).map((d) =>
    d.field.startsWith(at)
      ? `${d.field.slice(at.length)} ${d.message}`
      : d.field === 'items[0].variant_id'
        ? chooseVariant
        : err.message,
  );
}

export function checkoutRouter(deps: CheckoutDeps): Router {
  const { db, services } = deps;
  const router = Router();
  const form = pageForm({ limit: '2kb', parameterLimit: 10 });
  // A link's form also carries one choice per variant field of its product (names up to 100 characters).
  const linkForm = pageForm({ limit: '16kb', parameterLimit: 64 });

  const route =
    (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
    async (req, res) => {
      try {
        await fn(req, res);
      } catch (err) {
        if (err instanceof CheckoutRefusal) return sendPage(res, err.status, messagePage(err.title, err.message));
        if (err instanceof PaymentLinkUnavailable)
          return sendPage(res, 410, messagePage('Payment link unavailable', unavailableLinkMessage(err.reason)));
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
    if (!order) throw notFound.invoice();
    const items = (await itemsOfOrders(db, order.shop_id, [order.id])).get(order.id) ?? [];
    return { order, items };
  }

  router.get(
    '/invoice/:uniqid',
    route(async (req, res) => {
      const { order, items } = await findInvoice(param(req, 'uniqid'));
      const [shop, brand, gateways, attempts] = await Promise.all([
        shopById(db, order.shop_id),
        pageBrandOf(db, order.shop_id, services.config.publicUrl),
        order.status === 'PENDING' ? activeGateways(db, order.shop_id) : Promise.resolve([]),
        attemptsOfOrder(db, order.shop_id, order.id),
      ]);
      sendPage(
        res,
        200,
        invoicePage({
          brand,
          livemode: shop?.livemode ?? true,
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
      // Only invoices without a buyer show the email field; an email sent for one that has a buyer is ignored.
      const email = body.email === undefined ? undefined : buyerEmail(body);
      res.redirect(303, await startPayment(deps, param(req, 'uniqid'), gateway, requestIdOf(res), email, buyerIp(req)));
    }),
  );

  // The buyer back from a payment provider's page: the session is read and settled now (the webhook may come later
  // or never), then the invoice page shows what it is.
  router.get(
    '/invoice/:uniqid/return/:attemptId',
    route(async (req, res) => {
      const uniqid = param(req, 'uniqid');
      if (!uniqidShape.test(uniqid)) throw notFound.invoice();
      const attemptId = param(req, 'attemptId');
      if (idShape('pay').test(attemptId)) await settleReturn(deps, uniqid, attemptId);
      res.redirect(303, checkoutUrl(deps.services.config.checkoutBaseUrl, uniqid));
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
      if (!file) throw notFound.file();
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
      const path = `/sandbox/checkout/${encodeURIComponent(param(req, 'sessionId'))}`;
      sendPage(
        res,
        200,
        sandboxPage({
          attempt,
          livemode: attempt.livemode,
          currency: attempt.currency,
          path,
          invoiceUrl: invoiceUrl(attempt.uniqid),
          disputeSection: await sandboxDisputeSection(db, attempt, path),
        }),
      );
    }),
  );

  async function findLink(uniqid: string) {
    const link = await paymentLinkByUniqid(db, uniqid);
    if (!link) throw notFound.link();
    return link;
  }

  /** The link's page; after a refused submission, the same page with what to correct and what was filled in. */
  async function linkPage(
    res: Response,
    link: PaymentLinkRow,
    refused?: { problems: string[]; filled: PaymentLinkPage['filled'] },
  ): Promise<void> {
    const [shop, brand] = await Promise.all([
      shopById(db, link.shop_id),
      pageBrandOf(db, link.shop_id, services.config.publicUrl),
    ]);
    // A test shop's link expires on its test clock.
    const unavailable = linkUnavailability(link, clockAhead(services.clock, Number(shop?.clock_offset_ms ?? 0)).now());
    const offer = shop && (await paymentLinkOffer(db, link, shop));
    sendPage(
      res,
      unavailable ? 410 : refused ? 422 : 200,
      paymentLinkPage({
        brand,
        livemode: shop?.livemode ?? true,
        link,
        offer,
        unavailable,
        path: `/link/${encodeURIComponent(link.uniqid)}`,
        ...refused,
      }),
    );
  }

  router.get(
    '/link/:linkUniqid',
    route(async (req, res) => linkPage(res, await findLink(param(req, 'linkUniqid')))),
  );

  router.post(
    '/link/:linkUniqid',
    linkForm,
    route(async (req, res) => {
      const link = await findLink(param(req, 'linkUniqid'));
      const body = (req.body ?? {}) as Record<string, unknown>;
      const email = buyerEmail(body);
      const options = chosenOptions(body);
      const variantId = typeof body.variant === 'string' && body.variant !== '' ? body.variant : undefined;
      const shop = await shopById(db, link.shop_id);
      let order;
      try {
        order = await deps.unitOfWork.write(
          {
            ...checkoutOrigin(link.shop_id, 'checkoutPaymentLink', requestIdOf(res)),
            clock: clockAhead(services.clock, Number(shop?.clock_offset_ms ?? 0)),
          },
          (w) =>
            orderFromPaymentLink(
              w,
              link.id,
              { email, ipAddress: buyerIp(req), variantId, options },
              {
                checkoutBaseUrl: services.config.checkoutBaseUrl,
                orderTtlMinutes: services.config.orderTtlMinutes,
              },
            ),
        );
      } catch (err) {
        // A missing or unknown choice: the page again, saying which, with what the buyer filled in.
        const problems = choiceProblems(err, link);
        if (problems) return linkPage(res, link, { problems, filled: { email, variantId, options } });
        throw err;
      }
      res.redirect(303, invoiceUrl(order.uniqid));
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
  // The gateway disputes a paid session's order, and decides the dispute (src/pages/checkout/disputes.ts).
  const field = (req: Request, name: string): string | undefined => {
    const v = ((req.body ?? {}) as Record<string, unknown>)[name];
    return typeof v === 'string' ? v.trim().toUpperCase() : undefined;
  };
  router.post(
    '/sandbox/checkout/:sessionId/dispute',
    form,
    route(async (req, res) => {
      const sessionId = param(req, 'sessionId');
      await openDisputeOnSession(deps, sessionId, field(req, 'reason'), requestIdOf(res));
      res.redirect(303, `${services.config.publicUrl}/sandbox/checkout/${encodeURIComponent(sessionId)}`);
    }),
  );
  router.post(
    '/sandbox/checkout/:sessionId/dispute/close',
    form,
    route(async (req, res) => {
      const sessionId = param(req, 'sessionId');
      await closeDisputeOnSession(deps, sessionId, field(req, 'outcome') ?? '', requestIdOf(res));
      res.redirect(303, `${services.config.publicUrl}/sandbox/checkout/${encodeURIComponent(sessionId)}`);
    }),
  );
  // Each parameter's not-found page is the one its look-up gives for an id that names nothing.
  const missing: Record<string, () => CheckoutRefusal> = {
    uniqid: notFound.invoice,
    linkUniqid: notFound.link,
    sessionId: notFound.session,
    attachmentId: notFound.file,
  };
  return guardPages(router, {
    params: {
      uniqid: uniqidShape,
      linkUniqid: uniqidShape,
      sessionId: sandboxSessionShape,
      attachmentId: idShape('att'),
    },
    answer: (_req, res, refusal) => {
      const page = refusal.status === 404 && refusal.param ? missing[refusal.param]?.() : undefined;
      sendPage(
        res,
        refusal.status,
        page
          ? messagePage(page.title, page.message)
          : messagePage(
              refusalTitle(refusal.status),
              'This address or form is not valid. Check the link you followed.',
            ),
      );
    },
    logger: services.logger,
  });
}
