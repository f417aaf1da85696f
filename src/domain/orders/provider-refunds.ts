// A refund of an order paid through a payment provider goes back through that provider: the provider is asked first,
// outside any transaction (POST /orders/{id}/refund's prepare step, src/http/handler.ts preparedWrite), with an
// idempotency key derived from our refund id; our refund is recorded only once the provider accepted it, and a
// provider's refusal or outage answers GATEWAY_REFUSED / GATEWAY_UNAVAILABLE with nothing written. The refund id is
// derived from the request's Idempotency-Key when it has one, so a retry after a crash between the provider's "yes"
// and our commit asks the provider with the same key and gets the same refund back, recorded once.
//
// One refund of a payment at a time asks its provider: the paid attempt's lease (payment_attempts.lease_*) is taken
// before the order is read, and given back in the transaction that records the refund (or at once when nothing is
// asked or the provider says no). Without it two refunds racing would both read the same remaining amount and both
// be made at a provider that bounds nothing itself (BTCPay), or one made there that our write then refuses. The
// second of two racing refunds answers 409 CONCURRENT_UPDATE and changes nothing. Everything here reads the primary:
// the remaining amount decides how much money leaves.
import { createHash, randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import type { Kysely } from 'kysely';
import { orderById } from '../../../db/queries/orders';
import * as attempts from '../../../db/queries/payment-attempts';
import * as refunds from '../../../db/queries/refunds';
import type { Database, OrderRow } from '../../../db/tables';
import { ApiError } from '../../errors';
import { newId } from '../../ids';
import type { Gateways } from '../../integrations/gateway-accounts';
import { isProviderCode } from '../../integrations/gateway-provider';
import type { Clock } from '../../platform/clock';
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

/** What of this refund the provider gives back; undefined when there is nothing for it or the write will refuse it. */
function providerPartOf(order: OrderRow, input: RefundInput): Decimal | undefined {
  const remaining = new Decimal(order.total).minus(order.refunded);
  let amount: Decimal;
  try {
    amount =
      input.amount === undefined
        ? remaining
        : new Decimal(parseAmount(input.amount, 'amount', { currency: order.currency, min: 0, exclusiveMin: true }));
  } catch {
    return undefined;
  }
  if (amount.lte(0) || amount.gt(remaining)) return undefined;
  const part = amount.minus(walletPartOfRefund(order, amount, order.refunded));
  return part.gt(0) ? part : undefined;
}

/** How long one refund may talk to its provider before another may (a BTCPay refund makes up to three calls). */
const REFUND_LEASE_MS = 60_000;

/**
 * The provider's part of the refund, refunded at the provider; undefined when the order was not paid through a
 * provider (or the refund is the wallet's alone) or the refund will be refused anyway (the write says why).
 */
export async function refundAtProvider(
  primary: Kysely<Database>,
  realClock: Clock,
  shop: { id: string; livemode: boolean },
  orderId: string,
  input: RefundInput,
  refundId: string,
  gateways: Gateways,
): Promise<ProviderRefundRecord | undefined> {
  const paidAttempt = async () => {
    const order = await orderById(primary, shop.id, orderId);
    if (!order || (order.status !== 'COMPLETED' && order.status !== 'PARTIALLY_REFUNDED')) return undefined;
    const paid = (await attempts.attemptsOfOrder(primary, shop.id, order.id)).find(
      (a) => a.status === 'PAID' && a.flag === null && a.payment_ref !== null && isProviderCode(a.gateway),
    );
    return paid && isProviderCode(paid.gateway) ? { order, paid, gateway: paid.gateway } : undefined;
  };
  const found = await paidAttempt();
  if (!found) return undefined;
  const account = await gateways.account(primary, shop, found.gateway);
  if (!account) return undefined;
  const lease = {
    token: randomUUID(),
    now: realClock.now(),
    until: new Date(realClock.now().getTime() + REFUND_LEASE_MS),
  };
  const taken = await primary
    .transaction()
    .execute((trx) => attempts.takeRefundLease(trx, shop.id, found.paid.id, lease));
  if (!taken)
    throw new ApiError(
      'CONCURRENT_UPDATE',
      `Another refund of this order is being made at ${found.gateway}; nothing was changed. Retry to refund what then remains.`,
      { headers: { 'Retry-After': '2' } },
    );
  const giveBack = () =>
    primary.transaction().execute((trx) => attempts.releaseRefundLease(trx, shop.id, found.paid.id, lease.token));
  try {
    // Read again under the lease: a refund that finished meanwhile has changed what remains.
    const current = await paidAttempt();
    if (!current || current.paid.id !== found.paid.id) {
      await giveBack();
      return undefined;
    }
    const { order, paid } = current;
    const providerPart = providerPartOf(order, input);
    if (providerPart === undefined) {
      await giveBack();
      return undefined;
    }
    const refund = await gateways.provider(current.gateway)!.refund(account, {
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
      gateway: current.gateway,
      providerRefundId: refund.providerRefundId,
      providerOnly: false,
      leaseToken: lease.token,
    };
  } catch (err) {
    await giveBack();
    throw providerApiError(err, found.gateway);
  }
}

/** Records the refund; one the provider's webhook recorded first (same provider refund) is not recorded again. */
export async function recordRefund(
  w: ShopWrite,
  orderId: string,
  input: RefundInput,
  atProvider: ProviderRefundRecord | undefined,
): Promise<{ message: string }> {
  if (atProvider?.leaseToken !== undefined)
    await attempts.releaseRefundLease(w.trx, w.shopId, atProvider.attemptId, atProvider.leaseToken);
  if (atProvider) {
    const known = await refunds.refundOfProviderRefund(
      w.trx,
      w.shopId,
      atProvider.gateway,
      atProvider.providerRefundId,
    );
    if (known) {
      const order = await orderById(w.trx, w.shopId, orderId);
      const amount = order ? decimalString(known.amount, order.currency) : known.amount;
      return { message: `Refunded ${amount} through ${atProvider.gateway} (already recorded).` };
    }
  }
  return refundOrder(w, orderId, input, atProvider);
}
