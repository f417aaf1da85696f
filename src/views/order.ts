// Orders (invoices) and their line items -> the contract's Order and OrderItem. Amounts are exact JSON numbers.
import type { OrderItemRow, OrderRow } from '../../db/tables';
import { orderItemViewColumns, orderViewColumns } from '../../db/queries/order-columns';
import { jsonAmount } from '../platform/money';
import { unixSeconds } from './time';

/** The hosted checkout address of an invoice: `{checkoutBase}/invoice/<uniqid>`. */
export function checkoutUrl(checkoutBase: string, uniqid: string): string {
  return `${checkoutBase}/invoice/${uniqid}`;
}

/**
 * What orderView reads: exactly the columns a page of orders selects (db/queries/order-columns.ts), so reading
 * another column is a compile error.
 */
export type OrderFields = Pick<OrderRow, (typeof orderViewColumns)[number]>;

/** What orderItemView reads (as OrderFields). */
export type OrderItemFields = Pick<
  OrderItemRow,
  Exclude<(typeof orderItemViewColumns)[number], 'variant_options' | 'addons' | 'quantity_discount'>
> &
  // What the item was bought with (catalog extras, migration 0009); optional so rows without them still render.
  Partial<Pick<OrderItemRow, 'variant_options' | 'addons' | 'quantity_discount'>>;

/**
 * A line item as the contract's OrderItem. The catalog extras and delivered items are keys only when the line has
 * them; they are set on the one object rather than spread into copies (a page renders 150 of these).
 */
export function orderItemView(row: OrderItemFields) {
  const view: {
    id: string;
    product_id: string | null;
    product_title: string;
    product_type: OrderItemRow['product_type'];
    variant_title: string | null;
    quantity: number;
    unit_price: number;
    total: number;
    custom_fields: OrderItemRow['custom_fields'];
    delivery_instructions: string | null;
    delivery_instructions_label: string | null;
    delivery_status: OrderItemRow['delivery_status'];
    delivered_at: string | null;
    variant_options?: { field_id: string; name: string; option_id: string; value: string; price_adjustment: number }[];
    addons?: { id: string; title: string; unit_price: number; total: number }[];
    quantity_discount?: number;
    delivered_items?: NonNullable<OrderItemRow['delivered_items']>;
  } = {
    id: row.id,
    product_id: row.product_id,
    product_title: row.product_title,
    product_type: row.product_type,
    variant_title: row.variant_title,
    quantity: row.quantity,
    unit_price: jsonAmount(row.unit_price),
    total: jsonAmount(row.total),
    custom_fields: row.custom_fields,
    delivery_instructions: row.delivery_instructions,
    delivery_instructions_label: row.delivery_instructions_label,
    delivery_status: row.delivery_status,
    delivered_at: row.delivered_at ? row.delivered_at.toISOString() : null,
  };
  if (row.variant_options && row.variant_options.length > 0) {
    view.variant_options = row.variant_options.map((o) => ({
      field_id: o.field_id,
      name: o.name,
      option_id: o.option_id,
      value: o.value,
      price_adjustment: jsonAmount(o.price_adjustment),
    }));
  }
  if (row.addons && row.addons.length > 0) {
    view.addons = row.addons.map((a) => ({
      id: a.id,
      title: a.title,
      unit_price: jsonAmount(a.unit_price),
      total: jsonAmount(a.total),
    }));
  }
  if (row.quantity_discount !== undefined && /[1-9]/.test(row.quantity_discount)) {
    view.quantity_discount = jsonAmount(row.quantity_discount);
  }
  if (row.delivered_items) view.delivered_items = row.delivered_items;
  return view;
}

export function orderView(row: OrderFields, items: OrderItemFields[], checkoutBase: string) {
  return {
    id: row.id,
    uniqid: row.uniqid,
    shop_id: row.shop_id,
    customer_id: row.customer_id,
    affiliate_link_id: row.affiliate_link_id,
    affiliate_customer_id: row.affiliate_customer_id,
    affiliate_code: row.affiliate_code,
    affiliate_discount_amount: jsonAmount(row.affiliate_discount_amount),
    customer_email: row.customer_email,
    currency: row.currency,
    status: row.status,
    status_details: row.status_details,
    payment_status: row.payment_status,
    gateway: row.gateway,
    blockchain: row.blockchain,
    apm_method: null,
    flow_type: row.flow_type,
    provider_reference: row.provider_reference,
    provider_reference_type: row.provider_reference_type,
    subtotal: jsonAmount(row.subtotal),
    discount: jsonAmount(row.discount),
    // One currency: the display values are the amounts themselves (exchange rate 1).
    discount_display: jsonAmount(row.discount),
    tax: jsonAmount(row.tax),
    tax_percentage: jsonAmount(row.tax_percentage),
    total: jsonAmount(row.total),
    total_display: jsonAmount(row.total),
    exchange_rate: 1,
    crypto_exchange_rate: 0,
    balance_paid_amount: jsonAmount(row.balance_paid),
    coupon_id: row.coupon_id,
    subscription_id: row.subscription_id ?? null,
    custom_fields: row.custom_fields,
    is_developer_invoice: row.is_developer_invoice,
    developer_title: row.developer_title,
    checkout_url: checkoutUrl(checkoutBase, row.uniqid),
    items: items.map(orderItemView),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type OrderView = ReturnType<typeof orderView>;
