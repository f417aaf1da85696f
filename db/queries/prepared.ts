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
 * Compiles `build(db)` once, at load: the builder gets a placeholder for each parameter name (prepareByShape's,
 * below), and each call's values, given in the order of the names, go where those placeholders were.
 */
export function prepare<Row, const Names extends readonly string[]>(
  parameters: Names,
  build: (db: Kysely<Database>, ...names: Names) => Compilable<Row>,
): (db: Pick<Kysely<Database>, 'executeQuery'>, ...values: { [K in keyof Names]: unknown }) => Promise<Row[]> {
  const compiled = compileWithPlaceholders(build(compileOnly, ...(parameters.map(placeholder) as unknown as Names)));
  const position = new Map(parameters.map((name, i) => [name, i]));
  return async (db, ...values) => {
    const parameters = parametersOf(compiled, (name) => values[position.get(name)!]);
    return (await db.executeQuery<Row>(CompiledQuery.raw(compiled.text, parameters))).rows;
  };
}

/** What a shaped query's builder writes where a value goes: `p('email')` stands for the call's `email` value. */
export type Placeholder = (name: string) => never;

// A placeholder is a string no caller's value or the SQL of a query contains, so the compiled query shows which of
// its parameters stand for a call's value (the rest are the query's own constants, kept as compiled).
const MARK = '\u0000prepared:';
export const placeholder: Placeholder = (name) => (MARK + name) as never;

/** A query compiled with placeholders: its SQL, and per parameter the name of a call's value or its own constant. */
export interface CompiledWithPlaceholders {
  text: string;
  slots: ({ name: string } | { constant: unknown })[];
}

/** Compiles a query built with placeholders (`build` of prepareByShape, or a batch's shaped steps). */
export function compileWithPlaceholders(query: {
  compile(db: Kysely<Database>): CompiledQuery<unknown>;
}): CompiledWithPlaceholders {
  const compiled = query.compile(compileOnly);
  if (compiled.sql.includes(MARK)) throw new Error('prepared: a placeholder was compiled into the SQL text');
  return {
    text: compiled.sql,
    slots: compiled.parameters.map((p) =>
      typeof p === 'string' && p.startsWith(MARK) ? { name: p.slice(MARK.length) } : { constant: p },
    ),
  };
}

/** The parameters of one call: each placeholder's value as `valueOf` gives it, the constants as compiled. */
export function parametersOf(compiled: CompiledWithPlaceholders, valueOf: (name: string) => unknown): unknown[] {
  return compiled.slots.map((slot) => ('name' in slot ? valueOf(slot.name) : slot.constant));
}

/**
 * Compiled queries by shape. Shapes are few (the columns a write has, how many rows a flush writes), but a bulk
 * write of a new size each time must not grow it without end: past `max` entries it starts again.
 */
export function shapeCache<T>(max = 2_000): { get(key: string, make: () => T): T } {
  const entries = new Map<string, T>();
  return {
    get(key, make) {
      let value = entries.get(key);
      if (value === undefined) {
        if (entries.size >= max) entries.clear();
        entries.set(key, (value = make()));
      }
      return value;
    },
  };
}

/** The compile-only Kysely the placeholders' queries are built with (it never runs anything). */
export const compileOnlyDb: Kysely<Database> = compileOnly;

/**
 * Like `prepare`, for a query whose form depends on the call (which columns an insert writes, whether a clause is
 * there): compiled once per `shape`, the form's description, given to `build` beside the placeholders of the
 * values. `build` never sees a call's values, so none can be compiled into the SQL that later calls reuse; each
 * call's values are looked up by the placeholders' names. A shape is a small JSON value (it keys the cache).
 */
export function prepareByShape<Shape, Row>(
  build: (db: Kysely<Database>, p: Placeholder, shape: Shape) => { compile(db: Kysely<Database>): CompiledQuery<Row> },
): (
  db: Pick<Kysely<Database>, 'executeQuery'>,
  shape: Shape,
  values: Readonly<Record<string, unknown>>,
) => Promise<Row[]> {
  const byShape = shapeCache<CompiledWithPlaceholders>();
  return async (db, shape, values) => {
    const compiled = byShape.get(JSON.stringify(shape), () =>
      compileWithPlaceholders(build(compileOnly, placeholder, shape)),
    );
    const parameters = parametersOf(compiled, (name) => {
      if (!(name in values)) throw new Error(`prepareByShape: no value for ${name}`);
      return values[name];
    });
    return (await db.executeQuery<Row>(CompiledQuery.raw(compiled.text, parameters))).rows;
  };
}

/** The columns of a row to insert that have a value (an undefined one is left to its default): part of a shape. */
export function definedColumns(row: object): string[] {
  return Object.keys(row).filter((c) => (row as Record<string, unknown>)[c] !== undefined);
}

/** The row a shaped insert's builder writes: each column's placeholder, named `<prefix><column>`. */
export function rowPlaceholders<R>(p: Placeholder, columns: readonly string[], prefix = ''): R {
  return Object.fromEntries(columns.map((c) => [c, p(prefix + c)])) as R;
}

/**
 * Adds a row's values to a call's values under the names `rowPlaceholders` gave them. A value that is SQL (a Kysely
 * expression) cannot be sent as a parameter: such a row is refused, and its write must build that SQL in `build`.
 */
export function addRowValues(values: Record<string, unknown>, row: object, prefix = ''): Record<string, unknown> {
  for (const [c, v] of Object.entries(row)) {
    if (typeof v === 'object' && v !== null && 'toOperationNode' in v)
      throw new Error(`prepared: the value of ${prefix}${c} is SQL, not a value`);
    values[prefix + c] = v;
  }
  return values;
}
