import type { ReadDb } from '../db/queries/shop-scope';
import { invoiceCursorList, orderCursorList, type OrderListOptions } from '../src/domain/orders/lists';
import type { OperationContext, OperationHandler } from '../src/http/handler';
import { listPage } from '../src/platform/cursor-list';

// Not listHandler: a page's views need the checkout base from the services and the caller's scopes (license keys
// only for one that reads licenses), which listHandler's options do not see.
const listOptions = ({ services, auth }: Pick<OperationContext, 'services' | 'auth'>): OrderListOptions => ({
  checkoutBase: services.config.checkoutBaseUrl,
  readerScopes: auth.credential.scopes,
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
