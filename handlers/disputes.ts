import { disputeCursorList } from '../src/domain/support/disputes';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listDisputes: OperationHandler<'listDisputes'> = listHandler(disputeCursorList, () => undefined);
