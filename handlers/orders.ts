import type { ReadDb } from '../db/queries/shop-scope';
import { completeInvoice, type CompletionDeps } from '../src/domain/orders/completion';
import { createOrder as create, type OrderDeps } from '../src/domain/orders/create-order';
import { fulfillOrderItem as fulfillItem, type FulfillItemInput } from '../src/domain/orders/item-fulfillment';
import { invoiceCursorList, orderCursorList, type OrderListOptions } from '../src/domain/orders/lists';
import { recordRefund, refundAtProvider, refundIdFor } from '../src/domain/orders/provider-refunds';
import type { ProviderRefundRecord } from '../src/domain/orders/refunds';
import { idempotencyKeyOf } from '../src/platform/idempotency';
import { getInvoice as invoice, getOrder as order } from '../src/domain/orders/retrieve';
import { preparedWrite, type OperationContext, type OperationHandler } from '../src/http/handler';
import { listPage } from '../src/platform/cursor-list';

// The returned order is rendered for the caller: its license keys only if its scopes read licenses
// (src/domain/licenses/issuing.ts).
const completionDeps = ({ services: s, auth }: Pick<OperationContext, 'services' | 'auth'>): CompletionDeps => ({
  checkoutBaseUrl: s.config.checkoutBaseUrl,
  readerScopes: auth.credential.scopes,
});
const orderDeps = (ctx: Pick<OperationContext, 'services' | 'auth'>): OrderDeps => ({
  ...completionDeps(ctx),
  orderTtlMinutes: ctx.services.config.orderTtlMinutes,
});

// Not listHandler: a page's views need the checkout base from the services and the caller's scopes (license keys
// only for one that reads licenses), which listHandler's options do not see.
const listOptions = ({ services, auth }: Pick<OperationContext, 'services' | 'auth'>): OrderListOptions => ({
  checkoutBase: services.config.checkoutBaseUrl,
  readerScopes: auth.credential.scopes,
  now: services.clock.now(),
});

/** Both operations run the one completion pipeline; they differ only in how the body names the mail switch. */
const complete = (
  ctx: Pick<OperationContext<'completeOrder'>, 'write' | 'auth' | 'params' | 'services'>,
  options: { note?: string; suppressEmails: boolean },
) => completeInvoice(ctx.write, ctx.params.id, options, completionDeps(ctx));

export const createOrder: OperationHandler<'createOrder'> = async (ctx) => ({
  status: 201,
  data: await create(ctx.write, ctx.body, orderDeps(ctx)),
});

export const listOrders: OperationHandler<'listOrders'> = async (ctx) => ({
  page: await listPage(
    orderCursorList,
    ctx.db as ReadDb,
    ctx.services.cursors,
    ctx.auth.shop.id,
    ctx.query,
    listOptions(ctx),
  ),
});

export const getOrder: OperationHandler<'getOrder'> = async (ctx) => ({
  data: await order(ctx.db as ReadDb, ctx.auth.shop.id, ctx.params.id, listOptions(ctx)),
});

export const completeOrder: OperationHandler<'completeOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.suppress_emails === true }),
});

// An order paid through a payment provider is refunded there first, outside the transaction (provider-refunds.ts).
export const refundOrder = preparedWrite<'refundOrder', ProviderRefundRecord | undefined>(
  ({ primary, auth, params, body, headers, services }) =>
    refundAtProvider(
      primary,
      services.realClock,
      auth.shop,
      params.id,
      body ?? {},
      refundIdFor(auth.credential.id, idempotencyKeyOf(headers)),
      services.gateways,
    ),
  // The body is optional: none refunds everything that remains.
  async ({ write, params, body }, atProvider) => ({
    data: await recordRefund(write, params.id, body ?? {}, atProvider),
  }),
);

/** A server-side trigger for an order paid outside the platform: the same pipeline as a payment. */
export const fulfillOrder: OperationHandler<'fulfillOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.notify_customer === false }),
});

export const fulfillOrderItem: OperationHandler<'fulfillOrderItem'> = async ({ write, params, body }) => ({
  // The generated type of an `anyOf` body is `unknown`; the contract has validated its shape already.
  data: await fulfillItem(write, params.id, params.itemId, body as FulfillItemInput),
});

export const listInvoices: OperationHandler<'listInvoices'> = async (ctx) => ({
  page: await listPage(
    invoiceCursorList,
    ctx.db as ReadDb,
    ctx.services.cursors,
    ctx.auth.shop.id,
    ctx.query,
    listOptions(ctx),
  ),
});

export const getInvoice: OperationHandler<'getInvoice'> = async (ctx) => ({
  data: await invoice(ctx.db as ReadDb, ctx.auth.shop.id, ctx.params.id, listOptions(ctx)),
});
