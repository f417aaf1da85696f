// The HTML of the hosted checkout and of the sandbox gateway's page. Server-rendered, nothing loaded from another
// host, no script: every value shown went through escapeHtml, since titles, variants and delivered content are
// written by merchants and buyers.
import Decimal from 'decimal.js';
import escapeHtml from 'escape-html';
import type { GatewayRow, OrderItemRow, OrderRow, PaymentAttemptRow, PaymentLinkRow } from '../../../db/tables';
import type { LinkOffer, LinkUnavailable } from '../../domain/orders/payment-link-orders';
import { amountDue } from '../../domain/orders/wallet-orders';
import { decimalString } from '../../platform/money';
import { renderPage, type PageBrand } from '../../views/page-layout';

const e = (value: unknown): string => escapeHtml(String(value ?? ''));

/** A page of the checkout family in the shared layout; `livemode: false` (a test shop's page) adds the TEST MODE banner. */
export function page(title: string, body: string, livemode = true, brand?: PageBrand): string {
  return renderPage({ title, body, livemode, brand });
}

export function messagePage(title: string, message: string, brand?: PageBrand): string {
  return page(title, `<h1>${e(title)}</h1><p>${e(message)}</p>`, true, brand);
}

/**
 * The short reference an order is called by on its page (`Order 1A2B3C4D`): the first 8 hex digits of its uniqid, a
 * random UUID v4, so two orders of a shop rarely share one; the full uniqid stays on the page in small type.
 */
export function orderReference(uniqid: string): string {
  return uniqid.replace(/-/g, '').slice(0, 8).toUpperCase();
}

const paidStatuses = new Set<OrderRow['status']>(['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED', 'DISPUTED']);

export interface InvoicePage {
  /** The shop's name, logo and colours (its branding settings). */
  brand: PageBrand;
  /** The shop's mode: a test shop's invoice carries the TEST MODE banner. */
  livemode: boolean;
  order: OrderRow;
  items: OrderItemRow[];
  gateways: GatewayRow[];
  latestAttempt: PaymentAttemptRow | undefined;
  /** The invoice's own address (`/invoice/<uniqid>`), for forms and download links. */
  path: string;
}

export function invoicePage({ brand, livemode, order, items, gateways, latestAttempt, path }: InvoicePage): string {
  const money = (amount: string) => `${e(decimalString(amount, order.currency))} ${e(order.currency)}`;
  const reference = orderReference(order.uniqid);
  const title = order.developer_title ?? `Order ${reference}`;
  const rows = items
    .map(
      (
        item,
      ) => `<tr><td>${e(item.product_title)}${item.variant_title ? ` <small>(${e(item.variant_title)})</small>` : ''}${chosenOptions(item)}</td>
<td class="n">${e(item.quantity)}</td><td class="n">${money(item.unit_price)}</td><td class="n">${money(item.total)}</td></tr>`,
    )
    .join('\n');
  const totals = [
    ['Subtotal', order.subtotal],
    ['Discount', order.discount],
    ['Tax', order.tax],
  ]
    .map(([label, amount]) => `<tr><td colspan="3">${label}</td><td class="n">${money(amount!)}</td></tr>`)
    .join('\n');
  return page(
    `${order.developer_title ?? `Order ${reference}`} · ${brand.name}`,
    `<h1>${e(title)}</h1>
<p class="order-id">${
      // An untitled invoice is headed by its reference already: the line below says what the heading does not.
      order.developer_title === null ? '' : `Order ${e(reference)} · `
    }Invoice <span class="id" id="uniqid">${e(order.uniqid)}</span> · issued ${e(issuedOn(order.created_at))}</p>
${statusNotice(order, gateways)}
<p class="muted small">Status: <span class="status" id="status">${e(order.status)}</span></p>
<table><caption class="muted small">Order summary</caption>
<thead><tr><th scope="col">Item</th><th scope="col" class="n">Qty</th><th scope="col" class="n">Unit price</th><th scope="col" class="n">Total</th></tr></thead>
<tbody>${rows}</tbody><tfoot>${totals}
<tr><th colspan="3" scope="row">Total</th><th class="n" id="total">${money(order.total)}</th></tr>${walletRows(order, money)}</tfoot></table>
${stateSection(order, items, gateways, latestAttempt, path)}`,
    livemode,
    brand,
  );
}

/** The variant field options the buyer chose for a line (`Size: XL`), under its title. */
function chosenOptions(item: OrderItemRow): string {
  const options = item.variant_options ?? [];
  if (options.length === 0) return '';
  return `<br><small class="options">${options.map((o) => `${e(o.name)}: ${e(o.value)}`).join(', ')}</small>`;
}

/** The day an invoice was made, as its buyer reads it (`22 November 2026`), in UTC as every time of the API. */
function issuedOn(at: Date): string {
  return at.toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
}

/** The invoice's deadline (`22 November 2026, 10:30 UTC`). */
function deadline(at: Date): string {
  return `${issuedOn(at)}, ${at.toISOString().slice(11, 16)} UTC`;
}

/**
 * The line that tells the buyer where the invoice stands, above everything else: paid, waiting, or over. A
 * pending invoice of a shop with no payment method says so here, once, and what the buyer can do about it.
 */
function statusNotice(order: OrderRow, gateways: GatewayRow[]): string {
  if (paidStatuses.has(order.status)) {
    const after: Partial<Record<OrderRow['status'], string>> = {
      PARTIALLY_REFUNDED: 'Part of it has since been refunded.',
      REFUNDED: 'It has since been refunded.',
      DISPUTED: 'The payment is being disputed.',
    };
    const more = after[order.status];
    return `<div class="notice success" id="payment-status" role="status">Payment received${
      more ? `<p>${e(more)}</p>` : '<p>Thank you. Your items are below.</p>'
    }</div>`;
  }
  if (order.status === 'PENDING' && gateways.length === 0)
    return `<div class="notice warn" id="payment-status">Awaiting payment<p>This shop cannot take payments right now, so
nothing can be charged yet. Come back to this page later${
      order.expires_at ? ` (it stays open until ${e(deadline(order.expires_at))})` : ''
    } or contact the shop.</p></div>`;
  if (order.status === 'PENDING')
    return '<div class="notice info" id="payment-status">Awaiting payment<p>Choose how to pay below.</p></div>';
  if (order.status === 'VOIDED')
    return '<div class="notice warn" id="payment-status" role="status">Invoice expired</div>';
  return '<div class="notice info" id="payment-status" role="status">Payment processing</div>';
}

function stateSection(
  order: OrderRow,
  items: OrderItemRow[],
  gateways: GatewayRow[],
  latestAttempt: PaymentAttemptRow | undefined,
  path: string,
): string {
  if (order.status === 'PENDING') {
    const retry =
      latestAttempt?.status === 'FAILED'
        ? '<p class="notice error" role="alert">Your last payment did not go through; try again.</p>'
        : '';
    // The notice above already says there is no way to pay, and what to do.
    if (gateways.length === 0) return retry;
    // An invoice created without a buyer email asks for it: the receipt and the customer record need one.
    const email =
      order.customer_email === null
        ? `<label for="email">Your email (receipt)</label><input type="email" id="email" name="email" required maxlength="254"
autocomplete="email">`
        : '';
    const buttons = gateways
      .map((g) => `<button type="submit" name="gateway" value="${e(g.code)}">Pay with ${e(g.code)}</button>`)
      .join('\n');
    return `<h2>Payment</h2>${retry}<form method="post" action="${e(path)}/pay">${email}<div class="actions">${buttons}</div></form>`;
  }
  if (order.status === 'VOIDED') return '<p>This invoice has expired and can no longer be paid.</p>';
  if (!paidStatuses.has(order.status)) return '<p>Your payment is being processed.</p>';
  return `<h2>Your items</h2>${items.map((item) => deliverySection(item, path)).join('\n')}`;
}

function deliverySection(item: OrderItemRow, path: string): string {
  const heading = `<h3>${e(item.product_title)}${item.variant_title ? ` (${e(item.variant_title)})` : ''}</h3>`;
  if (item.delivery_status !== 'DELIVERED' || !item.delivered_items)
    return `<div class="delivery">${heading}<p>Delivery: <span class="status">${
      item.delivery_status === 'FAILED' ? 'failed' : 'pending'
    }</span></p></div>`;
  return `<div class="delivery">${heading}<p>Delivery: <span class="status">delivered</span></p>${deliveredContent(
    item.delivered_items,
    path,
  )}</div>`;
}

/** Strings of a delivered list, whatever shape an entry has (`"X"` or `{ serial: "X" }`). */
function texts(value: unknown, keys: readonly string[]): string[] {
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return list.flatMap((entry) => {
    if (typeof entry === 'string' || typeof entry === 'number') return [String(entry)];
    if (entry && typeof entry === 'object') {
      for (const key of keys) {
        const v = (entry as Record<string, unknown>)[key];
        if (typeof v === 'string') return [v];
      }
    }
    return [];
  });
}

/** Attachment ids of a delivery's files (`["att_…"]` or `[{ id | attachment_id, filename | name }]`). */
export function deliveredFiles(delivered: Record<string, unknown> | null): { id: string; name: string }[] {
  if (!delivered) return [];
  const list = [delivered.files, delivered.attachments].flatMap((v) => (Array.isArray(v) ? v : []));
  return list.flatMap((entry) => {
    if (typeof entry === 'string') return [{ id: entry, name: entry }];
    if (entry && typeof entry === 'object') {
      const r = entry as Record<string, unknown>;
      const id = typeof r.attachment_id === 'string' ? r.attachment_id : typeof r.id === 'string' ? r.id : undefined;
      if (id === undefined) return [];
      const name = typeof r.filename === 'string' ? r.filename : typeof r.name === 'string' ? r.name : id;
      return [{ id, name }];
    }
    return [];
  });
}

const codeKeys = ['serials', 'codes', 'keys', 'serial', 'code'] as const;
const linkKeys = ['links', 'urls', 'link', 'url'] as const;
const messageKeys = ['message', 'text', 'instructions'] as const;
const shown = new Set<string>([...codeKeys, ...linkKeys, ...messageKeys, 'files', 'attachments']);

function deliveredContent(delivered: Record<string, unknown>, path: string): string {
  const parts: string[] = [];
  for (const key of messageKeys)
    for (const text of texts(delivered[key], ['text', 'message']))
      parts.push(`<p class="message">${e(text).replace(/\n/g, '<br>')}</p>`);
  const codes = codeKeys.flatMap((key) => texts(delivered[key], ['serial', 'code', 'value', 'key']));
  if (codes.length > 0)
    parts.push(`<ul class="codes">${codes.map((c) => `<li><code>${e(c)}</code></li>`).join('')}</ul>`);
  const links = linkKeys.flatMap((key) => texts(delivered[key], ['url', 'href', 'link']));
  if (links.length > 0)
    parts.push(
      `<ul class="links">${links
        // Only web addresses become links: a javascript: or data: URL is shown, never followed.
        .map((l) =>
          /^https?:\/\//i.test(l)
            ? `<li><a href="${e(l)}" rel="noopener noreferrer">${e(l)}</a></li>`
            : `<li>${e(l)}</li>`,
        )
        .join('')}</ul>`,
    );
  const files = deliveredFiles(delivered);
  if (files.length > 0)
    parts.push(
      `<ul class="files">${files
        .map((f) => `<li><a href="${e(path)}/files/${e(encodeURIComponent(f.id))}" download>${e(f.name)}</a></li>`)
        .join('')}</ul>`,
    );
  for (const [key, value] of Object.entries(delivered)) {
    if (shown.has(key) || value === null || value === undefined) continue;
    parts.push(`<p>${e(key)}: ${e(typeof value === 'string' ? value : JSON.stringify(value))}</p>`);
  }
  return parts.join('\n');
}

export interface SandboxPage {
  attempt: PaymentAttemptRow;
  /** The shop's mode (always test: a live shop's session is a 404 before any page). */
  livemode: boolean;
  currency: string;
  /** `/sandbox/checkout/<sessionId>`. */
  path: string;
  invoiceUrl: string;
  /** The dispute buttons of a paid session (src/pages/checkout/disputes.ts), already escaped HTML. */
  disputeSection?: string;
}

export function sandboxPage({
  attempt,
  livemode,
  currency,
  path,
  invoiceUrl,
  disputeSection = '',
}: SandboxPage): string {
  const amount = `${e(decimalString(attempt.amount, currency))} ${e(currency)}`;
  const actions =
    attempt.status === 'PENDING'
      ? `<div class="actions"><form method="post" action="${e(path)}/pay"><button type="submit">Pay</button></form>
<form method="post" action="${e(path)}/fail"><button type="submit" class="danger">Fail payment</button></form></div>`
      : `<p class="notice ${attempt.status === 'PAID' ? 'success' : 'error'}" id="session-status" role="status">This session is ${e(
          attempt.status === 'PAID' ? 'paid' : 'failed',
        )}.</p><p><a href="${e(invoiceUrl)}">Back to the invoice</a></p>`;
  return page(
    'Sandbox checkout',
    `<p class="note">SANDBOX gateway: a test payment page, no money moves.</p>
<h1>Pay ${amount}</h1><p>Amount: <span id="amount">${amount}</span></p>${actions}${disputeSection}`,
    livemode,
    sandboxBrand,
  );
}

/** The sandbox gateway's page is the gateway's, not the shop's: its own plain header. */
const sandboxBrand: PageBrand = { name: 'SANDBOX gateway', logoUrl: null, primary: '#3d3d9e', accent: '#8a8ad6' };

export interface PaymentLinkPage {
  brand: PageBrand;
  /** The shop's mode: a test shop's link page carries the TEST MODE banner. */
  livemode: boolean;
  link: PaymentLinkRow;
  /** What a product link sells, its choices and its price as the invoice will charge it; undefined: an amount. */
  offer: LinkOffer | undefined;
  /** Why it cannot sell, or null. */
  unavailable: LinkUnavailable | null;
  path: string;
  /** A refused submission: what to correct (shown above the form), and what the buyer had filled in. */
  problems?: string[];
  filled?: { email?: string; variantId?: string; options?: Record<string, string> };
}

const unavailableText: Record<LinkUnavailable, string> = {
  disabled: 'This payment link has been turned off by the shop.',
  expired: 'This payment link has expired.',
  exhausted: 'This payment link has been used as many times as the shop allows.',
};

/** The form field of a variant field's choice (express's plain urlencoded parser keeps any name as it is). */
export const optionFieldPrefix = 'option:';

/**
 * A payment link's page: what it sells at the price its invoice will charge, a choice for each variant field of
 * the product, and the email the receipt and goods go to.
 */
export function paymentLinkPage({
  brand,
  livemode,
  link,
  offer,
  unavailable,
  path,
  problems = [],
  filled = {},
}: PaymentLinkPage): string {
  const money = (amount: string) => `${e(decimalString(amount, link.currency))} ${e(link.currency)}`;
  const what = offer
    ? `<p>${e(offer.title)} × ${e(offer.quantity)}${
        offer.quantity > 1 ? ` <span class="muted">(${money(offer.price.lines[0]!.unitPrice)} each)</span>` : ''
      }</p>${offerPrice(offer, money)}`
    : `<p>Amount: <span id="price">${money(link.amount ?? '0')}</span></p>`;
  const beforeTax = offer && !offer.tax.inclusive && !new Decimal(offer.tax.rate).isZero() ? ' before tax' : '';
  const variants =
    offer && offer.variants.length > 0
      ? `<label for="variant">Variant</label>
<select id="variant" name="variant" required><option value="">Choose…</option>${offer.variants
          .map(
            (v) =>
              `<option value="${e(v.id)}"${filled.variantId === v.id ? ' selected' : ''}>${e(v.title)} (${money(
                v.price,
              )} per unit${beforeTax})</option>`,
          )
          .join('')}</select>`
      : '';
  const choices = (offer?.choices ?? [])
    .map((choice, i) => {
      const picked = filled.options?.[choice.name];
      const options = choice.options
        .map((o) => {
          const adjust = new Decimal(o.priceAdjustment);
          const note = adjust.isZero()
            ? ''
            : ` (${adjust.isNegative() ? '−' : '+'}${money(adjust.abs().toFixed())} per unit${beforeTax})`;
          return `<option value="${e(o.value)}"${picked === o.value ? ' selected' : ''}>${e(o.value)}${note}</option>`;
        })
        .join('');
      return `<label for="choice-${i}">${e(choice.name)}</label>
<select id="choice-${i}" name="${e(optionFieldPrefix + choice.name)}" required><option value="">Choose…</option>${options}</select>`;
    })
    .join('\n');
  const alert =
    problems.length === 0
      ? ''
      : `<div class="notice error" id="problems" role="alert">Please check your choices<ul>${problems
          .map((p) => `<li>${e(p)}</li>`)
          .join('')}</ul></div>`;
  const action = unavailable
    ? `<p class="notice warn status" id="unavailable">${e(unavailableText[unavailable])}</p>`
    : `${alert}<form method="post" action="${e(path)}">${variants}${choices}<label for="email">Your email (receipt and delivery)</label>
<input type="email" id="email" name="email" required maxlength="254" autocomplete="email"${
        filled.email ? ` value="${e(filled.email)}"` : ''
      }>
<div class="actions"><button type="submit">Continue to payment</button></div></form>`;
  return page(`${link.title} · ${brand.name}`, `<h1>${e(link.title)}</h1>${what}${action}`, livemode, brand);
}

/** The link's total as its invoice will charge it, with the tax the shop's settings put in or on top. */
function offerPrice(offer: LinkOffer, money: (amount: string) => string): string {
  const { price, tax } = offer;
  const taxed = !new Decimal(price.tax).isZero();
  const note = !taxed
    ? ''
    : tax.inclusive
      ? ` <span class="muted small" id="tax">including ${money(price.tax)} tax (${e(percent(tax.rate))})</span>`
      : ` <span class="muted small" id="tax">${money(price.subtotal)} + ${money(price.tax)} tax (${e(
          percent(tax.rate),
        )})</span>`;
  return `<p>${offer.varies ? 'Total from' : 'Total'} <strong id="price">${money(price.total)}</strong>${note}</p>`;
}

const percent = (rate: string) => `${new Decimal(rate).toFixed()}%`;

export function unavailableLinkMessage(reason: LinkUnavailable): string {
  return unavailableText[reason];
}

/** An order paid partly from the buyer's wallet: what the wallet paid and what is left to pay here. */
function walletRows(order: OrderRow, money: (amount: string) => string): string {
  if (new Decimal(order.balance_paid).isZero()) return '';
  return `
<tr><td colspan="3">Paid from your wallet</td><td class="n" id="balance-paid">${money(order.balance_paid)}</td></tr>
<tr><th colspan="3">Due</th><th class="n" id="due">${money(amountDue(order))}</th></tr>`;
}
