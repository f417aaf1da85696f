// A fresh, migrated database per test file. On PostgreSQL (DATABASE_URL set) each file gets its own database
// copied from a migrated template; on the embedded default each file loads a migrated PGlite snapshot.
// global-setup.ts prepares the template or snapshot once per run.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createPGlite, openPostgres, wrapPGlite, type DatabaseHandle } from '../../db/database';

const migrationsDir = join(__dirname, '..', '..', 'db', 'migrations');

/** Changes whenever a migration changes, so a stale template or snapshot is never reused. */
export function migrationsHash(): string {
  const h = createHash('sha256');
  for (const f of readdirSync(migrationsDir).sort()) h.update(f).update(readFileSync(join(migrationsDir, f)));
  return h.digest('hex').slice(0, 12);
}

// global-setup.ts fixes these names in the environment for the whole run (workers inherit it), so a migration
// edited during a run cannot point a test file at a template that was never built.
export const templateDatabaseName = () => process.env.MDAPI_TEST_TEMPLATE ?? `mdapi_tpl_${migrationsHash()}`;
export const snapshotPath = () =>
  process.env.MDAPI_TEST_SNAPSHOT ?? join(tmpdir(), `mdapi-pglite-${migrationsHash()}.tar.gz`);

export function databaseUrlFor(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function withAdminClient<T>(base: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: base });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase extends DatabaseHandle {
  /** postgres only: the connection string of this file's database */
  url?: string;
}

/** A PostgreSQL database of its own, copied from `template`, dropped on close. */
async function postgresCopy(base: string, prefix: string, template: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withAdminClient(base, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = databaseUrlFor(base, name);
  const handle = openPostgres(url, { max: 20 });
  return {
    ...handle,
    url,
    close: async () => {
      await handle.close();
      await withAdminClient(base, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  if (base) return postgresCopy(base, 'mdapi_t', templateDatabaseName());
  return createEmbeddedTestDatabase();
}

/** An embedded (PGlite) database from the migrated snapshot, whatever DATABASE_URL says (the bench runs both). */
export async function createEmbeddedTestDatabase(): Promise<TestDatabase> {
  const snapshot = new Blob([readFileSync(snapshotPath())]);
  return wrapPGlite(await createPGlite({ loadDataDir: snapshot }));
}

/** A database with no migration applied (the migration tests migrate it step by step); dropped on close. */
export async function createEmptyTestDatabase(): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  if (base) return postgresCopy(base, 'mdapi_e', 'template0');
  return wrapPGlite(await createPGlite({}));
}
