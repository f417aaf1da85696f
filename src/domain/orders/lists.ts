// `GET /orders` and `GET /invoices`: the allow-lists of filters and sorts (documented on the OrderFilters /
// OrderSorts and InvoiceFilters / InvoiceSorts parameters) and the page views. Orders are the invoices of kind
// ORDER; invoices are all kinds (orders and generic payments).
import * as pages from '../../../db/queries/order-pages';
import type { OrderStatus, PaymentStatus } from '../../../db/tables';
import type { CursorList, ViewContext } from '../../platform/cursor-list';
import type { FilterField, ListSpec, SortField } from '../../platform/list-query';
import { orderView, type OrderView } from '../../views/order';
import { withLicenseKeys } from '../licenses/issuing';

export const orderStatuses = [
  'PENDING',
  'PROCESSING',
  'PARTIAL',
  'COMPLETED',
  'PARTIALLY_REFUNDED',
  'REFUNDED',
  'DISPUTED',
  'VOIDED',
] as const satisfies readonly OrderStatus[];

export const paymentStatuses = [
  'PENDING',
  'PROCESSING',
  'PARTIAL',
  'PAID',
  'FAILED',
  'CANCELLED',
  'PARTIALLY_REFUNDED',
  'REFUNDED',
] as const satisfies readonly PaymentStatus[];

// Each filter has an index (shop_id, column, created_at, id) for the default order (migration 0007).
const orderFilters: Readonly<Record<string, FilterField>> = {
  status: { column: 'status', type: 'enum', values: orderStatuses, description: 'an order status' },
  payment_status: { column: 'payment_status', type: 'enum', values: paymentStatuses, description: 'a payment status' },
  // Stored lower-cased; the filter value is lower-cased when parsed.
  customer_email: { column: 'customer_email', type: 'email', description: 'exact email (case-insensitive)' },
  customer_id: { column: 'customer_id', type: 'id' },
  gateway: { column: 'gateway', type: 'id', description: 'gateway identifier (e.g. STRIPE)' },
  currency: { column: 'currency', type: 'currency', description: 'ISO 4217' },
  coupon_id: { column: 'coupon_id', type: 'id' },
};

const orderSorts: Readonly<Record<string, SortField>> = {
  created_at: { column: 'created_at', cast: 'timestamptz' },
  updated_at: { column: 'updated_at', cast: 'timestamptz' },
  total: { column: 'total', cast: 'numeric' },
};

export const orderListSpec: ListSpec = {
  name: 'orders',
  filters: orderFilters,
  sorts: orderSorts,
  defaultSort: '-created_at',
};

export const invoiceListSpec: ListSpec = {
  name: 'invoices',
  filters: { ...orderFilters, is_developer_invoice: { column: 'is_developer_invoice', type: 'boolean' } },
  sorts: orderSorts,
  defaultSort: '-created_at',
};

export interface OrderListOptions {
  /** services.config.checkoutBaseUrl: each order's checkout_url. */
  checkoutBase: string;
  /** The scopes of the credential the page is for: `license_keys` only if they may read licenses. */
  readerScopes: readonly string[];
  /** The time the page's license keys are shown as of (which are EXPIRED). */
  now: Date;
}

/**
 * A page's orders with their items: one more query for the items of the whole page. Also renders the one invoice of
 * a retrieve (retrieve.ts), so an order reads the same in a list and on its own.
 */
export async function orderViews(
  rows: pages.InvoiceViewRow[],
  { db, shopId, options }: ViewContext<OrderListOptions>,
): Promise<OrderView[]> {
  const items = await pages.itemsOfOrderPage(
    db,
    shopId,
    rows.map((r) => r.id),
  );
  // License keys only for a reader that may read licenses, and only for the orders whose items issued some
  // (src/domain/licenses/issuing.ts): no query otherwise.
  return withLicenseKeys(
    db,
    shopId,
    rows.map((row) => ({
      view: orderView(row, items.get(row.id) ?? [], options.checkoutBase),
      items: items.get(row.id) ?? [],
    })),
    options.readerScopes,
    options.now,
  );
}

/** `GET /orders`: a page of the shop's orders (kind ORDER) with their items. */
export const orderCursorList: CursorList<pages.OrderPageRow, OrderView, OrderListOptions> = {
  spec: orderListSpec,
  page: pages.ordersPage,
  view: orderViews,
};

/** `GET /invoices`: a page of all the shop's invoices (orders and generic payments) with their items. */
export const invoiceCursorList: CursorList<pages.OrderPageRow, OrderView, OrderListOptions> = {
  spec: invoiceListSpec,
  page: pages.invoicesPage,
  view: orderViews,
};
