import { completeInvoice, type CompletionDeps } from '../src/domain/order-completion';
import { createOrder as create, type OrderDeps } from '../src/domain/orders';
import type { OperationContext, OperationHandler, Services } from '../src/http/handler';

const orderDeps = (s: Services): OrderDeps => ({
  clock: s.clock,
  checkoutBaseUrl: s.config.checkoutBaseUrl,
  orderTtlMinutes: s.config.orderTtlMinutes,
});
const completionDeps = (s: Services): CompletionDeps => ({ clock: s.clock, checkoutBaseUrl: s.config.checkoutBaseUrl });

export const createOrder: OperationHandler<'createOrder'> = async ({ db, auth, body, effects, services }) => ({
  status: 201,
  data: await create(db, auth.shop.id, body, effects, orderDeps(services)),
});

/** Both operations run the one completion pipeline; they differ only in how the body names the mail switch. */
const complete = (
  {
    db,
    auth,
    params,
    effects,
    services,
  }: Pick<OperationContext<'completeOrder'>, 'db' | 'auth' | 'params' | 'effects' | 'services'>,
  options: { note?: string; suppressEmails: boolean },
) => completeInvoice(db, auth.shop.id, params.id, options, effects, completionDeps(services));

export const completeOrder: OperationHandler<'completeOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.suppress_emails === true }),
});

/** A server-side trigger for an order paid outside the platform: the same pipeline as a payment. */
export const fulfillOrder: OperationHandler<'fulfillOrder'> = async (ctx) => ({
  data: await complete(ctx, { note: ctx.body?.note, suppressEmails: ctx.body?.notify_customer === false }),
});
