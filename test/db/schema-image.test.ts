// The schema image (db/image/, unpacked by a first embedded start instead of initdb and every migration) against
// the migrations it stands for: its tables, columns, constraints, indexes, views, functions, triggers and types, and
// its kysely_migration rows, must be those of a database migrated now. A migration added or changed after the image
// was made, or a PGlite upgrade, fails here until `npm run db:image` is run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { createPGlite, wrapPGlite, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { migrations } from '../../db/migrations';
import type { Database } from '../../db/tables';
import { imageMismatch, readManifest, REGENERATE, unpackImage } from '../../db/schema-image';

type Catalog = Record<string, string[]>;

async function lines(db: Kysely<Database>, query: ReturnType<typeof sql<{ line: string }>>): Promise<string[]> {
  return (await query.execute(db)).rows.map((r) => r.line);
}

/** Everything the migrations define in the public schema, one line per object, in a stable order. */
async function catalog(db: Kysely<Database>): Promise<Catalog> {
  return {
    columns: await lines(
      db,
      sql`select table_name || '.' || column_name || ' #' || ordinal_position || ' ' || data_type || coalesce('(' || character_maximum_length || ')', '')
            || case when is_nullable = 'NO' then ' not null' else '' end
            || coalesce(' default ' || column_default, '') || coalesce(' generated ' || generation_expression, '') as line
          from information_schema.columns where table_schema = 'public' order by table_name, column_name`,
    ),
    constraints: await lines(
      db,
      sql`select c.conrelid::regclass || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid) as line
          from pg_constraint c join pg_namespace n on n.oid = c.connamespace
          where n.nspname = 'public' order by 1`,
    ),
    indexes: await lines(
      db,
      sql`select indexdef as line from pg_indexes where schemaname = 'public' order by indexname`,
    ),
    views: await lines(
      db,
      sql`select viewname || ': ' || definition as line from pg_views where schemaname = 'public' order by viewname`,
    ),
    functions: await lines(
      db,
      sql`select pg_get_functiondef(p.oid) as line from pg_proc p join pg_namespace n on n.oid = p.pronamespace
          where n.nspname = 'public' order by p.proname, pg_get_function_identity_arguments(p.oid)`,
    ),
    triggers: await lines(
      db,
      sql`select pg_get_triggerdef(t.oid) as line from pg_trigger t join pg_class c on c.oid = t.tgrelid
          join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and not t.tgisinternal order by 1`,
    ),
    types: await lines(
      db,
      sql`select t.typname || ' ' || t.typtype::text || coalesce(' ' || (select string_agg(e.enumlabel, ',' order by e.enumsortorder)
            from pg_enum e where e.enumtypid = t.oid), '') as line
          from pg_type t join pg_namespace n on n.oid = t.typnamespace
          where n.nspname = 'public' and t.typtype in ('e', 'd', 'c') and t.typrelid = 0 order by 1`,
    ),
    sequences: await lines(
      db,
      sql`select sequencename || ' ' || data_type || ' ' || increment_by as line from pg_sequences
          where schemaname = 'public' order by 1`,
    ),
    migrationRows: await lines(db, sql`select name as line from kysely_migration order by name`),
  };
}

/** Lines of `fresh` missing from the image and lines of the image a fresh migration does not have. */
function differences(fresh: Catalog, image: Catalog): string[] {
  const out: string[] = [];
  for (const part of Object.keys(fresh)) {
    const have = new Set(image[part]);
    const want = new Set(fresh[part]);
    for (const line of fresh[part]!) if (!have.has(line)) out.push(`${part}: missing in the image: ${line}`);
    for (const line of image[part] ?? []) if (!want.has(line)) out.push(`${part}: only in the image: ${line}`);
  }
  return out;
}

describe('the schema image', () => {
  let fresh: DatabaseHandle;
  let image: DatabaseHandle | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'mdapi-image-test-'));

  beforeAll(async () => {
    fresh = wrapPGlite(await createPGlite({}));
    await migrateToLatest(fresh.db);
  });
  afterAll(async () => {
    await fresh.close();
    await image?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is made by the installed PGlite, of this code’s migrations', () => {
    const manifest = readManifest();
    if (!manifest) throw new Error(`db/image/ has no manifest.json: run \`${REGENERATE}\``);
    const mismatch = imageMismatch(manifest, Object.keys(migrations));
    if (mismatch) throw new Error(`The schema image is stale (${mismatch}): run \`${REGENERATE}\``);
    expect(manifest.migrations).toEqual(Object.keys(migrations).sort());
  });

  it('holds exactly the schema and migration rows of a fresh migration', async () => {
    const dataDir = join(dir, 'pgdata');
    const unpacked = unpackImage(dataDir, Object.keys(migrations));
    if (!unpacked.unpacked)
      throw new Error(`The schema image cannot be used (${unpacked.reason}): run \`${REGENERATE}\``);
    image = wrapPGlite(await createPGlite({ dataDir }));
    const diff = differences(await catalog(fresh.db), await catalog(image.db));
    if (diff.length)
      throw new Error(
        `The schema image differs from the migrations (${diff.length} differences): run \`${REGENERATE}\`\n` +
          diff.slice(0, 20).join('\n'),
      );
  });

  it('notices a schema that differs from the migrations', async () => {
    const other = wrapPGlite(await createPGlite({}));
    try {
      await migrateToLatest(other.db);
      await sql`alter table shops add column stray integer`.execute(other.db);
      await sql`delete from kysely_migration where name = ${Object.keys(migrations).sort().at(-1)!}`.execute(other.db);
      const diff = differences(await catalog(fresh.db), await catalog(other.db));
      expect(diff).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^columns: only in the image: shops\.stray #\d+ integer/),
          expect.stringMatching(/^migrationRows: missing in the image: /),
        ]),
      );
    } finally {
      await other.close();
    }
  });

  it('is not used when another PGlite made it, or when its migrations are not this code’s first ones', () => {
    const known = Object.keys(migrations);
    const manifest = readManifest()!;
    expect(imageMismatch({ ...manifest, pglite: '0.0.1' }, known)).toMatch(/made by PGlite 0\.0\.1/);
    expect(imageMismatch({ ...manifest, migrations: ['0000_unknown', ...manifest.migrations] }, known)).toMatch(
      /not the first/,
    );
    // Older than the code: the image seeds the database and the migrator applies the rest.
    expect(imageMismatch({ ...manifest, migrations: manifest.migrations.slice(0, -1) }, known)).toBeUndefined();
    expect(unpackImage(join(dir, 'elsewhere'), known, join(dir, 'no-image'))).toEqual({
      unpacked: false,
      reason: expect.stringMatching(/no image/),
    });
  });
});
