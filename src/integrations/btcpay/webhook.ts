// BTCPay's webhooks: `BTCPay-Sig: sha256=<hex HMAC-SHA256(raw body, webhook secret)>`, checked in constant time,
// then translated.
//
// BTCPay signs no timestamp, and its redeliveries (automatic retries and the dashboard's "Redeliver") keep the
// original event's `timestamp`, so an old event is not refused for its age: a replay is harmless because the notice's
// eventId is the first delivery's id (`originalDeliveryId`, which every redelivery keeps), and the core dedupes it.
//
// BTCPay's invoice events carry no amount, so every payment event becomes a SESSION notice with state OPEN, "look
// again": the core reads the session (readSession) for it and settles on what the invoice says. Only the terminal
// events that need no amount say their state: InvoiceExpired with nothing paid -> EXPIRED, InvoiceInvalid -> FAILED.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookRejected, type ProviderAccount, type ProviderNotice, type SessionState } from '../gateway-provider';
import type { WebhookInvoiceEvent } from './types';

const lookAgain = new Set(['InvoiceReceivedPayment', 'InvoicePaymentSettled', 'InvoiceProcessing', 'InvoiceSettled']);

function header(headers: Readonly<Record<string, string | string[] | undefined>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

export function btcpaySignature(rawBody: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

function verify(rawBody: Buffer, given: string | undefined, secret: string): void {
  if (!given) throw new WebhookRejected('no BTCPay-Sig header');
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(given.trim());
  if (!match) throw new WebhookRejected('BTCPay-Sig is not sha256=<hex>');
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const received = Buffer.from(match[1]!, 'hex');
  if (received.length !== expected.length || !timingSafeEqual(received, expected)) {
    throw new WebhookRejected('BTCPay-Sig does not match the body');
  }
}

function parse(rawBody: Buffer): WebhookInvoiceEvent {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new WebhookRejected('the body is not JSON');
  }
  const event = body as Partial<Record<keyof WebhookInvoiceEvent, unknown>>;
  if (
    typeof body !== 'object' ||
    body === null ||
    Array.isArray(body) ||
    typeof event.deliveryId !== 'string' ||
    !event.deliveryId ||
    typeof event.type !== 'string' ||
    typeof event.storeId !== 'string' ||
    (event.originalDeliveryId !== undefined &&
      event.originalDeliveryId !== null &&
      typeof event.originalDeliveryId !== 'string') ||
    (event.invoiceId !== undefined && typeof event.invoiceId !== 'string') ||
    (event.metadata !== undefined &&
      event.metadata !== null &&
      (typeof event.metadata !== 'object' || Array.isArray(event.metadata)))
  ) {
    throw new WebhookRejected('the body is not a BTCPay webhook event');
  }
  return body as WebhookInvoiceEvent;
}

function translate(event: WebhookInvoiceEvent): ProviderNotice {
  const eventId = event.originalDeliveryId || event.deliveryId;
  let state: SessionState | undefined;
  if (lookAgain.has(event.type)) state = { status: 'OPEN' };
  else if (event.type === 'InvoiceExpired')
    state = event.partiallyPaid === true ? { status: 'OPEN' } : { status: 'EXPIRED' };
  else if (event.type === 'InvoiceInvalid') state = { status: 'FAILED' };
  if (!state) return { kind: 'IGNORED', eventId, type: event.type };
  if (!event.invoiceId) throw new WebhookRejected(`a ${event.type} event without an invoiceId`);
  const orderId = event.metadata?.orderId;
  return {
    kind: 'SESSION',
    eventId,
    sessionId: event.invoiceId,
    ...(typeof orderId === 'string' && orderId ? { attemptId: orderId } : {}),
    state,
  };
}

export function parseWebhook(
  account: ProviderAccount,
  rawBody: Buffer,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): ProviderNotice[] {
  const secret = account.credentials.webhook_secret;
  if (!secret) throw new WebhookRejected('the BTCPay connection has no webhook secret');
  verify(rawBody, header(headers, 'btcpay-sig'), secret);
  const event = parse(rawBody);
  // One webhook secret could be reused across stores by mistake: an event of another store is not this shop's.
  if (event.storeId !== account.credentials.store_id) throw new WebhookRejected("the event is another store's");
  return [translate(event)];
}
