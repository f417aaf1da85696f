import * as webhooks from '../src/domain/webhooks/webhooks';
import type { OperationHandler, Services } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

const deps = (services: Services): webhooks.WebhookDeps => ({
  secrets: services.secrets,
  allowPrivateTargets: services.config.webhookAllowPrivateTargets,
});

export const listWebhooks: OperationHandler<'listWebhooks'> = listHandler(webhooks.webhookList, () => undefined);

export const createWebhook: OperationHandler<'createWebhook'> = async ({ write, body, services }) => ({
  status: 201,
  data: await webhooks.createWebhook(write, body, deps(services)),
});

export const deleteWebhook: OperationHandler<'deleteWebhook'> = async ({ write, params }) => {
  await webhooks.deleteWebhook(write, params.id);
  return { data: {} };
};

export const updateWebhook: OperationHandler<'updateWebhook'> = async ({ write, params, body, services }) => ({
  data: await webhooks.updateWebhook(write, params.id, body, deps(services)),
});

export const rotateWebhookSecret: OperationHandler<'rotateWebhookSecret'> = async ({
  write,
  params,
  body,
  services,
}) => ({
  data: await webhooks.rotateWebhookSecret(write, params.id, body?.expire_previous_in_seconds ?? 0, deps(services)),
});

export const testWebhook: OperationHandler<'testWebhook'> = async ({ write, params }) => ({
  status: 202,
  data: await webhooks.testWebhook(write, params.id),
});

export const listWebhookLogs: OperationHandler<'listWebhookLogs'> = async ({ db, auth, query }) => ({
  data: await webhooks.listWebhookLogs(db, auth.shop.id, query),
});

export const retryWebhookDelivery: OperationHandler<'retryWebhookDelivery'> = async ({ write, params }) => ({
  status: 202,
  data: await webhooks.retryWebhookDelivery(write, params.id),
});

// The credential's scopes decide which events it sees (src/domain/webhooks/webhooks.ts eventReadScopes).
export const listEvents: OperationHandler<'listEvents'> = (ctx) => {
  const handler: OperationHandler<'listEvents'> = listHandler(
    webhooks.eventListFor(ctx.auth.credential.scopes),
    () => undefined,
  );
  return handler(ctx);
};

export const getEvent: OperationHandler<'getEvent'> = async ({ db, auth, params }) => ({
  data: await webhooks.getEvent(db, auth.shop.id, params.id, auth.credential.scopes),
});
