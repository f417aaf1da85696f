// kysely's PostgreSQL dialect, with one addition for the write path: a unit of work's transaction has a statement
// timeout (SET LOCAL, src/platform/unit-of-work.ts), and setting it after `begin` would cost every write a round trip
// of its own. pg sends a query without parameters by the simple protocol, which carries several statements in one
// message, so `begin; set local statement_timeout = N` opens the transaction and sets its limit in one round trip.
// Only a transaction opened inside `withStatementTimeout` gets it: migrations, workers and every other transaction
// begin as kysely begins them.
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  CompiledQuery,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type Driver,
  type PostgresDialectConfig,
  type TransactionSettings,
} from 'kysely';

/** A timeout asked for the next transaction opened in this async context; `applied` once its `begin` set it. */
export interface StatementTimeout {
  readonly ms: number;
  applied: boolean;
}

const asked = new AsyncLocalStorage<StatementTimeout>();

/** PostgreSQL's statement_timeout is an int4 of milliseconds. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * Runs `open`, which opens one transaction: its `begin` sets the statement timeout too where the driver can (this
 * dialect's). `timeout.applied` says whether it did; if not (PGlite runs one statement per query), the caller sets
 * it with the transaction's first statement. Transactions opened later in the same work are not touched.
 */
export function withStatementTimeout<T>(ms: number, open: (timeout: StatementTimeout) => Promise<T>): Promise<T> {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIMEOUT_MS) throw new Error(`bad statement timeout ${ms} ms`);
  const timeout: StatementTimeout = { ms, applied: false };
  return asked.run(timeout, () => open(timeout));
}

class WritePathPostgresDriver extends PostgresDriver {
  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const timeout = asked.getStore();
    if (!timeout || timeout.applied || settings.isolationLevel || settings.accessMode) {
      return super.beginTransaction(connection, settings);
    }
    // Marked before the round trip: whatever happens, no later transaction of this work takes the request.
    timeout.applied = true;
    await connection.executeQuery(CompiledQuery.raw(`begin; set local statement_timeout = ${timeout.ms}`));
  }
}

export class WritePathPostgresDialect extends PostgresDialect {
  constructor(private readonly config: PostgresDialectConfig) {
    super(config);
  }

  override createDriver(): Driver {
    return new WritePathPostgresDriver(this.config);
  }
}
