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

export const pauseSubscription: OperationHandler<'pauseSubscription'> = async ({ write, params, body }) => ({
  data: await pause(write, params.id, body),
});

export const updateSubscriptionCustomFields: OperationHandler<'updateSubscriptionCustomFields'> = async ({
  write,
  params,
  body,
}) => ({ data: await updateCustomFields(write, params.id, body) });
