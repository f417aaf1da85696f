import type { ReadDb } from '../db/queries/shop-scope';
import { checkCoupon as check, couponCursorList } from '../src/domain/catalog/coupons';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listCoupons: OperationHandler<'listCoupons'> = listHandler(couponCursorList, () => undefined);

export const checkCoupon: OperationHandler<'checkCoupon'> = async ({ db, auth, params, query, services }) => ({
  data: await check(db as ReadDb, auth.shop.id, params.code, query, services.clock),
});
