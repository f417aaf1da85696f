// operationId -> handler, for every operation of the contract. Typed as HandlerMap, so an operation added to
// openapi.yaml without an entry here fails to compile. Operations not built yet map to notImplemented (501).
import type { HandlerMap } from '../src/http/handler';
import * as account from './account';
import * as catalog from './catalog';

export { notImplemented } from './not-implemented';

export const handlers: HandlerMap = {
  getAccount: account.getAccount,
  getCapabilities: account.getCapabilities,
  listProducts: catalog.listProducts,
  duplicateProduct: catalog.duplicateProduct,
};
