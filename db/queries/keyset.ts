// The SQL half of the keyset paginator (src/platform/pagination.ts builds the Keyset): filters as bound
// parameters, "after the cursor's row" as a row comparison on (sort column, id), the order, and limit + 1.
// Column names and operators come from a list's allow-list (src/platform/list-query.ts), never from the request.
import { sql, type SelectQueryBuilder } from 'kysely';

export type KeysetCast = 'text' | 'timestamptz' | 'numeric' | 'integer';

export interface Keyset {
  filters: { column: string; op: '=' | '>=' | '<=' | '>' | '<'; value: string | number | boolean }[];
  sort: { column: string; cast: KeysetCast; direction: 'asc' | 'desc' };
  idColumn: string;
  /** The previous page's last row: its sort value as exact text (timestamps with microseconds) and its id. */
  after: { value: string; id: string } | null;
  limit: number;
}

const casts: Record<KeysetCast, string> = {
  text: 'text',
  timestamptz: 'timestamptz',
  numeric: 'numeric',
  integer: 'integer',
};
const ops = new Set(['=', '>=', '<=', '>', '<']);

/**
 * Applies a keyset to a query of one table and adds `cursor_value`: the sort column as text, exact (a timestamptz
 * as text keeps its microseconds; `::timestamptz` reads it back unchanged). Fetches `limit + 1` rows.
 */
export function applyKeyset<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  keyset: Keyset,
): SelectQueryBuilder<DB, TB, O & { cursor_value: string }> {
  const { sort, idColumn } = keyset;
  const col = sql.ref(sort.column);
  const id = sql.ref(idColumn);
  let q = query.select(sql<string>`${col}::text`.as('cursor_value')) as SelectQueryBuilder<
    DB,
    TB,
    O & { cursor_value: string }
  >;
  for (const f of keyset.filters) {
    if (!ops.has(f.op)) throw new Error(`unknown operator ${f.op}`);
    q = q.where(sql<boolean>`${sql.ref(f.column)} ${sql.raw(f.op)} ${f.value}`);
  }
  const dir = sort.direction === 'desc' ? sql.raw('desc') : sql.raw('asc');
  if (keyset.after) {
    const cmp = sort.direction === 'desc' ? sql.raw('<') : sql.raw('>');
    const value = sql`cast(${keyset.after.value} as ${sql.raw(casts[sort.cast])})`;
    q = q.where(sql<boolean>`(${col}, ${id}) ${cmp} (${value}, ${keyset.after.id})`);
  }
  return q
    .orderBy(sql`${col} ${dir}`)
    .orderBy(sql`${id} ${dir}`)
    .limit(keyset.limit + 1);
}

/** What the SQL of `applyKeyset` depends on (everything but the values): equal shapes compile to the same SQL. */
export function keysetShape(keyset: Keyset): string {
  const filters = keyset.filters.map((f) => `${f.column}${f.op}`).join(',');
  const { sort } = keyset;
  return `${filters}|${sort.column}:${sort.cast}:${sort.direction}|${keyset.idColumn}|${keyset.after ? 'after' : ''}`;
}

/** The values `applyKeyset` binds, in the order of its SQL's parameters (after the query's own). */
export function keysetParameters(keyset: Keyset): unknown[] {
  const values: unknown[] = keyset.filters.map((f) => f.value);
  if (keyset.after) values.push(keyset.after.value, keyset.after.id);
  values.push(keyset.limit + 1);
  return values;
}
