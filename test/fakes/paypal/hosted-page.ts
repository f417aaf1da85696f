// The buyer's side of PayPal, as plain HTML: the approval page an order's payer-action link opens, with "Pay"
// (approve: PayPal sends the buyer to return_url?token=<order>&PayerID=<payer>; nothing is captured yet), "Fail"
// (approve with a funding source the merchant's capture will find declined) and PayPal's "Cancel and return"
// link to cancel_url. No script: the forms post back to the fake.
import type { OrderRecord } from './model';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function approvalPage(order: OrderRecord, base: string): string {
  const approvable = order.status === 'CREATED' || order.status === 'PAYER_ACTION_REQUIRED';
  const token = escapeHtml(order.id);
  const mode = order.account.livemode ? '' : '<p><strong>SANDBOX</strong>: no real money moves.</p>';
  const actions = approvable
    ? `<form method="post" action="${escapeHtml(base)}/checkoutnow/approve">
  <input type="hidden" name="token" value="${token}"><button type="submit">Pay</button>
</form>
<form method="post" action="${escapeHtml(base)}/checkoutnow/decline">
  <input type="hidden" name="token" value="${token}"><button type="submit">Fail</button>
</form>
${order.cancelUrl ? `<p><a href="${escapeHtml(order.cancelUrl)}">Cancel and return to merchant</a></p>` : ''}`
    : `<p>This order is ${escapeHtml(order.status)} and cannot be approved.</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PayPal Checkout (fake)</title></head>
<body>
<h1>PayPal Checkout</h1>
${mode}
<p>${escapeHtml(order.description ?? 'Order')}: ${escapeHtml(order.amount.value)} ${escapeHtml(order.amount.currency_code)}</p>
${actions}
</body></html>
`;
}

export function notFoundPage(): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>PayPal</title></head>' +
    '<body><p>This checkout session is not valid.</p></body></html>\n'
  );
}
