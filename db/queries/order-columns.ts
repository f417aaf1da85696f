// The columns the order views read (src/views/order.ts), here with the queries that select them: a page of orders
// reads no column it does not show, and the views' parameter types are built from these lists, so a view reading
// another column is a compile error.
import type { OrderItemRow, OrderRow } from '../tables';

/** The columns an order's view reads: what a page of orders selects (order-pages.ts). */
export const orderViewColumns = [
  'id',
  'uniqid',
  'shop_id',
  'customer_id',
  'affiliate_link_id',
  'affiliate_customer_id',
  'affiliate_code',
  'affiliate_discount_amount',
  'customer_email',
  'currency',
  'status',
  'status_details',
  'payment_status',
  'gateway',
  'blockchain',
  'flow_type',
  'provider_reference',
  'provider_reference_type',
  'subtotal',
  'discount',
  'tax',
  'tax_percentage',
  'total',
  'balance_paid',
  'coupon_id',
  'subscription_id',
  'custom_fields',
  'is_developer_invoice',
  'developer_title',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof OrderRow)[];

/** The columns a line item's view reads (as orderViewColumns). */
export const orderItemViewColumns = [
  'id',
  'product_id',
  'product_title',
  'product_type',
  'variant_title',
  'quantity',
  'unit_price',
  'total',
  'custom_fields',
  'delivery_instructions',
  'delivery_instructions_label',
  'delivery_status',
  'delivered_at',
  'delivered_items',
  'variant_options',
  'addons',
  'quantity_discount',
] as const satisfies readonly (keyof OrderItemRow)[];
