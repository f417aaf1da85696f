// Order creation: items checked against the catalog, prices from the catalog only, a coupon, the shop's tax, the
// buyer found or created as a customer, and the stock or serials each line needs reserved, so a pending order can
// always be delivered and nothing is oversold. All in the caller's transaction; any refusal throws and rolls it back.
import Decimal from 'decimal.js';
import * as coupons from '../../../db/queries/coupons';
import * as orders from '../../../db/queries/orders';
import * as products from '../../../db/queries/products';
import * as serials from '../../../db/queries/serials';
import type { OrderRow, ProductVariantRow } from '../../../db/tables';
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
import { wholesaleColumns, wholesaleOf } from '../resellers/reseller-orders';
import { admitOrderBuyer } from '../customers/buyers';
import { couponDiscount, usableCoupon } from '../catalog/coupons';
import { checkLineExtras, extrasColumns, loadLineCatalog, pricingTerms, type LineExtras } from '../catalog/line-extras';
import { warnOfStockChanges, type StockChange } from '../catalog/stock-warnings';

export type CreateOrderInput = components['schemas']['CreateOrderRequest'];

export interface OrderDeps {
  checkoutBaseUrl: string;
  orderTtlMinutes: number;
  /** CompletionDeps.readerScopes: an order the wallet pays entirely completes at once and may show keys. */
  readerScopes?: readonly string[];
}

interface Line {
  index: number;
  product: products.OrderProductRow;
  variant: ProductVariantRow | null;
  quantity: number;
  deliveryInstructions: string | null;
  /** Chosen variant field options, add-ons and the quantity deal tiers of the product (src/domain/catalog/line-extras.ts). */
  extras: LineExtras;
}

export async function createOrder(w: ShopWrite, input: CreateOrderInput, deps: OrderDeps): Promise<OrderView> {
  const { trx, shopId, effects, now } = w;
  const gateway = input.gateway === undefined ? null : await requireActiveGateway(trx, shopId, input.gateway);
  const { lines, shop } = await checkedLines(w, input.items);
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
  const buyer = await admitOrderBuyer(
    w,
    shop,
    { email, country: input.country, ipAddress: input.ip_address },
    { reseller: true },
  );
  const customer = buyer.customer;
  const attribution = await orderAttribution(w, customer, input.affiliate_code);
  // An ACTIVE reseller buys at its tier's wholesale percent (src/domain/resellers/reseller-orders.ts).
  const wholesale = wholesaleOf(buyer.reseller);

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

  const orderId = newId('ord');
  const written = await orders.insertOrderWithItems(
    trx,
    shopId,
    {
      id: orderId,
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
    },
    lines.map((l, position) => ({
      id: newId('item'),
      order_id: orderId,
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
  const { order: inserted, items } = written;
  const stockChanges = await reserve(w, lines, items);
  if (coupon) await coupons.changeCouponUses(trx, shopId, coupon.row.id, 1, now);
  // The buyer's wallet pays first when asked (src/domain/orders/wallet-orders.ts).
  const order = input.use_wallet_balance === true ? await holdWalletForOrder(w, inserted) : inserted;

  const view = orderView(order, items, deps.checkoutBaseUrl);
  effects.emit('order:created', view);
  effects.audit({ action: 'order.created', resourceType: 'order', resourceId: order.id });
  warnOfStockChanges(w, stockChanges);
  return completeIfWalletPaid(w, order, view, deps);
}

/** The counted stock a line draws from: the variant's when it has one, else the product's (-1: unlimited). */
function stockOf(l: Line): number {
  return l.variant ? l.variant.stock : l.product.stock;
}

/**
 * Each item checked against the catalog: its product, variant and extras read (what the products have, in one
 * statement), and the stock it draws on checked as read. That check is a quick refusal only: the stock is taken
 * by `reserve`, which is what two orders racing for the last units cannot both pass.
 */
async function checkedLines(
  { trx, shopId }: ShopWrite,
  items: CreateOrderInput['items'],
): Promise<{ lines: Line[]; shop: products.OrderShopTerms }> {
  const productIds = [...new Set(items.map((i) => i.product_id))].sort();
  const found = await products.productsForOrder(trx, shopId, productIds);
  const withExtra = (flag: 'has_variants' | 'has_fields' | 'has_addons' | 'has_tiers') =>
    [...found.products.values()].filter((p) => p[flag]).map((p) => p.id);
  const variants = await products.variantsByProduct(trx, shopId, withExtra('has_variants'));
  const catalog = await loadLineCatalog(trx, shopId, {
    fields: withExtra('has_fields'),
    addons: withExtra('has_addons'),
    tiers: withExtra('has_tiers'),
  });
  const byId = found.products;
  const wanted = new Map<string, number>();
  const lines = items.map((item, index) => {
    const product = byId.get(item.product_id);
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
    if (product.type !== 'SERIALS' && stock !== -1 && total > stock) throw outOfStock(line, stock);
    return line;
  });
  // Every item's product was found, so the shop's terms came with them.
  return { lines, shop: found.shop! };
}

function outOfStock(line: Line, left: number): ApiError {
  return new ApiError('OUT_OF_STOCK', `items[${line.index}]: only ${left} of ${line.product.title} left.`);
}

/**
 * Takes what the lines need: serials reserved for their item now (a SERIALS product's stock then recounted), counted
 * stock decreased as late as the write allows (a before-commit write: in the flush's statement, so a rush on one
 * product holds its row for that statement and the commit only), all lines drawing on one stock together in one
 * conditional update. Rows are taken in one order (by product, then variant) by every order, so two orders never
 * deadlock; SERIALS products are held (their key only) before their serials are reserved, the order a serial claim
 * takes them in. Returns the serial products' stock changes; a counted stock's change warns when it is taken.
 */
async function reserve(w: ShopWrite, lines: Line[], items: { id: string }[]): Promise<StockChange[]> {
  const { trx, shopId } = w;
  const counted = new Map<string, { line: Line; variantId: string | null; quantity: number }>();
  const serialProducts = new Set<string>();
  await products.holdSerialProducts(
    trx,
    shopId,
    [...new Set(lines.filter((l) => l.product.type === 'SERIALS').map((l) => l.product.id))].sort(),
  );
  for (const [i, line] of lines.entries()) {
    const variantId = line.variant?.id ?? null;
    if (line.product.type === 'SERIALS') {
      const got = await serials.reserveSerials(trx, shopId, line.product.id, variantId, items[i]!.id, line.quantity);
      if (got < line.quantity)
        throw new ApiError(
          'OUT_OF_STOCK',
          `items[${line.index}]: only ${got} serial${got === 1 ? '' : 's'} of ${line.product.title} left.`,
        );
      if (variantId === null) serialProducts.add(line.product.id);
    } else if (stockOf(line) !== -1) {
      const key = `${line.product.id}/${variantId ?? ''}`;
      const sum = counted.get(key);
      if (sum) sum.quantity += line.quantity;
      else counted.set(key, { line, variantId, quantity: line.quantity });
    }
  }
  const changes: StockChange[] = [];
  for (const productId of [...serialProducts].sort()) {
    const recounted = await products.recountSerialStock(trx, shopId, productId);
    if (recounted) changes.push(recounted);
  }
  for (const [n, key] of [...counted.keys()].sort().entries()) {
    const draw = counted.get(key)!;
    const target = { productId: draw.line.product.id, variantId: draw.variantId };
    w.effects.beforeCommit(products.takeStock(shopId, target, draw.quantity, `stock_taken_${n}`), async ([after]) => {
      if (after === undefined) {
        // Not enough left (another order took it since it was read), or the stock became unlimited meanwhile.
        const left = await products.currentStock(trx, shopId, target);
        if (left !== -1) throw outOfStock(draw.line, left ?? 0);
      } else if ('title' in after) {
        warnOfStockChanges(w, [{ before: after.stock + draw.quantity, product: after }]);
      }
    });
  }
  return changes;
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
