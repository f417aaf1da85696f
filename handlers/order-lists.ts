import type { ReadDb } from '../db/queries/shop-scope';
import { invoiceCursorList, orderCursorList } from '../src/domain/order-lists';
import type { OperationHandler } from '../src/http/handler';
import { listPage } from '../src/platform/cursor-list';

// Not listHandler: a page's views need the checkout base from the services, which listHandler's options do not see.
export const listOrders: OperationHandler<'listOrders'> = async ({ db, auth, query, services }) => ({
  page: await listPage(orderCursorList, db as ReadDb, services.cursors, auth.shop.id, query, {
    checkoutBase: services.config.checkoutBaseUrl,
  }),
});

export const listInvoices: OperationHandler<'listInvoices'> = async ({ db, auth, query, services }) => ({
  page: await listPage(invoiceCursorList, db as ReadDb, services.cursors, auth.shop.id, query, {
    checkoutBase: services.config.checkoutBaseUrl,
  }),
});
