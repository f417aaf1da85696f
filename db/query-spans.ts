// PostgreSQL spans (tracing, issue 28): every statement Kysely sends, through the pool or PGlite, transactions
// included, becomes a client span named by its verb and table ("select orders"), a child of the span active when it
// was sent (the request's, or a worker job's); a statement sent outside any span, such as a worker's poll, makes
// none. Its text and parameter values are never recorded: a statement can carry a customer's e-mail or a
// credential hash. A transaction's begin, commit and rollback are spans too, made around the driver's calls rather
// than from its statements: PostgreSQL's driver sends them as statements, but PGlite's opens and ends a transaction
// through PGlite's own API and sends none (its begin span includes the wait for PGlite's one connection). Off unless
// tracing is on: a database opened while no tracer was given gets Kysely's own dialect, untouched, so an untraced
// server pays nothing per statement.
import { SpanKind, SpanStatusCode, context, createContextKey, trace, type Tracer } from '@opentelemetry/api';
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';

let tracer: Tracer | undefined;

/** Databases opened from now on trace their statements with this tracer (undefined: they do not). */
export function traceQueries(next: Tracer | undefined): void {
  tracer = next;
}

const verbs =
  /^\s*(?:with\b[\s\S]*?\)\s*)?(select|insert|update|delete|begin|commit|rollback|savepoint|release|set|create|alter|drop|truncate|lock|listen|notify|analyze|vacuum|copy)\b/i;
const tables = /\b(?:from|into|update|join|table)\s+"?([a-z_][a-z0-9_]*)"?/i;

/** "select orders": the statement's verb and the first table it names, from the SQL text (never the values). */
export function querySpanName(sqlText: string): { name: string; operation: string; table: string | undefined } {
  const operation = (verbs.exec(sqlText)?.[1] ?? 'query').toLowerCase();
  // A statement with a CTE names its target after the CTE's body: look past the `with … )` part for it.
  const afterCte = sqlText.replace(/^\s*with\b[\s\S]*\)\s*(?=select|insert|update|delete)/i, '');
  const table = tables.exec(afterCte)?.[1] ?? tables.exec(sqlText)?.[1];
  return { name: table ? `${operation} ${table}` : operation, operation, table };
}

/** Set while the driver begins or ends a transaction: its own statements, if it sends any, are that span already. */
const transactionControl = createContextKey('mdapi.db.transaction-control');

/**
 * Runs `run` in a client span named `name` (a statement's verb and table, or the transaction's step), a child of the
 * active span; with no active span, or inside a transaction step's own span, it just runs.
 */
async function inSpan<R>(
  spans: Tracer,
  span: { name: string; operation: string; table?: string | undefined },
  run: () => Promise<R>,
): Promise<R> {
  // Only inside a request's or a job's span: the worker polls its queues every half second, and each empty poll
  // would otherwise be a trace of its own.
  const parent = context.active();
  if (!trace.getSpan(parent) || parent.getValue(transactionControl)) return run();
  const started = spans.startSpan(
    span.name,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system.name': 'postgresql',
        'db.operation.name': span.operation,
        ...(span.table ? { 'db.collection.name': span.table } : {}),
      },
    },
    parent,
  );
  try {
    return await run();
  } catch (err) {
    started.setStatus({ code: SpanStatusCode.ERROR, message: (err as { code?: string }).code ?? 'error' });
    throw err;
  } finally {
    started.end();
  }
}

/** A transaction's step as one span, whether the driver sends it as a statement (pg) or not (PGlite). */
function transactionStep(spans: Tracer, step: 'begin' | 'commit' | 'rollback', run: () => Promise<void>) {
  return inSpan(spans, { name: step, operation: step }, () =>
    context.with(context.active().setValue(transactionControl, true), run),
  );
}

const traced = new WeakSet<DatabaseConnection>();

function traceConnection(connection: DatabaseConnection, spans: Tracer): DatabaseConnection {
  if (traced.has(connection)) return connection;
  traced.add(connection);
  const execute = connection.executeQuery.bind(connection);
  connection.executeQuery = <R>(query: CompiledQuery): Promise<QueryResult<R>> =>
    inSpan(spans, querySpanName(query.sql), () => execute<R>(query));
  return connection;
}

class TracedDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly spans: Tracer,
  ) {}
  init() {
    return this.inner.init();
  }
  async acquireConnection() {
    return traceConnection(await this.inner.acquireConnection(), this.spans);
  }
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return transactionStep(this.spans, 'begin', () => this.inner.beginTransaction(connection, settings));
  }
  commitTransaction(connection: DatabaseConnection) {
    return transactionStep(this.spans, 'commit', () => this.inner.commitTransaction(connection));
  }
  rollbackTransaction(connection: DatabaseConnection) {
    return transactionStep(this.spans, 'rollback', () => this.inner.rollbackTransaction(connection));
  }
  savepoint(...args: Parameters<NonNullable<Driver['savepoint']>>) {
    return this.inner.savepoint!(...args);
  }
  rollbackToSavepoint(...args: Parameters<NonNullable<Driver['rollbackToSavepoint']>>) {
    return this.inner.rollbackToSavepoint!(...args);
  }
  releaseSavepoint(...args: Parameters<NonNullable<Driver['releaseSavepoint']>>) {
    return this.inner.releaseSavepoint!(...args);
  }
  releaseConnection(connection: DatabaseConnection) {
    return this.inner.releaseConnection(connection);
  }
  destroy() {
    return this.inner.destroy();
  }
}

/** The dialect itself while tracing is off; otherwise the same dialect whose connections make a span per statement. */
export function tracedDialect(dialect: Dialect): Dialect {
  const spans = tracer;
  if (!spans) return dialect;
  return {
    createDriver: () => new TracedDriver(dialect.createDriver(), spans),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
