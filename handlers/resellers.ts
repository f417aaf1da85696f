// The reseller operations: thin wrappers over src/domain/resellers/resellers.ts (reads get a ReadDb, writes the unit of
// work's transaction and effects).
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

export const inviteReseller: OperationHandler<'inviteReseller'> = async ({ db, auth, body, effects, services }) => ({
  data: await invite(db, auth.shop.id, body, effects, {
    clock: services.clock,
  }),
});

export const suspendReseller: OperationHandler<'suspendReseller'> = async ({
  db,
  auth,
  params,
  effects,
  services,
}) => ({
  data: await suspend(db, auth.shop.id, params.id, effects, services.clock),
});

export const reinstateReseller: OperationHandler<'reinstateReseller'> = async ({
  db,
  auth,
  params,
  effects,
  services,
}) => ({
  data: await reinstate(db, auth.shop.id, params.id, effects, services.clock),
});

export const getResellerProgram: OperationHandler<'getResellerProgram'> = async ({ db, auth }) => ({
  data: await getProgram(db, auth.shop.id),
});

export const updateResellerProgram: OperationHandler<'updateResellerProgram'> = async ({
  db,
  auth,
  body,
  effects,
  services,
}) => ({
  data: await updateProgram(db, auth.shop.id, body, effects, services.clock),
});

export const listResellerTiers: OperationHandler<'listResellerTiers'> = async ({ db, auth }) => ({
  data: await listTiers(db, auth.shop.id),
});
