// Voids pending orders left unpaid past ORDER_TTL_MINUTES: each gives back what it held (counted stock, reserved
// serials, its coupon use, its payment-link use), becomes VOIDED / CANCELLED and emits `order:voided`, in one
// transaction per batch.
// Orders are claimed with FOR UPDATE SKIP LOCKED, so any number of workers void disjoint orders, and a payment
// completing the same order at that moment waits for the lock and then finds it no longer PENDING (or the reverse).
import type { Kysely } from 'kysely';
import * as coupons from '../../db/queries/coupons';
import * as orders from '../../db/queries/orders';
import { changePaymentLinkUses } from '../../db/queries/payment-links';
import * as products from '../../db/queries/products';
import * as serials from '../../db/queries/serials';
import type { Database, OrderRow } from '../../db/tables';
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';
import type { ShopWrite } from '../platform/unit-of-work';
import { workerWrite } from '../domain/effects';
import { orderView } from '../views/order';
import { releaseWalletHoldOfOrder } from '../domain/orders/wallet-orders';
import type { Job } from './worker';

export interface OrderExpiryOptions {
  clock: Clock;
  logger: Logger;
  checkoutBaseUrl: string;
  batchSize?: number;
}

export function orderExpiryJob(db: Kysely<Database>, options: OrderExpiryOptions): Job {
  return {
    name: 'order-expiry',
    onShopClocks: true,
    runOnce: (scope) =>
      db.transaction().execute(async (trx) => {
        const clock = scope?.clock ?? options.clock;
        const due = await orders.expiredPendingOrdersForUpdate(
          trx,
          clock.now(),
          options.batchSize ?? 50,
          scope?.shopId,
        );
        // Each order is its shop's write, its event flushed with it (src/domain/effects.ts).
        for (const order of due)
          await workerWrite(trx, order.shop_id, 'order-expiry', clock, (w) => voidOrder(w, order, options));
        if (due.length > 0) options.logger.info('voided expired orders', { count: due.length });
        return due.length;
      }),
  };
}

async function voidOrder(w: ShopWrite, order: OrderRow, options: OrderExpiryOptions) {
  const { trx, shopId, now } = w;
  const items = (await orders.itemsOfOrders(trx, shopId, [order.id])).get(order.id) ?? [];
  // Products locked in id order, as order creation locks them.
  const productIds = [...new Set(items.flatMap((i) => (i.product_id ? [i.product_id] : [])))].sort();
  await products.productsByIdsForUpdate(trx, shopId, productIds);
  await serials.releaseReservedSerials(
    trx,
    shopId,
    items.map((i) => i.id),
  );
  for (const item of items) {
    if (item.product_id !== null && item.reserved_stock > 0)
      await products.adjustStock(
        trx,
        shopId,
        { productId: item.product_id, variantId: item.variant_id },
        item.reserved_stock,
      );
    if (item.product_type === 'SERIALS' && item.product_id !== null && item.variant_id === null)
      await products.setProductStock(
        trx,
        shopId,
        item.product_id,
        await serials.availableSerialCountOf(trx, shopId, item.product_id, null),
      );
  }
  const released = await Promise.all(
    items
      .filter((i) => i.reserved_stock > 0)
      .map((i) => orders.updateOrderItem(trx, shopId, i.id, { reserved_stock: 0 })),
  );
  if (order.coupon_id !== null) await coupons.changeCouponUses(trx, shopId, order.coupon_id, -1, now);
  await releaseWalletHoldOfOrder(w, order);
  if (order.payment_link_id !== null) await changePaymentLinkUses(trx, shopId, order.payment_link_id, -1, now);
  const voided = await orders.updateOrder(trx, shopId, order.id, {
    status: 'VOIDED',
    payment_status: 'CANCELLED',
    status_details: 'Expired unpaid',
    expires_at: null,
    updated_at: now,
  });
  const current = items.map((i) => released.find((r) => r.id === i.id) ?? i);
  w.effects.emit('order:voided', orderView(voided, current, options.checkoutBaseUrl));
}
