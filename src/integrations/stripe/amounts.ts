// Our amounts are decimal strings in the currency's own unit ("14.99" USD); Stripe's are integers in its smallest
// unit (1499). Stripe's smallest unit follows ISO 4217 except where Stripe documents otherwise
// (https://docs.stripe.com/currencies#special-cases), so the exponent is ours with Stripe's exceptions on top.
import Decimal from 'decimal.js';
import { minorUnit } from '../../platform/money';
import { ProviderError } from '../gateway-provider';

/** Where Stripe's exponent differs from ISO 4217's minor unit. */
const stripeExponentExceptions: Readonly<Record<string, number>> = {
  // Zero-decimal for ISO, but Stripe keeps the two-decimal representation for compatibility (multiples of 100).
  ISK: 2,
  UGX: 2,
  // Two-decimal for ISO, zero-decimal at Stripe.
  MGA: 0,
};

function stripeExponent(currency: string): number {
  return Object.hasOwn(stripeExponentExceptions, currency) ? stripeExponentExceptions[currency]! : minorUnit(currency);
}

/** "14.99" USD -> 1499. An amount with more digits than the currency has is our bug: refused, never rounded. */
export function toStripeAmount(amount: string, currency: string): number {
  const upper = currency.toUpperCase();
  const scaled = new Decimal(amount).times(new Decimal(10).pow(stripeExponent(upper)));
  if (!scaled.isInteger() || scaled.isNegative() || !scaled.lte(Number.MAX_SAFE_INTEGER)) {
    throw new ProviderError('refused', `The amount ${amount} ${upper} cannot be expressed in Stripe's units.`);
  }
  return scaled.toNumber();
}

/** 1499 USD -> "14.99" (the canonical string: as many decimals as the currency's minor unit). */
export function fromStripeAmount(amount: number, currency: string): string {
  const upper = currency.toUpperCase();
  return new Decimal(amount).dividedBy(new Decimal(10).pow(stripeExponent(upper))).toFixed(minorUnit(upper));
}
