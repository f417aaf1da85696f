// Hot queries built and compiled once, at load, instead of on every call. Building a query with Kysely (builder
// objects, the operation tree, freezing, compiling it to SQL) costs tens of microseconds each time; for a query run
// on every request (the credential look-up) that is a measurable share of the request. `prepare` compiles it once
// with a compile-only Kysely (PostgreSQL's SQL, which PGlite speaks too) and each call sends that SQL with its own
// parameter values. The query is still written with Kysely, so it is type-checked against db/tables.ts.
import {
  CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type Compilable,
} from 'kysely';
import type { Database } from '../tables';

const compileOnly = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/**
 * Compiles `build(db)` once. The builder passes the parameter names (in `parameters`) where the values go; at load
 * this checks that the compiled SQL takes exactly those parameters in that order, so a call's values (given in the
 * same order) land where the names were.
 */
export function prepare<Row, const Names extends readonly string[]>(
  parameters: Names,
  build: (db: Kysely<Database>, ...names: Names) => Compilable<Row>,
): (db: Pick<Kysely<Database>, 'executeQuery'>, ...values: { [K in keyof Names]: unknown }) => Promise<Row[]> {
  const compiled = build(compileOnly, ...parameters).compile();
  if (compiled.parameters.length !== parameters.length || compiled.parameters.some((p, i) => p !== parameters[i])) {
    throw new Error(
      `prepare: the query takes the parameters ${JSON.stringify(compiled.parameters)}, not ${JSON.stringify(parameters)}`,
    );
  }
  const text = compiled.sql;
  return async (db, ...values) => (await db.executeQuery<Row>(CompiledQuery.raw(text, values as unknown[]))).rows;
}
