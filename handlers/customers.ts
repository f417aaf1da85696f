import { customerCursorList, getCustomer as get } from '../src/domain/customers/customers';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listCustomers: OperationHandler<'listCustomers'> = listHandler(customerCursorList, () => undefined);

export const getCustomer: OperationHandler<'getCustomer'> = async ({ db, auth, params, query }) => ({
  data: await get(db, auth.shop.id, params.id, { includeAffiliate: query.include_affiliate === true }),
});
