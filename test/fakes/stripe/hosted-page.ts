// Stripe Checkout's hosted page, reduced to what a buyer does: see what is paid for, press Pay or Fail. Plain forms,
// no script, so a browser test or a plain HTTP client can drive it.
import escapeHtml from 'escape-html';
import type { CheckoutSession } from './objects';

export function hostedPage(session: CheckoutSession, name: string, amountText: string): string {
  const open = session.status === 'open';
  const id = encodeURIComponent(session.id);
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Checkout</title></head>
<body>
${session.livemode ? '' : '<p><strong>TEST MODE</strong></p>'}
<h1>${escapeHtml(name)}</h1>
<p>Pay ${escapeHtml(amountText)} ${escapeHtml(session.currency.toUpperCase())}</p>
${
  open
    ? `<form method="post" action="/pay/${id}/pay"><button type="submit">Pay</button></form>
<form method="post" action="/pay/${id}/fail"><button type="submit">Fail</button></form>`
    : `<p>This checkout session is ${escapeHtml(session.status)}.</p>`
}
</body>
</html>
`;
}
