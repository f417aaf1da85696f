// What completing an invoice does for a SUBSCRIPTION line (called by the completion pipeline,
// src/domain/orders/completion.ts, in its transaction, under the order's lock):
// - the line of a renewal invoice (one the renewal job issued) renews its subscription: the period it was issued
//   for begins, a PAST_DUE subscription is ACTIVE again, and `subscription:renewed` is emitted;
// - any other line starts a subscription for the buyer (`subscription:created`) at the line's price and quantity,
//   billed by the interval of its variant or product, its first period beginning now (this payment pays it).
// The order is linked to the subscription (`subscription_id`). A line is delivered at most once (the pipeline skips
// DELIVERED lines, and a unique (shop_id, origin_item_id) holds even if it did not), so nothing starts twice.
import * as subscriptions from '../../../db/queries/subscriptions';
import type { ItemDeliveryStatus, OrderItemRow, OrderRow, ProductRow } from '../../../db/tables';
import { newId } from '../../ids';
import type { ShopWrite } from '../../platform/unit-of-work';
import { subscriptionView } from '../../views/subscription';
import { addInterval, billingOf } from './billing';

export interface SubscriptionDelivery {
  status: ItemDeliveryStatus;
  items: Record<string, unknown> | null;
  mailContent: string[];
}

const MAX_COPIED_FIELDS = 50;

export async function deliverSubscriptionLine(
  w: ShopWrite,
  order: OrderRow,
  item: OrderItemRow,
  product: ProductRow | undefined,
): Promise<SubscriptionDelivery> {
  const { trx, shopId, effects, now } = w;
  const renewal = await subscriptions.renewalByOrderForUpdate(trx, shopId, order.id);
  if (renewal) {
    const sub = await subscriptions.subscriptionByIdForUpdate(trx, shopId, renewal.subscription_id);
    if (!sub || renewal.status !== 'OPEN')
      throw new Error(`renewal ${renewal.id} of order ${order.id} is ${renewal.status}, not OPEN`);
    await subscriptions.settleRenewal(trx, shopId, renewal.id, 'PAID', now);
    const renewed = await subscriptions.updateSubscription(trx, shopId, sub.id, {
      current_period_start: renewal.period_start,
      current_period_end: renewal.period_end,
      next_renewal_at: renewal.period_end,
      unpaid_renewals: 0,
      status: sub.status === 'PAST_DUE' ? 'ACTIVE' : sub.status,
      updated_at: now,
    });
    effects.emit('subscription:renewed', subscriptionView(renewed));
    return delivered(renewed.id, renewal.period_end, 'renewed');
  }

  // A buyer is needed (orders always have one; a line without its product cannot be billed again).
  if (order.customer_id === null || order.customer_email === null || !product)
    return { status: 'AWAITING_FULFILLMENT', items: null, mailContent: [] };
  const variant =
    item.variant_id === null
      ? null
      : ((await subscriptions.variantsOfProduct(trx, shopId, product.id)).find((v) => v.id === item.variant_id) ??
        null);
  const billing = billingOf(product, variant);
  const end = addInterval(now, billing.interval, billing.count);
  const created = await subscriptions.insertSubscription(trx, shopId, {
    id: newId('sub'),
    customer_id: order.customer_id,
    customer_email: order.customer_email,
    product_id: product.id,
    variant_id: variant?.id ?? null,
    origin_order_id: order.id,
    origin_item_id: item.id,
    status: 'ACTIVE',
    unit_price: item.unit_price,
    quantity: item.quantity,
    currency: order.currency,
    interval: billing.interval,
    interval_count: billing.count,
    current_period_start: now,
    current_period_end: end,
    next_renewal_at: end,
    custom_fields: JSON.stringify(copiedFields(order.custom_fields)),
    created_at: now,
    updated_at: now,
  });
  await subscriptions.linkOrderToSubscription(trx, shopId, order.id, created.id);
  effects.emit('subscription:created', subscriptionView(created));
  return delivered(created.id, end, 'active');
}

function delivered(subscriptionId: string, until: Date, what: 'active' | 'renewed'): SubscriptionDelivery {
  const date = until.toISOString();
  return {
    status: 'DELIVERED',
    items: { subscription_id: subscriptionId, current_period_end: date },
    mailContent: [`Subscription ${subscriptionId} ${what} until ${date}.`],
  };
}

/** The order's custom fields with text values (at most 50) become the subscription's own. */
function copiedFields(fields: Record<string, unknown> | null): Record<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (out.size >= MAX_COPIED_FIELDS) break;
    if (typeof value === 'string' && key.length >= 1 && key.length <= 100 && value.length <= 1000) out.set(key, value);
  }
  return Object.fromEntries(out) as Record<string, string>;
}
