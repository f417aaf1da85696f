// Several writes sent as one statement: each write is a data-modifying WITH entry (PostgreSQL runs every one of them,
// read or not, on one snapshot, and checks foreign keys at the end of the statement, so an entry may insert rows
// that reference another entry's), and the statement answers what one of them reads back. A write's flush (its
// events with their deliveries, its mail, its audit entry) costs one round trip this way, whatever it holds.
import { sql, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../tables';

/** One WITH entry: a name later entries and the answer may read (with `returning`), and its query. */
export interface BatchStep {
  name: string;
  query: OperationNodeSource;
}

/** What one writer adds to the statement: its entries, in order, and the rows it reads back, if any. */
export interface BatchPart<R = Record<string, unknown>> {
  steps: readonly BatchStep[];
  /** A select over the part's own entries (`select * from new_events`); its rows are the part's result. */
  answer?: RawBuilder<R>;
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
    const entries = sql.join(
      // Kysely parenthesises an embedded select but not an insert: the extra pair around a select is harmless.
      steps.map((s) => sql`${sql.id(s.name)} as (${s.query})`),
      sql`, `,
    );
    const answer = answerOf === undefined ? sql`select 1` : parts[answerOf]!.answer!;
    const { rows } = await sql`with ${entries} ${answer}`.execute(trx);
    if (answerOf !== undefined) results[answerOf] = rows;
  }
  return results;
}
