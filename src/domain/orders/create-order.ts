// Order creation: items checked against the catalog, prices from the catalog only, a coupon, the shop's tax, the
// buyer found or created as a customer, and the stock or serials each line needs reserved, so a pending order can
// always be delivered and nothing is oversold. All in the caller's transaction; any refusal throws and rolls it back.
import Decimal from 'decimal.js';
import * as coupons from '../../../db/queries/coupons';
import * as orders from '../../../db/queries/orders';
import * as products from '../../../db/queries/products';
import * as serials from '../../../db/queries/serials';
import { shopById } from '../../../db/queries/shops';
import type { OrderRow, ProductRow, ProductVariantRow } from '../../../db/tables';
import type { components } from '../../generated/api-types';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId, newUniqid } from '../../ids';
import type { ShopWrite } from '../../platform/unit-of-work';
import { orderView, type OrderView } from '../../views/order';
import { orderAttribution } from '../affiliates/commissions';
import { BALANCE_GATEWAY, holdWalletForOrder } from './wallet-orders';
import { completeInvoice, type CompletionDeps } from './completion';
import { requireActiveGateway } from '../payments/gateways';
import { priceOrder } from '../catalog/pricing';
import { wholesaleColumns, wholesaleFor } from '../resellers/reseller-orders';
import { admitBuyer } from '../customers/buyers';
import { couponDiscount, usableCoupon } from '../catalog/coupons';
import { checkLineExtras, extrasColumns, loadLineCatalog, pricingTerms, type LineExtras } from '../catalog/line-extras';
import { warnOfLowStock } from '../catalog/stock-warnings';

export type CreateOrderInput = components['schemas']['CreateOrderRequest'];

export interface OrderDeps {
  checkoutBaseUrl: string;
  orderTtlMinutes: number;
  /** CompletionDeps.readerScopes: an order the wallet pays entirely completes at once and may show keys. */
  readerScopes?: readonly string[];
}

interface Line {
  index: number;
  product: ProductRow;
  variant: ProductVariantRow | null;
  quantity: number;
  deliveryInstructions: string | null;
  /** Chosen variant field options, add-ons and the quantity deal tiers of the product (src/domain/catalog/line-extras.ts). */
  extras: LineExtras;
}

export async function createOrder(w: ShopWrite, input: CreateOrderInput, deps: OrderDeps): Promise<OrderView> {
  const { trx, shopId, effects, now } = w;
  const shop = await shopById(trx, shopId);
  if (!shop) throw new Error(`shop ${shopId} vanished`);
  const gateway = input.gateway === undefined ? null : await requireActiveGateway(trx, shopId, input.gateway);
  const lines = await checkedLines(w, input.items);
  const currency = lines[0]!.product.currency;
  lines.forEach((l) => {
    if (l.product.currency !== currency)
      throw new ValidationError([
        {
          field: `items[${l.index}].product_id`,
          message: `is priced in ${l.product.currency}; the order is in ${currency}`,
        },
      ]);
  });

  // The coupon rules of GET /coupons/code/{code} too (src/domain/catalog/coupons.ts): usable, and applying to these lines.
  const coupon = input.coupon_code === undefined ? null : await usableCoupon(trx, shopId, input.coupon_code, now);
  if (coupon)
    couponDiscount(
      coupon,
      lines.map((l) => ({
        productId: l.product.id,
        unitPrice: l.variant?.price ?? l.product.price,
        quantity: l.quantity,
      })),
      currency,
    );

  const email = input.email.toLowerCase();
  const customer = await admitBuyer(w, shop, { email, country: input.country, ipAddress: input.ip_address });
  const attribution = await orderAttribution(w, customer, input.affiliate_code);
  // An ACTIVE reseller buys at its tier's wholesale percent (src/domain/resellers/reseller-orders.ts).
  const wholesale = await wholesaleFor(w, email);

  const totals = priceOrder(
    lines.map((l) => ({
      productId: l.product.id,
      unitPrice: l.variant?.price ?? l.product.price,
      quantity: l.quantity,
      ...pricingTerms(l.extras),
    })),
    currency,
    coupon?.terms ?? null,
    { rate: shop.tax_rate, inclusive: shop.tax_inclusive },
    wholesale?.reseller_discount_percent ?? null,
  );

  const inserted = await orders.insertOrder(trx, shopId, {
    id: newId('ord'),
    uniqid: newUniqid(),
    kind: 'ORDER',
    customer_id: customer.id,
    customer_email: email,
    ...attribution,
    ...wholesaleColumns(wholesale),
    currency,
    status: 'PENDING',
    status_details: 'Awaiting payment',
    payment_status: 'PENDING',
    gateway: gateway?.code ?? null,
    flow_type: 'DEVELOPER',
    subtotal: totals.subtotal,
    discount: totals.discount,
    tax: totals.tax,
    tax_percentage: shop.tax_rate,
    tax_inclusive: shop.tax_inclusive,
    total: totals.total,
    coupon_id: coupon?.row.id ?? null,
    custom_fields: input.custom_fields === undefined ? null : JSON.stringify(input.custom_fields),
    is_developer_invoice: true,
    developer_title: input.title ?? null,
    expires_at: new Date(now.getTime() + deps.orderTtlMinutes * 60_000),
    created_at: now,
    updated_at: now,
  });
  const items = await orders.insertOrderItems(
    trx,
    shopId,
    lines.map((l, position) => ({
      id: newId('item'),
      order_id: inserted.id,
      position,
      product_id: l.product.id,
      variant_id: l.variant?.id ?? null,
      product_title: l.product.title,
      product_type: l.product.type,
      variant_title: l.variant?.title ?? null,
      quantity: l.quantity,
      unit_price: totals.lines[position]!.unitPrice,
      total: totals.lineTotals[position]!,
      ...extrasColumns(l.extras, totals.lines[position]!),
      custom_fields: null,
      delivery_instructions: l.deliveryInstructions,
      delivery_instructions_label: l.deliveryInstructions === null ? null : l.product.delivery_instructions,
      reserved_stock: l.product.type === 'SERIALS' || stockOf(l) === -1 ? 0 : l.quantity,
      created_at: now,
    })),
  );
  await reserve(w, lines, items);
  if (coupon) await coupons.changeCouponUses(trx, shopId, coupon.row.id, 1, now);
  // The buyer's wallet pays first when asked (src/domain/orders/wallet-orders.ts).
  const order = input.use_wallet_balance === true ? await holdWalletForOrder(w, inserted) : inserted;

  const view = orderView(order, items, deps.checkoutBaseUrl);
  effects.emit('order:created', view);
  effects.audit({ action: 'order.created', resourceType: 'order', resourceId: order.id });
  await warnOfLowStock(w, lines);
  return completeIfWalletPaid(w, order, view, deps);
}

/** The counted stock a line draws from: the variant's when it has one, else the product's (-1: unlimited). */
function stockOf(l: Line): number {
  return l.variant ? l.variant.stock : l.product.stock;
}

/** Each item checked against the catalog, products locked (in id order) so stock is read and taken atomically. */
async function checkedLines({ trx, shopId }: ShopWrite, items: CreateOrderInput['items']): Promise<Line[]> {
  const productIds = [...new Set(items.map((i) => i.product_id))].sort();
  const locked = await products.productsByIdsForUpdate(trx, shopId, productIds);
  const variants = await products.variantsByProduct(trx, shopId, [...locked.keys()]);
  const catalog = await loadLineCatalog(trx, shopId, [...locked.keys()]);
  const wanted = new Map<string, number>();
  return items.map((item, index) => {
    const product = locked.get(item.product_id);
    if (!product)
      throw new NotFoundError('PRODUCT_NOT_FOUND', `items[${index}]: product ${item.product_id} does not exist.`);
    const own = variants.get(product.id) ?? [];
    let variant: ProductVariantRow | null = null;
    if (own.length > 0) {
      if (item.variant_id === undefined)
        throw new ValidationError([
          { field: `items[${index}].variant_id`, message: 'is required: the product has variants' },
        ]);
      variant = own.find((v) => v.id === item.variant_id) ?? null;
      if (!variant)
        throw new NotFoundError('VARIANT_NOT_FOUND', `items[${index}]: the product has no variant ${item.variant_id}.`);
    } else if (item.variant_id !== undefined) {
      throw new NotFoundError('VARIANT_NOT_FOUND', `items[${index}]: the product has no variants.`);
    }
    if (product.on_hold)
      throw new ApiError('PRODUCT_UNAVAILABLE', `items[${index}]: ${product.title} is on hold and cannot be bought.`);
    if (item.quantity < product.quantity_min || (product.quantity_max !== -1 && item.quantity > product.quantity_max))
      throw new ApiError(
        'QUANTITY_OUT_OF_RANGE',
        `items[${index}]: ${product.title} is sold in quantities from ${product.quantity_min}` +
          (product.quantity_max === -1 ? ' up.' : ` to ${product.quantity_max}.`),
      );
    const line: Line = {
      index,
      product,
      variant,
      quantity: item.quantity,
      deliveryInstructions: item.delivery_instructions ?? null,
      extras: checkLineExtras(catalog, item, index, product),
    };
    // Counted stock (serials are counted when reserved): all lines drawing on one stock together.
    const key = `${product.id}/${variant?.id ?? ''}`;
    const total = (wanted.get(key) ?? 0) + item.quantity;
    wanted.set(key, total);
    const stock = stockOf(line);
    if (product.type !== 'SERIALS' && stock !== -1 && total > stock)
      throw new ApiError('OUT_OF_STOCK', `items[${index}]: only ${stock} of ${product.title} left.`);
    return line;
  });
}

/** Takes what the lines need: serials reserved for their item, counted stock decreased. */
async function reserve({ trx, shopId }: ShopWrite, lines: Line[], items: { id: string }[]): Promise<void> {
  for (const [i, line] of lines.entries()) {
    const variantId = line.variant?.id ?? null;
    if (line.product.type === 'SERIALS') {
      const got = await serials.reserveSerials(trx, shopId, line.product.id, variantId, items[i]!.id, line.quantity);
      if (got < line.quantity)
        throw new ApiError(
          'OUT_OF_STOCK',
          `items[${line.index}]: only ${got} serial${got === 1 ? '' : 's'} of ${line.product.title} left.`,
        );
      if (variantId === null)
        await products.setProductStock(
          trx,
          shopId,
          line.product.id,
          await serials.availableSerialCountOf(trx, shopId, line.product.id, null),
        );
    } else {
      await products.adjustStock(trx, shopId, { productId: line.product.id, variantId }, -line.quantity);
    }
  }
}

/**
 * After creation: an order whose total the buyer's wallet covered entirely completes at once, in the request that
 * created it (gateway `BALANCE`): nothing is left to pay on a checkout. Any other order is returned as it is.
 */
async function completeIfWalletPaid(
  w: ShopWrite,
  order: OrderRow,
  view: OrderView,
  deps: CompletionDeps,
): Promise<OrderView> {
  const paid = new Decimal(order.balance_paid);
  if (paid.isZero() || !paid.eq(order.total)) return view;
  return completeInvoice(w, order.id, { gateway: BALANCE_GATEWAY }, deps);
}
