// Named statements: PostgreSQL parses and plans a statement sent unnamed every time it comes; a named one (a
// protocol-level prepared statement) is parsed once per connection and, after five runs, usually planned once too.
// For the write path that is most of the database's work: POST /orders cost PostgreSQL 3.6 CPU ms unnamed against
// 1.6 named (npm run bench:profile -- writes --unprofiled), and the database's CPU is what limits its rate.
//
// Only statements that come again are named: a text is named from its second use, so a one-off statement (a bulk
// insert of a new size) costs the server no memory that lingers. A server connection holds at most
// MAX_PER_CONNECTION names; past that it sends new texts unnamed and keeps the ones it has (each still saves its
// parse on every use). Connections are replaced after NAMED_CONNECTION_LIFETIME_SECONDS (the pool's
// maxLifetimeSeconds), so which texts a connection names follows what the process runs now, not what it ran first:
// no DEALLOCATE is needed, which a transaction pooler could send to a server connection that never had the name. A
// name is the hash of the text, so the same name always means the same text, whichever process or pooled server
// connection prepared it. Two failures are told apart and survived:
// - A statement whose result columns changed under it (a migration added a column to a table it reads with `*`):
//   PostgreSQL refuses to run its old plan ("cached plan must not change result type"); its names are dropped.
// - A pooler in transaction mode that cannot keep prepared statements (PgBouncer before 1.21, or with
//   max_prepared_statements = 0) hands the client another server connection, where the name does not exist, or
//   already does: naming stops in this process, with a warning.
// Outside a transaction the statement is then sent again unnamed, at once; inside one the transaction has failed,
// and the unit of work runs it again (isStatementCacheError), as after a serialization failure.
// DATABASE_NAMED_STATEMENTS=off sends everything unnamed, as behind such a pooler it should (docs/deployment.md).
import { createHash } from 'node:crypto';
import { Client, type ClientConfig } from 'pg';

/** Names one server connection holds at most (PostgreSQL keeps each one's parse tree and plan for the session). */
export const MAX_PER_CONNECTION = 300;
/** The pool replaces a connection this long after it opened (with naming on): its names are then learnt afresh. */
export const NAMED_CONNECTION_LIFETIME_SECONDS = 1800;
/** Texts counted, not yet named, and texts named; past this many either map starts again (a name is its text's hash). */
const MAX_REMEMBERED = 10_000;

let generation = 0;
let naming = true;
let onStop: ((reason: string) => void) | undefined;
const uses = new Map<string, number>();
const names = new Map<string, string>();

/** The name to send this text under, or undefined to send it unnamed. */
function nameOf(text: string): string | undefined {
  if (!naming) return undefined;
  const known = names.get(text);
  if (known !== undefined) return known;
  const seen = uses.get(text) ?? 0;
  if (seen === 0) {
    if (uses.size >= MAX_REMEMBERED) uses.clear();
    uses.set(text, 1);
    return undefined;
  }
  if (names.size >= MAX_REMEMBERED) names.clear();
  uses.delete(text);
  const name = `mdapi${generation}_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
  names.set(text, name);
  return name;
}

const STALE_PLAN = 'cached plan must not change result type';

/**
 * A statement failed because of its name, not its content: its plan went stale under a migration (0A000), or the
 * server connection does not have it (26000) or already has it (42P05: a pooler switched connections). Sent again,
 * it runs.
 */
export function isStatementCacheError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code !== 'string') return false;
  if (e.code === '0A000') return typeof e.message === 'string' && e.message.includes(STALE_PLAN);
  return (e.code === '26000' || e.code === '42P05') && typeof e.message === 'string' && e.message.includes('mdapi');
}

/** Drops what the failure showed to be wrong: the names of this generation, or naming altogether. */
function forget(err: { code?: unknown }): void {
  names.clear();
  uses.clear();
  generation++;
  if (err.code !== '0A000' && naming) {
    naming = false;
    onStop?.(
      'a named statement was missing or already there on its server connection: a pooler in transaction mode ' +
        'that cannot keep prepared statements; this process sends every statement unnamed from now on ' +
        '(set DATABASE_NAMED_STATEMENTS=off behind it)',
    );
  }
}

type Query = (...args: unknown[]) => Promise<unknown>;

/** A pg client that names the statements that come again (pg.Pool's `Client` option). */
export class NamingClient extends Client {
  /** The server's transaction status at its last ReadyForQuery: I (idle), T (in a transaction), E (failed one). */
  private transaction = 'I';

  constructor(config?: string | ClientConfig) {
    super(config);
    (this as unknown as { connection: NodeJS.EventEmitter }).connection.on(
      'readyForQuery',
      (message: { status?: string }) => {
        this.transaction = message.status ?? 'I';
      },
    );
  }

  /** The connection holds as many names as it may, and not this one: the text goes unnamed here. */
  private full(name: string): boolean {
    const parsed = (this as unknown as { connection: { parsedStatements: Record<string, string> } }).connection
      .parsedStatements;
    return parsed[name] === undefined && Object.keys(parsed).length >= MAX_PER_CONNECTION;
  }

  override query(...args: unknown[]): never {
    const query = Client.prototype.query as unknown as Query;
    const [text, values, callback] = args;
    // Kysely's form, query(text, values); anything else (a callback, a cursor, a config object) goes as it came.
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || callback !== undefined)
      return query.apply(this, args) as never;
    const name = nameOf(text);
    if (name === undefined || this.full(name)) return query.call(this, text, values) as never;
    return (query.call(this, { name, text, values }) as Promise<unknown>).catch((err: unknown) => {
      if (!isStatementCacheError(err)) throw err;
      forget(err as { code?: unknown });
      // pg believes the name is parsed on this connection; it is not, or not usably.
      delete (this as unknown as { connection: { parsedStatements: Record<string, unknown> } }).connection
        .parsedStatements[name];
      if (this.transaction !== 'I') throw err;
      return query.call(this, text, values);
    }) as never;
  }
}

/** Who is told (once) when a pooler makes this process stop naming statements: the server's log. */
export function whenNamingStops(tell: (reason: string) => void): void {
  onStop = tell;
}

/** Names in use (for tests and metrics): how many texts have a name, and whether naming is on. */
export function namedStatementsState(): { named: number; naming: boolean; generation: number } {
  return { named: names.size, naming, generation };
}
