// The reseller operations: thin wrappers over src/domain/resellers/resellers.ts (reads get a ReadDb, writes the unit of
// work's ShopWrite).
import {
  getProgram,
  getReseller as readReseller,
  inviteReseller as invite,
  listResellers as readResellers,
  listTiers,
  reinstateReseller as reinstate,
  suspendReseller as suspend,
  updateProgram,
} from '../src/domain/resellers/resellers';
import type { OperationHandler } from '../src/http/handler';

export const listResellers: OperationHandler<'listResellers'> = async ({ db, auth, query }) => ({
  data: await readResellers(db, auth.shop.id, query),
});

export const getReseller: OperationHandler<'getReseller'> = async ({ db, auth, params }) => ({
  data: await readReseller(db, auth.shop.id, params.id),
});

export const inviteReseller: OperationHandler<'inviteReseller'> = async ({ write, body }) => ({
  data: await invite(write, body),
});

export const suspendReseller: OperationHandler<'suspendReseller'> = async ({ write, params }) => ({
  data: await suspend(write, params.id),
});

export const reinstateReseller: OperationHandler<'reinstateReseller'> = async ({ write, params }) => ({
  data: await reinstate(write, params.id),
});

export const getResellerProgram: OperationHandler<'getResellerProgram'> = async ({ db, auth }) => ({
  data: await getProgram(db, auth.shop.id),
});

export const updateResellerProgram: OperationHandler<'updateResellerProgram'> = async ({ write, body }) => ({
  data: await updateProgram(write, body),
});

export const listResellerTiers: OperationHandler<'listResellerTiers'> = async ({ db, auth }) => ({
  data: await listTiers(db, auth.shop.id),
});
