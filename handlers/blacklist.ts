import { blacklistCursorList } from '../src/domain/customers/blacklist';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listBlacklistEntries: OperationHandler<'listBlacklistEntries'> = listHandler(
  blacklistCursorList,
  () => undefined,
);
