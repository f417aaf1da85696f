// PayPal's wire objects, as much of them as the adapter reads, typed by hand from the pinned document
// (test/fixtures/providers/paypal/openapi.json: orders__order, payments__capture-2, payments__refund,
// webhooks__event, webhooks__webhook, disputes__dispute). A generator is not worth it for the dozen fields we read;
// the guards below check those fields at run time, because an answer that is not what PayPal documents is
// 'unavailable', not a crash.
import { ProviderError } from '../gateway-provider';

export interface Money {
  currency_code: string;
  value: string;
}

export interface LinkDescription {
  href: string;
  rel: string;
  method?: string;
}

export type CaptureStatus = 'COMPLETED' | 'DECLINED' | 'PARTIALLY_REFUNDED' | 'PENDING' | 'REFUNDED' | 'FAILED';

export interface Capture {
  id: string;
  status?: CaptureStatus;
  amount?: Money;
  custom_id?: string;
  invoice_id?: string;
  supplementary_data?: { related_ids?: { order_id?: string } };
  links?: LinkDescription[];
}

export type OrderStatus = 'CREATED' | 'SAVED' | 'APPROVED' | 'VOIDED' | 'COMPLETED' | 'PAYER_ACTION_REQUIRED';

export interface PurchaseUnit {
  custom_id?: string;
  invoice_id?: string;
  amount?: Money;
  payments?: { captures?: Capture[] };
}

export interface Order {
  id: string;
  status: OrderStatus;
  purchase_units?: PurchaseUnit[];
  links?: LinkDescription[];
}

export interface Refund {
  id: string;
  status?: 'CANCELLED' | 'FAILED' | 'PENDING' | 'COMPLETED';
  amount?: Money;
  links?: LinkDescription[];
}

export interface Dispute {
  dispute_id: string;
  reason?: string;
  status?: string;
  dispute_amount?: Money;
  disputed_transactions?: { seller_transaction_id?: string }[];
  seller_response_due_date?: string;
  dispute_outcome?: { outcome_code?: string };
}

export interface WebhookEvent {
  id: string;
  event_type: string;
  resource_type?: string;
  resource: Record<string, unknown>;
}

/** A webhook of the app (webhooks__webhook): where PayPal posts the events it subscribes to. */
export interface Webhook {
  id?: string;
  url: string;
  event_types: { name: string }[];
}

/** PayPal's error body (error_400 ... error_500 share it); `error`/`error_description` is the token endpoint's. */
export interface ErrorBody {
  name?: string;
  message?: string;
  debug_id?: string;
  details?: { issue?: string; description?: string }[];
  error?: string;
  error_description?: string;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const decimalValue = /^-?[0-9]+(\.[0-9]+)?$/;

export function isMoney(value: unknown): value is Money {
  return (
    isRecord(value) &&
    typeof value.currency_code === 'string' &&
    typeof value.value === 'string' &&
    decimalValue.test(value.value)
  );
}

function unexpected(what: string): ProviderError {
  return new ProviderError('unavailable', `PayPal answered with ${what} that is not what it documents`);
}

const orderStatuses: readonly string[] = [
  'CREATED',
  'SAVED',
  'APPROVED',
  'VOIDED',
  'COMPLETED',
  'PAYER_ACTION_REQUIRED',
];

export function asOrder(body: unknown): Order {
  if (!isRecord(body) || typeof body.id !== 'string' || !orderStatuses.includes(String(body.status))) {
    throw unexpected('an order');
  }
  if (body.purchase_units !== undefined && !Array.isArray(body.purchase_units)) throw unexpected('an order');
  return body as unknown as Order;
}

export function asRefund(body: unknown): Refund {
  if (!isRecord(body) || typeof body.id !== 'string' || typeof body.status !== 'string') {
    throw unexpected('a refund');
  }
  return body as unknown as Refund;
}

export function asWebhook(body: unknown): Webhook {
  if (!isRecord(body) || typeof body.url !== 'string' || !Array.isArray(body.event_types)) {
    throw unexpected('a webhook');
  }
  return body as unknown as Webhook;
}

/** The capture(s) of an order's first purchase unit (we open orders with exactly one). */
export function capturesOf(order: Order): Capture[] {
  const captures = order.purchase_units?.[0]?.payments?.captures;
  if (captures === undefined) return [];
  if (!Array.isArray(captures) || !captures.every((c) => isRecord(c) && typeof c.id === 'string')) {
    throw unexpected('an order');
  }
  return captures;
}

export function linkHref(links: unknown, rel: string): string | undefined {
  if (!Array.isArray(links)) return undefined;
  const link = links.find((l: unknown) => isRecord(l) && l.rel === rel && typeof l.href === 'string') as
    LinkDescription | undefined;
  return link?.href;
}
