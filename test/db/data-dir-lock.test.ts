// The embedded data directory's owner and its CLI socket (db/data-dir-lock.ts): who holds the lock, where the
// socket lies when the path beside the directory is too long for one, and which files the CLI refuses to talk to.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cliSocketPath, isOwnSocket, lockDataDir, lockHolder } from '../../db/data-dir-lock';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'mdapi-lock-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('lockHolder names a live other process, never this one, never a dead one', () => {
  const dataDir = join(dir, 'held');
  expect(lockHolder(dataDir)).toBeUndefined();
  const unlock = lockDataDir(dataDir);
  expect(lockHolder(dataDir)).toBeUndefined(); // this process's own lock
  unlock();
  writeFileSync(`${dataDir}.lock`, String(process.ppid));
  expect(lockHolder(dataDir)).toBe(process.ppid);
  writeFileSync(`${dataDir}.lock`, '2147483646'); // no such process
  expect(lockHolder(dataDir)).toBeUndefined();
});

test('the socket lies beside the data directory, or under the temporary directory when that is too long', () => {
  expect(cliSocketPath('/srv/api/data/pglite')).toBe('/srv/api/data/pglite.sock');
  const deep = `/srv/${'d'.repeat(120)}/pglite`;
  const moved = cliSocketPath(deep);
  expect(dirname(moved)).toBe(tmpdir());
  expect(moved).toMatch(/mdapi-[0-9a-f]{24}\.sock$/);
  expect(cliSocketPath(deep)).toBe(moved); // the server and the CLI agree on it
  expect(cliSocketPath(`${deep}2`)).not.toBe(moved);
});

test('isOwnSocket: a socket of this user, not a plain file nor a missing path', async () => {
  const path = join(dir, 'x.sock');
  expect(isOwnSocket(path)).toBe(false);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  try {
    expect(isOwnSocket(path)).toBe(true);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  writeFileSync(path, '');
  expect(isOwnSocket(path)).toBe(false);
});
