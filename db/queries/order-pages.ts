// The order lists' two queries per page: a keyset page of the shop's invoices (all kinds, or orders alone) and the
// line items of that page's invoices; and one invoice by id with the same columns, so a retrieve is rendered by the
// page's own view and answers exactly what the list answers for that id.
import { sql } from 'kysely';
import type { OrderItemRow, OrdersTable } from '../tables';
import type { Keyset } from './keyset';
import { orderItemViewColumns, orderViewColumns } from './order-columns';
import { prepare } from './prepared';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, type ReadDb } from './shop-scope';

export type OrderPageRow = PageRow<'orders', (typeof orderViewColumns)[number]>;

/** An invoice with the columns its view reads: a page's row without its cursor value. */
export type InvoiceViewRow = Omit<OrderPageRow, 'cursor_value'>;

/** One keyset page of the shop's invoices, orders and generic payments alike: the columns their views show. */
export const invoicesPage = pageOf('orders', orderViewColumns);

// `kind` is a fixed condition of the orders list, not a filter of the request: as the keyset's first filter it is
// part of the compiled shape, and it matches the leading columns of the orders_shop_kind_<sort>_idx indexes.
const orderKind: Keyset['filters'][number] = { column: 'kind', op: '=', value: 'ORDER' };

/** One keyset page of the shop's orders (invoices of kind ORDER). */
export function ordersPage(db: ReadDb, shopId: string, keyset: Keyset): Promise<OrderPageRow[]> {
  return invoicesPage(db, shopId, { ...keyset, filters: [orderKind, ...keyset.filters] });
}

/**
 * The shop's invoice with this id, or undefined (another shop's or mode's is not found, like a missing one). With a
 * `kind`, an invoice of another kind is not found either: `GET /orders/{id}` does not show a generic payment, as
 * `GET /orders` does not list one.
 */
export function invoiceById(
  db: ReadDb,
  shopId: string,
  id: string,
  kind?: OrdersTable['kind'],
): Promise<InvoiceViewRow | undefined> {
  let query = inShop(db, shopId).selectFrom('orders').select(orderViewColumns).where('id', '=', id);
  if (kind) query = query.where('kind', '=', kind);
  return query.executeTakeFirst();
}

// Runs on every list page: compiled once (prepared.ts), the page's ids bound as one array, so every page size is
// the same SQL.
const itemsOfOrderIds = prepare(['shopId', 'orderIds'], (db, shopId, orderIds) =>
  inShop(db, shopId)
    .selectFrom('order_items')
    .select([...orderItemViewColumns, 'order_id', 'license_count'])
    .where('order_id', '=', sql<string>`any(${orderIds})`)
    .orderBy('order_id')
    .orderBy('position'),
) as (db: ReadDb, shopId: string, orderIds: string[]) => Promise<OrderPageItem[]>;

/** A line of a page's orders: what its view shows, and what groups it and finds its license keys. */
export type OrderPageItem = Pick<OrderItemRow, (typeof orderItemViewColumns)[number] | 'order_id' | 'license_count'>;

/** The items of the given orders, in line order, by order id (an order without items maps to none). */
export async function itemsOfOrderPage(
  db: ReadDb,
  shopId: string,
  orderIds: string[],
): Promise<Map<string, OrderPageItem[]>> {
  const byOrder = new Map<string, OrderPageItem[]>();
  if (orderIds.length === 0) return byOrder;
  for (const row of await itemsOfOrderIds(db, shopId, orderIds)) {
    const list = byOrder.get(row.order_id);
    if (list) list.push(row);
    else byOrder.set(row.order_id, [row]);
  }
  return byOrder;
}
