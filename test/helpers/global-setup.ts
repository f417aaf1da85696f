// Once per test run: migrate a template database (PostgreSQL) or a PGlite snapshot that every test file copies.
// Both are keyed by a hash of the migrations and built under a temporary name, then renamed, so concurrent runs
// never see a half-built one.
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createPGlite, openPostgres, wrapPGlite } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { databaseUrlFor, snapshotPath, templateDatabaseName, withAdminClient } from './test-database';

async function preparePostgresTemplate(base: string): Promise<void> {
  const name = templateDatabaseName();
  const exists = await withAdminClient(
    base,
    async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount,
  );
  if (exists) return;
  const building = `mdapi_build_${randomBytes(4).toString('hex')}`;
  await withAdminClient(base, (c) => c.query(`CREATE DATABASE ${building}`));
  const handle = openPostgres(databaseUrlFor(base, building), { max: 1 });
  await migrateToLatest(handle.db);
  await handle.close();
  await withAdminClient(base, async (c) => {
    try {
      await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    } catch {
      await c.query(`DROP DATABASE IF EXISTS ${building}`); // another run finished first
    }
  });
}

/** The migrated PGlite image every embedded test database starts from (made once, then reused). */
export async function preparePGliteSnapshot(): Promise<void> {
  const path = snapshotPath();
  if (existsSync(path)) return;
  const pg = await createPGlite({});
  const handle = wrapPGlite(pg);
  await migrateToLatest(handle.db);
  const dump = await pg.dumpDataDir('gzip');
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
  renameSync(tmp, path);
  await handle.close();
}

export default async function globalSetup(): Promise<void> {
  process.env.MDAPI_TEST_TEMPLATE = templateDatabaseName();
  process.env.MDAPI_TEST_SNAPSHOT = snapshotPath();
  const base = process.env.DATABASE_URL;
  if (base) await preparePostgresTemplate(base);
  else await preparePGliteSnapshot();
}
