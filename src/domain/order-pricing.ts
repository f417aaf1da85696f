// The money of an order, in one pure function: line totals, the coupon's discount, tax (inclusive or exclusive) and
// the total, with decimal arithmetic rounded to the currency's minor unit (JPY 0, USD 2, BTC 8). Never a float.
import Decimal from 'decimal.js';
import { roundToMinor } from '../platform/money';

export interface PricedLine {
  productId: string;
  /** Catalog price of one unit (numeric text). */
  unitPrice: string;
  quantity: number;
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
  subtotal: string;
  discount: string;
  tax: string;
  total: string;
}

const text = (d: Decimal) => d.toFixed();

export function priceOrder(
  lines: readonly PricedLine[],
  currency: string,
  coupon: CouponTerms | null,
  tax: TaxTerms,
): OrderTotals {
  const lineTotals = lines.map((l) => roundToMinor(new Decimal(l.unitPrice).times(l.quantity), currency));
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
    subtotal: text(subtotal),
    discount: text(discount),
    tax: text(taxAmount),
    total: text(total),
  };
}
