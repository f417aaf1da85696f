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

export const updateStoreBranding: OperationHandler<'updateStoreBranding'> = async ({ write, body }) => ({
  data: await replaceBranding(write, body),
});

export const getStoreLayout: OperationHandler<'getStoreLayout'> = async ({ db, auth }) => ({
  data: await getLayout(db, auth.shop.id),
});

export const updateStoreLayout: OperationHandler<'updateStoreLayout'> = async ({ write, body }) => ({
  data: await replaceLayout(write, body),
});

export const listStoreDomains: OperationHandler<'listStoreDomains'> = listHandler(
  storeDomainCursorList,
  () => undefined,
);

export const addStoreDomain: OperationHandler<'addStoreDomain'> = async ({ write, auth, body }) => ({
  status: 201,
  data: await addDomain(write, auth.shop, body),
});

export const verifyStoreDomain: OperationHandler<'verifyStoreDomain'> = async ({ write, params, services }) => ({
  data: await verifyDomain(write, params.id, {
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
  write,
  params,
  body,
}) => ({
  data: await updateBotNotifications(write, params.botId, body),
});
