// Payments (developer invoices) and payment links -> the contract's Payment and PaymentLink.
import type { OrderRow, PaymentLinkRow } from '../../db/tables';
import { jsonAmount } from '../platform/money';
import { checkoutUrl } from './order';
import { unixSeconds } from './time';

/** Adds query parameters to an address that may already carry some. */
export function withQuery(url: string, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  return `${url}${url.includes('?') ? '&' : '?'}${query}`;
}

export interface PaymentUrls {
  /** The hosted checkout of the invoice, with the crypto auto-start parameters when the payment asked for them. */
  url: string;
  /** The same address with the shop query parameter. */
  urlBranded: string;
}

/** `url` and `url_branded` of a payment: rule 1 of createPayment puts the coin in `url` (and so in both). */
export function paymentUrls(
  checkoutBase: string,
  order: Pick<OrderRow, 'uniqid' | 'shop_id'>,
  crypto?: string,
): PaymentUrls {
  const invoice = checkoutUrl(checkoutBase, order.uniqid);
  const url = crypto
    ? withQuery(invoice, { selected_gateway: crypto, auto_start_gateway: '1', auto_start_crypto: '1' })
    : invoice;
  return { url, urlBranded: withQuery(url, { shop: order.shop_id }) };
}

export function paymentView(order: OrderRow, urls: PaymentUrls, session?: { sessionId: string; checkoutUrl: string }) {
  const view = {
    uniqid: order.uniqid,
    url: urls.url,
    url_branded: urls.urlBranded,
    total: jsonAmount(order.total),
    currency: order.currency,
    status: order.payment_status,
    created_at: unixSeconds(order.created_at),
  };
  return session ? { ...view, checkout_url: session.checkoutUrl, session_id: session.sessionId } : view;
}

/** The shareable address of a payment link: `{checkoutBase}/link/<uniqid>`. */
export function paymentLinkUrl(checkoutBase: string, uniqid: string): string {
  return `${checkoutBase}/link/${uniqid}`;
}

export function paymentLinkView(row: PaymentLinkRow, checkoutBase: string) {
  return {
    id: row.id,
    uniqid: row.uniqid,
    title: row.title,
    url: paymentLinkUrl(checkoutBase, row.uniqid),
    product_id: row.product_id,
    variant_id: row.variant_id,
    amount: row.amount === null ? null : jsonAmount(row.amount),
    currency: row.currency,
    quantity: row.quantity,
    enabled: row.enabled,
    uses: row.uses,
    max_uses: row.max_uses,
    expires_at: row.expires_at === null ? null : unixSeconds(row.expires_at),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}
