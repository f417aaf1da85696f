// The command line's part of the reseller program (src/ops/cli.ts): what the API leaves to the shop's operators or to
// the reseller outside this API. Tiers are created here (they are read-only through the API), and the moves the
// specification leaves open: an invited reseller accepts (INVITED -> ACTIVE), a customer applies (-> APPLIED, or
// ACTIVE in OPEN mode), the merchant approves (APPLIED -> ACTIVE) or rejects (APPLIED | INVITED -> REJECTED). Each
// is one unit of work with its effects; a refusal writes nothing. Resellers are addressed by email.
import type { Operator } from './operator';
import type { Kysely } from 'kysely';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { resellerTierView } from '../views/reseller';
import { AdminError, operatorWrite } from './admin';
import {
  acceptInvitation,
  applyAsReseller,
  approveApplication,
  createTier,
  rejectReseller,
  resellerIdByEmail,
} from '../domain/resellers/resellers';

async function requireShop(db: Kysely<Database>, shopId: string): Promise<void> {
  if (!(await shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
}

export interface TierCommand {
  shopId: string;
  name: string;
  discount: string;
  revenue?: string;
  orders?: string;
  requiresBoth?: boolean;
  sortOrder?: string;
  isDefault?: boolean;
}

function wholeNumber(text: string | undefined, option: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?[0-9]{1,10}$/.test(text)) throw new AdminError(`--${option} must be a whole number`);
  return Number(text);
}

/** `reseller tier create`: a tier (optionally the program's default). */
export async function createTierAsOperator(op: Operator, input: TierCommand) {
  const { db } = op;
  await requireShop(db, input.shopId);
  const orders = wholeNumber(input.orders, 'orders');
  const sortOrder = wholeNumber(input.sortOrder, 'sort-order');
  const tier = await operatorWrite(op, input.shopId, 'cli:reseller tier create', async (w) => {
    const row = await createTier(w, {
      name: input.name,
      discountPercent: input.discount,
      autoAdvanceRevenue: input.revenue ?? null,
      autoAdvanceOrders: orders ?? null,
      autoAdvanceRequiresBoth: input.requiresBoth === true,
      sortOrder,
      isDefault: input.isDefault === true,
    });
    w.effects.audit({ action: 'reseller_tier.created', resourceType: 'reseller_tier', resourceId: row.id });
    return row;
  });
  return resellerTierView({ ...tier, member_count: 0 }, input.isDefault === true ? tier.id : null);
}

export type ResellerMove = 'accept' | 'approve' | 'reject';

const moveAction: Record<ResellerMove, string> = {
  accept: 'reseller.accepted',
  approve: 'reseller.approved',
  reject: 'reseller.rejected',
};

/** `reseller accept | approve | reject`: one move of the shop's reseller with this email. */
export async function moveResellerAsOperator(
  op: Operator,
  input: { shopId: string; email: string },
  move: ResellerMove,
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  const fn = { accept: acceptInvitation, approve: approveApplication, reject: rejectReseller }[move];
  return operatorWrite(op, input.shopId, `cli:reseller ${move}`, async (w) => {
    const id = await resellerIdByEmail(w.trx, w.shopId, input.email);
    const view = await fn(w, id);
    w.effects.audit({ action: moveAction[move], resourceType: 'reseller', resourceId: id });
    return view;
  });
}

/** `reseller apply`: a customer email applies to the program (APPLICATION mode) or enrols (OPEN mode). */
export async function applyResellerAsOperator(op: Operator, input: { shopId: string; email: string; note?: string }) {
  const { db } = op;
  await requireShop(db, input.shopId);
  return operatorWrite(op, input.shopId, 'cli:reseller apply', async (w) => {
    const view = await applyAsReseller(w, input);
    w.effects.audit({ action: 'reseller.applied', resourceType: 'reseller', resourceId: view.id });
    return view;
  });
}
