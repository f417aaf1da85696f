// What the PayPal fake remembers, and how it shows it: the JSON of an order, a capture, a refund and a dispute as
// PayPal's API and webhooks carry them (held to the pinned document by the checker at every use).
import { randomBytes } from 'node:crypto';

export interface Money {
  currency_code: string;
  value: string;
}

export interface Account {
  livemode: boolean;
  clientId: string;
  clientSecret: string;
  webhookId: string;
  merchantId: string;
  webhookUrl: string | undefined;
}

export type OrderStatus = 'CREATED' | 'PAYER_ACTION_REQUIRED' | 'APPROVED' | 'VOIDED' | 'COMPLETED';

export interface OrderRecord {
  id: string;
  account: Account;
  status: OrderStatus;
  amount: Money;
  customId: string | undefined;
  invoiceId: string | undefined;
  description: string | undefined;
  returnUrl: string | undefined;
  cancelUrl: string | undefined;
  email: string | undefined;
  /** Opened with payment_source.paypal (payer-action link) rather than the older application_context (approve). */
  payerAction: boolean;
  createTime: string;
  updateTime: string;
  /** Set by the buyer's approval. */
  payerId: string | undefined;
  /** "Fail": the buyer approved with a funding source that the capture will decline. */
  declineAtCapture: boolean;
  /** A short payment (fake-only lever): what the capture will take instead of the order's amount. */
  captureAmount: Money | undefined;
  captureId: string | undefined;
}

export type CaptureStatus = 'COMPLETED' | 'DECLINED' | 'PARTIALLY_REFUNDED' | 'REFUNDED';

export interface CaptureRecord {
  id: string;
  order: OrderRecord;
  status: CaptureStatus;
  amount: Money;
  createTime: string;
  updateTime: string;
}

export interface RefundRecord {
  id: string;
  capture: CaptureRecord;
  amount: Money;
  noteToPayer: string | undefined;
  requestId: string | undefined;
  createTime: string;
}

export interface DisputeRecord {
  id: string;
  capture: CaptureRecord;
  reason: string;
  status: 'WAITING_FOR_SELLER_RESPONSE' | 'RESOLVED';
  outcome: 'RESOLVED_BUYER_FAVOUR' | 'RESOLVED_SELLER_FAVOUR' | undefined;
  createTime: string;
  updateTime: string;
  sellerResponseDue: string;
}

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** PayPal's resource ids: 17 upper-case letters and digits (orders, captures, refunds, webhooks). */
export function paypalId(length = 17): string {
  const bytes = randomBytes(length);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

const accountAlphabet = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';

/** A PayPal account id (payer id, merchant id): `^[2-9A-HJ-NP-Z]{13}$` in the document. */
export function accountId(): string {
  return Array.from(randomBytes(13), (b) => accountAlphabet[b % accountAlphabet.length]).join('');
}

export function now(): string {
  return new Date().toISOString();
}

/** Where the fake answers for a mode: `{origin}/live` or `{origin}/sandbox`. */
export function modeBase(origin: string, livemode: boolean): string {
  return `${origin}/${livemode ? 'live' : 'sandbox'}`;
}

/**
 * The account's webhook as GET /v1/notifications/webhooks/{id} shows it (webhooks__webhook), subscribed to every
 * event (`*`), which is what the fake sends. An account whose URL is not set has no webhook yet.
 */
export function webhookJson(account: Account, base: string): Record<string, unknown> | undefined {
  if (account.webhookUrl === undefined) return undefined;
  const self = `${base}/v1/notifications/webhooks/${account.webhookId}`;
  return {
    id: account.webhookId,
    url: account.webhookUrl,
    event_types: [{ name: '*', description: 'ALL' }],
    links: [
      { href: self, rel: 'self', method: 'GET' },
      { href: self, rel: 'update', method: 'PATCH' },
      { href: self, rel: 'delete', method: 'DELETE' },
    ],
  };
}

export function captureJson(
  capture: CaptureRecord,
  base: string,
  options: { supplementary: boolean },
): Record<string, unknown> {
  const order = capture.order;
  return {
    id: capture.id,
    status: capture.status,
    amount: capture.amount,
    final_capture: true,
    seller_protection: { status: 'ELIGIBLE', dispute_categories: ['ITEM_NOT_RECEIVED', 'UNAUTHORIZED_TRANSACTION'] },
    ...(order.customId ? { custom_id: order.customId } : {}),
    ...(order.invoiceId ? { invoice_id: order.invoiceId } : {}),
    links: [
      { href: `${base}/v2/payments/captures/${capture.id}`, rel: 'self', method: 'GET' },
      { href: `${base}/v2/payments/captures/${capture.id}/refund`, rel: 'refund', method: 'POST' },
      { href: `${base}/v2/checkout/orders/${order.id}`, rel: 'up', method: 'GET' },
    ],
    create_time: capture.createTime,
    update_time: capture.updateTime,
    ...(options.supplementary
      ? {
          supplementary_data: { related_ids: { order_id: order.id } },
          payee: { merchant_id: order.account.merchantId },
        }
      : {}),
  };
}

export function refundJson(refund: RefundRecord, base: string): Record<string, unknown> {
  const order = refund.capture.order;
  return {
    id: refund.id,
    status: 'COMPLETED',
    amount: refund.amount,
    ...(order.invoiceId ? { invoice_id: order.invoiceId } : {}),
    ...(refund.noteToPayer ? { note_to_payer: refund.noteToPayer } : {}),
    seller_payable_breakdown: { gross_amount: refund.amount, net_amount: refund.amount },
    links: [
      { href: `${base}/v2/payments/refunds/${refund.id}`, rel: 'self', method: 'GET' },
      { href: `${base}/v2/payments/captures/${refund.capture.id}`, rel: 'up', method: 'GET' },
    ],
    create_time: refund.createTime,
    update_time: refund.createTime,
  };
}

export function orderLinks(order: OrderRecord, base: string): Record<string, unknown>[] {
  const links: Record<string, unknown>[] = [
    { href: `${base}/v2/checkout/orders/${order.id}`, rel: 'self', method: 'GET' },
  ];
  if (order.status === 'CREATED' || order.status === 'PAYER_ACTION_REQUIRED') {
    links.push({
      href: `${base}/checkoutnow?token=${order.id}`,
      rel: order.payerAction ? 'payer-action' : 'approve',
      method: 'GET',
    });
  }
  if (order.status === 'APPROVED') {
    links.push({ href: `${base}/v2/checkout/orders/${order.id}/capture`, rel: 'capture', method: 'POST' });
  }
  return links;
}

/** The full representation (GET, Prefer: return=representation). */
export function orderJson(
  order: OrderRecord,
  base: string,
  capture: CaptureRecord | undefined,
): Record<string, unknown> {
  const unit: Record<string, unknown> = {
    reference_id: 'default',
    amount: order.amount,
    payee: { merchant_id: order.account.merchantId },
    ...(order.description ? { description: order.description } : {}),
    ...(order.customId ? { custom_id: order.customId } : {}),
    ...(order.invoiceId ? { invoice_id: order.invoiceId } : {}),
    ...(capture ? { payments: { captures: [captureJson(capture, base, { supplementary: false })] } } : {}),
  };
  const wallet: Record<string, unknown> = {
    ...(order.email ? { email_address: order.email } : {}),
    ...(order.payerId ? { account_id: order.payerId, account_status: 'VERIFIED' } : {}),
  };
  return {
    id: order.id,
    intent: 'CAPTURE',
    status: order.status,
    ...(order.payerAction ? { payment_source: { paypal: wallet } } : {}),
    purchase_units: [unit],
    create_time: order.createTime,
    update_time: order.updateTime,
    links: orderLinks(order, base),
  };
}

/** The minimal representation (PayPal's default answer to create and capture: id, status, links). */
export function minimalOrderJson(order: OrderRecord, base: string): Record<string, unknown> {
  return {
    id: order.id,
    status: order.status,
    ...(order.payerAction ? { payment_source: { paypal: {} } } : {}),
    links: orderLinks(order, base),
  };
}

export function disputeJson(dispute: DisputeRecord, base: string): Record<string, unknown> {
  const capture = dispute.capture;
  return {
    dispute_id: dispute.id,
    create_time: dispute.createTime,
    update_time: dispute.updateTime,
    disputed_transactions: [
      {
        seller_transaction_id: capture.id,
        create_time: capture.createTime,
        transaction_status: 'COMPLETED',
        gross_amount: capture.amount,
        seller: { merchant_id: capture.order.account.merchantId },
      },
    ],
    reason: dispute.reason,
    status: dispute.status,
    dispute_amount: capture.amount,
    dispute_life_cycle_stage: 'CHARGEBACK',
    dispute_channel: 'INTERNAL',
    seller_response_due_date: dispute.sellerResponseDue,
    ...(dispute.outcome ? { dispute_outcome: { outcome_code: dispute.outcome } } : {}),
    links: [{ href: `${base}/v1/customer/disputes/${dispute.id}`, rel: 'self', method: 'GET' }],
  };
}
