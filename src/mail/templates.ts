// The messages the platform sends: one subject, HTML body and text body per template. Every value put into the
// HTML goes through escape-html by construction (the `html` tag below escapes each interpolation unless it is
// markup this file built itself), so a product title like `<script>` arrives as text, never as markup. The text
// body is plain text and the subject a single line. An unknown template or data of the wrong shape is a
// programming error: renderMail throws, and the write that asked for the message is refused with it.
import escapeHtml from 'escape-html';
import type { MailDraft } from '../platform/unit-of-work';
import { TEST_MODE_NOTICE, TEST_MODE_SUBJECT_PREFIX, testModeBanner } from '../views/test-mode';

export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

/** `receipt`: what the buyer paid for. Amounts are decimal strings, as everywhere else (src/money). */
export interface ReceiptData {
  shopName: string;
  /** The order's public uniqid. */
  uniqid: string;
  items: { title: string; quantity: number; price: string }[];
  total: string;
  currency: string;
}

/** `delivery`: the goods of an order, each item with its delivered content (serials, codes, lines of text). */
export interface DeliveryData {
  shopName: string;
  uniqid: string;
  items: { title: string; content: string[] }[];
}

/** `reseller_invitation`: an invitation to resell a shop's products. */
export interface ResellerInvitationData {
  shopName: string;
  /**
   * Where the invitee accepts: an http(s) URL (anything else is refused, it becomes a link). Left out while no page
   * accepts invitations: the mail then asks the invitee to answer the shop, never showing a link that leads nowhere.
   */
  inviteUrl?: string;
}

/** `renewal_invoice`: a subscription's next period is due; the buyer pays its invoice on the checkout page. */
export interface RenewalInvoiceData {
  shopName: string;
  uniqid: string;
  productTitle: string;
  total: string;
  currency: string;
  /** The invoice's checkout page (an http(s) URL). */
  payUrl: string;
  /** ISO 8601: when the invoice expires unpaid (the subscription then becomes PAST_DUE). */
  dueBy: string;
}

export interface MailTemplates {
  receipt: ReceiptData;
  renewal_invoice: RenewalInvoiceData;
  delivery: DeliveryData;
  reseller_invitation: ResellerInvitationData;
}

export type MailTemplate = keyof MailTemplates;

/** A typed MailDraft for `Effects.mail`, so a caller's data is checked by the compiler as well as at render time. */
export function mailDraft<T extends MailTemplate>(to: string, template: T, data: MailTemplates[T]): MailDraft {
  return { to, template, data: data as unknown as Record<string, unknown> };
}

export class MailTemplateError extends Error {}

// ---------------------------------------------------------------------------------------------------------------
// Escaping
// ---------------------------------------------------------------------------------------------------------------

/** Markup built by the `html` tag: inserted as is into another `html` template, never escaped twice. */
class SafeHtml {
  constructor(readonly value: string) {}
}

function toHtml(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(toHtml).join('');
  return escapeHtml(String(value));
}

/** An HTML template whose every interpolated value is escaped by escape-html (attribute values included). */
function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += toHtml(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/** One line: a subject never carries a line break (header injection) or control characters. */
function oneLine(text: string): string {
  return text
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function page(title: string, body: SafeHtml): string {
  return html`<!doctype html>
    <html>
      <head>
        <meta charset="utf-8" />
        <title>${title}</title>
      </head>
      <body style="font-family: sans-serif; color: #222; line-height: 1.4">
        ${body}
      </body>
    </html> `.value;
}

// ---------------------------------------------------------------------------------------------------------------
// Shape checks (the data comes through Effects.mail as Record<string, unknown>)
// ---------------------------------------------------------------------------------------------------------------

function fail(template: string, field: string, want: string): never {
  throw new MailTemplateError(`mail template ${template}: ${field} must be ${want}`);
}

function str(template: string, data: Record<string, unknown>, field: string): string {
  const v = data[field];
  if (typeof v !== 'string' || v === '') fail(template, field, 'a non-empty string');
  return v;
}

function amount(template: string, data: Record<string, unknown>, field: string): string {
  const v = data[field];
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string' || !/^-?\d+(\.\d+)?$/.test(v)) fail(template, field, 'a decimal string');
  return v;
}

function list(template: string, data: Record<string, unknown>, field: string): Record<string, unknown>[] {
  const v = data[field];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))) {
    fail(template, field, 'an array of objects');
  }
  return v as Record<string, unknown>[];
}

// ---------------------------------------------------------------------------------------------------------------
// The templates
// ---------------------------------------------------------------------------------------------------------------

function receipt(data: Record<string, unknown>): RenderedMail {
  const t = 'receipt';
  const shopName = str(t, data, 'shopName');
  const uniqid = str(t, data, 'uniqid');
  const currency = str(t, data, 'currency');
  const total = amount(t, data, 'total');
  const items = list(t, data, 'items').map((item, i) => {
    const quantity = item.quantity;
    if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1) {
      fail(t, `items[${i}].quantity`, 'a positive integer');
    }
    return { title: str(t, item, 'title'), quantity, price: amount(t, item, 'price') };
  });
  const subject = oneLine(`Your receipt from ${shopName} (order ${uniqid})`);
  const rows = items.map(
    (item) =>
      html`<tr>
        <td style="padding: 4px 8px">${item.title}</td>
        <td style="padding: 4px 8px; text-align: right">${item.quantity}</td>
        <td style="padding: 4px 8px; text-align: right">${item.price} ${currency}</td>
      </tr> `,
  );
  const body = html`<h1>Thank you for your order</h1>
    <p>${shopName} has received your payment for order <strong>${uniqid}</strong>.</p>
    <table style="border-collapse: collapse">
      <thead>
        <tr>
          <th style="text-align: left; padding: 4px 8px">Item</th>
          <th style="padding: 4px 8px">Quantity</th>
          <th style="padding: 4px 8px">Price</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
      <tfoot>
        <tr>
          <td style="padding: 4px 8px" colspan="2"><strong>Total</strong></td>
          <td style="padding: 4px 8px; text-align: right"><strong>${total} ${currency}</strong></td>
        </tr>
      </tfoot>
    </table>`;
  const text = [
    `Thank you for your order`,
    ``,
    `${shopName} has received your payment for order ${uniqid}.`,
    ``,
    ...items.map((item) => `- ${item.title} x ${item.quantity}: ${item.price} ${currency}`),
    ``,
    `Total: ${total} ${currency}`,
    ``,
  ].join('\n');
  return { subject, html: page(subject, body), text };
}

function delivery(data: Record<string, unknown>): RenderedMail {
  const t = 'delivery';
  const shopName = str(t, data, 'shopName');
  const uniqid = str(t, data, 'uniqid');
  const items = list(t, data, 'items').map((item, i) => {
    const content = item.content;
    if (!Array.isArray(content) || content.some((line) => typeof line !== 'string')) {
      fail(t, `items[${i}].content`, 'an array of strings');
    }
    return { title: str(t, item, 'title'), content: content as string[] };
  });
  const subject = oneLine(`Your delivery from ${shopName} (order ${uniqid})`);
  const sections = items.map(
    (item) =>
      html`<h2 style="font-size: 1.1em">${item.title}</h2>
        <pre style="background: #f4f4f4; padding: 8px; white-space: pre-wrap">${item.content.join('\n')}</pre> `,
  );
  const body = html`<h1>Your order is delivered</h1>
    <p>Here are the goods of order <strong>${uniqid}</strong> from ${shopName}. Keep this message safe.</p>
    ${sections}`;
  const text = [
    `Your order is delivered`,
    ``,
    `Here are the goods of order ${uniqid} from ${shopName}. Keep this message safe.`,
    ``,
    ...items.flatMap((item) => [`${item.title}:`, ...item.content.map((line) => `  ${line}`), ``]),
  ].join('\n');
  return { subject, html: page(subject, body), text };
}

function renewalInvoice(data: Record<string, unknown>): RenderedMail {
  const t = 'renewal_invoice';
  const shopName = str(t, data, 'shopName');
  const uniqid = str(t, data, 'uniqid');
  const productTitle = str(t, data, 'productTitle');
  const currency = str(t, data, 'currency');
  const total = amount(t, data, 'total');
  const payUrl = httpUrl(t, data, 'payUrl');
  const dueBy = str(t, data, 'dueBy');
  const subject = oneLine(`Your ${productTitle} subscription at ${shopName} renews: invoice ${uniqid}`);
  const body = html`<h1>Your subscription renews</h1>
    <p>
      The next period of your <strong>${productTitle}</strong> subscription at ${shopName} is due:
      <strong>${total} ${currency}</strong> (invoice ${uniqid}).
    </p>
    <p><a href="${payUrl}">Pay the invoice</a> before ${dueBy}, or the subscription is paused as past due.</p>
    <p>Or open this address: ${payUrl}</p>`;
  const text = [
    `Your subscription renews`,
    ``,
    `The next period of your ${productTitle} subscription at ${shopName} is due: ${total} ${currency} (invoice ${uniqid}).`,
    ``,
    `Pay the invoice before ${dueBy}, or the subscription is paused as past due: ${payUrl}`,
    ``,
  ].join('\n');
  return { subject, html: page(subject, body), text };
}

/** An http(s) URL: it becomes a link, so nothing else (javascript:, data:) may get through. */
function httpUrl(template: string, data: Record<string, unknown>, field: string): string {
  const url = str(template, data, field);
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    fail(template, field, 'an absolute URL');
  }
  if (protocol !== 'https:' && protocol !== 'http:') fail(template, field, 'an http(s) URL');
  return url;
}

function resellerInvitation(data: Record<string, unknown>): RenderedMail {
  const t = 'reseller_invitation';
  const shopName = str(t, data, 'shopName');
  const inviteUrl = data.inviteUrl === undefined ? undefined : httpUrl(t, data, 'inviteUrl');
  const subject = oneLine(`${shopName} invites you to become a reseller`);
  const answer = `To accept, answer ${shopName}: the shop then activates your reseller account.`;
  const body =
    inviteUrl === undefined
      ? html`<h1>You are invited</h1>
          <p>${shopName} invites you to resell its products.</p>
          <p>${answer}</p>`
      : html`<h1>You are invited</h1>
          <p>${shopName} invites you to resell its products.</p>
          <p><a href="${inviteUrl}">Accept the invitation</a></p>
          <p>Or open this address: ${inviteUrl}</p>`;
  const text = [
    `You are invited`,
    ``,
    `${shopName} invites you to resell its products.`,
    ``,
    inviteUrl === undefined ? answer : `Accept the invitation: ${inviteUrl}`,
    ``,
  ].join('\n');
  return { subject, html: page(subject, body), text };
}

const renderers: Readonly<Record<MailTemplate, (data: Record<string, unknown>) => RenderedMail>> = {
  receipt,
  renewal_invoice: renewalInvoice,
  delivery,
  reseller_invitation: resellerInvitation,
};

export const mailTemplates: readonly MailTemplate[] = Object.keys(renderers) as MailTemplate[];

/** Subject, HTML and text of a message. Throws MailTemplateError for an unknown template or ill-shaped data. */
export function renderMail(template: string, data: Record<string, unknown>): RenderedMail {
  if (!Object.hasOwn(renderers, template)) throw new MailTemplateError(`unknown mail template "${template}"`);
  if (typeof data !== 'object' || data === null) throw new MailTemplateError(`mail template ${template}: no data`);
  return renderers[template as MailTemplate](data);
}

/**
 * The rule for a test shop's mail, every template alike: the subject starts with `[TEST MODE] `, and the HTML and
 * text bodies open with the test-mode notice. A live shop's mail is left exactly as rendered.
 */
export function inMode(rendered: RenderedMail, livemode: boolean): RenderedMail {
  if (livemode) return rendered;
  return {
    subject: `${TEST_MODE_SUBJECT_PREFIX}${rendered.subject}`,
    // The page() above builds the <body> tag: the banner goes right after it (and its title gets the prefix too).
    html: rendered.html
      .replace(/<title>/, `<title>${escapeHtml(TEST_MODE_SUBJECT_PREFIX)}`)
      .replace(/(<body[^>]*>)/, `$1${testModeBanner(false)}`),
    text: `${TEST_MODE_NOTICE}\n\n${rendered.text}`,
  };
}
