// The SANDBOX gateway's dispute buttons on its payment page (`/sandbox/checkout/:sessionId`): once the session is
// paid, the gateway can open a dispute on the order (`POST …/dispute`, a `reason` field) and, while it is open,
// decide it (`POST …/dispute/close`, an `outcome` field: WON, LOST or CLOSED). The session id is the credential, as
// for paying; the rules are those of src/domain/support/disputes.ts, in one unit of work with their events.
import escapeHtml from 'escape-html';
import type { Kysely } from 'kysely';
import { orderById } from '../../../db/queries/orders';
import type { Database, PaymentAttemptRow } from '../../../db/tables';
import { closeOrderDispute, disputeOutcomes, disputeReasons, openDispute } from '../../domain/support/disputes';
import { CheckoutRefusal, checkoutOrigin, SANDBOX, sandboxSession, type CheckoutDeps } from './payments';

const e = (value: unknown): string => escapeHtml(String(value ?? ''));

/** The session, which must be paid: only money the gateway took can be disputed. */
async function paidSession(deps: CheckoutDeps, sessionId: string) {
  const attempt = await sandboxSession(deps.db, sessionId);
  if (attempt.status !== 'PAID')
    throw new CheckoutRefusal(400, 'Session not paid', 'Only a paid session can be disputed.');
  return attempt;
}

/** `POST /sandbox/checkout/:sessionId/dispute`: returns the invoice's uniqid. */
export async function openDisputeOnSession(
  deps: CheckoutDeps,
  sessionId: string,
  reason: string | undefined,
  requestId: string,
): Promise<string> {
  const attempt = await paidSession(deps, sessionId);
  await deps.unitOfWork.write(checkoutOrigin(attempt.shop_id, 'sandboxDisputeOpen', requestId), (w) =>
    openDispute(w, attempt.order_id, { gateway: SANDBOX, reason }),
  );
  return attempt.uniqid;
}

/** `POST /sandbox/checkout/:sessionId/dispute/close`: returns the invoice's uniqid. */
export async function closeDisputeOnSession(
  deps: CheckoutDeps,
  sessionId: string,
  outcome: string,
  requestId: string,
): Promise<string> {
  const attempt = await paidSession(deps, sessionId);
  await deps.unitOfWork.write(checkoutOrigin(attempt.shop_id, 'sandboxDisputeClose', requestId), (w) =>
    closeOrderDispute(w, attempt.order_id, { gateway: SANDBOX, outcome }),
  );
  return attempt.uniqid;
}

/** The dispute part of the sandbox page of a paid session: open one, or decide the open one. */
export async function sandboxDisputeSection(
  db: Kysely<Database>,
  attempt: PaymentAttemptRow,
  path: string,
): Promise<string> {
  if (attempt.status !== 'PAID') return '';
  const order = await orderById(db, attempt.shop_id, attempt.order_id);
  if (!order || order.gateway !== SANDBOX) return '';
  if (order.status === 'DISPUTED') {
    const buttons = disputeOutcomes
      .map((o) => `<button type="submit" name="outcome" value="${e(o)}">Dispute ${e(o.toLowerCase())}</button>`)
      .join('\n');
    return `<h2>Dispute</h2><p>The order is <span class="status" id="order-status">DISPUTED</span>.</p>
<form method="post" action="${e(path)}/dispute/close" class="actions">${buttons}</form>`;
  }
  if (order.status !== 'COMPLETED' && order.status !== 'PARTIALLY_REFUNDED')
    return `<p>The order is <span class="status" id="order-status">${e(order.status)}</span>.</p>`;
  const options = disputeReasons.map((r) => `<option value="${e(r)}">${e(r)}</option>`).join('');
  return `<h2>Dispute</h2><p>The order is <span class="status" id="order-status">${e(order.status)}</span>.</p>
<form method="post" action="${e(path)}/dispute"><label for="reason">Reason</label><select id="reason" name="reason">${options}</select>
<div class="actions"><button type="submit">Open dispute</button></div></form>`;
}
