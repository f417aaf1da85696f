// Applies every pending migration; the same set on real PostgreSQL and on PGlite.
import { sql, type Kysely } from 'kysely';
import { DEFAULT_MIGRATION_TABLE, Migrator } from 'kysely/migration';
import { openPostgres } from './database';
import { migrations } from './migrations';

/**
 * Whether every migration is already recorded: one query, where the Migrator introspects the schema and takes its
 * lock first (0.2-0.8 s of every start and every CLI command on PGlite). Anything else (a new migration, a fresh
 * database) runs the Migrator.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run on any schema state
async function upToDate(db: Kysely<any>): Promise<boolean> {
  try {
    const { rows } = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(db);
    const applied = new Set(rows.map((r) => r.name));
    const known = Object.keys(migrations);
    return applied.size === known.length && known.every((name) => applied.has(name));
  } catch {
    return false; // no migration table yet
  }
}

/**
 * Applies what is pending. `migrationUrl` (DATABASE_MIGRATION_URL, src/config.ts says why) is a direct connection
 * to the same database: when given, the Migrator runs there, on one connection of its own, and `db` (which may go
 * through a transaction-mode pooler) only answers whether anything is pending.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run on any schema state
export async function migrateToLatest(db: Kysely<any>, migrationUrl?: string): Promise<string[]> {
  if (await upToDate(db)) return [];
  if (!migrationUrl) return runMigrator(db);
  const direct = openPostgres(migrationUrl, { max: 1 });
  try {
    return await runMigrator(direct.db);
  } finally {
    await direct.close();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run on any schema state
async function runMigrator(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
