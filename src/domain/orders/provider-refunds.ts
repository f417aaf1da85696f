// A refund of an order paid through a payment provider goes back through that provider: the provider is asked first,
// outside any transaction (POST /orders/{id}/refund's prepare step, src/http/handler.ts preparedWrite), with an
// idempotency key derived from our refund id; our refund is recorded only once the provider accepted it, and a
// provider's refusal or outage answers GATEWAY_REFUSED / GATEWAY_UNAVAILABLE with nothing written. The refund id is
// derived from the request's Idempotency-Key when it has one, so a retry after a crash between the provider's "yes"
// and our commit asks the provider with the same key and gets the same refund back, recorded once.
import { createHash } from 'node:crypto';
import Decimal from 'decimal.js';
import { orderById } from '../../../db/queries/orders';
import { attemptsOfOrder } from '../../../db/queries/payment-attempts';
import * as refunds from '../../../db/queries/refunds';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { newId } from '../../ids';
import type { Gateways } from '../../integrations/gateway-accounts';
import { isProviderCode } from '../../integrations/gateway-provider';
import { decimalString, parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { providerApiError } from '../payments/provider-errors';
import { refundOrder, type ProviderRefundRecord, type RefundInput } from './refunds';
import { walletPartOfRefund } from './wallet-orders';

/** Our refund id: derived from the request's idempotency key when it has one (see the top of this file). */
export function refundIdFor(credentialId: string, idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return newId('rfd');
  return `rfd_${createHash('sha256').update(`${credentialId}\n${idempotencyKey}`).digest('hex').slice(0, 32)}`;
}

/**
 * The provider's part of the refund, refunded at the provider; undefined when the order was not paid through a
 * provider (or the refund is the wallet's alone) or the refund will be refused anyway (the write says why).
 */
export async function refundAtProvider(
  db: ReadDb,
  shop: { id: string; livemode: boolean },
  orderId: string,
  input: RefundInput,
  refundId: string,
  gateways: Gateways,
): Promise<ProviderRefundRecord | undefined> {
  const order = await orderById(db, shop.id, orderId);
  if (!order || (order.status !== 'COMPLETED' && order.status !== 'PARTIALLY_REFUNDED')) return undefined;
  const paid = (await attemptsOfOrder(db, shop.id, order.id)).find(
    (a) => a.status === 'PAID' && a.flag === null && a.payment_ref !== null && isProviderCode(a.gateway),
  );
  if (!paid || !isProviderCode(paid.gateway)) return undefined;
  let amount: Decimal;
  try {
    const remaining = new Decimal(order.total).minus(order.refunded);
    amount =
      input.amount === undefined
        ? remaining
        : new Decimal(parseAmount(input.amount, 'amount', { currency: order.currency, min: 0, exclusiveMin: true }));
    if (amount.lte(0) || amount.gt(remaining)) return undefined;
  } catch {
    return undefined;
  }
  const providerPart = amount.minus(walletPartOfRefund(order, amount, order.refunded));
  if (providerPart.lte(0)) return undefined;
  const account = await gateways.account(db, shop, paid.gateway);
  if (!account) return undefined;
  try {
    const refund = await gateways.provider(paid.gateway)!.refund(account, {
      refundId,
      paymentRef: paid.payment_ref!,
      sessionId: paid.session_id ?? '',
      amount: decimalString(providerPart, order.currency),
      currency: order.currency,
      reason: input.reason,
    });
    return {
      refundId,
      attemptId: paid.id,
      gateway: paid.gateway,
      providerRefundId: refund.providerRefundId,
      providerOnly: false,
    };
  } catch (err) {
    throw providerApiError(err, paid.gateway);
  }
}

/** Records the refund; one the provider's webhook recorded first (same provider refund) is not recorded again. */
export async function recordRefund(
  w: ShopWrite,
  orderId: string,
  input: RefundInput,
  atProvider: ProviderRefundRecord | undefined,
): Promise<{ message: string }> {
  if (atProvider) {
    const known = await refunds.refundOfProviderRefund(
      w.trx,
      w.shopId,
      atProvider.gateway,
      atProvider.providerRefundId,
    );
    if (known) return { message: `Refunded ${known.amount} through ${atProvider.gateway} (already recorded).` };
  }
  return refundOrder(w, orderId, input, atProvider);
}
