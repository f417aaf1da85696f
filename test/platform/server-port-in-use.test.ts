// The real process's first start on a port another process holds: one line saying so, a non-zero exit, and nothing
// made, so that the next start on a free port still makes the demo shop and prints its keys (shown only once).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { bearer, contractClient } from '../helpers/test-app';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');
let dir: string;
let pg: TestDatabase | undefined;
let holder: Server;
const children: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-port-'));
  if (process.env.DATABASE_URL) {
    pg = await createTestDatabase();
    await pg.db.destroy();
  }
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await new Promise((r) => holder.close(r));
  if (pg?.url) {
    const name = new URL(pg.url).pathname.slice(1);
    await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** `src/server.ts` on this file's database (the demo on, as a first start has it without DATABASE_URL). */
function spawnServer(port: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'server.ts')], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SEED_DEMO: 'true', // the default is off on PostgreSQL
      DATABASE_URL: pg?.url ?? '',
      DATA_DIR: join(dir, 'pglite'),
      REDIS_URL: '',
    },
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

async function shopRows(): Promise<number> {
  const client = new Client({ connectionString: pg!.url });
  await client.connect();
  try {
    return Number((await client.query('SELECT count(*) AS n FROM shops')).rows[0].n);
  } finally {
    await client.end();
  }
}

test('a busy port: one line, exit 1, nothing made; the next start on a free port makes the demo and prints its keys', async () => {
  const busy = (holder.address() as { port: number }).port;
  const first = spawnServer(busy);
  expect(await first.exited).toBe(1);
  expect(first.stderr()).toBe(`Cannot start: port ${busy} is in use (PORT=${busy})\n`);
  expect(first.stdout()).not.toMatch(/mdk_|listening|\n\s+at /);
  if (pg) expect(await shopRows()).toBe(0);

  const second = spawnServer(0);
  let port: string | undefined;
  let key: string | undefined;
  let testKey: string | undefined;
  for (let waited = 0; !(port && key && testKey); waited += 50) {
    if (second.child.exitCode !== null) throw new Error(`the server exited:\n${second.stdout()}${second.stderr()}`);
    if (waited > 120_000) throw new Error(`no demo keys within 120 s:\n${second.stdout()}${second.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
    port = /listening on http:\/\/localhost:(\d+)/.exec(second.stdout())?.[1];
    key = /(mdk_(?!test_)[A-Za-z0-9_-]{43})/.exec(second.stdout())?.[1];
    testKey = /(mdk_test_[A-Za-z0-9_-]{43})/.exec(second.stdout())?.[1];
  }
  const http = contractClient(`http://127.0.0.1:${port}`);
  const me = await http.get('/dev/v1/me').set(bearer(key!));
  expect(me.status).toBe(200);
  expect(me.body.data).toMatchObject({ name: 'Demo Shop', livemode: true });
  expect((await http.get('/dev/v1/me').set(bearer(testKey!))).body.data).toMatchObject({ livemode: false });
  if (pg) expect(await shopRows()).toBe(2); // the demo shop and its test twin, once
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
}, 240_000);
