// Paying an invoice through a SESSION gateway from the hosted checkout: start a session (one payment attempt), then
// settle the attempt when the gateway reports it paid or failed. An invoice may have several attempts (the buyer
// retries, or comes back to an old tab); the order's row lock decides which payment completes it, once.
import type { Kysely } from 'kysely';
import { orderByIdForUpdate, orderByUniqid, updateOrder } from '../../../db/queries/orders';
import { gatewayByCode } from '../../../db/queries/gateways';
import {
  attemptByIdForUpdate,
  attemptBySession,
  insertPaymentAttempt,
  updatePaymentAttempt,
} from '../../../db/queries/payment-attempts';
import { shopById } from '../../../db/queries/shops';
import type { Database, OrderRow, PaymentAttemptRow } from '../../../db/tables';
import { admitBuyer } from '../../domain/customers/buyers';
import { adapterFor, gatewayOfferedIn } from '../../domain/payments/gateways';
import { completeInvoice } from '../../domain/orders/completion';
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
  if (gateway.kind !== 'SESSION' || gateway.code !== SANDBOX)
    throw new CheckoutRefusal(
      400,
      'Payment method not available here',
      `${gateway.code} has no integration on this server; choose another payment method.`,
    );
  if (order.status !== 'PENDING')
    throw new CheckoutRefusal(400, 'Invoice not payable', 'This invoice is no longer waiting for a payment.');
  if (order.customer_email === null && email === undefined)
    throw new CheckoutRefusal(400, 'Email needed', 'Enter the email address the receipt goes to.');

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

/** The buyer of an invoice that had none, found or created as a customer by the email given on the checkout. */
async function setBuyer(w: ShopWrite, order: OrderRow, buyer: { email: string; ipAddress?: string }) {
  const shop = await shopById(w.trx, w.shopId);
  if (!shop) throw new Error(`shop ${w.shopId} vanished`);
  const customer = await admitBuyer(w, shop, buyer);
  await updateOrder(w.trx, w.shopId, order.id, {
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
  await unitOfWork.write(checkoutOrigin(shopId, operation, requestId), async (w) => {
    const { trx, now } = w;
    // The order's lock first, then the attempt's: the order of locks every payment path takes.
    const order = await orderByIdForUpdate(trx, shopId, found.order_id);
    const attempt = await attemptByIdForUpdate(trx, shopId, found.id);
    if (!order || !attempt) throw new CheckoutRefusal(404, 'Session not found', 'The invoice no longer exists.');
    // A settled session stays as it was settled: the gateway reports each session once, a replay changes nothing.
    if (attempt.status !== 'PENDING') return;
    if (outcome === 'FAILED') {
      await updatePaymentAttempt(trx, shopId, attempt.id, { status: 'FAILED' });
      return;
    }
    if (order.status === 'PENDING') {
      // The pipeline marks the attempt PAID along with everything else the payment completes.
      await completeInvoice(
        w,
        order.id,
        { gateway: attempt.gateway, attemptId: attempt.id },
        { checkoutBaseUrl: services.config.checkoutBaseUrl },
      );
      return;
    }
    // Money on a session of an invoice already paid (or expired): recorded, for the merchant to refund.
    await updatePaymentAttempt(trx, shopId, attempt.id, { status: 'PAID', paid_at: now });
    services.logger.warn('payment on a session of an invoice that is no longer pending', {
      shop_id: shopId,
      order_id: order.id,
      attempt_id: attempt.id,
      order_status: order.status,
    });
  });
  return found.uniqid;
}
