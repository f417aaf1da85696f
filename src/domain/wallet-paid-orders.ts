// An order whose total the buyer's wallet covered entirely (src/domain/wallet-orders.ts) completes at once, in the
// request that created it: nothing is left to pay on a checkout. Its own module, so the completion pipeline (which
// captures wallet holds) and order creation (which makes them) do not import each other.
import Decimal from 'decimal.js';
import type { Transaction } from 'kysely';
import type { Database, OrderRow } from '../../db/tables';
import type { Effects } from '../platform/unit-of-work';
import type { OrderView } from '../views/order';
import { completeInvoice, type CompletionDeps } from './order-completion';
import { BALANCE_GATEWAY } from './wallet-orders';

/** After creation: an order the wallet paid entirely completes at once (gateway `BALANCE`); any other is returned. */
export async function completeIfWalletPaid(
  trx: Transaction<Database>,
  order: OrderRow,
  view: OrderView,
  effects: Effects,
  deps: CompletionDeps,
): Promise<OrderView> {
  const paid = new Decimal(order.balance_paid);
  if (paid.isZero() || !paid.eq(order.total)) return view;
  return completeInvoice(trx, order.shop_id, order.id, { gateway: BALANCE_GATEWAY }, effects, deps);
}
