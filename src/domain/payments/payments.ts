// Generic payments (createPayment): an invoice of an amount, with no products, paid through the hosted checkout or
// a forced gateway.
import Decimal from 'decimal.js';
import { insertOrder, paymentByUniqid } from '../../../db/queries/orders';
import { attemptsOfOrder, insertPaymentAttempt } from '../../../db/queries/payment-attempts';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { GatewayRow, OrderRow } from '../../../db/tables';
import type { Plan } from '../../config';
import { NotFoundError, ValidationError } from '../../errors';
import { newId, newUniqid } from '../../ids';
import { decimalString, parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { checkoutUrl } from '../../views/order';
import { paymentUrls, paymentView } from '../../views/payment';
import { admitBuyer } from '../customers/buyers';
import { adapterFor, requireActiveGateway, sessionCheckoutUrl, type GatewaySession } from './gateways';
import { requireFeature } from '../account/plans';
import { connectedProvider, openProviderSession, sessionAttempt, sessionReturnUrls } from './provider-sessions';
import type { Gateways } from '../../integrations/gateway-accounts';

export interface PaymentDeps {
  /** Base of the hosted checkout (`{checkoutBaseUrl}/invoice/<uniqid>`). */
  checkoutBaseUrl: string;
  /** Base of this server's own pages (the sandbox gateway's checkout). */
  publicUrl: string;
  orderTtlMinutes: number;
  gateways: Gateways;
}

export interface CreatePaymentInput {
  title: string;
  email?: string;
  value: number;
  currency: string;
  gateway?: string;
  crypto_gateway?: string;
}

/**
 * The JSON number as decimal text. JSON.parse has already made it a double; its shortest round-trip form is exactly
 * the digits sent for every amount this operation can accept (at most 7 integer digits and 8 decimals: 15
 * significant digits, within a double's 15.9), and an exponent (`1e-7`) is written out, not refused as malformed.
 */
function numberText(value: number): string {
  return Number.isFinite(value) ? new Decimal(String(value)).toFixed() : String(value);
}

/** Rule 1: the coin checkout opens on must be one the forced CRYPTO gateway settles. */
function cryptoCoin(gateway: GatewayRow | undefined, coin: string | undefined): string | undefined {
  if (coin === undefined) return undefined;
  const refuse = (message: string) => new ValidationError([{ field: 'crypto_gateway', message }]);
  if (gateway === undefined) throw refuse('needs `gateway` set to a crypto gateway of the shop');
  if (gateway.kind !== 'CRYPTO') throw refuse(`needs a crypto gateway; ${gateway.code} is a ${gateway.kind} gateway`);
  if (!gateway.coins.includes(coin)) {
    throw refuse(
      `is not a coin of ${gateway.code} (${gateway.coins.length ? gateway.coins.join(', ') : 'it has none configured'})`,
    );
  }
  return coin;
}

export interface PreparedPayment {
  /** Parsed and checked against the currency's minor unit. */
  total: string;
  gateway: GatewayRow | undefined;
  coin: string | undefined;
  /** A provider's session, opened before the transaction for the invoice and attempt it names. */
  provider?: { orderId: string; uniqid: string; attemptId: string; session: GatewaySession };
}

/**
 * Everything POST /payments checks, and the provider's session when the payment forces a provider's gateway: opened
 * here, outside any transaction (src/http/handler.ts preparedWrite), for the invoice and attempt ids the write will
 * use. No checkout address is handed to anyone before the write commits, so a session whose write never happens is
 * one nobody can pay: it runs out unpaid at the provider.
 */
export async function preparePayment(
  db: ReadDb,
  shop: { id: string; currency: string; plan: Plan; livemode: boolean },
  input: CreatePaymentInput,
  deps: PaymentDeps,
): Promise<PreparedPayment> {
  // A checkout that opens on a coin is what the plan feature names: refused first, whatever else the request says,
  // so a shop without it learns that before fixing anything else.
  if (input.crypto_gateway !== undefined) requireFeature(shop.plan, 'nativeCryptoCheckout');
  // Refused rather than rounded: an amount the customer would be charged differently from what was sent.
  const total = parseAmount(numberText(input.value), 'value', { currency: input.currency, exclusiveMin: true });
  const gateway = input.gateway === undefined ? undefined : await requireActiveGateway(db, shop.id, input.gateway);
  const coin = cryptoCoin(gateway, input.crypto_gateway);
  const code = gateway && (await connectedProvider(deps.gateways, db, shop, gateway.code));
  if (!gateway || !code) {
    // Before anything is written: a session gateway without an integration is refused here.
    if (gateway?.kind === 'SESSION') adapterFor(gateway, deps.publicUrl);
    return { total, gateway, coin };
  }
  const ids = { orderId: newId('ord'), uniqid: newUniqid(), attemptId: newId('pay') };
  const session = await openProviderSession(deps.gateways, db, shop, code, {
    attemptId: ids.attemptId,
    orderUniqid: ids.uniqid,
    description: input.title,
    amount: decimalString(total, input.currency),
    currency: input.currency,
    customerEmail: input.email,
    coin,
    ...sessionReturnUrls(deps.checkoutBaseUrl, ids.uniqid, ids.attemptId),
  });
  return { total, gateway, coin, provider: { ...ids, session } };
}

export async function createPayment(
  w: ShopWrite,
  shop: { currency: string },
  input: CreatePaymentInput,
  deps: PaymentDeps,
  prepared: PreparedPayment,
) {
  const { trx, shopId, effects, now } = w;
  const { total, gateway, coin, provider } = prepared;
  // One instant (w.now) for the invoice and the session it forces: getPayment knows that session by it.
  const order = await openPaymentInvoice(
    w,
    shop,
    {
      total,
      currency: input.currency,
      title: input.title,
      email: input.email,
      gateway: gateway?.code,
      coin,
      ids: provider && { id: provider.orderId, uniqid: provider.uniqid },
    },
    deps,
  );

  let session: GatewaySession | undefined = provider?.session;
  if (provider && gateway) {
    await insertPaymentAttempt(trx, shopId, {
      ...sessionAttempt({
        id: provider.attemptId,
        orderId: order.id,
        gateway: gateway.code,
        sessionId: provider.session.sessionId,
        amount: total,
        now,
      }),
      session_url: provider.session.checkoutUrl,
    });
  } else if (gateway?.kind === 'SESSION') {
    session = adapterFor(gateway, deps.publicUrl).startSession({
      shopId,
      orderUniqid: order.uniqid,
      amount: decimalString(total, order.currency),
      currency: order.currency,
      returnUrl: checkoutUrl(deps.checkoutBaseUrl, order.uniqid),
    });
    await insertPaymentAttempt(trx, shopId, {
      id: newId('pay'),
      order_id: order.id,
      gateway: gateway.code,
      session_id: session.sessionId,
      status: 'PENDING',
      amount: total,
      created_at: now,
    });
  }

  const view = paymentView(order, paymentUrls(deps.checkoutBaseUrl, order, coin), session);
  effects.emit('payment:created', view);
  return view;
}

/**
 * GET /payments/{uniqid}: the payment as it is now, the same object POST /payments answered. `url` is rebuilt from
 * what the invoice keeps (the coin it was forced to open on); the forced session is the attempt opened in the
 * creating transaction, at the invoice's own instant (a buyer's later sessions at checkout are not it).
 */
export async function getPayment(
  db: ReadDb,
  shopId: string,
  uniqid: string,
  deps: Pick<PaymentDeps, 'checkoutBaseUrl' | 'publicUrl'>,
) {
  const order = await paymentByUniqid(db, shopId, uniqid);
  if (!order) throw new NotFoundError('PAYMENT_NOT_FOUND');
  const forced = (await attemptsOfOrder(db, shopId, order.id)).find(
    (a) => a.session_id !== null && a.created_at.getTime() === order.created_at.getTime(),
  );
  const checkout =
    forced && (forced.session_url ?? sessionCheckoutUrl(forced.gateway, forced.session_id!, deps.publicUrl));
  return paymentView(
    order,
    paymentUrls(deps.checkoutBaseUrl, order, order.blockchain ?? undefined),
    checkout ? { sessionId: forced.session_id!, checkoutUrl: checkout } : undefined,
  );
}

export interface PaymentInvoice {
  /** Already parsed and checked against the currency's minor unit. */
  total: string;
  currency: string;
  title: string;
  email?: string;
  gateway?: string;
  coin?: string;
  paymentLinkId?: string;
  /** The buyer's address, when known (the hosted pages): checked against the blacklist. */
  ipAddress?: string;
  /** The ids a provider's session was opened for (preparePayment); new ones otherwise. */
  ids?: { id: string; uniqid: string };
}

/** A PENDING invoice of an amount (no products), its buyer found or created as a customer when the email is known. */
export async function openPaymentInvoice(
  w: ShopWrite,
  shop: { currency: string },
  invoice: PaymentInvoice,
  deps: Pick<PaymentDeps, 'orderTtlMinutes'>,
): Promise<OrderRow> {
  const { now } = w;
  const customer =
    invoice.email === undefined
      ? undefined
      : await admitBuyer(w, shop, { email: invoice.email, ipAddress: invoice.ipAddress });
  const order = await insertOrder(w.trx, w.shopId, {
    id: invoice.ids?.id ?? newId('ord'),
    uniqid: invoice.ids?.uniqid ?? newUniqid(),
    kind: 'PAYMENT',
    customer_id: customer?.id ?? null,
    customer_email: customer?.email ?? null,
    affiliate_customer_id: null,
    affiliate_code: null,
    affiliate_link_id: null,
    currency: invoice.currency,
    status: 'PENDING',
    status_details: null,
    payment_status: 'PENDING',
    gateway: invoice.gateway ?? null,
    blockchain: invoice.coin ?? null,
    flow_type: null,
    provider_reference: null,
    provider_reference_type: null,
    subtotal: invoice.total,
    total: invoice.total,
    coupon_id: null,
    payment_link_id: invoice.paymentLinkId ?? null,
    custom_fields: null,
    is_developer_invoice: true,
    developer_title: invoice.title,
    note: null,
    expires_at: new Date(now.getTime() + deps.orderTtlMinutes * 60_000),
    completed_at: null,
    created_at: now,
    updated_at: now,
  });
  return order;
}
