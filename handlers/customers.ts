import { getCustomer as get, listCustomers as list } from '../src/domain/customers';
import type { OperationHandler } from '../src/http/handler';

export const listCustomers: OperationHandler<'listCustomers'> = async ({ db, auth, query, services }) => ({
  page: await list(db, services.cursors, auth.shop.id, {
    limit: query.limit,
    cursor: query.cursor,
    filters: query.filters,
    sorts: query.sorts,
  }),
});

export const getCustomer: OperationHandler<'getCustomer'> = async ({ db, auth, params, query }) => ({
  data: await get(db, auth.shop.id, params.id, { includeAffiliate: query.include_affiliate === true }),
});
