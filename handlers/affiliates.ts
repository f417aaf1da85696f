import {
  affiliateList,
  affiliatePerformance,
  approveAffiliateApplication as approve,
} from '../src/domain/affiliates/affiliates';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listAffiliateCustomers: OperationHandler<'listAffiliateCustomers'> = listHandler(
  affiliateList,
  () => undefined,
);

export const getAffiliatePerformance: OperationHandler<'getAffiliatePerformance'> = async ({
  db,
  auth,
  params,
  query,
  services,
}) => ({
  data: await affiliatePerformance(db, auth.shop.id, params.customerId, query, services.clock),
});

export const approveAffiliateApplication: OperationHandler<'approveAffiliateApplication'> = async ({
  write,
  params,
}) => ({
  data: await approve(write, params.id),
});
