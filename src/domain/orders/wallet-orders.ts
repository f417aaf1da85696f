// An order paid (partly or wholly) from the buyer's store-credit wallet (`use_wallet_balance: true` on POST /orders):
//  - creation holds the available balance up to the total (customers.wallet_held; orders.balance_paid, shown as
//    `balance_paid_amount`); the rest (`total - balance_paid_amount`) is what the checkout charges;
//  - a total covered entirely by the wallet completes the order at once (gateway `BALANCE`): nothing is left to pay,
//    so the goods are delivered in the same request, as a merchant expects of a store-credit purchase;
//  - completion captures the hold: one ORDER_PAYMENT ledger row of -balance_paid, and the hold released with it;
//  - voiding (expiry) releases the hold; the balance never moved;
//  - a refund goes back to the wallet first (ORDER_REFUND ledger rows), up to what the wallet paid; only what
//    exceeds it is the gateway's part. So a wholly wallet-paid order is refunded entirely into the wallet.
// Every step runs in the transaction that changes the order, with the order row locked (and the customer row,
// through src/domain/customers/wallets.ts).
import Decimal from 'decimal.js';
import * as orders from '../../../db/queries/orders';
import type { OrderRow } from '../../../db/tables';
import { decimalString } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { holdWalletBalance, moveWallet, releaseWalletHold } from '../customers/wallets';

/** The gateway a wholly wallet-paid order is completed with. */
export const BALANCE_GATEWAY = 'BALANCE';

/** What remains to be paid on the checkout: the total minus the wallet's part. */
export function amountDue(order: Pick<OrderRow, 'total' | 'balance_paid'>): string {
  return new Decimal(order.total).minus(order.balance_paid).toFixed();
}

/**
 * At creation (`use_wallet_balance: true`): holds the buyer's available balance up to the order's total and records
 * it as the order's `balance_paid`. Returns the order row as it now is. 422 on `use_wallet_balance` when the wallet is
 * in another currency than the order; an empty wallet holds nothing (the order is paid on the checkout as usual).
 */
export async function holdWalletForOrder(w: ShopWrite, order: OrderRow): Promise<OrderRow> {
  if (order.customer_id === null || new Decimal(order.total).isZero()) return order;
  const held = await holdWalletBalance(w, order.customer_id, {
    wanted: order.total,
    currency: order.currency,
    field: 'use_wallet_balance',
  });
  if (new Decimal(held).isZero()) return order;
  return orders.updateOrder(w.trx, w.shopId, order.id, { balance_paid: held, updated_at: w.now });
}

/** On completion: the hold becomes a ledger debit (ORDER_PAYMENT), and stops being held. */
export async function captureWalletHold(w: ShopWrite, order: OrderRow): Promise<void> {
  if (order.customer_id === null || new Decimal(order.balance_paid).isZero()) return;
  const taken = new Decimal(order.balance_paid).negated().toFixed();
  await moveWallet(
    w,
    order.customer_id,
    { amount: taken, type: 'ORDER_PAYMENT', description: `Order ${order.uniqid}`, orderId: order.id },
    { heldDelta: taken },
  );
}

/** On void: the hold is given back; nothing was taken. */
export async function releaseWalletHoldOfOrder(w: ShopWrite, order: OrderRow): Promise<void> {
  if (order.customer_id === null || new Decimal(order.balance_paid).isZero()) return;
  await releaseWalletHold(w, order.customer_id, order.balance_paid);
}

/**
 * On a refund of `amount` of an order that had `alreadyRefunded` refunded before: the part that goes back to the
 * wallet (ORDER_REFUND ledger row), the wallet first — min(amount, what the wallet paid and has not had back).
 * Returns that part ('0' when none), for the refund's message.
 */
/** The part of a refund of `amount` that goes back to the buyer's wallet (what the wallet paid goes back first). */
export function walletPartOfRefund(
  order: Pick<OrderRow, 'customer_id' | 'balance_paid'>,
  amount: Decimal.Value,
  alreadyRefunded: Decimal.Value,
): Decimal {
  const paid = new Decimal(order.balance_paid);
  if (order.customer_id === null || paid.isZero()) return new Decimal(0);
  return Decimal.min(Decimal.max(paid.minus(alreadyRefunded), 0), amount);
}

export async function refundToWallet(
  w: ShopWrite,
  order: OrderRow,
  amount: Decimal.Value,
  alreadyRefunded: Decimal.Value,
): Promise<string> {
  const part = walletPartOfRefund(order, amount, alreadyRefunded);
  if (part.isZero() || order.customer_id === null) return '0';
  await moveWallet(w, order.customer_id, {
    amount: part.toFixed(),
    type: 'ORDER_REFUND',
    description: `Refund of order ${order.uniqid}`,
    orderId: order.id,
  });
  return part.toFixed();
}

/** The refund message's note on the wallet part, e.g. ` (4.00 USD back to the buyer's wallet)`; '' for none. */
export function walletRefundNote(part: string, currency: string): string {
  return new Decimal(part).isZero() ? '' : ` (${decimalString(part, currency)} ${currency} back to the buyer's wallet)`;
}
