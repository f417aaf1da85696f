// Several writes sent as one statement: each write is a data-modifying WITH entry (PostgreSQL runs every one of them,
// read or not, on one snapshot, and checks foreign keys at the end of the statement, so an entry may insert rows
// that reference another entry's), and the statement answers what one of them reads back. A write's flush (its
// events with their deliveries, its mail, its audit entry) costs one round trip this way, whatever it holds.
import { CompiledQuery, sql, type Kysely, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../tables';
import {
  compileOnlyDb,
  compileWithPlaceholders,
  parametersOf,
  placeholder,
  shapeCache,
  type CompiledWithPlaceholders,
  type Placeholder,
} from './prepared';

/**
 * A query whose SQL depends on its shape only (db/queries/prepared.ts): `build` writes `p(name)` where a value goes
 * and never sees `values`. A statement made of such queries only is compiled once per combination of shapes; one
 * with any other query is built and compiled as it comes, the values then given to `build` in place of placeholders.
 */
export interface ShapedQuery {
  /** Names `build` (with the shape, what the SQL depends on). */
  kind: string;
  shape: unknown;
  values: Readonly<Record<string, unknown>>;
  build(db: Kysely<Database>, p: Placeholder, shape: unknown): OperationNodeSource;
}

export function shaped<S>(
  kind: string,
  shape: S,
  values: Readonly<Record<string, unknown>>,
  build: (db: Kysely<Database>, p: Placeholder, shape: S) => OperationNodeSource,
): ShapedQuery {
  return { kind, shape, values, build: build as ShapedQuery['build'] };
}

/** One WITH entry: a name later entries and the answer may read (with `returning`), and its query. */
export interface BatchStep {
  name: string;
  query: OperationNodeSource | ShapedQuery;
}

/** What one writer adds to the statement: its entries, in order, and the rows it reads back, if any. */
export interface BatchPart<R = Record<string, unknown>> {
  steps: readonly BatchStep[];
  /** A select over the part's own entries (`select * from new_events`); its rows are the part's result. */
  answer?: RawBuilder<R> | ShapedQuery;
}

const isShaped = (q: OperationNodeSource | ShapedQuery | undefined): q is ShapedQuery =>
  q !== undefined && 'build' in q && 'kind' in q;

/** The value a shaped query's placeholder stands for. */
function valueIn(query: ShapedQuery, name: string): unknown {
  if (!(name in query.values)) throw new Error(`${query.kind}: no value for ${name}`);
  return query.values[name];
}

/** The statement of these entries and answer (`with a as (…), b as (…) select …`). */
function statementOf(
  steps: readonly { name: string; query: OperationNodeSource }[],
  answer: OperationNodeSource | undefined,
): RawBuilder<unknown> {
  const entries = sql.join(
    // Kysely parenthesises an embedded select but not an insert: the extra pair around a select is harmless.
    steps.map((s) => sql`${sql.id(s.name)} as (${s.query})`),
    sql`, `,
  );
  return sql`with ${entries} ${answer ?? sql`select 1`}`;
}

const compiledStatements = shapeCache<CompiledWithPlaceholders>();

/** Sends one statement of these entries and answer; its rows. */
async function send(
  trx: Transaction<Database>,
  steps: readonly BatchStep[],
  answer: RawBuilder<unknown> | ShapedQuery | undefined,
): Promise<unknown[]> {
  const queries = [...steps.map((s) => s.query), ...(answer ? [answer] : [])];
  if (queries.every(isShaped)) {
    // Placeholders are named `<query's index>:<name>`, so two entries may use the same names.
    const key = JSON.stringify([
      steps.map((s, i) => [s.name, queries[i]!.kind, queries[i]!.shape]),
      answer && [(answer as ShapedQuery).kind, (answer as ShapedQuery).shape],
    ]);
    const compiled = compiledStatements.get(key, () => {
      const built = queries.map((q, i) => q.build(compileOnlyDb, (name) => placeholder(`${i}:${name}`), q.shape));
      return compileWithPlaceholders(
        statementOf(
          steps.map((s, i) => ({ name: s.name, query: built[i]! })),
          answer ? built[steps.length] : undefined,
        ),
      );
    });
    const parameters = parametersOf(compiled, (name) => {
      const colon = name.indexOf(':');
      return valueIn(queries[Number(name.slice(0, colon))]!, name.slice(colon + 1));
    });
    return (await trx.executeQuery(CompiledQuery.raw(compiled.text, parameters))).rows;
  }
  const built = (q: OperationNodeSource | ShapedQuery): OperationNodeSource =>
    isShaped(q) ? q.build(trx, (name) => valueIn(q, name) as never, q.shape) : q;
  const { rows } = await statementOf(
    steps.map((s) => ({ name: s.name, query: built(s.query) })),
    answer && built(answer),
  ).execute(trx);
  return rows;
}

/**
 * Runs the parts in one statement and gives each its rows (none for a part without an answer). A statement has one
 * answer: should several parts read rows back, each after the first goes in a statement of its own.
 */
export async function executeBatch(
  trx: Transaction<Database>,
  parts: readonly BatchPart<unknown>[],
): Promise<unknown[][]> {
  const results: unknown[][] = parts.map(() => []);
  const answering = parts.flatMap((p, i) => (p.answer ? [i] : []));
  const first = [...parts.keys()].filter((i) => !parts[i]!.answer || i === answering[0]);
  const statements = [first, ...answering.slice(1).map((i) => [i])].filter((s) => s.length > 0);
  for (const indices of statements) {
    const steps = indices.flatMap((i) => parts[i]!.steps);
    if (steps.length === 0) continue;
    const names = new Set(steps.map((s) => s.name));
    if (names.size !== steps.length) throw new Error('two writes of one statement use the same WITH name');
    const answerOf = indices.find((i) => parts[i]!.answer);
    const rows = await send(trx, steps, answerOf === undefined ? undefined : parts[answerOf]!.answer);
    if (answerOf !== undefined) results[answerOf] = rows;
  }
  return results;
}
