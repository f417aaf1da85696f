// Email marketing and messaging bots: the settings list (a cursor list) and the bulk notification switches (a write
// in the unit of work). Thin wrappers over src/domain/store/email-marketing.ts and messaging-bots.ts.
import { emailMarketingCursorList } from '../src/domain/store/email-marketing';
import { updateBotNotifications } from '../src/domain/store/messaging-bots';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

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
