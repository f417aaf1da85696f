// Money, exactly. The database holds amounts as numeric(20, 8): at most 12 integer digits and 8 decimals, bounds
// every amount the API accepts stays inside. pg returns numeric as text, arithmetic is decimal.js, and this module is
// the one place a stored amount becomes what the API sends: a JSON number whose digits are the stored digits
// (JSON.rawJSON, so `999999999999.99999999` is sent as such, never rounded through a binary float), or a decimal
// string where the specification says "decimal string". Incoming amounts are checked here too: one that could not be
// stored and returned exactly is refused with 422 rather than rounded silently.
import Decimal from 'decimal.js';
import { ValidationError } from '../errors';

/** The stored precision: numeric(20, 8). */
export const amountIntegerDigits = 12;
export const amountScale = 8;
/** The largest amount that can be stored (and so accepted): 999999999999.99999999. */
export const maxAmount = new Decimal(10).pow(amountIntegerDigits).minus(new Decimal(10).pow(-amountScale));

/**
 * Decimals of each currency's minor unit (ISO 4217, and 8 for the crypto currencies the gateways settle in).
 * A currency not listed has 2.
 */
const minorUnits: Readonly<Record<string, number>> = {
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
  CLF: 4,
  UYW: 4,
  BTC: 8,
  LTC: 8,
  BCH: 8,
  ETH: 8,
  USDT: 8,
  USDC: 8,
  XMR: 8,
  SOL: 8,
  DOGE: 8,
  TRX: 8,
};

export function minorUnit(currency: string): number {
  return Object.hasOwn(minorUnits, currency) ? minorUnits[currency]! : 2;
}

/** Canonical decimal text: no exponent, no trailing fractional zeros, no `-0`. */
function canonical(value: Decimal): string {
  const text = value.toFixed();
  const trimmed = text.includes('.') ? text.replace(/\.?0+$/, '') : text;
  return trimmed === '-0' ? '0' : trimmed;
}

function decimal(numeric: string | Decimal): Decimal {
  const d = new Decimal(numeric);
  if (!d.isFinite()) throw new Error(`not a finite amount: ${String(numeric)}`);
  return d;
}

interface RawJson {
  readonly rawJSON: string;
}
const rawJson = (JSON as unknown as { rawJSON(text: string): RawJson }).rawJSON;

/**
 * A stored amount (numeric text) as a JSON number with exactly its digits. Typed `number` because that is what it
 * is on the wire (and in the contract); only JSON.stringify ever reads it.
 */
export function jsonAmount(numeric: string | Decimal): number {
  if (typeof numeric !== 'string') return rawJson(canonical(decimal(numeric))) as unknown as number;
  let raw = amountCache.get(numeric);
  if (raw === undefined) {
    raw = rawJson(canonicalText(numeric));
    // Cleared, not evicted one by one: a shop's amounts repeat (prices, zeros), so a full cache is rare and the
    // next requests refill it with what is current.
    if (amountCache.size >= AMOUNT_CACHE_SIZE) amountCache.clear();
    amountCache.set(numeric, raw);
  }
  return raw as unknown as number;
}

// A page of 50 orders renders ~750 amounts, most of them a handful of values (0, a few prices): their JSON is built
// once. JSON.rawJSON's objects are frozen, so one serves every response that holds the amount.
const AMOUNT_CACHE_SIZE = 10_000;
const amountCache = new Map<string, RawJson>();

const plainDecimal = /^(-?)0*([0-9]+?)(?:\.([0-9]*?)0*)?$/;

/**
 * The canonical form of decimal text without building a Decimal (every amount read from PostgreSQL is plain numeric
 * text, `9.99000000`); anything else (an exponent, `NaN`) goes through decimal.js. Runs once per distinct text: the
 * cache above keeps its result.
 */
function canonicalText(text: string): string {
  const m = plainDecimal.exec(text);
  if (!m) return canonical(decimal(text));
  const [, sign, whole, fraction] = m;
  const digits = fraction ? `${whole}.${fraction}` : whole!;
  return digits === '0' ? '0' : `${sign}${digits}`;
}

/**
 * A stored amount as a decimal string with the currency's minor unit of decimals (`12.50` USD, `1200` JPY); more
 * decimals only where the stored value has them, so nothing is ever cut off.
 */
export function decimalString(numeric: string | Decimal, currency: string): string {
  const d = decimal(numeric);
  const minor = minorUnit(currency);
  return d.decimalPlaces() <= minor ? d.toFixed(minor) : canonical(d);
}

/** Rounds to the currency's minor unit, half away from zero (commercial rounding, as on a receipt). */
export function roundToMinor(value: Decimal.Value, currency: string): Decimal {
  return new Decimal(value).toDecimalPlaces(minorUnit(currency), Decimal.ROUND_HALF_UP);
}

const decimalText = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

export interface AmountRule {
  /** Decimals allowed: the currency's minor unit when a currency is given, otherwise the stored scale. */
  currency?: string;
  /** Inclusive lower bound (default 0). */
  min?: Decimal.Value;
  /** Amounts must be greater than `min` (e.g. a refund of 0 means nothing). */
  exclusiveMin?: boolean;
}

/**
 * An amount from a request (a decimal string, or a JSON number where the contract says number), as canonical
 * numeric text for the database. Refuses with 422 on `field`: what is not a plain decimal, what has more decimals than
 * the currency's minor unit, and what is outside [min, maxAmount]; nothing is rounded behind the caller's back.
 */
export function parseAmount(input: unknown, field: string, rule: AmountRule = {}): string {
  const text = typeof input === 'number' ? (Number.isFinite(input) ? String(input) : '') : input;
  if (typeof text !== 'string' || !decimalText.test(text)) {
    throw invalid(field, 'must be a decimal amount such as 10 or 19.99');
  }
  const value = new Decimal(text);
  const scale = rule.currency === undefined ? amountScale : minorUnit(rule.currency);
  if (value.decimalPlaces() > scale) {
    throw invalid(
      field,
      rule.currency === undefined
        ? `must have at most ${amountScale} decimals`
        : `must have at most ${scale} decimal${scale === 1 ? '' : 's'} (the minor unit of ${rule.currency})`,
    );
  }
  const min = new Decimal(rule.min ?? 0);
  if (rule.exclusiveMin ? value.lte(min) : value.lt(min)) {
    throw invalid(field, `must be ${rule.exclusiveMin ? 'greater than' : 'at least'} ${canonical(min)}`);
  }
  if (value.gt(maxAmount)) throw invalid(field, `must be at most ${canonical(maxAmount)}`);
  return canonical(value);
}

function invalid(field: string, message: string): ValidationError {
  return new ValidationError([{ field, message }]);
}
