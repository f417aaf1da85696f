import { addDomain, storeDomainCursorList, verifyDomain } from '../src/domain/store/domains';
import { emailMarketingCursorList } from '../src/domain/store/email-marketing';
import { updateBotNotifications } from '../src/domain/store/messaging-bots';
import { getBranding, getLayout, replaceBranding, replaceLayout } from '../src/domain/store/settings';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

// Store settings: branding, layout and additional domains; thin wrappers over src/domain/store/settings.ts and
// src/domain/store/domains.ts.

export const getStoreBranding: OperationHandler<'getStoreBranding'> = async ({ db, auth }) => ({
  data: await getBranding(db, auth.shop.id),
});

export const updateStoreBranding: OperationHandler<'updateStoreBranding'> = async ({
  db,
  auth,
  body,
  effects,
  services,
}) => ({
  data: await replaceBranding(db, auth.shop.id, body, effects, services.clock),
});

export const getStoreLayout: OperationHandler<'getStoreLayout'> = async ({ db, auth }) => ({
  data: await getLayout(db, auth.shop.id),
});

export const updateStoreLayout: OperationHandler<'updateStoreLayout'> = async ({
  db,
  auth,
  body,
  effects,
  services,
}) => ({
  data: await replaceLayout(db, auth.shop.id, body, effects, services.clock),
});

export const listStoreDomains: OperationHandler<'listStoreDomains'> = listHandler(
  storeDomainCursorList,
  () => undefined,
);

export const addStoreDomain: OperationHandler<'addStoreDomain'> = async ({ db, auth, body, effects, services }) => ({
  status: 201,
  data: await addDomain(db, auth.shop, body, effects, { clock: services.clock }),
});

export const verifyStoreDomain: OperationHandler<'verifyStoreDomain'> = async ({
  db,
  auth,
  params,
  effects,
  services,
}) => ({
  data: await verifyDomain(db, auth.shop.id, params.id, effects, {
    clock: services.clock,
    dns: { servers: services.config.dnsServers, timeoutMs: services.config.dnsTimeoutMs },
  }),
});

// Email marketing and messaging bots: the settings list (a cursor list) and the bulk notification switches (a write
// in the unit of work). Thin wrappers over src/domain/store/email-marketing.ts and messaging-bots.ts.

export const listEmailMarketingSettings: OperationHandler<'listEmailMarketingSettings'> = listHandler(
  emailMarketingCursorList,
  () => undefined,
);

export const updateMessagingBotNotifications: OperationHandler<'updateMessagingBotNotifications'> = async ({
  db,
  auth,
  params,
  body,
  services,
}) => ({
  data: await updateBotNotifications(db, auth.shop.id, params.botId, body, services.clock),
});
