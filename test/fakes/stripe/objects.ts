// Stripe-shaped JSON for the objects the fake keeps (API 2023-08-16, the pinned document's version): what its API
// answers and what its events carry. Every builder's output is checked against the document's schema by the fake.
import { randomBytes } from 'node:crypto';

export const apiVersion = '2023-08-16';

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Stripe's ids: a type prefix and 24 base62 characters (checkout sessions say their mode: cs_test_ / cs_live_). */
export function stripeId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return `${prefix}_${out}`;
}

export const now = (): number => Math.floor(Date.now() / 1000);

export type Metadata = Record<string, string>;

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  capture_method: 'automatic';
  confirmation_method: 'automatic';
  created: number;
  currency: string;
  latest_charge: string | null;
  last_payment_error: {
    type: 'card_error' | 'invalid_request_error';
    code: string;
    message: string;
  } | null;
  livemode: boolean;
  metadata: Metadata;
  payment_method_types: string[];
  status: 'processing' | 'requires_payment_method' | 'succeeded' | 'canceled';
}

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  charge: string;
  created: number;
  currency: string;
  metadata: Metadata;
  payment_intent: string;
  reason: 'duplicate' | 'fraudulent' | 'requested_by_customer' | null;
  status: 'succeeded';
  balance_transaction: string;
}

export interface Charge {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  billing_details: { address: null; email: string | null; name: string | null; phone: null };
  captured: boolean;
  created: number;
  currency: string;
  disputed: boolean;
  livemode: boolean;
  metadata: Metadata;
  paid: boolean;
  payment_intent: string;
  refunded: boolean;
  refunds: { object: 'list'; data: Refund[]; has_more: boolean; url: string };
  status: 'succeeded';
}

export interface Dispute {
  id: string;
  object: 'dispute';
  amount: number;
  balance_transactions: never[];
  charge: string;
  created: number;
  currency: string;
  evidence: Record<string, null>;
  evidence_details: { due_by: number; has_evidence: boolean; past_due: boolean; submission_count: number };
  is_charge_refundable: boolean;
  livemode: boolean;
  metadata: Metadata;
  payment_intent: string;
  reason: string;
  status: 'needs_response' | 'won' | 'lost';
}

export interface CheckoutSession {
  id: string;
  object: 'checkout.session';
  amount_subtotal: number;
  amount_total: number;
  automatic_tax: { enabled: false; status: null };
  cancel_url: string | null;
  client_reference_id: string | null;
  created: number;
  currency: string;
  /** Adaptive pricing: the buyer paid in `currency`; the merchant's price was in source_currency. */
  currency_conversion?: { amount_subtotal: number; amount_total: number; fx_rate: string; source_currency: string };
  custom_fields: never[];
  custom_text: { shipping_address: null; submit: null };
  customer_email: string | null;
  expires_at: number;
  livemode: boolean;
  metadata: Metadata;
  mode: 'payment';
  payment_intent: string | null;
  payment_method_types: string[];
  payment_status: 'paid' | 'unpaid' | 'no_payment_required';
  phone_number_collection: { enabled: false };
  shipping_options: never[];
  status: 'open' | 'complete' | 'expired';
  success_url: string;
  tax_id_collection: { enabled: false };
  total_details: { amount_discount: number; amount_shipping: number; amount_tax: number };
  url: string | null;
}

export function paymentIntent(
  session: CheckoutSession,
  metadata: Metadata,
  status: PaymentIntent['status'],
): PaymentIntent {
  return {
    id: stripeId('pi'),
    object: 'payment_intent',
    amount: session.amount_total,
    amount_received: 0,
    capture_method: 'automatic',
    confirmation_method: 'automatic',
    created: now(),
    currency: session.currency,
    latest_charge: null,
    last_payment_error: null,
    livemode: session.livemode,
    metadata,
    payment_method_types: session.payment_method_types,
    status,
  };
}

export function charge(pi: PaymentIntent, email: string | null): Charge {
  const id = stripeId('ch');
  return {
    id,
    object: 'charge',
    amount: pi.amount,
    amount_captured: pi.amount,
    amount_refunded: 0,
    billing_details: { address: null, email, name: null, phone: null },
    captured: true,
    created: now(),
    currency: pi.currency,
    disputed: false,
    livemode: pi.livemode,
    metadata: pi.metadata,
    paid: true,
    payment_intent: pi.id,
    refunded: false,
    refunds: { object: 'list', data: [], has_more: false, url: `/v1/charges/${id}/refunds` },
    status: 'succeeded',
  };
}

export function dispute(ch: Charge, reason: string): Dispute {
  return {
    id: stripeId('du'),
    object: 'dispute',
    amount: ch.amount,
    balance_transactions: [],
    charge: ch.id,
    created: now(),
    currency: ch.currency,
    evidence: { customer_email_address: null, product_description: null, uncategorized_text: null },
    // Stripe gives the merchant about a week to answer.
    evidence_details: { due_by: now() + 7 * 86_400, has_evidence: false, past_due: false, submission_count: 0 },
    is_charge_refundable: false,
    livemode: ch.livemode,
    metadata: {},
    payment_intent: ch.payment_intent,
    reason,
    status: 'needs_response',
  };
}

export function stripeError(
  type: 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error',
  message: string,
  extra: { code?: string; param?: string } = {},
): { error: Record<string, string> } {
  return { error: { type, message, ...extra, request_log_url: 'https://dashboard.stripe.com/test/logs' } };
}
