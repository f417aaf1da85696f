// The CLI beside a running embedded server. PGlite is one process's database: while the server holds the data
// directory, a second opener would corrupt it. So the server listens on a Unix socket beside the data directory
// (owner-only, mode 0600), and the CLI, finding the directory held by a live process that listens there, sends it
// its argv, environment, working directory and (for the --*-stdin options) its stdin; the server runs that command
// through runCli on its own open database, the very code a standalone run executes, and streams back what it prints
// and the exit code. On PostgreSQL nothing of this runs: the CLI opens its own pool.
//
// Why not the PostgreSQL wire protocol (pglite-socket, or a bridge of our own): PGlite has one connection, and a
// bridge hands it to a socket client as a session of its own, which the server's own queries must then queue
// behind or share; pglite-socket is also not installed and pins an older PGlite. Running the command in the server
// puts its transactions in the server's own queue, and one small protocol covers every command on one code path.
//
// The protocol: one JSON line from the CLI ({ argv, env, cwd, stdin? }), then JSON lines from the server:
// { stdout } and { stderr } as the command prints, { exit } last.
import { chmodSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { cliSocketPath, isOwnSocket, lockHolder } from '../../db/data-dir-lock';
import type { DatabaseHandle } from '../../db/database';
import { loadConfig } from '../config';
import type { Logger } from '../logger';

interface CliRequest {
  argv: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  /** Present when the command line has a --*-stdin option: what the CLI read on its stdin. */
  stdin?: string;
}

type CliMessage = { stdout: string } | { stderr: string } | { exit: number };

/** A request line larger than this is not a CLI's (argv, environment and a piped secret fit in far less). */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Whether the command line reads stdin: the options that do are all named --*-stdin (src/ops/cli.ts). */
export function readsStdin(argv: string[]): boolean {
  return argv.some((a) => /^--[a-z][a-z-]*-stdin$/.test(a));
}

/**
 * The command's words (before its first option), for the log; never an option's value, which may be secret. After
 * a usage error (exit code 2) not even those: a stray word there may be a value typed in the wrong place.
 */
function commandForLog(argv: string[], code: number): string {
  if (code === 2) return '(usage error)';
  const end = argv.findIndex((a) => a.startsWith('-'));
  return argv.slice(0, end < 0 ? undefined : end).join(' ');
}

function isRequest(value: unknown): value is CliRequest {
  const r = value as CliRequest;
  return (
    typeof r === 'object' &&
    r !== null &&
    Array.isArray(r.argv) &&
    r.argv.every((a) => typeof a === 'string') &&
    typeof r.env === 'object' &&
    r.env !== null &&
    typeof r.cwd === 'string' &&
    (r.stdin === undefined || typeof r.stdin === 'string')
  );
}

export interface CliChannel {
  path: string;
  /** Stops accepting, waits for the commands running, and removes the socket. */
  close(): Promise<void>;
}

/**
 * Listens for CLI commands on the socket of dataDir, which this process must hold (openEmbedded locked it): any
 * socket file already there is then a crashed server's, and is replaced. Commands run on `database` while the
 * server serves HTTP; each goes through its own unit of work as in a standalone run (PGlite runs one transaction at
 * a time, so a command's transactions queue with the requests' ones).
 */
export async function openCliChannel(database: DatabaseHandle, dataDir: string, logger: Logger): Promise<CliChannel> {
  const path = cliSocketPath(dataDir);
  rmSync(path, { force: true });
  const running = new Set<Promise<void>>();
  const waiting = new Set<Socket>();

  const serve = (socket: Socket) => {
    waiting.add(socket);
    socket.on('error', () => undefined); // a CLI that went away (Ctrl-C) must not take the server with it
    let buffer = '';
    const onData = (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\n');
      if (end < 0) {
        if (buffer.length > MAX_REQUEST_BYTES) socket.destroy();
        return;
      }
      socket.off('data', onData);
      waiting.delete(socket);
      const done = execute(socket, buffer.slice(0, end)).finally(() => running.delete(done));
      running.add(done);
    };
    socket.setEncoding('utf8');
    socket.on('data', onData);
    socket.on('close', () => waiting.delete(socket));
  };

  const execute = async (socket: Socket, line: string) => {
    const send = (message: CliMessage) => {
      if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
    };
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      request = undefined;
    }
    if (!isRequest(request)) {
      send({ stderr: 'Unexpected failure: the server could not read the command\n' });
      send({ exit: 1 });
      socket.end();
      return;
    }
    // Loaded on the first command: the CLI's admin modules cost the server's start nothing.
    const { runCli } = require('./cli') as typeof import('./cli');
    const code = await runCli(request.argv, {
      database,
      env: request.env,
      cwd: request.cwd,
      stdin: request.stdin ?? '',
      stdout: (s) => send({ stdout: s }),
      stderr: (s) => send({ stderr: s }),
    });
    send({ exit: code });
    socket.end();
    logger.info('cli command', { command: commandForLog(request.argv, code), exit_code: code });
  };

  const server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The socket is created by the bind inside listen(), synchronously: under this umask it is owner-only from
    // its first instant (the chmod after is for file systems that ignore the umask for sockets).
    const umask = process.umask(0o177);
    try {
      server.listen(path, resolve);
    } finally {
      process.umask(umask);
    }
  });
  chmodSync(path, 0o600);
  server.on('error', (err) => logger.error('cli channel failed', { error: err.message }));

  return {
    path,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of waiting) socket.destroy();
      await Promise.all(running);
      await closed;
    },
  };
}

export interface ForwardIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Read only when the command line has a --*-stdin option. */
  readStdin: () => string;
}

function connect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once('connect', () => resolve(socket));
    // Before the connection: no server listens (undefined); after it: 'close' follows, and says what is missing.
    socket.on('error', () => resolve(undefined));
  });
}

/**
 * Runs the command in the server that holds the embedded data directory, when one does and listens: its exit
 * code, or undefined when there is no such server (PostgreSQL, a free directory, or a holder that is no server:
 * the standalone run then reports the directory busy, as before).
 */
export async function forwardToServer(
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: ForwardIo,
): Promise<number | undefined> {
  let dataDir: string;
  try {
    const config = loadConfig(env);
    if (config.databaseUrl) return undefined;
    dataDir = config.dataDir;
  } catch {
    return undefined; // the standalone run reports the configuration error
  }
  const holder = lockHolder(dataDir);
  const path = cliSocketPath(dataDir);
  if (holder === undefined || !isOwnSocket(path)) return undefined;
  const socket = await connect(path);
  if (!socket) return undefined;

  const request: CliRequest = {
    argv,
    env: { ...env },
    cwd: process.cwd(),
    ...(readsStdin(argv) ? { stdin: io.readStdin() } : {}),
  };
  socket.setEncoding('utf8');
  socket.write(`${JSON.stringify(request)}\n`);
  return new Promise<number>((resolve) => {
    let buffer = '';
    let exit: number | undefined;
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, end)) as CliMessage;
        buffer = buffer.slice(end + 1);
        if ('stdout' in message) io.stdout(message.stdout);
        else if ('stderr' in message) io.stderr(message.stderr);
        else exit = message.exit;
      }
    });
    socket.on('close', () => {
      if (exit !== undefined) return resolve(exit);
      const message = `Unexpected failure: the server (process ${holder}) stopped before the command finished`;
      if (argv.includes('--json')) io.stdout(`${JSON.stringify({ error: { message } })}\n`);
      else io.stderr(`${message}\n`);
      resolve(1);
    });
  });
}
