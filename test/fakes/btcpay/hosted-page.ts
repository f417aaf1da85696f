// BTCPay's checkout page, /i/{invoiceId}, reduced to plain HTML forms a browser test can press: "Pay" (the rest
// paid; a settled invoice sends the browser to checkout.redirectURL when redirectAutomatically, as BTCPay's checkout
// does), "Pay part" (half of what is due: a partial payment) and "Fail" (the invoice becomes Invalid).
import Decimal from 'decimal.js';
import escapeHtml from 'escape-html';
import { minorUnit } from '../../../src/platform/money';
import { due } from './actions';
import type { FakeInvoice } from './state';

export type PageAction = 'pay' | 'pay-part' | 'fail';

export function pageHtml(invoice: FakeInvoice): string {
  const open = invoice.status === 'New';
  const buttons = open
    ? ['pay', 'pay-part', 'fail']
        .map((action) => {
          const label = action === 'pay' ? 'Pay' : action === 'pay-part' ? 'Pay part' : 'Fail';
          return `<form method="post" action="/i/${escapeHtml(invoice.id)}/${action}"><button type="submit">${label}</button></form>`;
        })
        .join('\n')
    : '';
  const redirect =
    invoice.status === 'Settled' && typeof invoice.checkout.redirectURL === 'string'
      ? `<p><a href="${escapeHtml(invoice.checkout.redirectURL)}">Return to the store</a></p>`
      : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Invoice ${escapeHtml(invoice.id)} - BTCPay Server (fake)</title></head>
<body>
<h1>Pay ${escapeHtml(invoice.amount)} ${escapeHtml(invoice.currency)}</h1>
<p>${escapeHtml(String(invoice.metadata.itemDesc ?? ''))}</p>
<p id="status">${escapeHtml(invoice.status)}${invoice.additionalStatus !== 'None' ? ` (${escapeHtml(invoice.additionalStatus)})` : ''}</p>
<p>Due: ${escapeHtml(due(invoice).toFixed(minorUnit(invoice.currency)))} ${escapeHtml(invoice.currency)}</p>
${buttons}
${redirect}
</body></html>
`;
}

/** Half of what is due, rounded down to the currency's minor unit (at least one minor unit). */
export function partAmount(invoice: FakeInvoice): string {
  const minor = minorUnit(invoice.currency);
  const half = due(invoice).div(2).toDecimalPlaces(minor, Decimal.ROUND_DOWN);
  return Decimal.max(half, new Decimal(10).pow(-minor)).toFixed(minor);
}

/** Where the browser goes after an action: the store's redirectURL once settled, else the page again. */
export function afterAction(invoice: FakeInvoice): string {
  const url = invoice.checkout.redirectURL;
  if (invoice.status === 'Settled' && typeof url === 'string' && invoice.checkout.redirectAutomatically === true)
    return url;
  return `/i/${invoice.id}`;
}
