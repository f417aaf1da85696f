import { accountOf, capabilitiesOf } from '../src/domain/account';
import type { OperationHandler } from '../src/http/handler';

export const getAccount: OperationHandler<'getAccount'> = async ({ auth }) => ({ data: accountOf(auth) });

export const getCapabilities: OperationHandler<'getCapabilities'> = async ({ auth }) => ({
  data: capabilitiesOf(auth),
});
