// What a database holds, as comparable text per table: the walks (tenancy, cross-mode) and the migration test take
// one before and one after, and "nothing changed" is the two being equal.
import { sql, type Kysely } from 'kysely';

export interface SnapshotOptions {
  /** Tables left out (bookkeeping the caller expects to change). kysely_migration* are always left out. */
  skipTables?: (table: string) => boolean;
  /** Columns left out of a table's rows (bookkeeping, not data). */
  skipColumns?: Readonly<Record<string, readonly string[]>>;
}

/** The base tables of `public` with their primary-key columns (comma-separated), in name order. */
export async function publicTables(
  db: Kysely<any>, // any schema version
): Promise<{ table: string; pk: string | null }[]> {
  const tables = await sql<{ table: string; pk: string | null }>`
    select c.relname::text as table,
      (select string_agg(a.attname::text, ',' order by k.ord)
         from pg_index i, unnest(i.indkey::int2[]) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attnum = k.attnum
         where i.indrelid = c.oid and i.indisprimary and a.attrelid = c.oid) as pk
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p')
    order by 1`.execute(db);
  return tables.rows.filter((r) => !r.table.startsWith('kysely_migration'));
}

/** Every table of `public`: row count and an md5 of its rows' text in primary-key order. */
export async function snapshotTables(
  db: Kysely<any>, // any schema version
  options: SnapshotOptions = {},
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const { table, pk } of await publicTables(db)) {
    if (options.skipTables?.(table)) continue;
    let rowText = sql`to_jsonb(r)`;
    for (const column of options.skipColumns?.[table] ?? []) rowText = sql`(${rowText} - ${sql.lit(column)})`;
    const order = pk ? sql.join(pk.split(',').map((c) => sql.ref(`r.${c}`))) : sql`${rowText}::text`;
    const r = await sql<{ n: string; digest: string }>`
      select count(*)::text as n, md5(coalesce(string_agg(${rowText}::text, E'\n' order by ${order}), '')) as digest
      from ${sql.table(table)} as r`.execute(db);
    out[table] = `${r.rows[0]!.n} rows, md5 ${r.rows[0]!.digest}`;
  }
  return out;
}

/** Every table of `public` with its row count. */
export async function rowCounts(
  db: Kysely<any>, // any schema version
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { table } of await publicTables(db)) {
    const r = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(db);
    out[table] = Number(r.rows[0]!.n);
  }
  return out;
}
