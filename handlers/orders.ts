import { completeInvoice, type CompletionDeps } from '../src/domain/orders/completion';
import { createOrder as create, type OrderDeps } from '../src/domain/orders/create-order';
import type { OperationContext, OperationHandler } from '../src/http/handler';

// The returned order is rendered for the caller: its license keys only if its scopes read licenses
// (src/domain/licenses/issuing.ts).
const completionDeps = ({ services: s, auth }: Pick<OperationContext, 'services' | 'auth'>): CompletionDeps => ({
  clock: s.clock,
  checkoutBaseUrl: s.config.checkoutBaseUrl,
  readerScopes: auth.credential.scopes,
});
const orderDeps = (ctx: Pick<OperationContext, 'services' | 'auth'>): OrderDeps => ({
  ...completionDeps(ctx),
  orderTtlMinutes: ctx.services.config.orderTtlMinutes,
});

export const createOrder: OperationHandler<'createOrder'> = async (ctx) => ({
  status: 201,
  data: await create(ctx.db, ctx.auth.shop.id, ctx.body, ctx.effects, orderDeps(ctx)),
});

/** Both operations run the one completion pipeline; they differ only in how the body names the mail switch. */
const complete = (
  ctx: Pick<OperationContext<'completeOrder'>, 'db' | 'auth' | 'params' | 'effects' | 'services'>,
  options: { note?: string; suppressEmails: boolean },
) => completeInvoice(ctx.db, ctx.auth.shop.id, ctx.params.id, options, ctx.effects, completionDeps(ctx));

export const completeOrder: OperationHandler<'completeOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.suppress_emails === true }),
});

/** A server-side trigger for an order paid outside the platform: the same pipeline as a payment. */
export const fulfillOrder: OperationHandler<'fulfillOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.notify_customer === false }),
});
