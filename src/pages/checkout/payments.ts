// Paying an invoice through a SESSION gateway from the hosted checkout: start a session (one payment attempt), then
// settle the attempt when the gateway reports it paid or failed. An invoice may have several attempts (the buyer
// retries, or comes back to an old tab); the order's row lock decides which payment completes it, once.
import type { Kysely } from 'kysely';
import { orderByIdForUpdate, orderByUniqid, updateOrder } from '../../../db/queries/orders';
import { gatewayByCode } from '../../../db/queries/gateways';
import {
  attemptById,
  attemptBySession,
  deletePendingAttempt,
  insertPaymentAttempt,
  updatePaymentAttempt,
} from '../../../db/queries/payment-attempts';
import { shopById } from '../../../db/queries/shops';
import type { Database, OrderRow, PaymentAttemptRow } from '../../../db/tables';
import { admitBuyer } from '../../domain/customers/buyers';
import { adapterFor, gatewayOfferedIn } from '../../domain/payments/gateways';
import { applySessionState } from '../../domain/support/gateway-notices';
import { settleAttempt } from '../../domain/orders/settlement';
import {
  connectedProvider,
  openProviderSession,
  providerCodeOf,
  sessionAttempt,
  sessionReturnUrls,
} from '../../domain/payments/provider-sessions';
import type { ProviderCode } from '../../integrations/gateway-provider';
import { amountDue } from '../../domain/orders/wallet-orders';
import type { Services } from '../../http/handler';
import { newId } from '../../ids';
import { decimalString } from '../../platform/money';
import type { ShopOrigin, ShopWrite, UnitOfWork } from '../../platform/unit-of-work';
import { checkoutUrl } from '../../views/order';

export const SANDBOX = 'SANDBOX';

/** What the buyer is told, with the page's HTTP status; a refusal changes nothing. */
export class CheckoutRefusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/** The 404 of each kind of address: the same page whether the id names nothing or could never be an id. */
export const notFound = {
  invoice: () => new CheckoutRefusal(404, 'Invoice not found', 'There is no invoice at this address.'),
  link: () => new CheckoutRefusal(404, 'Payment link not found', 'There is no payment link at this address.'),
  session: () => new CheckoutRefusal(404, 'Session not found', 'There is no payment session at this address.'),
  file: () => new CheckoutRefusal(404, 'File not found', 'This invoice delivered no such file.'),
} as const;

export interface CheckoutDeps {
  db: Kysely<Database>;
  unitOfWork: UnitOfWork;
  services: Services;
}

export function checkoutOrigin(shopId: string, operationId: string, requestId: string): ShopOrigin {
  // No credential and no API request: the buyer's page and the gateway act for nobody the audit trail records.
  return { shopId, credentialId: undefined, operationId, requestId };
}

/**
 * Starts a session at the chosen gateway for a PENDING invoice; returns where to send the buyer. An invoice created
 * without a buyer email (`POST /payments` allows it) asks for one here, so the receipt, `order:paid` and the customer
 * record always have it.
 */
export async function startPayment(
  deps: CheckoutDeps,
  uniqid: string,
  gatewayCode: string,
  requestId: string,
  email: string | undefined,
  ipAddress: string | undefined,
): Promise<string> {
  const { db, unitOfWork, services } = deps;
  const order = await orderByUniqid(db, uniqid);
  if (!order) throw notFound.invoice();
  const gateway = gatewayCode === '' ? undefined : await gatewayByCode(db, order.shop_id, gatewayCode);
  if (!gateway || !gateway.active)
    throw new CheckoutRefusal(400, 'Payment method not available', 'This shop does not accept that payment method.');
  const shopOfOrder = await shopById(db, order.shop_id);
  const providerCode = shopOfOrder && (await connectedProvider(services.gateways, db, shopOfOrder, gateway.code));
  if (!providerCode && (gateway.kind !== 'SESSION' || gateway.code !== SANDBOX))
    throw new CheckoutRefusal(
      400,
      'Payment method not available here',
      `${gateway.code} has no integration on this server; choose another payment method.`,
    );
  if (order.status !== 'PENDING')
    throw new CheckoutRefusal(400, 'Invoice not payable', 'This invoice is no longer waiting for a payment.');
  if (order.customer_email === null && email === undefined)
    throw new CheckoutRefusal(400, 'Email needed', 'Enter the email address the receipt goes to.');
  if (providerCode) return startProviderPayment(deps, order, providerCode, requestId, { email, ipAddress });

  const session = adapterFor(gateway, services.config.publicUrl).startSession({
    shopId: order.shop_id,
    orderUniqid: order.uniqid,
    // The part the buyer's wallet does not pay (src/domain/orders/wallet-orders.ts).
    amount: decimalString(amountDue(order), order.currency),
    currency: order.currency,
    returnUrl: checkoutUrl(services.config.checkoutBaseUrl, order.uniqid),
  });
  await unitOfWork.write(checkoutOrigin(order.shop_id, 'checkoutStartPayment', requestId), async (w) => {
    const { trx, now } = w;
    const locked = await orderByIdForUpdate(trx, order.shop_id, order.id);
    // Paid or expired between the page and the click: no session for an invoice that cannot take a payment.
    if (locked?.status !== 'PENDING')
      throw new CheckoutRefusal(400, 'Invoice not payable', 'This invoice is no longer waiting for a payment.');
    if (locked.customer_email === null && email !== undefined) await setBuyer(w, locked, { email, ipAddress });
    await insertPaymentAttempt(trx, order.shop_id, {
      id: newId('pay'),
      order_id: order.id,
      gateway: gateway.code,
      session_id: session.sessionId,
      status: 'PENDING',
      amount: amountDue(locked),
      created_at: now,
    });
    await updateOrder(trx, order.shop_id, order.id, { gateway: gateway.code, updated_at: now });
  });
  return session.checkoutUrl;
}

/**
 * A session at a payment provider, in the order the issue of a lost write asks for: the attempt is written first
 * (its id is the provider's idempotency key and rides in the session), the provider is called outside any
 * transaction, then the session is recorded. A crash between the two leaves an attempt without a session, which the
 * reconciler completes by asking the provider again with the same key (the same session comes back); a provider
 * that fails or refuses leaves nothing (the attempt is deleted) and the buyer a page saying to try again.
 */
async function startProviderPayment(
  deps: CheckoutDeps,
  order: OrderRow,
  code: ProviderCode,
  requestId: string,
  buyer: { email: string | undefined; ipAddress: string | undefined },
): Promise<string> {
  const { db, unitOfWork, services } = deps;
  const shop = await shopById(db, order.shop_id);
  if (!shop) throw notFound.invoice();
  const attemptId = newId('pay');
  const opened = await unitOfWork.write(checkoutOrigin(order.shop_id, 'checkoutStartPayment', requestId), async (w) => {
    const locked = await orderByIdForUpdate(w.trx, order.shop_id, order.id);
    if (locked?.status !== 'PENDING')
      throw new CheckoutRefusal(400, 'Invoice not payable', 'This invoice is no longer waiting for a payment.');
    const paying =
      locked.customer_email === null && buyer.email !== undefined
        ? await setBuyer(w, locked, { email: buyer.email, ipAddress: buyer.ipAddress })
        : locked;
    const amount = amountDue(paying);
    await insertPaymentAttempt(
      w.trx,
      order.shop_id,
      sessionAttempt({ id: attemptId, orderId: order.id, gateway: code, sessionId: null, amount, now: w.now }),
    );
    return { amount, email: paying.customer_email };
  });
  let session;
  try {
    session = await openProviderSession(services.gateways, db, shop, code, {
      attemptId,
      orderUniqid: order.uniqid,
      description: order.developer_title ?? `Order ${order.uniqid} at ${shop.name}`,
      amount: decimalString(opened.amount, order.currency),
      currency: order.currency,
      customerEmail: opened.email ?? undefined,
      coin: order.blockchain ?? undefined,
      ...sessionReturnUrls(services.config.checkoutBaseUrl, order.uniqid, attemptId),
    });
  } catch (err) {
    await db.transaction().execute((trx) => deletePendingAttempt(trx, order.shop_id, attemptId));
    services.logger.warn('provider session not opened', {
      shop_id: order.shop_id,
      gateway: code,
      error: (err as Error)?.message,
    });
    throw new CheckoutRefusal(
      502,
      'Payment provider unavailable',
      `${code} could not start the payment just now. Nothing was charged; please try again in a moment.`,
    );
  }
  await unitOfWork.write(checkoutOrigin(order.shop_id, 'checkoutStartPayment', requestId), async (w) => {
    await updatePaymentAttempt(w.trx, order.shop_id, attemptId, {
      session_id: session.sessionId,
      session_url: session.checkoutUrl,
    });
    await updateOrder(w.trx, order.shop_id, order.id, { gateway: code, updated_at: w.now });
  });
  return session.checkoutUrl;
}

/**
 * The buyer is back from the provider's page: the session is read at once (for PayPal that is the capture) and
 * settled like a webhook would settle it, so the buyer sees the invoice paid without waiting for the webhook.
 * A provider that cannot be reached now changes nothing: the webhook or the reconciler settles it later.
 */
export async function settleReturn(deps: CheckoutDeps, uniqid: string, attemptId: string): Promise<void> {
  const { db, services } = deps;
  const order = await orderByUniqid(db, uniqid);
  if (!order) throw notFound.invoice();
  const attempt = await attemptById(db, order.shop_id, attemptId);
  if (!attempt || attempt.order_id !== order.id || attempt.session_id === null) return;
  const code = providerCodeOf(services.gateways, attempt.gateway);
  const shop = code && (await shopById(db, order.shop_id));
  const account = shop && code ? await services.gateways.account(db, shop, code) : undefined;
  if (!code || !account || attempt.status !== 'PENDING') return;
  let state;
  try {
    state = await services.gateways.provider(code)!.readSession(account, attempt.session_id);
  } catch (err) {
    services.logger.warn('provider session not read on return', {
      attempt_id: attempt.id,
      error: (err as Error)?.message,
    });
    return;
  }
  await deps.unitOfWork.write(checkoutOrigin(order.shop_id, 'checkoutReturn', newId('req')), (w) =>
    applySessionState(
      w,
      code,
      attempt.session_id!,
      state,
      { checkoutBaseUrl: services.config.checkoutBaseUrl },
      attempt.id,
    ),
  );
}

/** The buyer of an invoice that had none, found or created as a customer by the email given on the checkout. */
async function setBuyer(w: ShopWrite, order: OrderRow, buyer: { email: string; ipAddress?: string }) {
  const shop = await shopById(w.trx, w.shopId);
  if (!shop) throw new Error(`shop ${w.shopId} vanished`);
  const customer = await admitBuyer(w, shop, buyer);
  return updateOrder(w.trx, w.shopId, order.id, {
    customer_id: customer.id,
    customer_email: customer.email,
    updated_at: w.now,
  });
}

/**
 * The sandbox session and its invoice; a refusal (404) for an unknown session, and for a session of a live shop
 * (one started before the SANDBOX gateway became test-only): no live order is ever paid without money moving.
 */
export async function sandboxSession(
  db: Kysely<Database>,
  sessionId: string,
): Promise<PaymentAttemptRow & { uniqid: string; currency: string; livemode: boolean }> {
  const attempt = await attemptBySession(db, SANDBOX, sessionId);
  if (!attempt || !gatewayOfferedIn(SANDBOX, attempt.livemode)) throw notFound.session();
  return attempt;
}

/**
 * The gateway reports the session paid. The attempt becomes PAID; the invoice is completed only if it is still
 * PENDING under its lock, so a second click, or a payment on an older session of an invoice another session already
 * completed, records the money without completing (and delivering, and notifying) twice. Returns the invoice uniqid.
 */
export async function settleSandboxPayment(
  deps: CheckoutDeps,
  sessionId: string,
  outcome: 'PAID' | 'FAILED',
  requestId: string,
): Promise<string> {
  const { db, unitOfWork, services } = deps;
  const found = await sandboxSession(db, sessionId);
  const shopId = found.shop_id;
  const operation = outcome === 'PAID' ? 'sandboxPaymentPaid' : 'sandboxPaymentFailed';
  // The one settlement rule of every gateway (src/domain/payments/settlement.ts): a replay changes nothing, a payment
  // on a session of an invoice already paid or expired is recorded and flagged, never completes it twice.
  await unitOfWork.write(checkoutOrigin(shopId, operation, requestId), (w) =>
    settleAttempt(
      w,
      found.order_id,
      found.id,
      outcome === 'PAID'
        ? { status: 'PAID', amount: found.amount, currency: found.currency, paymentRef: sessionId }
        : { status: 'FAILED' },
      { checkoutBaseUrl: services.config.checkoutBaseUrl },
    ),
  );
  return found.uniqid;
}
