// Row counts, for asserting that a rejected request wrote nothing.
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';

export async function rowCounts(db: Kysely<Database>, tables: (keyof Database)[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of tables) {
    const r = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(t)}`.execute(db);
    out[t] = Number(r.rows[0]?.n ?? 0);
  }
  return out;
}

/** Rows of `table` whose `column` equals `value`. */
export async function countWhere(
  db: Kysely<Database>,
  table: keyof Database,
  column: string,
  value: string,
): Promise<number> {
  const r = await sql<{
    n: string;
  }>`select count(*)::text as n from ${sql.table(table)} where ${sql.ref(column)} = ${value}`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}
