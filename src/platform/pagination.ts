// The one keyset paginator every cursor list uses. A list brings its ListQuery (filters + sort, see list-query.ts)
// and a fetch function (a db/queries function that applies the Keyset); this file checks `limit`, opens the
// cursor (encrypted, bound to the shop and the list's filters and sorts, 24 h), and turns `limit + 1` rows into
// `{ data, pagination: { next_cursor, has_more } }`.
import type { Keyset } from '../../db/queries/keyset';
import { ValidationError } from '../errors';
import { CursorCodec, type CursorBinding, type Page } from './cursor';
import { listQueryBinding, type ListQuery } from './list-query';

export const defaultPageSize = 50;
export const maxPageSize = 100;

export interface PageRequest {
  /** The caller's shop: a cursor is valid only for the shop it was issued to. */
  shopId: string;
  limit?: number;
  cursor?: string;
}

/** A fetched row: its id and its sort value as exact text (`cursor_value`, added by applyKeyset). */
export interface KeysetRow {
  cursor_value: string;
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return defaultPageSize;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
    throw new ValidationError([{ field: 'query.limit', message: `must be an integer from 1 to ${maxPageSize}` }]);
  }
  return limit;
}

/** The Keyset for a request: checks `limit`, and decodes the cursor against the list query it must belong to. */
export function openKeyset(
  codec: CursorCodec,
  query: ListQuery,
  request: PageRequest,
): { keyset: Keyset; binding: CursorBinding } {
  const limit = pageSize(request.limit);
  const binding = { shopId: request.shopId, queryHash: CursorCodec.queryHash(listQueryBinding(query)) };
  let after: Keyset['after'] = null;
  if (request.cursor !== undefined) {
    const position = codec.decode(request.cursor, binding);
    const [value, ...rest] = position.values;
    if (value === undefined || rest.length > 0) {
      throw new ValidationError(
        [{ field: 'query.cursor', message: 'is not a valid cursor' }],
        'The cursor is not a valid cursor.',
      );
    }
    after = { value, id: position.id };
  }
  return {
    binding,
    keyset: {
      filters: query.filters.map((f) => ({ column: f.column, op: f.op, value: f.value })),
      sort: { column: query.sort.column, cast: query.sort.cast, direction: query.sort.direction },
      idColumn: query.idColumn,
      after,
      limit,
    },
  };
}

/**
 * One page of a list: `fetch` runs the query for the Keyset (returning at most `limit + 1` rows), `view` renders a
 * row. `id` gives a row's tie-breaking id (the column named by the list's idColumn).
 */
export async function paginate<R extends KeysetRow, T>(
  codec: CursorCodec,
  query: ListQuery,
  request: PageRequest,
  fetch: (keyset: Keyset) => Promise<R[]>,
  view: (rows: R[]) => T[] | Promise<T[]>,
  id: (row: R) => string = (row) => (row as unknown as { id: string }).id,
): Promise<Page<T>> {
  const { keyset, binding } = openKeyset(codec, query, request);
  const rows = await fetch(keyset);
  const pageRows = rows.slice(0, keyset.limit);
  const hasMore = rows.length > keyset.limit;
  const last = pageRows[pageRows.length - 1];
  return {
    data: await view(pageRows),
    pagination: {
      next_cursor: hasMore && last ? codec.encode({ values: [last.cursor_value], id: id(last) }, binding) : null,
      has_more: hasMore,
    },
  };
}
