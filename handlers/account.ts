import { accountOf, capabilitiesOf } from '../src/domain/account/account';
import type { OperationHandler } from '../src/http/handler';

export const getAccount: OperationHandler<'getAccount'> = async ({ db, auth }) => ({
  data: await accountOf(db, auth),
});

export const getCapabilities: OperationHandler<'getCapabilities'> = async ({ db, auth }) => ({
  data: await capabilitiesOf(db, auth),
});
