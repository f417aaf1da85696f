// src/domain/catalog/pricing.ts: a line's money (options, the best quantity tier, add-ons) and the order's (coupon on
// the line totals after the tiers, tax), to the minor unit of USD, JPY and BTC.
import fc from 'fast-check';
import Decimal from 'decimal.js';
import { priceLine, priceOrder, type PricedLine, type QuantityTier } from '../../src/domain/catalog/pricing';

const noTax = { rate: '0', inclusive: false };
const pct = (minQuantity: number, value: string, dealId = 'qdl_a'): QuantityTier => ({
  dealId,
  minQuantity,
  type: 'PERCENTAGE',
  value,
});
const fixed = (minQuantity: number, value: string, dealId = 'qdl_a'): QuantityTier => ({
  dealId,
  minQuantity,
  type: 'FIXED',
  value,
});

describe('priceLine', () => {
  test('without extras: unit price x quantity, rounded, nothing else', () => {
    expect(priceLine({ productId: 'p', unitPrice: '19.99', quantity: 3 }, 'USD')).toEqual({
      unitPrice: '19.99',
      quantityDiscount: '0',
      tier: null,
      addonTotals: [],
      total: '59.97',
    });
  });

  test('USD: a percentage tier is rounded half up to the cent', () => {
    // 59.97 x 15% = 8.9955 -> 9.00
    const line = priceLine({ productId: 'p', unitPrice: '19.99', quantity: 3, tiers: [pct(3, '15')] }, 'USD');
    expect(line).toMatchObject({ quantityDiscount: '9', total: '50.97', tier: pct(3, '15') });
  });

  test('JPY: rounded to the yen', () => {
    // 2997 x 7.5% = 224.775 -> 225
    const line = priceLine({ productId: 'p', unitPrice: '999', quantity: 3, tiers: [pct(2, '7.5')] }, 'JPY');
    expect(line).toMatchObject({ quantityDiscount: '225', total: '2772' });
    // 101 x 3 = 303, FIXED 0.5 a unit = 1.5 -> 2
    expect(priceLine({ productId: 'p', unitPrice: '101', quantity: 3, tiers: [fixed(2, '0.5')] }, 'JPY')).toMatchObject(
      { quantityDiscount: '2', total: '301' },
    );
  });

  test('BTC: rounded to the satoshi', () => {
    // 0.00012345 x 7 = 0.00086415; x 12.5% = 0.00010801875 -> 0.00010802
    const line = priceLine({ productId: 'p', unitPrice: '0.00012345', quantity: 7, tiers: [pct(5, '12.5')] }, 'BTC');
    expect(line).toMatchObject({ quantityDiscount: '0.00010802', total: '0.00075613' });
  });

  test('a FIXED tier takes its amount off each unit, rounded once for the line, never more than the line', () => {
    // 0.005 x 3 = 0.015 -> 0.02
    expect(
      priceLine({ productId: 'p', unitPrice: '10', quantity: 3, tiers: [fixed(2, '0.005')] }, 'USD'),
    ).toMatchObject({ quantityDiscount: '0.02', total: '29.98' });
    expect(priceLine({ productId: 'p', unitPrice: '1', quantity: 4, tiers: [fixed(2, '5')] }, 'USD')).toMatchObject({
      quantityDiscount: '4',
      total: '0',
    });
  });

  test('the best tier the quantity reaches wins; tiers above the quantity do not count', () => {
    const tiers = [pct(2, '5'), pct(5, '10'), fixed(5, '1.50'), pct(10, '50')];
    // quantity 6 of 10.00: 5% = 3.00, 10% = 6.00, FIXED 1.50 x 6 = 9.00 (best), 50% not reached
    const six = priceLine({ productId: 'p', unitPrice: '10', quantity: 6, tiers }, 'USD');
    expect(six).toMatchObject({ quantityDiscount: '9', total: '51', tier: fixed(5, '1.50') });
    expect(priceLine({ productId: 'p', unitPrice: '10', quantity: 1, tiers }, 'USD')).toMatchObject({
      quantityDiscount: '0',
      tier: null,
      total: '10',
    });
    expect(priceLine({ productId: 'p', unitPrice: '10', quantity: 10, tiers }, 'USD')).toMatchObject({
      quantityDiscount: '50',
      tier: pct(10, '50'),
    });
  });

  test('equal discounts: the higher minimum, then the lower deal id', () => {
    const a = pct(2, '10', 'qdl_b');
    const b = fixed(4, '1', 'qdl_c'); // 10 x 4 = 40: 10% = 4 = 1 x 4
    const c = pct(4, '10', 'qdl_a');
    expect(priceLine({ productId: 'p', unitPrice: '10', quantity: 4, tiers: [a, b, c] }, 'USD').tier).toEqual(c);
    expect(priceLine({ productId: 'p', unitPrice: '10', quantity: 4, tiers: [a, b] }, 'USD').tier).toEqual(b);
  });

  test('option adjustments are added to the unit price, which never goes below 0', () => {
    const line = priceLine(
      { productId: 'p', unitPrice: '10', quantity: 2, optionAdjustments: ['2.50', '-1.25'] },
      'USD',
    );
    expect(line).toMatchObject({ unitPrice: '11.25', total: '22.5' });
    expect(priceLine({ productId: 'p', unitPrice: '3', quantity: 2, optionAdjustments: ['-5'] }, 'USD')).toMatchObject({
      unitPrice: '0',
      total: '0',
    });
  });

  test('add-ons are charged per unit, each rounded, after the tier (which does not touch them)', () => {
    // goods 3 x 20 = 60, tier 10% = 6; add-ons 0.333 x 3 = 0.999 -> 1.00 and 2.50 x 3 = 7.50
    const line = priceLine(
      { productId: 'p', unitPrice: '20', quantity: 3, tiers: [pct(3, '10')], addonPrices: ['0.333', '2.50'] },
      'USD',
    );
    expect(line).toMatchObject({ quantityDiscount: '6', addonTotals: ['1', '7.5'], total: '62.5' });
  });
});

describe('priceOrder with catalog extras', () => {
  test('tier first on the line, the coupon on the line totals after it, tax on what remains: to the cent', () => {
    const lines: PricedLine[] = [
      // 19.99 x 3 = 59.97; tier 10% = 5.997 -> 6.00; add-on 2.50 x 3 = 7.50 -> line 61.47
      { productId: 'a', unitPrice: '19.99', quantity: 3, tiers: [pct(3, '10')], addonPrices: ['2.50'] },
      // 5.00 + 0.75 option = 5.75 x 1 -> line 5.75 (the coupon is limited to `a`)
      { productId: 'b', unitPrice: '5.00', quantity: 1, optionAdjustments: ['0.75'] },
    ];
    const totals = priceOrder(
      lines,
      'USD',
      { type: 'PERCENTAGE', value: '10', productIds: ['a'] },
      { rate: '20', inclusive: false },
    );
    // coupon 10% of 61.47 = 6.147 -> 6.15; net 61.07; tax 20% = 12.214 -> 12.21; total 73.28
    expect(totals).toMatchObject({
      lineTotals: ['61.47', '5.75'],
      subtotal: '67.22',
      discount: '6.15',
      tax: '12.21',
      total: '73.28',
    });
    expect(totals.lines.map((l) => l.quantityDiscount)).toEqual(['6', '0']);
    expect(totals.lines.map((l) => l.unitPrice)).toEqual(['19.99', '5.75']);
  });

  test('a FIXED coupon is capped at the eligible line totals after the tier', () => {
    // 10 x 2 = 20, FIXED tier 4 a unit = 8 -> 12; coupon 15 -> capped at 12
    const totals = priceOrder(
      [{ productId: 'a', unitPrice: '10', quantity: 2, tiers: [fixed(2, '4')] }],
      'USD',
      { type: 'FIXED', value: '15', productIds: [] },
      noTax,
    );
    expect(totals).toMatchObject({ subtotal: '12', discount: '12', total: '0' });
  });

  test('JPY and BTC orders: every amount on the minor unit', () => {
    const jpy = priceOrder(
      [{ productId: 'a', unitPrice: '1234', quantity: 7, tiers: [pct(5, '3.3')], addonPrices: ['55'] }],
      'JPY',
      { type: 'PERCENTAGE', value: '12.5', productIds: [] },
      { rate: '10', inclusive: true },
    );
    // 8638; 3.3% = 285.054 -> 285; + 385 -> 8738; coupon 1092.25 -> 1092; net 7646; inclusive tax 7646 x 10/110 =
    // 695.09 -> 695
    expect(jpy).toMatchObject({ subtotal: '8738', discount: '1092', tax: '695', total: '7646' });
    const btc = priceOrder(
      [{ productId: 'a', unitPrice: '0.00100001', quantity: 3, tiers: [fixed(3, '0.000000015')] }],
      'BTC',
      null,
      noTax,
    );
    // 0.00300003; FIXED 0.000000045 -> 0.00000005; 0.00299998
    expect(btc).toMatchObject({ subtotal: '0.00299998', total: '0.00299998' });
  });

  test('property: line totals add up to the subtotal, no amount has more decimals than the currency', () => {
    const currency = fc.constantFrom('USD', 'JPY', 'BTC');
    const amount = fc.integer({ min: 0, max: 10_000_000 }).map((n) => new Decimal(n).dividedBy(1000).toFixed());
    const tier = fc.record({
      dealId: fc.constantFrom('qdl_a', 'qdl_b'),
      minQuantity: fc.integer({ min: 2, max: 20 }),
      type: fc.constantFrom('PERCENTAGE' as const, 'FIXED' as const),
      value: fc.integer({ min: 1, max: 10000 }).map((n) => new Decimal(n).dividedBy(100).toFixed()),
    });
    const line = fc.record({
      productId: fc.constantFrom('a', 'b'),
      unitPrice: amount,
      quantity: fc.integer({ min: 1, max: 30 }),
      tiers: fc.array(tier, { maxLength: 4 }),
      addonPrices: fc.array(amount, { maxLength: 3 }),
      optionAdjustments: fc.array(amount, { maxLength: 2 }),
    });
    fc.assert(
      fc.property(currency, fc.array(line, { minLength: 1, maxLength: 5 }), (cur, lines) => {
        const safe = lines.map((l) => ({
          ...l,
          tiers: l.tiers.map((t) => (t.type === 'PERCENTAGE' && Number(t.value) > 100 ? { ...t, value: '100' } : t)),
        }));
        const totals = priceOrder(safe, cur, null, noTax);
        const places = cur === 'JPY' ? 0 : cur === 'USD' ? 2 : 8;
        const sum = totals.lineTotals.reduce((s, t) => s.plus(t), new Decimal(0));
        expect(sum.toFixed()).toBe(new Decimal(totals.subtotal).toFixed());
        for (const l of totals.lines) {
          expect(new Decimal(l.total).decimalPlaces()).toBeLessThanOrEqual(places);
          expect(new Decimal(l.quantityDiscount).gte(0)).toBe(true);
          expect(new Decimal(l.total).gte(0)).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});
