// Coupon rules, in one place for the two operations that apply them: POST /orders (src/domain/orders/create-order.ts) and
// GET /coupons/code/{code}. Both call usableCoupon (the code exists in the shop and is enabled, unexpired, with uses
// left) and then couponDiscount (the coupon applies to the lines, and what it takes off, through the same pricing
// function as the order's totals), so the check can never accept what an order refuses, or the other way round.
import type { Transaction } from 'kysely';
import * as coupons from '../../../db/queries/coupons';
import * as products from '../../../db/queries/products';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { CouponRow, Database, ProductRow, ProductVariantRow } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import type { Clock } from '../../platform/clock';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import { couponValue, couponView, type CouponView } from '../../views/coupon';
import { jsonAmount } from '../../platform/money';
import { allExtrasOf, checkLineExtras, loadLineCatalog, pricingTerms, type LineExtras } from './line-extras';
import { priceOrder, type CouponTerms, type PricedLine } from './pricing';

export interface UsableCoupon {
  row: CouponRow;
  terms: CouponTerms;
}

/**
 * The shop's coupon with this code (case-insensitive), if it can be used now: 404 COUPON_NOT_FOUND when there is
 * none or it is disabled (another shop's code is not found either), 400 COUPON_EXPIRED at or after `expires_at`,
 * 400 COUPON_MAX_USES_REACHED when `uses` reached `max_uses` (a pending order holds a use). In a transaction the
 * coupon is locked, so an order's use is counted one at a time.
 */
export async function usableCoupon(
  db: ReadDb | Transaction<Database>,
  shopId: string,
  code: string,
  now: Date,
): Promise<UsableCoupon> {
  const row =
    'isTransaction' in db && db.isTransaction
      ? await coupons.couponByCodeForUpdate(db as Transaction<Database>, shopId, code)
      : await coupons.couponByCode(db, shopId, code);
  // The message does not echo the code: an unknown code and another shop's read the same.
  if (!row || !row.enabled) throw new NotFoundError('COUPON_NOT_FOUND', 'There is no coupon with this code.');
  if (row.expires_at !== null && row.expires_at.getTime() <= now.getTime())
    throw new ApiError('COUPON_EXPIRED', `The coupon ${code} expired on ${row.expires_at.toISOString()}.`);
  if (row.max_uses !== null && row.uses >= row.max_uses)
    throw new ApiError('COUPON_MAX_USES_REACHED', `The coupon ${code} has been used ${row.uses} times, its maximum.`);
  const productIds = await coupons.couponProductIds(db, shopId, row.id);
  return { row, terms: { type: row.type, value: row.value, productIds } };
}

/**
 * What the coupon takes off these lines (numeric text), or 400 COUPON_NOT_APPLICABLE when it applies to none of
 * them (it is limited to other products), or is a FIXED coupon in another currency than the lines'. The discount
 * is the one POST /orders computes (order-pricing.ts): a percentage of the eligible lines rounded half up to the
 * currency's minor unit, or the fixed amount capped at the eligible lines' total.
 */
export function couponDiscount(coupon: UsableCoupon, lines: readonly PricedLine[], currency: string): string {
  const { row, terms } = coupon;
  if (row.type === 'FIXED' && row.currency !== currency)
    throw new ApiError(
      'COUPON_NOT_APPLICABLE',
      `The coupon ${row.code} is a fixed ${row.currency} amount; the items are priced in ${currency}.`,
    );
  if (terms.productIds.length > 0 && !lines.some((l) => terms.productIds.includes(l.productId)))
    throw new ApiError('COUPON_NOT_APPLICABLE', `The coupon ${row.code} does not apply to any of these products.`);
  return priceOrder(lines, currency, terms, { rate: '0', inclusive: false }).discount;
}

// ---------------------------------------------------------------------------------------------------------------
// GET /coupons
// ---------------------------------------------------------------------------------------------------------------

export const couponList: ListSpec = {
  name: 'coupons',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const couponCursorList: CursorList<coupons.CouponPageRow, CouponView> = {
  spec: couponList,
  page: coupons.couponsPage,
  async view(rows, { db, shopId }) {
    const limits = await coupons.productIdsOfCoupons(
      db,
      shopId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => couponView(r, limits.get(r.id) ?? []));
  },
};

// ---------------------------------------------------------------------------------------------------------------
// GET /coupons/code/{code}
// ---------------------------------------------------------------------------------------------------------------

export interface CouponCheckQuery {
  product_id?: string;
  cart?: string;
}

interface CartItem {
  product_id: string;
  variant_id?: string;
  quantity: number;
  /** As an order item's: variant field name -> option value. */
  options?: Record<string, string>;
  /** As an order item's: add-on ids. */
  addons?: string[];
}

const cartField = 'query.cart';

/** `cart` text -> items, or a 422 with a detail on `query.cart` saying what is wrong. */
export function parseCart(text: string): CartItem[] {
  const bad = (message: string): never => {
    throw new ValidationError([{ field: cartField, message }], `The cart is not valid: ${message}.`);
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad('is not JSON text');
  }
  if (!Array.isArray(value)) return bad('must be a JSON array of { product_id, variant_id?, quantity }');
  if (value.length < 1 || value.length > 100) bad('must hold 1 to 100 items');
  return value.map((raw: unknown, i): CartItem => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad(`items[${i}] must be an object`);
    const item = raw as Record<string, unknown>;
    const extra = Object.keys(item).filter(
      (k) => !['product_id', 'variant_id', 'quantity', 'options', 'addons'].includes(k),
    );
    if (extra.length > 0) bad(`items[${i}] has an unknown field ${extra[0]}`);
    const id = (v: unknown) => typeof v === 'string' && v.length >= 1 && v.length <= 64;
    if (!id(item.product_id)) bad(`items[${i}].product_id must be a product id`);
    if (item.variant_id !== undefined && !id(item.variant_id)) bad(`items[${i}].variant_id must be a variant id`);
    const q = item.quantity === undefined ? 1 : item.quantity;
    if (typeof q !== 'number' || !Number.isInteger(q) || q < 1 || q > 100000)
      bad(`items[${i}].quantity must be an integer from 1 to 100000`);
    const options = item.options;
    if (
      options !== undefined &&
      (typeof options !== 'object' ||
        options === null ||
        Array.isArray(options) ||
        Object.values(options).some((v) => typeof v !== 'string'))
    )
      bad(`items[${i}].options must be an object of field name -> option value`);
    const addons = item.addons;
    if (addons !== undefined && !(Array.isArray(addons) && addons.every((a) => id(a))))
      bad(`items[${i}].addons must be an array of add-on ids`);
    return {
      product_id: item.product_id as string,
      ...(item.variant_id !== undefined ? { variant_id: item.variant_id as string } : {}),
      quantity: q as number,
      ...(options !== undefined ? { options: options as Record<string, string> } : {}),
      ...(addons !== undefined ? { addons: addons as string[] } : {}),
    };
  });
}

/**
 * The lines of a cart at catalog prices, as POST /orders prices them: each product of the shop (404
 * PRODUCT_NOT_FOUND), its variant exactly when it has variants (404 VARIANT_NOT_FOUND; a missing one is a 422 on
 * `query.cart`), all in one currency (422 otherwise), with the chosen variant field options, the add-ons (required
 * ones included) and the quantity deal tiers, checked by the same function as an order's items
 * (src/domain/catalog/line-extras.ts; its refusals become 422s on `query.cart`). Stock, quantity limits and holds are not
 * checked here: the check says what the coupon does, not whether the order would be accepted for other reasons.
 */
async function cartLines(
  db: ReadDb,
  shopId: string,
  items: readonly CartItem[],
): Promise<{ lines: PricedLine[]; currency: string }> {
  const found = new Map<string, ProductRow>();
  for (const id of new Set(items.map((i) => i.product_id))) {
    const product = await products.productById(db, shopId, id);
    if (product) found.set(id, product);
  }
  const variants = await products.variantsByProduct(db, shopId, [...found.keys()]);
  const catalog = await loadLineCatalog(db, shopId, allExtrasOf([...found.keys()]));
  let currency: string | undefined;
  const lines = items.map((item, i): PricedLine => {
    const product = found.get(item.product_id);
    if (!product)
      throw new NotFoundError('PRODUCT_NOT_FOUND', `cart items[${i}]: product ${item.product_id} does not exist.`);
    const own = variants.get(product.id) ?? [];
    let variant: ProductVariantRow | undefined;
    if (own.length > 0) {
      if (item.variant_id === undefined)
        throw new ValidationError([
          { field: cartField, message: `items[${i}].variant_id is required: the product has variants` },
        ]);
      variant = own.find((v) => v.id === item.variant_id);
      if (!variant)
        throw new NotFoundError(
          'VARIANT_NOT_FOUND',
          `cart items[${i}]: the product has no variant ${item.variant_id}.`,
        );
    } else if (item.variant_id !== undefined) {
      throw new NotFoundError('VARIANT_NOT_FOUND', `cart items[${i}]: the product has no variants.`);
    }
    currency ??= product.currency;
    if (product.currency !== currency)
      throw new ValidationError([
        { field: cartField, message: `items[${i}] is priced in ${product.currency}; the cart is in ${currency}` },
      ]);
    let extras: LineExtras;
    try {
      extras = checkLineExtras(catalog, item, i, product);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      throw new ValidationError(
        (err.details ?? []).map((d) => ({ field: cartField, message: `${d.field} ${d.message}` })),
        `The cart is not valid: ${err.message}`,
      );
    }
    return {
      productId: product.id,
      unitPrice: variant?.price ?? product.price,
      quantity: item.quantity,
      ...pricingTerms(extras),
    };
  });
  return { lines, currency: currency! };
}

/**
 * GET /coupons/code/{code}: with `cart`, the coupon checked against the cart as POST /orders would apply it (same
 * functions) and the discount it would give; with `product_id`, against one unit of the product at its own price;
 * with neither, shop-wide (no discount). Sending both is a 422.
 */
export async function checkCoupon(db: ReadDb, shopId: string, code: string, query: CouponCheckQuery, clock: Clock) {
  if (query.cart !== undefined && query.product_id !== undefined)
    throw new ValidationError([{ field: cartField, message: 'send either cart or product_id, not both' }]);
  const items: CartItem[] | null =
    query.cart !== undefined
      ? parseCart(query.cart)
      : query.product_id !== undefined
        ? [{ product_id: query.product_id, quantity: 1 }]
        : null;
  let priced: { lines: PricedLine[]; currency: string } | null = null;
  if (items !== null) {
    if (query.cart === undefined) {
      // A product check: one unit at the product's own price (its variants are not chosen).
      const product = await products.productById(db, shopId, items[0]!.product_id);
      if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND', `There is no product ${items[0]!.product_id}.`);
      priced = {
        lines: [{ productId: product.id, unitPrice: product.price, quantity: 1 }],
        currency: product.currency,
      };
    } else {
      priced = await cartLines(db, shopId, items);
    }
  }
  const coupon = await usableCoupon(db, shopId, code, clock.now());
  const discount = priced === null ? null : couponDiscount(coupon, priced.lines, priced.currency);
  return {
    coupon: {
      code: coupon.row.code,
      type: coupon.row.type,
      value: couponValue(coupon.row),
      currency: coupon.row.currency,
      product_ids: [...coupon.terms.productIds],
    },
    discount: discount === null ? null : { amount: jsonAmount(discount), currency: priced!.currency },
  };
}
