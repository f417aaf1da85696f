// Named statements on PostgreSQL (db/named-statements.ts): a statement is named from its second use, and a name
// that fails (a plan gone stale under a migration, a server connection that lost it, as behind a pooler that cannot
// keep them) costs no request: outside a transaction it is sent again unnamed, inside one the unit of work's retry
// runs the transaction again. Each case is checked on the server's own view (pg_prepared_statements) and on rows.
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { openPostgres, type DatabaseHandle } from '../../db/database';
import {
  isStatementCacheError,
  MAX_PER_CONNECTION,
  namedStatementsState,
  whenNamingStops,
} from '../../db/named-statements';
import { isRetryable } from '../../src/platform/unit-of-work';
import { describeInPostgresRun } from '../helpers/postgres-run';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const describeWithPostgres = describeInPostgresRun(
  'test/db/named-statements.test.ts',
  'PGlite runs every statement in this process; there are no protocol-level prepared statements to name',
);

describeWithPostgres('named statements', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let db: Kysely<unknown>;
  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection: what the server holds for it is what pg_prepared_statements shows.
    handle = openPostgres(database.url!, { max: 1 });
    db = handle.db as unknown as Kysely<unknown>;
    await sql`create table named_probe (id int primary key, label text)`.execute(db);
    await sql`insert into named_probe values (1, 'one'), (2, 'two')`.execute(db);
  });
  afterAll(async () => {
    await handle.close();
    await database.close();
  });

  const prepared = async () =>
    (
      await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)
    ).rows.filter((r) => r.name.startsWith('mdapi'));
  const probe = (id: number) => sql<Record<string, unknown>>`select * from named_probe where id = ${id}`.execute(db);
  const probeText = 'select * from named_probe where id = $1';

  test('a statement is sent unnamed the first time and named from its second use, under one name', async () => {
    expect((await probe(1)).rows).toEqual([{ id: 1, label: 'one' }]);
    expect(await prepared()).toEqual([]);
    expect((await probe(2)).rows).toEqual([{ id: 2, label: 'two' }]);
    expect((await probe(1)).rows).toEqual([{ id: 1, label: 'one' }]);
    const named = await prepared();
    expect(named).toHaveLength(1);
    expect(named[0]!.statement).toBe(probeText);
    // A statement without parameters (pg sends it by the simple protocol) is never named.
    expect(namedStatementsState().named).toBe(1);
  });

  test('a connection holds at most MAX_PER_CONNECTION names: past them new texts go unnamed and the named ones stay named', async () => {
    // A connection of its own, so that it starts with no names and its fill leaves the other tests' one as it was.
    const own = openPostgres(database.url!, { max: 1 });
    const ownDb = own.db as unknown as Kysely<unknown>;
    const text = (i: number) => `select $1::int + ${i} as n`;
    const run = async (i: number) => (await ownDb.executeQuery(CompiledQuery.raw(text(i), [1]))).rows;
    const names = async () =>
      (
        await sql<{ statement: string; runs: number }>`select statement, (generic_plans + custom_plans)::int as runs
          from pg_prepared_statements`.execute(ownDb)
      ).rows;
    try {
      // Each text twice: the second use names it, until the connection is full.
      for (let i = 0; i < MAX_PER_CONNECTION; i++) {
        await run(i);
        await run(i);
      }
      expect((await names()).map((n) => n.statement).sort()).toEqual(
        Array.from({ length: MAX_PER_CONNECTION }, (_, i) => text(i)).sort(),
      );
      // A new text that comes again is answered, unnamed: the server holds no more than before.
      expect(await run(MAX_PER_CONNECTION)).toEqual([{ n: MAX_PER_CONNECTION + 1 }]);
      expect(await run(MAX_PER_CONNECTION)).toEqual([{ n: MAX_PER_CONNECTION + 1 }]);
      const after = await names();
      expect(after).toHaveLength(MAX_PER_CONNECTION);
      expect(after.some((n) => n.statement === text(MAX_PER_CONNECTION))).toBe(false);
      // One it holds is still run by its name: the server counts one more run of its plan.
      const runsOf = (rows: { statement: string; runs: number }[]) => rows.find((n) => n.statement === text(7))!.runs;
      expect(await run(7)).toEqual([{ n: 8 }]);
      expect(runsOf(await names())).toBe(runsOf(after) + 1);
    } finally {
      await own.close();
    }
  });

  test('a migration that changes what `*` returns: the next read is answered with the new column, not an error', async () => {
    const before = namedStatementsState().generation;
    await sql`alter table named_probe add column note text`.execute(database.db);
    expect((await probe(2)).rows).toEqual([{ id: 2, label: 'two', note: null }]);
    expect(namedStatementsState().generation).toBe(before + 1);
    // Still naming (a migration is no pooler): the statement is named again from its next use, by a new name.
    expect(namedStatementsState().naming).toBe(true);
    await probe(1);
    await probe(1);
    expect((await prepared()).map((p) => p.name)).toHaveLength(2);
  });

  test('inside a transaction the stale plan fails the transaction, as a retryable error, and running it again succeeds', async () => {
    await probe(1);
    await probe(2);
    await sql`alter table named_probe add column extra int`.execute(database.db);
    let failure: unknown;
    await db
      .transaction()
      .execute(async (trx) => {
        await sql`select * from named_probe where id = ${1}`.execute(trx);
      })
      .catch((err: unknown) => (failure = err));
    expect(isStatementCacheError(failure)).toBe(true);
    expect(isRetryable(failure)).toBe(true);
    const again = await db.transaction().execute(async (trx) => {
      return (await sql`select * from named_probe where id = ${1}`.execute(trx)).rows;
    });
    expect(again).toEqual([{ id: 1, label: 'one', note: null, extra: null }]);
  });

  test('a server connection that lost its statements (a pooler switched it): answered unnamed, naming stops once, with a warning', async () => {
    const told: string[] = [];
    whenNamingStops((reason) => told.push(reason));
    await probe(1);
    await probe(2);
    expect(await prepared()).not.toEqual([]);
    // What a transaction pooler does to a client: the next statement lands on a connection without its names.
    await sql`deallocate all`.execute(db);
    expect((await probe(2)).rows).toEqual([{ id: 2, label: 'two', note: null, extra: null }]);
    expect(namedStatementsState().naming).toBe(false);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('DATABASE_NAMED_STATEMENTS=off');
    // From now on nothing is named.
    await probe(1);
    await probe(1);
    expect(await prepared()).toEqual([]);
    expect(told).toHaveLength(1);
  });

  test('another failure of a statement is not taken for a name’s', async () => {
    const err = await sql`select 1 / ${0}::int`.execute(db).catch((e: unknown) => e);
    expect(isStatementCacheError(err)).toBe(false);
    expect(isRetryable(err)).toBe(false);
  });
});
