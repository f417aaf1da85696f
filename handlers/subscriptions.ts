import {
  pauseSubscription as pause,
  subscriptionCursorList,
  subscriptionPlanOptions,
  updateSubscriptionCustomFields as updateCustomFields,
} from '../src/domain/subscriptions/subscriptions';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listSubscriptions: OperationHandler<'listSubscriptions'> = listHandler(
  subscriptionCursorList,
  () => undefined,
);

export const getSubscriptionPlanOptions: OperationHandler<'getSubscriptionPlanOptions'> = async ({
  db,
  auth,
  params,
}) => ({ data: await subscriptionPlanOptions(db, auth.shop.id, params.id) });

export const pauseSubscription: OperationHandler<'pauseSubscription'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({ data: await pause(db, auth.shop.id, params.id, body, effects, services.clock) });

export const updateSubscriptionCustomFields: OperationHandler<'updateSubscriptionCustomFields'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({ data: await updateCustomFields(db, auth.shop.id, params.id, body, effects, services.clock) });
