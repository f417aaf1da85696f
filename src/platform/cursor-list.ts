// A cursor list is data: its filters and sorts (a ListSpec), one query function for a keyset page, and a view.
// listPage does the rest for every list alike (parse filters and sorts, open the cursor for this shop, fetch
// limit + 1, render, issue the next cursor), and src/http/list-handler.ts turns a list into its operation.
import type { Keyset } from '../../db/queries/keyset';
import type { ReadDb } from '../../db/queries/shop-scope';
import type { CursorCodec, Page } from './cursor';
import { parseListQuery, type ListSpec } from './list-query';
import { paginate, type KeysetRow } from './pagination';

export interface ViewContext<Options> {
  db: ReadDb;
  shopId: string;
  options: Options;
}

export interface CursorList<Row extends KeysetRow, View, Options = undefined> {
  spec: ListSpec;
  /** `limit + 1` of the shop's rows for the keyset (e.g. pageOf('products') from db/queries/shop-rows.ts). */
  page(db: ReadDb, shopId: string, keyset: Keyset): Promise<Row[]>;
  /** The page's rows as API objects; may look up what they need in one more query (e.g. variants). */
  view(rows: Row[], context: ViewContext<Options>): View[] | Promise<View[]>;
}

/** The query parameters every cursor list takes (lists without filters or sorts simply do not send them). */
export interface ListRequest {
  limit?: number;
  cursor?: string;
  filters?: string;
  sorts?: string;
}

export async function listPage<Row extends KeysetRow, View, Options>(
  list: CursorList<Row, View, Options>,
  db: ReadDb,
  codec: CursorCodec,
  shopId: string,
  request: ListRequest,
  options: Options,
): Promise<Page<View>> {
  // Options change what a page shows, not which rows, so they are not part of the cursor's binding.
  const query = parseListQuery(list.spec, { filters: request.filters, sorts: request.sorts });
  return paginate(
    codec,
    query,
    { shopId, limit: request.limit, cursor: request.cursor },
    (keyset) => list.page(db, shopId, keyset),
    (rows) => list.view(rows, { db, shopId, options }),
  );
}
