// The invoice-completion pipeline: the one way an invoice becomes paid, whoever says so (POST /orders/{id}/complete,
// POST /orders/{id}/fulfill, a gateway's payment on the hosted checkout). Under the order's row lock, in the
// caller's transaction (the one holding the idempotency record): the payment attempt is recorded, every line item
// is delivered by its product type, the coupon, customer and affiliate are credited, and the receipt, delivery mail
// and events are written through the outbox. A second completion waits for the lock and then finds the order no
// longer PENDING, so two racing completions never both win.
import * as orders from '../../../db/queries/orders';
import * as attempts from '../../../db/queries/payment-attempts';
import * as products from '../../../db/queries/products';
import type { ShopRow } from '../../../db/queries/shop-scope';
import type { ItemDeliveryStatus, OrderRow } from '../../../db/tables';
import { ApiError, NotFoundError } from '../../errors';
import { newId } from '../../ids';
import { mailDraft } from '../../mail/templates';
import { decimalString, jsonAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { checkoutUrl, orderView, type OrderView } from '../../views/order';
import { queueDynamicDelivery } from './dynamic-delivery';
import { withLicenseKeys, withLicenses } from '../licenses/issuing';
import { deliverSubscriptionLine } from '../subscriptions/start';
import { accrueCommission } from '../affiliates/commissions';
import { countResellerOrder } from '../resellers/reseller-orders';
import { amountDue, captureWalletHold } from './wallet-orders';

export interface CompletionOptions {
  /** The gateway that was paid (a manual completion records `MANUAL` unless the order names one). */
  gateway?: string;
  /** The payment attempt (gateway session) that paid, when a gateway reported it. */
  attemptId?: string;
  note?: string;
  /** `true`: no receipt or delivery mail to the buyer. */
  suppressEmails?: boolean;
}

export interface CompletionDeps {
  checkoutBaseUrl: string;
  /**
   * The scopes of the credential the returned view is for: its `license_keys` only if they may read licenses
   * (src/domain/licenses/issuing.ts). Absent: no reader (a buyer's payment, a fixture), so no keys.
   */
  readerScopes?: readonly string[];
}

interface Delivered {
  status: ItemDeliveryStatus;
  items: Record<string, unknown> | null;
  /** Lines of the delivery mail for this item (empty: nothing to mail yet). */
  mailContent: string[];
}

/** Completes a PENDING invoice; anything else is ORDER_NOT_PENDING and changes nothing. */
export async function completeInvoice(
  w: ShopWrite,
  orderId: string,
  options: CompletionOptions,
  deps: CompletionDeps,
): Promise<OrderView> {
  const { trx, shopId, effects, now } = w;
  const locked = await orders.orderWithShopNameForUpdate(trx, shopId, orderId);
  if (!locked) throw new NotFoundError('INVOICE_NOT_FOUND');
  const { shop_name: shopName, ...order } = locked;
  if (order.status !== 'PENDING')
    throw new ApiError('ORDER_NOT_PENDING', `The order is ${order.status}; only a PENDING order can be completed.`);
  const gateway = options.gateway ?? order.gateway ?? 'MANUAL';

  // A gateway's attempt is marked PAID now; a manual completion's attempt is written with the lines below.
  const payment = await recordPayment(w, order, gateway, options.attemptId);

  // The lines with their products, and the serials they reserved claimed, in one round trip.
  const lines = await orders.claimCompletionLines(trx, shopId, order.id, now);
  const items = lines.map((l) => l.item);
  const deliveries: orders.LineDelivery[] = [];
  const mailItems: { title: string; content: string[] }[] = [];
  for (const line of lines) {
    const { item, product } = line;
    const delivered = await deliver(w, order, line, deps.checkoutBaseUrl);
    // A license product's units each issue a key (src/domain/licenses/issuing.ts); other items pass unchanged.
    const d = await withLicenses(w, order, item, product, delivered);
    deliveries.push({
      id: item.id,
      delivery_status: d.status,
      delivered_at: d.status === 'DELIVERED' ? now : null,
      delivered_items: d.items,
    });
    if (d.mailContent.length > 0) mailItems.push({ title: item.product_title, content: d.mailContent });
  }
  const { order: completed, items: deliveredItems } = await orders.completeOrderAndLines(
    trx,
    shopId,
    order.id,
    deliveries,
    payment,
    {
      status: 'COMPLETED',
      status_details: null,
      payment_status: 'PAID',
      gateway,
      note: options.note ?? order.note,
      completed_at: now,
      expires_at: null,
      updated_at: now,
    },
  );
  await credit(w, completed);
  // A reseller's order: lifetime figures, then tier auto-advance (src/domain/resellers/reseller-orders.ts).
  await countResellerOrder(w, completed);
  // The part the buyer's wallet held for the order is taken from it now (src/domain/orders/wallet-orders.ts).
  await captureWalletHold(w, completed);

  if (completed.customer_email !== null && options.suppressEmails !== true) {
    if (completed.kind === 'ORDER' || items.length > 0)
      effects.mail(
        mailDraft(completed.customer_email, 'receipt', {
          shopName,
          uniqid: completed.uniqid,
          items: items.map((i) => ({
            title: i.variant_title ? `${i.product_title} (${i.variant_title})` : i.product_title,
            quantity: i.quantity,
            price: decimalString(i.total, completed.currency),
          })),
          total: decimalString(completed.total, completed.currency),
          currency: completed.currency,
        }),
      );
    if (mailItems.length > 0)
      effects.mail(
        mailDraft(completed.customer_email, 'delivery', { shopName, uniqid: completed.uniqid, items: mailItems }),
      );
  }
  if (completed.customer_email !== null)
    effects.emit('order:paid', {
      uniqid: completed.uniqid,
      customer_email: completed.customer_email,
      total: jsonAmount(completed.total),
      currency: completed.currency,
    });
  const view = orderView(completed, deliveredItems, deps.checkoutBaseUrl);
  // The event never holds keys (src/platform/event-data.ts), so it takes the view before they are added.
  effects.emit('order:completed', view);
  effects.audit({ action: 'order.completed', resourceType: 'order', resourceId: order.id, detail: { gateway } });
  return (await withLicenseKeys(trx, shopId, [{ view, items: deliveredItems }], deps.readerScopes ?? [], now))[0]!;
}

/**
 * The attempt that paid is PAID now; without one (a manual completion) the PAID attempt to record for the invoice is
 * returned, written with the lines (orders.completeOrderAndLines).
 */
async function recordPayment(
  w: ShopWrite,
  order: OrderRow,
  gateway: string,
  attemptId: string | undefined,
): Promise<ShopRow<'payment_attempts'> | undefined> {
  const { trx, shopId, now } = w;
  if (attemptId !== undefined) {
    const attempt = await attempts.attemptByIdForUpdate(trx, shopId, attemptId);
    if (!attempt || attempt.order_id !== order.id) throw new Error(`attempt ${attemptId} is not of order ${order.id}`);
    await attempts.updatePaymentAttempt(trx, shopId, attemptId, { status: 'PAID', paid_at: now });
    return undefined;
  }
  return {
    id: newId('pay'),
    order_id: order.id,
    gateway,
    session_id: null,
    status: 'PAID',
    // What the gateway took: the total less the wallet's part.
    amount: amountDue(order),
    created_at: now,
    paid_at: now,
  };
}

/** One line item delivered by its product's type. */
async function deliver(
  w: ShopWrite,
  order: OrderRow,
  { item, product, claimedSerials }: orders.CompletionLine,
  checkoutBaseUrl: string,
): Promise<Delivered> {
  const { trx, shopId } = w;
  if (item.delivery_status === 'DELIVERED')
    return { status: 'DELIVERED', items: item.delivered_items, mailContent: [] };
  const text = product?.delivery_text ? [product.delivery_text] : [];
  switch (item.product_type) {
    case 'SERIALS': {
      // Claimed with the lines (orders.claimCompletionLines).
      const values = claimedSerials;
      // Reserved for this line at creation (each serial to one line); fewer means the reservation was lost: refuse, roll back.
      if (values.length !== item.quantity)
        throw new Error(`order item ${item.id}: ${values.length} reserved serials for quantity ${item.quantity}`);
      return {
        status: 'DELIVERED',
        items: { codes: values, ...(text.length ? { message: text[0] } : {}) },
        mailContent: [...values, ...text],
      };
    }
    case 'FILE': {
      const files = product ? await products.productFiles(trx, shopId, product.id) : [];
      if (files.length === 0) return { status: 'AWAITING_FULFILLMENT', items: null, mailContent: [] };
      return {
        status: 'DELIVERED',
        items: { files: files.map((f) => ({ attachment_id: f.attachment_id, filename: f.filename })) },
        mailContent: [
          ...files.map((f) => `${f.filename}: ${fileLink(checkoutBaseUrl, order, f.attachment_id)}`),
          ...text,
        ],
      };
    }
    case 'DYNAMIC': {
      if (!product?.dynamic_webhook) return { status: 'AWAITING_FULFILLMENT', items: null, mailContent: [] };
      await queueDynamicDelivery(w, {
        orderUniqid: order.uniqid,
        orderId: order.id,
        item,
        url: product.dynamic_webhook,
        customerEmail: order.customer_email,
      });
      return { status: 'PENDING', items: null, mailContent: [] };
    }
    case 'SERVICE':
      return { status: 'AWAITING_FULFILLMENT', items: null, mailContent: [] };
    case 'SUBSCRIPTION':
      // Starts the buyer's subscription, or renews the one this renewal invoice was issued for.
      return deliverSubscriptionLine(w, order, item, product);
  }
}

/** Where the buyer downloads a delivered file: the invoice's page serves it (src/http/checkout.ts). */
function fileLink(checkoutBaseUrl: string, order: OrderRow, attachmentId: string): string {
  return `${checkoutUrl(checkoutBaseUrl, order.uniqid)}/files/${attachmentId}`;
}

/**
 * The referring affiliate's commission. (The customer's totals are computed from its paid orders, see
 * db/queries/customers.ts: setting `completed_at` above is what counts this order.)
 */
async function credit(w: ShopWrite, order: OrderRow): Promise<void> {
  // One ACCRUAL entry in the affiliate's commission ledger (src/domain/affiliates/commissions.ts).
  await accrueCommission(w, order);
  // Reseller revenue is counted by completeInvoice (countResellerOrder: it records an audit line of auto-advance).
}
