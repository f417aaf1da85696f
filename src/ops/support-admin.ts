// The command line's part of disputes, reviews and tickets (src/ops/cli.ts): the SANDBOX gateway opening and deciding a
// dispute, and the storefront (outside this API) leaving a review or opening a ticket. Each is one unit of work with
// its events, exactly as the checkout page and fixtures write them; a refusal writes nothing.
import type { Operator } from './operator';
import type { Kysely } from 'kysely';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { ValidationError } from '../errors';
import { AdminError, operatorWrite } from './admin';
import { closeDispute, openDispute } from '../domain/support/disputes';
import { sandboxGatewayCode } from '../domain/payments/gateways';
import { createReview } from '../domain/support/reviews';
import { createTicket } from '../domain/support/tickets';

async function requireShop(db: Kysely<Database>, shopId: string): Promise<void> {
  if (!(await shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
}

// The domain's field names as the command line's options.
const optionOf: Record<string, string> = { order_id: 'order', product_id: 'product' };

/** A 422 of the domain as the command line's options: `--rating must be …`. */
async function asOptions<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ValidationError)
      throw new AdminError(
        (err.details ?? []).map((d) => `--${optionOf[d.field] ?? d.field} ${d.message}`).join('; ') || err.message,
      );
    throw err;
  }
}

/** `dispute open`: the SANDBOX gateway disputes an order it was paid for. */
export async function openSandboxDispute(op: Operator, input: { shopId: string; orderId: string; reason?: string }) {
  const { db } = op;
  await requireShop(db, input.shopId);
  return asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:dispute open', (w) =>
      openDispute(w, input.orderId, { gateway: sandboxGatewayCode, reason: input.reason?.toUpperCase() }),
    ),
  );
}

/** `dispute close`: the SANDBOX gateway decides a dispute it opened (WON, LOST or CLOSED). */
export async function closeSandboxDispute(op: Operator, input: { shopId: string; disputeId: string; outcome: string }) {
  const { db } = op;
  await requireShop(db, input.shopId);
  return asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:dispute close', (w) =>
      closeDispute(w, input.disputeId, { gateway: sandboxGatewayCode, outcome: input.outcome.toUpperCase() }),
    ),
  );
}

/** `review create`: a buyer's review of a completed order of the shop. */
export async function createStorefrontReview(
  op: Operator,
  input: { shopId: string; orderId: string; productId?: string; rating: string; message?: string },
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  if (!/^[1-5]$/.test(input.rating)) throw new AdminError('--rating must be a whole number from 1 to 5');
  return asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:review create', (w) =>
      createReview(w, {
        order_id: input.orderId,
        ...(input.productId !== undefined ? { product_id: input.productId } : {}),
        rating: Number(input.rating),
        message: input.message ?? null,
      }),
    ),
  );
}

/** `ticket create`: a customer of the shop opens a support ticket. */
export async function createStorefrontTicket(
  op: Operator,
  input: { shopId: string; email: string; subject: string; message: string; orderId?: string; priority?: string },
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  return asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:ticket create', (w) =>
      createTicket(w, {
        email: input.email,
        subject: input.subject,
        message: input.message,
        ...(input.orderId !== undefined ? { order_id: input.orderId } : {}),
        ...(input.priority !== undefined ? { priority: input.priority.toUpperCase() } : {}),
      }),
    ),
  );
}
