// The CLI channel's two ends in this process (src/ops/cli-channel.ts): the server end on this file's database, the
// CLI end forwarding to it as the program does once it finds the data directory held. The real processes are in
// test/ops/cli-beside-server.test.ts; here are the cases a process test cannot stage cheaply: commands at once, a
// malformed request, a server gone mid-command, a held directory without a socket.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliSocketPath } from '../../db/data-dir-lock';
import { forwardToServer, openCliChannel, type CliChannel } from '../../src/ops/cli-channel';
import { memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

let dir: string;
let database: TestDatabase;
let channel: CliChannel;
const { logger, logs } = memoryLogger();

/** A data directory "held" by a live process other than this one (jest's parent), as a running server holds it. */
function heldDataDir(name: string): string {
  const dataDir = join(dir, name);
  writeFileSync(`${dataDir}.lock`, String(process.ppid));
  return dataDir;
}

const envOf = (dataDir: string): NodeJS.ProcessEnv => ({
  ...process.env,
  DATABASE_URL: '',
  DATA_DIR: dataDir,
  OWNER_PASSWORD: '',
});

async function forward(dataDir: string, argv: string[], stdin = '') {
  let stdout = '';
  let stderr = '';
  const code = await forwardToServer(argv, envOf(dataDir), {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    readStdin: () => stdin,
  });
  return { code, stdout, stderr };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-channel-'));
  database = await createTestDatabase();
  channel = await openCliChannel(database, heldDataDir('served'), logger);
});
afterAll(async () => {
  await channel?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('commands sent at once each run on the server database and answer their own CLI', async () => {
  const runs = await Promise.all(
    ['One', 'Two', 'Three'].map((name) => forward(join(dir, 'served'), ['shop', 'create', '--name', name, '--json'])),
  );
  expect(runs.map((r) => [r.code, r.stderr])).toEqual([
    [0, ''],
    [0, ''],
    [0, ''],
  ]);
  const ids = runs.map((r) => (JSON.parse(r.stdout) as { id: string }).id);
  const rows = await database.db.selectFrom('shops').select(['id', 'name']).where('id', 'in', ids).execute();
  expect(rows.map((r) => r.name).sort()).toEqual(['One', 'Three', 'Two']);
  expect(logs).toContainEqual(expect.objectContaining({ message: 'cli command', command: 'shop create' }));
});

test('a password read on stdin reaches the command (and only for a --*-stdin option)', async () => {
  const shop = await forward(join(dir, 'served'), ['shop', 'create', '--name', 'Owned', '--json']);
  const id = (JSON.parse(shop.stdout) as { id: string }).id;
  const args = ['owner', 'create', '--shop', id, '--email', 'o@channel.example'];
  const withPassword = await forward(
    join(dir, 'served'),
    [...args, '--password-stdin', '--json'],
    'a long password here',
  );
  expect(withPassword.code).toBe(0);
  const without = await forward(join(dir, 'served'), [...args, '--json'], 'never read');
  expect([without.code, JSON.parse(without.stdout)]).toEqual([
    2,
    { error: { message: expect.stringMatching(/give the password on stdin/) } },
  ]);
  expect(JSON.stringify(logs)).not.toContain('a long password here');
});

test('a malformed request is answered with a failure, not a crash', async () => {
  const lines = await new Promise<string>((resolve) => {
    const socket = createConnection(channel.path);
    let out = '';
    socket.on('data', (d: Buffer) => (out += String(d)));
    socket.on('close', () => resolve(out));
    socket.end('{"argv": "not a list"}\n');
  });
  expect(
    lines
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown),
  ).toEqual([{ stderr: 'Unexpected failure: the server could not read the command\n' }, { exit: 1 }]);
});

test('a server gone mid-command: exit code 1 and why, in the shape the command line asked for', async () => {
  const dataDir = heldDataDir('vanishing');
  const fake = createServer((socket) => socket.end(`${JSON.stringify({ stdout: 'half' })}\n`));
  await new Promise<void>((resolve) => fake.listen(cliSocketPath(dataDir), resolve));
  try {
    const text = await forward(dataDir, ['emails', 'list']);
    expect(text).toEqual({
      code: 1,
      stdout: 'half',
      stderr: `Unexpected failure: the server (process ${process.ppid}) stopped before the command finished\n`,
    });
    const json = await forward(dataDir, ['emails', 'list', '--json']);
    expect(json.code).toBe(1);
    const message = `Unexpected failure: the server (process ${process.ppid}) stopped before the command finished`;
    expect(json.stdout).toBe(`half${JSON.stringify({ error: { message } })}\n`);
  } finally {
    fake.close();
  }
});

test('nothing to forward to: a free directory, a holder without a socket, PostgreSQL', async () => {
  expect((await forward(join(dir, 'free'), ['app', 'list'])).code).toBeUndefined();
  expect((await forward(heldDataDir('no-socket'), ['app', 'list'])).code).toBeUndefined();
  const onPostgres = await forwardToServer(
    ['app', 'list'],
    { ...envOf(join(dir, 'served')), DATABASE_URL: 'postgres://nowhere/db' },
    { stdout: () => undefined, stderr: () => undefined, readStdin: () => '' },
  );
  expect(onPostgres).toBeUndefined();
});
