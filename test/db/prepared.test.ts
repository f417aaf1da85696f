// Queries compiled once (db/queries/prepared.ts): a shaped query is compiled once per shape, every call's values land
// where their placeholders were (never the first call's values), the query's own constants stay, and a builder
// that puts a placeholder where no value can go, or a call that leaves a value out, is refused before anything is
// sent. Run against the test database (PGlite or PostgreSQL), where the compiled SQL must actually run.
import { sql } from 'kysely';
import { addRowValues, definedColumns, prepareByShape, rowPlaceholders } from '../../db/queries/prepared';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

test('each call sends its own values into the SQL compiled for its shape; constants stay as compiled', async () => {
  let builds = 0;
  const pick = prepareByShape((db, p, shape: { doubled: boolean }) => {
    builds++;
    const value = shape.doubled ? sql`${p('n')}::int * 2` : sql`${p('n')}::int`;
    return sql<{ n: number; label: string; kind: string }>`select ${value} as n, ${p('label')}::text as label,
      ${'constant'}::text as kind`;
  });
  const { db } = database;
  expect(await pick(db, { doubled: false }, { n: 1, label: 'first' })).toEqual([
    { n: 1, label: 'first', kind: 'constant' },
  ]);
  expect(await pick(db, { doubled: false }, { n: 7, label: 'second' })).toEqual([
    { n: 7, label: 'second', kind: 'constant' },
  ]);
  expect(await pick(db, { doubled: true }, { n: 7, label: 'third' })).toEqual([
    { n: 14, label: 'third', kind: 'constant' },
  ]);
  expect(await pick(db, { doubled: true }, { n: 8, label: 'fourth' })).toEqual([
    { n: 16, label: 'fourth', kind: 'constant' },
  ]);
  expect(builds).toBe(2);
});

test('a shaped insert writes the columns of its shape with each call’s row', async () => {
  const insert = prepareByShape(
    (db, p, shape: { columns: string[] }) =>
      sql<{ a: string; b: string | null }>`with t(a, b) as (values (${p('a')}::text, ${
        shape.columns.includes('b') ? sql`${p('b')}::text` : sql`null::text`
      })) select * from t`,
  );
  const rows = [
    { a: 'x', b: 'y' },
    { a: 'z', b: undefined },
    { a: 'w', b: 'v' },
  ];
  const got = [];
  for (const row of rows)
    got.push(...(await insert(database.db, { columns: definedColumns(row) }, addRowValues({}, row))));
  expect(got).toEqual([
    { a: 'x', b: 'y' },
    { a: 'z', b: null },
    { a: 'w', b: 'v' },
  ]);
  expect(rowPlaceholders<Record<string, unknown>>((n) => `<${n}>` as never, ['a', 'b'], 'o.')).toEqual({
    a: '<o.a>',
    b: '<o.b>',
  });
});

test('a placeholder compiled into the SQL text, or a value left out, is refused before anything is sent', async () => {
  const asIdentifier = prepareByShape((db, p) => sql`select 1 as ${sql.ref(p('column'))}`);
  await expect(asIdentifier(database.db, {}, { column: 'x' })).rejects.toThrow(
    'a placeholder was compiled into the SQL text',
  );
  const pick = prepareByShape((db, p) => sql<{ n: number }>`select ${p('n')}::int as n`);
  await expect(pick(database.db, {}, {})).rejects.toThrow('no value for n');
  // The refused call sent nothing: the next one still compiles and runs.
  expect(await pick(database.db, {}, { n: 3 })).toEqual([{ n: 3 }]);
});
