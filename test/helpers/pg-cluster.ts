// A PostgreSQL server of a test's own (own port, own data directory), for tests that stop, restart or replicate a
// server: the machine's shared instance is never touched. As root (CI), PostgreSQL's tools run as the `postgres` OS
// user, since initdb refuses root.
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './redis-server';

const run = promisify(execFile);

export const pgBinDir =
  process.env.PG_BIN_DIR ??
  ['15', '16', '17', '14'].map((v) => `/usr/lib/postgresql/${v}/bin`).find((d) => existsSync(join(d, 'pg_ctl')));

/** Runs one of PostgreSQL's programs (initdb, pg_ctl, pg_basebackup...) as the user that may run it. */
export function asPostgres(command: string, args: string[], timeoutMs = 60_000) {
  if (!pgBinDir)
    throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR (e.g. /usr/lib/postgresql/15/bin)');
  const bin = join(pgBinDir, command);
  const [file, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return run(file, argv, { timeout: timeoutMs });
}

/** A directory the `postgres` OS user owns (as root), removed by the caller. */
export function ownedTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  return dir;
}

export interface OwnPostgres {
  readonly port: number;
  /** The server's own directory: its data directory, socket and log live under it. */
  readonly dir: string;
  readonly dataDir: string;
  /** A connection string to one of its databases (default `postgres`). */
  url(database?: string): string;
  start(): Promise<void>;
  /** `fast` by default; `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  restart(): Promise<void>;
  createDatabase(name: string): Promise<string>;
  /** Stops it (immediately) and removes its directory. */
  destroy(): Promise<void>;
}

/**
 * Wraps a data directory (made by initdb, or a base backup for a replica) as a server on a free port. `settings`
 * are passed as `-c name=value` at every start.
 */
export async function serverOf(
  dir: string,
  dataDir: string,
  settings: Record<string, string> = {},
): Promise<OwnPostgres> {
  const port = await freePort();
  const options = () =>
    [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
    ].join(' ');
  // -l on every command that starts a postmaster: without it the postmaster inherits pg_ctl's stdout, and the
  // command does not finish until that pipe closes.
  const pgCtl = (...args: string[]) =>
    asPostgres('pg_ctl', ['-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', '-t', '60', ...args]);
  let started = false;
  const server: OwnPostgres = {
    port,
    dir,
    dataDir,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      started = true; // before the start returns: a start that timed out may still have left a postmaster running
      await pgCtl('-o', options(), 'start');
    },
    async stop(mode = 'fast') {
      await pgCtl('-m', mode, 'stop');
    },
    async restart() {
      await pgCtl('-m', 'fast', '-o', options(), 'restart');
    },
    async createDatabase(name) {
      const client = new Client({ connectionString: server.url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return server.url(name);
    },
    async destroy() {
      if (started) await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/** A fresh PostgreSQL (initdb, trust auth) started on a free port. */
export async function startOwnPostgres(
  options: { prefix?: string; settings?: Record<string, string> } = {},
): Promise<OwnPostgres> {
  const dir = ownedTempDir(options.prefix ?? 'mdapi-pg-');
  const dataDir = join(dir, 'data');
  await asPostgres('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const server = await serverOf(dir, dataDir, options.settings);
  try {
    await server.start();
  } catch (err) {
    await server.destroy();
    throw err;
  }
  return server;
}

export interface OwnPgBouncer {
  readonly port: number;
  /** Its own directory: ini, userlist, unix socket, pid file and log. */
  readonly dir: string;
  /** A connection string to one of the primary's databases through the pooler. */
  url(database: string): string;
  /** PgBouncer's admin console (`SHOW POOLS`, `SHOW SERVERS`...): the rows of one command. */
  admin(command: string): Promise<Record<string, unknown>[]>;
  /** Everything PgBouncer logged so far. */
  log(): string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stops it and removes its directory. */
  destroy(): Promise<void>;
}

export const pgBouncerBin = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));

/**
 * PgBouncer of a test's own in front of `primary` (Debian's package; never its system service): every database of
 * the primary, as user postgres, with trust auth. The primary may be any server it can reach (the bench puts one in
 * front of the machine's shared PostgreSQL: pooling connections to it changes nothing there). It runs as a daemon
 * (-d) with its own pid file, as the `postgres` OS user when root (PgBouncer refuses to run as root).
 */
export async function startPgBouncer(
  primary: { port: number; host?: string },
  options: { poolMode?: 'transaction' | 'session'; defaultPoolSize?: number; maxClientConn?: number } = {},
): Promise<OwnPgBouncer> {
  if (!pgBouncerBin) throw new Error('pgbouncer not found: apt-get install -y pgbouncer');
  const dir = ownedTempDir('mdapi-pgbouncer-');
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const pidFile = join(dir, 'pgbouncer.pid');
  const logFile = join(dir, 'pgbouncer.log');
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${primary.host ?? '127.0.0.1'} port=${primary.port} user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      `pidfile = ${pidFile}`,
      `logfile = ${logFile}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'admin_users = postgres',
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.defaultPoolSize ?? 4}`,
      'min_pool_size = 0',
      'reserve_pool_size = 0',
      `max_client_conn = ${options.maxClientConn ?? 200}`,
      // A client that waits longer than this for a server connection gets an error rather than a hang.
      'query_wait_timeout = 30',
      // After a failed login (the primary restarting) PgBouncer waits this long before trying again; its default of
      // 15 s would turn a 1 s restart into 15 s of refusals (docs/deployment.md recommends the same).
      'server_login_retry = 2',
      '',
    ].join('\n'),
  );
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const pid = (): number | undefined => {
    try {
      return Number(readFileSync(pidFile, 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  };
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  const bouncer: OwnPgBouncer = {
    port,
    dir,
    url,
    async admin(command) {
      // The admin console speaks only the simple protocol: a query without parameters is sent so by pg.
      const client = new Client({ connectionString: url('pgbouncer') });
      await client.connect();
      try {
        return (await client.query(command)).rows as Record<string, unknown>[];
      } finally {
        await client.end();
      }
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async start() {
      const [file, argv] =
        process.getuid?.() === 0
          ? ['runuser', ['-u', 'postgres', '--', pgBouncerBin!, '-d', ini]]
          : [pgBouncerBin!, ['-d', ini]];
      await run(file, argv, { timeout: 30_000 });
      // -d returns once it forked: ready when the admin console answers.
      const deadline = Date.now() + 15_000;
      for (;;) {
        try {
          await bouncer.admin('SHOW VERSION');
          return;
        } catch (err) {
          if (Date.now() > deadline)
            throw new Error(`pgbouncer did not start: ${(err as Error).message}\n${bouncer.log()}`, { cause: err });
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    async stop() {
      const p = pid();
      if (!p || !alive(p)) return;
      process.kill(p, 'SIGTERM'); // immediate shutdown: every client and server connection closed
      const deadline = Date.now() + 10_000;
      while (alive(p) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (alive(p)) process.kill(p, 'SIGKILL');
    },
    async destroy() {
      await bouncer.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await bouncer.start();
  } catch (err) {
    await bouncer.destroy();
    throw err;
  }
  return bouncer;
}

/**
 * What a primary needs to feed streaming replicas. PostgreSQL 15's defaults already are these; they are stated so a
 * packaged default changed elsewhere cannot make the replica tests fail for an unrelated reason.
 */
export const primaryReplicationSettings: Record<string, string> = { wal_level: 'replica', max_wal_senders: '5' };

/**
 * A hot-standby replica of `primary` (started with primaryReplicationSettings) on a free port: a base backup
 * streamed from it (`pg_basebackup -R` writes the standby's connection to the primary), then started with
 * `applyDelayMs` of `recovery_min_apply_delay`, so its reads lag the primary's commits by that much.
 */
export async function startReplica(
  primary: OwnPostgres,
  options: { applyDelayMs?: number } = {},
): Promise<OwnPostgres> {
  const dir = ownedTempDir('mdapi-replica-');
  const dataDir = join(dir, 'data');
  // -c fast: the backup starts at once rather than at the primary's next checkpoint.
  const backup = ['-D', dataDir, '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-R', '-X', 'stream'];
  try {
    await asPostgres('pg_basebackup', [...backup, '-c', 'fast', '--no-sync']);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const replica = await serverOf(dir, dataDir, {
    hot_standby: 'on',
    recovery_min_apply_delay: `${options.applyDelayMs ?? 0}ms`,
  });
  try {
    await replica.start();
  } catch (err) {
    await replica.destroy();
    throw err;
  }
  return replica;
}
