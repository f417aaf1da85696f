// The renewal cycle of one subscription, run by the renewal job (src/worker/subscription-renewals.ts) under the
// subscription's row lock, in the job's transaction:
// 1. a PAUSED subscription whose `resume_at` has come is ACTIVE again; when its paid period ended during the pause,
//    the next period starts at `resume_at` (the paused time is not billed, nor given away);
// 2. an open renewal invoice that the expiry job voided unpaid is EXPIRED: the subscription is PAST_DUE and a new
//    invoice for the same period is issued at once, until MAX_UNPAID_RENEWALS invoices in a row expired, which
//    cancels it (`subscription:cancelled`). An invoice that expires while the subscription is paused does not count;
// 3. an ACTIVE or PAST_DUE subscription without an open invoice whose next renewal is due gets its renewal invoice:
//    an order (PENDING, payable for RENEWAL_PAYMENT_WINDOW_MS) of the subscribed product at the subscription's price,
//    priced by the order pricing (the shop's tax, no coupon), `order:created` like every order. Paying it goes
//    through the completion pipeline, which renews the subscription (src/domain/subscriptions/start.ts).
// Paused subscriptions get no invoice. The database refuses a second open invoice or a second live invoice for one
// period (migration 0014), so however many workers run, a period is billed once.
import * as orders from '../../../db/queries/orders';
import * as products from '../../../db/queries/products';
import { shopById } from '../../../db/queries/shops';
import * as subscriptions from '../../../db/queries/subscriptions';
import type { SubscriptionRow } from '../../../db/tables';
import { newId, newUniqid } from '../../ids';
import type { ShopWrite } from '../../platform/unit-of-work';
import { orderView } from '../../views/order';
import { mailDraft } from '../../mail/templates';
import { decimalString } from '../../platform/money';
import { subscriptionView } from '../../views/subscription';
import { priceOrder } from '../catalog/pricing';
import { addInterval, later, MAX_UNPAID_RENEWALS, RENEWAL_PAYMENT_WINDOW_MS } from './billing';

/** What a renewal needs beyond its ShopWrite (which brings the time). */
export interface RenewalDeps {
  checkoutBaseUrl: string;
}

/** What the cycle did to one subscription (nothing: it was claimed but had nothing due any more). */
export interface RenewalOutcome {
  resumed: boolean;
  expiredInvoice: boolean;
  cancelled: boolean;
  invoiceId: string | null;
}

/**
 * Runs steps 1-3 for a subscription the caller holds locked (FOR UPDATE), as of the write's `now`, in a write of
 * the subscription's shop (its events go out with the write's effects).
 */
export async function runRenewalCycle(
  w: ShopWrite,
  locked: SubscriptionRow,
  deps: RenewalDeps,
): Promise<RenewalOutcome> {
  const { trx, shopId, effects, now } = w;
  if (locked.shop_id !== shopId) throw new Error(`subscription ${locked.id} is not of shop ${shopId}`);
  const outcome: RenewalOutcome = { resumed: false, expiredInvoice: false, cancelled: false, invoiceId: null };
  let sub = locked;

  if (sub.status === 'PAUSED' && sub.resume_at !== null && sub.resume_at.getTime() <= now.getTime()) {
    sub = await subscriptions.updateSubscription(trx, shopId, sub.id, {
      status: 'ACTIVE',
      paused_at: null,
      resume_at: null,
      pause_reason: null,
      next_renewal_at: later(sub.next_renewal_at, sub.resume_at),
      updated_at: now,
    });
    outcome.resumed = true;
  }

  let open = await subscriptions.openRenewalOf(trx, shopId, sub.id);
  if (open && open.order_status === 'VOIDED') {
    await subscriptions.settleRenewal(trx, shopId, open.id, 'EXPIRED', now);
    outcome.expiredInvoice = true;
    open = undefined;
    if (sub.status !== 'PAUSED') {
      const unpaid = sub.unpaid_renewals + 1;
      if (unpaid >= MAX_UNPAID_RENEWALS) {
        sub = await subscriptions.updateSubscription(trx, shopId, sub.id, {
          status: 'CANCELLED',
          cancelled_at: now,
          unpaid_renewals: unpaid,
          updated_at: now,
        });
        effects.emit('subscription:cancelled', subscriptionView(sub));
        outcome.cancelled = true;
        return outcome;
      }
      sub = await subscriptions.updateSubscription(trx, shopId, sub.id, {
        status: 'PAST_DUE',
        unpaid_renewals: unpaid,
        updated_at: now,
      });
    }
  }

  const billable = sub.status === 'ACTIVE' || sub.status === 'PAST_DUE';
  if (billable && !open && sub.next_renewal_at.getTime() <= now.getTime())
    outcome.invoiceId = await issueRenewalInvoice(w, sub, deps);
  return outcome;
}

/** The renewal invoice of the period starting at `next_renewal_at`; returns the order's id. */
async function issueRenewalInvoice(w: ShopWrite, sub: SubscriptionRow, deps: RenewalDeps): Promise<string> {
  const { trx, shopId, effects, now } = w;
  const shop = await shopById(trx, shopId);
  const product = await products.productById(trx, shopId, sub.product_id);
  if (!shop || !product) throw new Error(`subscription ${sub.id}: its shop or product is gone`);
  const variant =
    sub.variant_id === null
      ? null
      : ((await subscriptions.variantsOfProduct(trx, shopId, product.id)).find((v) => v.id === sub.variant_id) ?? null);
  const periodStart = sub.next_renewal_at;
  const periodEnd = addInterval(periodStart, sub.interval, sub.interval_count);
  const totals = priceOrder(
    [{ productId: product.id, unitPrice: sub.unit_price, quantity: sub.quantity }],
    sub.currency,
    null,
    { rate: shop.tax_rate, inclusive: shop.tax_inclusive },
  );
  const order = await orders.insertOrder(trx, shopId, {
    id: newId('ord'),
    uniqid: newUniqid(),
    kind: 'ORDER',
    customer_id: sub.customer_id,
    customer_email: sub.customer_email,
    currency: sub.currency,
    status: 'PENDING',
    status_details: 'Awaiting payment',
    payment_status: 'PENDING',
    gateway: null,
    flow_type: 'SUBSCRIPTION_RENEWAL',
    subtotal: totals.subtotal,
    discount: totals.discount,
    tax: totals.tax,
    tax_percentage: shop.tax_rate,
    tax_inclusive: shop.tax_inclusive,
    total: totals.total,
    coupon_id: null,
    custom_fields: null,
    is_developer_invoice: false,
    developer_title: null,
    subscription_id: sub.id,
    expires_at: new Date(now.getTime() + RENEWAL_PAYMENT_WINDOW_MS),
    created_at: now,
    updated_at: now,
  });
  const items = await orders.insertOrderItems(trx, shopId, [
    {
      id: newId('item'),
      order_id: order.id,
      position: 0,
      product_id: product.id,
      variant_id: variant?.id ?? null,
      product_title: product.title,
      product_type: product.type,
      variant_title: variant?.title ?? null,
      quantity: sub.quantity,
      unit_price: sub.unit_price,
      total: totals.lineTotals[0]!,
      custom_fields: null,
      delivery_instructions: null,
      delivery_instructions_label: null,
      reserved_stock: 0,
      created_at: now,
    },
  ]);
  await subscriptions.insertRenewal(trx, shopId, {
    id: newId('srn'),
    subscription_id: sub.id,
    order_id: order.id,
    period_start: periodStart,
    period_end: periodEnd,
    status: 'OPEN',
    created_at: now,
  });
  const view = orderView(order, items, deps.checkoutBaseUrl);
  effects.emit('order:created', view);
  // The buyer is told, as a subscription platform tells them: the invoice to pay, where, and by when.
  if (sub.customer_email !== null && view.checkout_url)
    effects.mail(
      mailDraft(sub.customer_email, 'renewal_invoice', {
        shopName: shop.name,
        uniqid: order.uniqid,
        productTitle: variant ? `${product.title} (${variant.title})` : product.title,
        total: decimalString(order.total, order.currency),
        currency: order.currency,
        payUrl: view.checkout_url,
        dueBy: (order.expires_at ?? now).toISOString(),
      }),
    );
  return order.id;
}
