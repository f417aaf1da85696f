// The Kysely instance: real PostgreSQL through a pg Pool when DATABASE_URL is set, otherwise embedded PostgreSQL
// (PGlite) in a data directory, so `npm start` works on a bare machine. Both return numeric and int8 as strings.
import { mkdirSync } from 'node:fs';
import { Kysely, PGliteDialect } from 'kysely';
import { Pool, types as pgTypes } from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { lockDataDir } from './data-dir-lock';
import { migrations } from './migrations';
import { NAMED_CONNECTION_LIFETIME_SECONDS, NamingClient } from './named-statements';
import { tracedDialect } from './query-spans';
import { WritePathPostgresDialect } from './postgres-dialect';
import { unpackImage, type UnpackResult } from './schema-image';
import type { Database } from './tables';
import { timestamptzParser } from './timestamptz';

export type DatabaseKind = 'postgres' | 'pglite';

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** PostgreSQL: the pool, whose connections the metrics report (in use, idle, waiting). */
  pool?: Pool;
  /** Embedded, when this open created the data directory: whether from the schema image, or why not. */
  created?: UnpackResult;
  close(): Promise<void>;
}

export { DatabaseBusyError } from './data-dir-lock';

// pg returns numeric and int8 as strings already; keep it explicit since amounts rely on it.
pgTypes.setTypeParser(pgTypes.builtins.NUMERIC, (v) => v);
pgTypes.setTypeParser(pgTypes.builtins.INT8, (v) => v);
// timestamptz -> Date through a parser for PostgreSQL's fixed ISO output (db/timestamptz.ts), several times faster.
const parseTimestamptz = timestamptzParser(pgTypes.getTypeParser(pgTypes.builtins.TIMESTAMPTZ, 'text'));
pgTypes.setTypeParser(pgTypes.builtins.TIMESTAMPTZ, parseTimestamptz);

export interface PostgresOptions {
  /** Connections at most (10). */
  max?: number;
  connectionTimeoutMillis?: number;
  queryTimeoutMs?: number;
  /** Statements that come again sent named (db/named-statements.ts); DATABASE_NAMED_STATEMENTS, on by default. */
  namedStatements?: boolean;
}

export function openPostgres(connectionString: string, options: PostgresOptions = {}): DatabaseHandle {
  const { max = 10, connectionTimeoutMillis = 5000, queryTimeoutMs, namedStatements = true } = options;
  const pool = new Pool({
    connectionString,
    max,
    connectionTimeoutMillis,
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
    ...(namedStatements ? { Client: NamingClient, maxLifetimeSeconds: NAMED_CONNECTION_LIFETIME_SECONDS } : {}),
  });
  // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // pg-pool listens on a client only while it is idle. A client checked out between two statements (inside a
  // transaction) whose server goes away (57P01 on restart, a dropped socket) emits `error` with nobody listening,
  // which kills the process. The failure still reaches the request: its next statement fails ("not queryable", a
  // 503), and the pool discards the dead client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  const db = new Kysely<Database>({ dialect: tracedDialect(new WritePathPostgresDialect({ pool })) });
  return { db, kind: 'postgres', pool, close: () => db.destroy() };
}

/**
 * Streaming replicas (DATABASE_READ_URL). A read that cannot reach one is served by the primary instead
 * (src/platform/read-routing.ts), so a replica that does not answer should cost a request a second at most, not the
 * primary's five; and one that stops answering in the middle of a query (a network partition, which no error
 * reports) is given up on the client after `queryTimeoutMs`, so the read can still be served by the primary.
 */
export function openReplicas(
  urls: readonly string[],
  options: { poolSize?: number; queryTimeoutMs?: number; namedStatements?: boolean } = {},
): DatabaseHandle[] {
  return urls.map((url) =>
    openPostgres(url, {
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 1000,
      ...(options.queryTimeoutMs === undefined ? {} : { queryTimeoutMs: options.queryTimeoutMs }),
      ...(options.namedStatements === undefined ? {} : { namedStatements: options.namedStatements }),
    }),
  );
}

export async function createPGlite(options: {
  dataDir?: string;
  loadDataDir?: Blob;
  /** PostgreSQL settings (name=value) on top of PGlite's own start parameters. */
  settings?: string[];
}): Promise<PGlite> {
  // Loaded on first use: a server on PostgreSQL never needs PGlite (~0.1 s of its start).
  const { PGlite, types } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  const pg = new PGlite({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    ...(options.settings?.length
      ? { startParams: [...PGlite.defaultStartParams, ...options.settings.flatMap((s) => ['-c', s])] }
      : {}),
    parsers: {
      [types.NUMERIC]: (v: string) => v,
      [types.INT8]: (v: string) => v,
      [types.TIMESTAMPTZ]: timestamptzParser(types.parsers[types.TIMESTAMPTZ]!),
    },
  });
  await pg.waitReady;
  return pg;
}

export function wrapPGlite(pg: PGlite, onClose: () => void = () => undefined): DatabaseHandle {
  const db = new Kysely<Database>({ dialect: tracedDialect(new PGliteDialect({ pglite: pg })) });
  return {
    db,
    kind: 'pglite',
    close: async () => {
      await db.destroy();
      if (!pg.closed) await pg.close();
      onClose();
    },
  };
}

/**
 * PostgreSQL settings of the embedded database. PGlite allocates (and so touches) all of its shared memory when it
 * starts, and PostgreSQL's default 128 MB of shared buffers made that a 120 MB resident region in a process that
 * also runs the API, for databases a newcomer fills with a few MB. 16 MB (2,048 pages) still holds the demo shop and
 * much more; what does not fit is read through the operating system's cache. Measured on a demo data directory
 * (RSS after opening it and 60 list queries, --liftoff-only, see package.json): 260 MB with the defaults, 136-140 MB
 * with 16 MB, 126-132 MB with 8 MB. max_connections (100 -> 4) and wal_buffers (512 kB -> 256 kB) changed nothing
 * measurable; PGlite's initialMemory cannot go below the 128 MB its module declares, and is not resident until used.
 */
export const EMBEDDED_SETTINGS = ['shared_buffers=16MB'];

export async function openEmbedded(dataDir: string): Promise<DatabaseHandle> {
  const unlock = lockDataDir(dataDir);
  try {
    const created = unpackImage(dataDir, Object.keys(migrations));
    mkdirSync(dataDir, { recursive: true });
    const pg = await createPGlite({ dataDir, settings: EMBEDDED_SETTINGS });
    const fresh = created.unpacked || created.reason !== 'not empty';
    return { ...wrapPGlite(pg, unlock), ...(fresh ? { created } : {}) };
  } catch (err) {
    unlock();
    throw err;
  }
}

export async function openDatabase(config: {
  databaseUrl: string | undefined;
  dataDir: string;
  databasePoolSize?: number;
  databaseNamedStatements?: boolean;
}): Promise<DatabaseHandle> {
  return config.databaseUrl
    ? openPostgres(config.databaseUrl, {
        max: config.databasePoolSize ?? 10,
        namedStatements: config.databaseNamedStatements ?? true,
      })
    : openEmbedded(config.dataDir);
}
