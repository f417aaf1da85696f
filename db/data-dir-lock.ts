// Who owns an embedded data directory, and where its owner listens for admin commands. Kept apart from
// db/database.ts (which loads kysely, pg and the migrations) because the CLI asks these questions first, before it
// knows whether it will open the database itself or hand its command to the running server.
import { createHash } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Another process holds the embedded database; opening it too would corrupt it. */
export class DatabaseBusyError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const lockPathOf = (dataDir: string) => `${dataDir}.lock`;

/** The live process (not this one) that holds the data directory's lock, or undefined when none does. */
export function lockHolder(dataDir: string): number | undefined {
  let owner: number;
  try {
    owner = Number(readFileSync(lockPathOf(dataDir), 'utf8'));
  } catch {
    return undefined;
  }
  return Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner) ? owner : undefined;
}

/**
 * PGlite is single-process: two processes on one data directory corrupt it. A lock file beside the directory,
 * holding the owner's pid, makes a second opener fail with a clear message (the CLI asks a running server to run
 * its command instead: src/ops/cli-channel.ts). A lock whose process is gone is stale and taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  const lockPath = lockPathOf(dataDir);
  mkdirSync(dirname(lockPath), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(lockPath, 'utf8') === String(process.pid)) unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = lockHolder(dataDir);
      if (owner !== undefined) {
        throw new DatabaseBusyError(
          `The embedded database in ${dataDir} is in use by process ${owner} (a running server?). ` +
            'Stop that process first, or set DATABASE_URL to use PostgreSQL, which allows many clients.',
        );
      }
      unlinkSync(lockPath);
    }
  }
  throw new DatabaseBusyError(`Could not lock ${dataDir}`);
}

// A Unix socket's path holds at most 107 bytes on Linux (sun_path), fewer on macOS.
const MAX_SOCKET_PATH = 100;

/**
 * Where the process holding the data directory accepts CLI commands: beside it, like the lock (PostgreSQL's own
 * directory stays untouched). A path too long for a socket moves to the temporary directory under a name derived
 * from the data directory, so the server and the CLI still agree on it.
 */
export function cliSocketPath(dataDir: string): string {
  const beside = `${dataDir}.sock`;
  if (Buffer.byteLength(beside) <= MAX_SOCKET_PATH) return beside;
  const digest = createHash('sha256').update(dataDir).digest('hex').slice(0, 24);
  return join(tmpdir(), `mdapi-${digest}.sock`);
}

/**
 * Whether path is a socket this user owns. The CLI sends its environment (configuration, a password it reads) over
 * the socket, so it must not talk to one another user placed there (the fallback path lies in a shared directory).
 */
export function isOwnSocket(path: string): boolean {
  try {
    const st = lstatSync(path);
    return st.isSocket() && (process.getuid === undefined || st.uid === process.getuid());
  } catch {
    return false;
  }
}
