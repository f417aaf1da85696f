// The money of an order, in one pure function: line totals, the coupon's discount, tax (inclusive or exclusive) and
// the total, with decimal arithmetic rounded to the currency's minor unit (JPY 0, USD 2, BTC 8). Never a float.
import Decimal from 'decimal.js';
import { roundToMinor } from '../../platform/money';

export interface PricedLine {
  productId: string;
  /** Catalog price of one unit (numeric text). */
  unitPrice: string;
  quantity: number;
  /** Price adjustments of the chosen variant field options (numeric text, may be negative), added to unitPrice. */
  optionAdjustments?: readonly string[];
  /** The tiers of the enabled quantity deals that cover the product: the best one the quantity reaches applies. */
  tiers?: readonly QuantityTier[];
  /** Per-unit prices of the add-ons taken with the line (numeric text). */
  addonPrices?: readonly string[];
}

/** A quantity break: from `minQuantity` units, a percentage of the line or a fixed amount off each unit. */
export interface QuantityTier {
  dealId: string;
  minQuantity: number;
  type: 'PERCENTAGE' | 'FIXED';
  value: string;
}

/** One line's money (numeric text). */
export interface LinePricing {
  /** The catalog unit price plus the option adjustments, never below 0. */
  unitPrice: string;
  /** The winning tier's discount on the line (0 when none applies). */
  quantityDiscount: string;
  tier: QuantityTier | null;
  /** Each add-on's price x quantity, rounded to the minor unit. */
  addonTotals: string[];
  /** unitPrice x quantity (rounded) - quantityDiscount + addonTotals. */
  total: string;
}

export interface CouponTerms {
  type: 'PERCENTAGE' | 'FIXED';
  value: string;
  /** Products it is limited to; empty: all. */
  productIds: readonly string[];
}

export interface TaxTerms {
  /** Percent. */
  rate: string;
  inclusive: boolean;
}

export interface OrderTotals {
  lineTotals: string[];
  lines: LinePricing[];
  subtotal: string;
  discount: string;
  tax: string;
  total: string;
}

const text = (d: Decimal) => d.toFixed();

/**
 * A line's money, in this order: the unit price with the chosen options' adjustments (at least 0); the goods,
 * unit price x quantity rounded to the minor unit; the best quantity tier the quantity reaches (the largest
 * discount; on a tie the higher minimum, then the lower deal id), a PERCENTAGE of the goods rounded half up, or a
 * FIXED amount off each unit (value x quantity, rounded, at most the goods); then each add-on's price x quantity,
 * rounded. The coupon comes later, on the line totals (priceOrder).
 */
export function priceLine(line: PricedLine, currency: string): LinePricing {
  const unit = Decimal.max(
    (line.optionAdjustments ?? []).reduce((sum, a) => sum.plus(a), new Decimal(line.unitPrice)),
    0,
  );
  const goods = roundToMinor(unit.times(line.quantity), currency);
  let tier: QuantityTier | null = null;
  let off = new Decimal(0);
  for (const t of line.tiers ?? []) {
    if (t.minQuantity > line.quantity) continue;
    const d =
      t.type === 'PERCENTAGE'
        ? roundToMinor(goods.times(t.value).dividedBy(100), currency)
        : Decimal.min(roundToMinor(new Decimal(t.value).times(line.quantity), currency), goods);
    const better =
      tier === null ||
      d.gt(off) ||
      (d.eq(off) &&
        (t.minQuantity > tier.minQuantity || (t.minQuantity === tier.minQuantity && t.dealId < tier.dealId)));
    if (better) {
      tier = t;
      off = d;
    }
  }
  const addonTotals = (line.addonPrices ?? []).map((p) => roundToMinor(new Decimal(p).times(line.quantity), currency));
  const total = addonTotals.reduce((sum, a) => sum.plus(a), goods.minus(off));
  return {
    unitPrice: text(unit),
    quantityDiscount: text(off),
    tier: off.gt(0) ? tier : null,
    addonTotals: addonTotals.map(text),
    total: text(total),
  };
}

export function priceOrder(
  lines: readonly PricedLine[],
  currency: string,
  coupon: CouponTerms | null,
  tax: TaxTerms,
  /** A reseller's wholesale percent (src/domain/resellers/reseller-orders.ts): off what remains after the coupon. */
  wholesalePercent: string | null = null,
): OrderTotals {
  const priced = lines.map((l) => priceLine(l, currency));
  const lineTotals = priced.map((l) => new Decimal(l.total));
  const subtotal = lineTotals.reduce((a, b) => a.plus(b), new Decimal(0));
  let discount = new Decimal(0);
  if (coupon) {
    const eligible = lines.reduce(
      (sum, l, i) =>
        coupon.productIds.length === 0 || coupon.productIds.includes(l.productId) ? sum.plus(lineTotals[i]!) : sum,
      new Decimal(0),
    );
    discount =
      coupon.type === 'PERCENTAGE'
        ? roundToMinor(eligible.times(coupon.value).dividedBy(100), currency)
        : Decimal.min(new Decimal(coupon.value), eligible);
  }
  if (wholesalePercent !== null)
    discount = discount.plus(roundToMinor(subtotal.minus(discount).times(wholesalePercent).dividedBy(100), currency));
  const net = subtotal.minus(discount);
  const rate = new Decimal(tax.rate);
  let taxAmount: Decimal;
  let total: Decimal;
  if (tax.inclusive) {
    // The prices contain the tax: the total stays, and the tax is the part of it above the net price.
    taxAmount = roundToMinor(net.times(rate).dividedBy(rate.plus(100)), currency);
    total = net;
  } else {
    taxAmount = roundToMinor(net.times(rate).dividedBy(100), currency);
    total = net.plus(taxAmount);
  }
  return {
    lineTotals: lineTotals.map(text),
    lines: priced,
    subtotal: text(subtotal),
    discount: text(discount),
    tax: text(taxAmount),
    total: text(total),
  };
}
