import { fulfillOrderItem as fulfillItem, type FulfillItemInput } from '../src/domain/orders/item-fulfillment';
import { refundOrder as refund } from '../src/domain/orders/refunds';
import type { OperationHandler } from '../src/http/handler';

export const refundOrder: OperationHandler<'refundOrder'> = async ({ db, auth, params, body, effects, services }) => ({
  // The body is optional: none refunds everything that remains.
  data: await refund(db, auth.shop.id, params.id, body ?? {}, effects, services.clock),
});

export const fulfillOrderItem: OperationHandler<'fulfillOrderItem'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  // The generated type of an `anyOf` body is `unknown`; the contract has validated its shape already.
  data: await fulfillItem(
    db,
    auth.shop.id,
    params.id,
    params.itemId,
    body as FulfillItemInput,
    effects,
    services.clock,
  ),
});
