// A cursor list's operation, made once: every list handler reads the same query parameters and answers a page.
import type { ReadDb } from '../../db/queries/shop-scope';
import type { OperationId } from '../generated/operations';
import { listPage, type CursorList, type ListRequest } from '../platform/cursor-list';
import type { KeysetRow } from '../platform/pagination';
import type { OperationContext, OperationHandler } from './handler';

export function listHandler<Id extends OperationId, Row extends KeysetRow, View, Options>(
  list: CursorList<Row, View, Options>,
  options: (query: OperationContext<Id>['query']) => Options,
): OperationHandler<Id> {
  return async ({ db, auth, query, services }) => ({
    page: await listPage(list, db as ReadDb, services.cursors, auth.shop.id, query as ListRequest, options(query)),
  });
}
