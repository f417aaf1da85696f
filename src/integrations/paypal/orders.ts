// A checkout session is a PayPal order (Orders v2, intent CAPTURE). The buyer approves it on PayPal's page; the
// money moves only when we capture it, which readSession does for an APPROVED order, with a PayPal-Request-Id
// derived from the order so two readers (the return route and the webhook) capture it once.
import { decimalString } from '../../platform/money';
import {
  ProviderError,
  type ProviderAccount,
  type ProviderSession,
  type SessionState,
  type StartSessionInput,
} from '../gateway-provider';
import { describeError, issueOf, type PayPalClientOptions, PayPalClient } from './client';
import { requestIdFor } from './request-ids';
import { asOrder, capturesOf, isMoney, linkHref, type Order } from './wire';

/** PayPal's limit on purchase_units[].description, custom_id and invoice_id. */
const maxText = 127;

export async function startSession(
  account: ProviderAccount,
  input: StartSessionInput,
  options: PayPalClientOptions,
): Promise<ProviderSession> {
  const body = {
    intent: 'CAPTURE',
    purchase_units: [
      {
        custom_id: input.attemptId,
        invoice_id: input.orderUniqid,
        description: input.description.slice(0, maxText),
        amount: { currency_code: input.currency, value: decimalString(input.amount, input.currency) },
      },
    ],
    payment_source: {
      paypal: {
        ...(input.customerEmail ? { email_address: input.customerEmail } : {}),
        experience_context: {
          return_url: input.successUrl,
          cancel_url: input.cancelUrl,
          user_action: 'PAY_NOW',
          shipping_preference: 'NO_SHIPPING',
        },
      },
    },
  };
  const answer = await new PayPalClient(account, options).call({
    method: 'POST',
    path: '/v2/checkout/orders',
    body,
    requestId: requestIdFor('order', input.attemptId),
  });
  if (answer.status !== 200 && answer.status !== 201) {
    throw new ProviderError('refused', `PayPal refused the order (${describeError(answer.body)})`);
  }
  const order = asOrder(answer.body);
  // payer-action when payment_source.paypal is given (as here), approve for the older application_context form.
  const checkoutUrl = linkHref(order.links, 'payer-action') ?? linkHref(order.links, 'approve');
  if (!checkoutUrl) throw new ProviderError('unavailable', 'PayPal answered an order without a payer-action link');
  return { sessionId: order.id, checkoutUrl };
}

export async function readSession(
  account: ProviderAccount,
  sessionId: string,
  options: PayPalClientOptions,
): Promise<SessionState> {
  const client = new PayPalClient(account, options);
  const order = await getOrder(client, sessionId);
  if (order.status !== 'APPROVED') return stateOf(order);
  return capture(client, order.id);
}

async function getOrder(client: PayPalClient, orderId: string): Promise<Order> {
  const answer = await client.call({ method: 'GET', path: `/v2/checkout/orders/${encodeURIComponent(orderId)}` });
  if (answer.status !== 200) {
    throw new ProviderError('refused', `PayPal could not show order ${orderId} (${describeError(answer.body)})`);
  }
  return asOrder(answer.body);
}

/** The buyer approved: take the money now. Safe to repeat (the key is the order's), safe to race with a reader. */
async function capture(client: PayPalClient, orderId: string): Promise<SessionState> {
  const answer = await client.call({
    method: 'POST',
    path: `/v2/checkout/orders/${encodeURIComponent(orderId)}/capture`,
    body: {},
    requestId: requestIdFor('capture', orderId),
    representation: true,
  });
  if (answer.status === 200 || answer.status === 201) return stateOf(asOrder(answer.body));
  const issue = issueOf(answer.body);
  if (answer.status === 422 && issue === 'ORDER_ALREADY_CAPTURED') {
    // Captured under another key (the dashboard, another integration): what it came to is on the order.
    return stateOf(await getOrder(client, orderId));
  }
  if (answer.status === 422 && (issue === 'ORDER_NOT_APPROVED' || issue === 'ORDER_COMPLETION_IN_PROGRESS')) {
    return { status: 'OPEN' };
  }
  if (answer.status === 422) {
    // INSTRUMENT_DECLINED, PAYER_CANNOT_PAY, TRANSACTION_REFUSED...: what the buyer approved cannot be taken; a new
    // attempt opens a new order.
    return { status: 'FAILED' };
  }
  throw new ProviderError('refused', `PayPal refused to capture order ${orderId} (${describeError(answer.body)})`);
}

function stateOf(order: Order): SessionState {
  switch (order.status) {
    case 'CREATED':
    case 'SAVED':
    case 'PAYER_ACTION_REQUIRED':
    case 'APPROVED':
      return { status: 'OPEN' };
    case 'VOIDED':
      return { status: 'EXPIRED' };
    case 'COMPLETED':
      return completedState(order);
  }
}

/** A COMPLETED order is paid only if its capture is: PayPal completes an order whose capture was declined, too. */
function completedState(order: Order): SessionState {
  const captures = capturesOf(order);
  const taken = captures.find(
    (c) => c.status === 'COMPLETED' || c.status === 'PARTIALLY_REFUNDED' || c.status === 'REFUNDED',
  );
  if (taken) {
    if (!isMoney(taken.amount)) throw new ProviderError('unavailable', 'PayPal answered a capture without an amount');
    const currency = taken.amount.currency_code;
    return {
      status: 'PAID',
      amount: decimalString(taken.amount.value, currency),
      currency,
      paymentRef: taken.id,
    };
  }
  if (captures.some((c) => c.status === 'PENDING')) return { status: 'OPEN' };
  if (captures.some((c) => c.status === 'DECLINED' || c.status === 'FAILED')) return { status: 'FAILED' };
  throw new ProviderError('unavailable', `PayPal answered a completed order ${order.id} without a capture`);
}
