// `GET /orders/{id}` and `GET /invoices/{id}`: one invoice, rendered by the lists' own view (lists.ts), so a retrieve
// answers field for field what the list answers for the same id, license-key rule included.
import { invoiceById } from '../../../db/queries/order-pages';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { NotFoundError } from '../../errors';
import type { OrderView } from '../../views/order';
import { orderViews, type OrderListOptions } from './lists';

async function invoiceOfShop(
  db: ReadDb,
  shopId: string,
  id: string,
  kind: 'ORDER' | undefined,
  options: OrderListOptions,
): Promise<OrderView> {
  const row = await invoiceById(db, shopId, id, kind);
  // The shop scope makes another shop's (and another mode's: a test twin is a shop of its own) invoice not found,
  // the same answer as an id that exists nowhere.
  if (!row) throw new NotFoundError('INVOICE_NOT_FOUND');
  const [view] = await orderViews([row], { db, shopId, options });
  return view!;
}

/** An order of the shop (kind ORDER): a generic payment is not one, as `GET /orders` does not list it. */
export const getOrder = (db: ReadDb, shopId: string, id: string, options: OrderListOptions) =>
  invoiceOfShop(db, shopId, id, 'ORDER', options);

/** An invoice of the shop of any kind: an order or a generic payment, as `GET /invoices` lists them. */
export const getInvoice = (db: ReadDb, shopId: string, id: string, options: OrderListOptions) =>
  invoiceOfShop(db, shopId, id, undefined, options);
