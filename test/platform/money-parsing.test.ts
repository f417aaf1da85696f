// src/platform/money.ts: stored numeric text out as exact JSON numbers or decimal strings, amounts in checked.
import Decimal from 'decimal.js';
import fc from 'fast-check';
import { decimalString, jsonAmount, maxAmount, minorUnit, parseAmount, roundToMinor } from '../../src/platform/money';
import { ValidationError } from '../../src/errors';

const json = (v: unknown) => JSON.stringify({ v });

describe('jsonAmount', () => {
  test('sends the stored digits, even where a binary float would round them', () => {
    expect(json(jsonAmount('999999999999.99999999'))).toBe('{"v":999999999999.99999999}');
    expect(json(jsonAmount('0.10000000'))).toBe('{"v":0.1}');
    expect(json(jsonAmount('19.99000000'))).toBe('{"v":19.99}');
    expect(json(jsonAmount('100.00000000'))).toBe('{"v":100}');
    expect(json(jsonAmount('0.00000001'))).toBe('{"v":0.00000001}'); // not 1e-8
    expect(json(jsonAmount('-0.00000000'))).toBe('{"v":0}');
    expect(json(jsonAmount('-5.50'))).toBe('{"v":-5.5}');
    expect(json(jsonAmount(new Decimal('12.345').minus('0.345')))).toBe('{"v":12}');
  });

  test('text with leading zeros, no fraction or an exponent comes out in the same canonical form', () => {
    expect(json(jsonAmount('007.50'))).toBe('{"v":7.5}');
    expect(json(jsonAmount('000'))).toBe('{"v":0}');
    expect(json(jsonAmount('-0.5'))).toBe('{"v":-0.5}');
    expect(json(jsonAmount('12'))).toBe('{"v":12}');
    expect(json(jsonAmount('1.5e3'))).toBe('{"v":1500}');
    expect(() => jsonAmount('.')).toThrow();
    expect(() => jsonAmount('')).toThrow();
  });

  test('the text fast path agrees with decimal.js on any decimal text', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.stringMatching(/^[0-9]{1,14}$/),
        fc.option(fc.stringMatching(/^[0-9]{0,10}$/)),
        (negative, whole, fraction) => {
          const text = `${negative ? '-' : ''}${whole}${fraction === null ? '' : `.${fraction}`}`;
          const viaDecimal = json(jsonAmount(new Decimal(text)));
          expect(json(jsonAmount(text))).toBe(viaDecimal);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('amounts seen before (cached) and after the cache fills and is cleared still come out exactly', () => {
    for (let round = 0; round < 2; round++) {
      for (let units = 0; units < 25_000; units++) {
        const stored = `${Math.floor(units / 100)}.${String(units % 100).padStart(2, '0')}000000`;
        expect(json(jsonAmount(stored))).toBe(json(jsonAmount(new Decimal(stored))));
      }
    }
    expect(jsonAmount('19.99000000')).toBe(jsonAmount('19.99000000'));
  });

  test('refuses what is not a finite number', () => {
    expect(() => jsonAmount('NaN')).toThrow();
    expect(() => jsonAmount('Infinity')).toThrow();
  });

  test('any numeric(20, 8) value parses back to exactly the stored decimal', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n) + 1n, max: 10n ** 20n - 1n }), (units) => {
        const stored = new Decimal(units.toString()).div(1e8).toFixed(8);
        const sent = json(jsonAmount(stored)).slice(5, -1);
        expect(sent).toMatch(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/);
        expect(new Decimal(sent).eq(stored)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('decimalString', () => {
  test("shows the currency's minor unit, and never cuts stored digits", () => {
    expect(decimalString('12.5', 'USD')).toBe('12.50');
    expect(decimalString('1200.00000000', 'JPY')).toBe('1200');
    expect(decimalString('1.5', 'KWD')).toBe('1.500');
    expect(decimalString('0.12345678', 'BTC')).toBe('0.12345678');
    expect(decimalString('12.345', 'USD')).toBe('12.345');
    expect(decimalString('999999999999.99999999', 'USD')).toBe('999999999999.99999999');
  });
});

describe('minorUnit and roundToMinor', () => {
  test('ISO 4217 minor units, 2 when unlisted', () => {
    expect([minorUnit('USD'), minorUnit('JPY'), minorUnit('KWD'), minorUnit('BTC'), minorUnit('XYZ')]).toEqual([
      2, 0, 3, 8, 2,
    ]);
    expect(minorUnit('constructor')).toBe(2);
  });

  test('rounds half away from zero to the minor unit', () => {
    expect(roundToMinor('2.675', 'USD').toFixed()).toBe('2.68'); // 2.67 with binary floats
    expect(roundToMinor('2.665', 'USD').toFixed()).toBe('2.67');
    expect(roundToMinor('-2.675', 'USD').toFixed()).toBe('-2.68');
    expect(roundToMinor('1234.5', 'JPY').toFixed()).toBe('1235');
    expect(roundToMinor('0.123456785', 'BTC').toFixed()).toBe('0.12345679');
  });
});

describe('parseAmount', () => {
  const detail = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      return (e as ValidationError).details;
    }
    throw new Error('accepted');
  };

  test('accepts plain decimals within the bounds, canonically', () => {
    expect(parseAmount('10', 'amount')).toBe('10');
    expect(parseAmount('10.50', 'amount', { currency: 'USD' })).toBe('10.5');
    expect(parseAmount('999999999999.99999999', 'amount')).toBe('999999999999.99999999');
    expect(parseAmount(19.99, 'value', { currency: 'USD' })).toBe('19.99');
    expect(parseAmount('0', 'amount')).toBe('0');
  });

  test('refuses, on the field, what could not be stored and returned exactly', () => {
    expect(detail(() => parseAmount('1000000000000', 'amount'))).toEqual([
      { field: 'amount', message: `must be at most ${maxAmount.toFixed()}` },
    ]);
    expect(detail(() => parseAmount('0.000000001', 'amount'))).toEqual([
      { field: 'amount', message: 'must have at most 8 decimals' },
    ]);
    expect(detail(() => parseAmount('10.001', 'amount', { currency: 'USD' }))).toEqual([
      { field: 'amount', message: 'must have at most 2 decimals (the minor unit of USD)' },
    ]);
    expect(detail(() => parseAmount('1.5', 'amount', { currency: 'JPY' }))).toEqual([
      { field: 'amount', message: 'must have at most 0 decimals (the minor unit of JPY)' },
    ]);
    for (const bad of ['1e3', ' 1', '1.', '.5', '01', '+1', '', 'NaN', '0x10', '1,5']) {
      expect(detail(() => parseAmount(bad, 'amount'))).toEqual([
        { field: 'amount', message: 'must be a decimal amount such as 10 or 19.99' },
      ]);
    }
    expect(detail(() => parseAmount(0.1 + 0.2, 'value'))).toEqual([
      { field: 'value', message: 'must have at most 8 decimals' },
    ]);
    expect(detail(() => parseAmount(Infinity, 'value'))).toHaveLength(1);
    expect(detail(() => parseAmount(null, 'value'))).toHaveLength(1);
  });

  test('bounds below: at least, or greater than', () => {
    expect(detail(() => parseAmount('-1', 'amount'))).toEqual([{ field: 'amount', message: 'must be at least 0' }]);
    expect(detail(() => parseAmount('0', 'amount', { exclusiveMin: true }))).toEqual([
      { field: 'amount', message: 'must be greater than 0' },
    ]);
    expect(parseAmount('0.01', 'amount', { exclusiveMin: true })).toBe('0.01');
    expect(parseAmount('-5', 'amount', { min: '-10' })).toBe('-5');
  });
});
