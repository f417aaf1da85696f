// The real process (`src/server.ts`, TypeScript loaded by `node --import tsx`): first start creates the demo shop and
// prints its key, and SIGTERM lets an in-flight request finish before the process exits 0. Node itself is the child,
// not the `tsx` launcher: the launcher relays signals through a handshake with a 30 ms wait, and on a loaded machine
// it then killed the server before its own SIGTERM handler drained anything (exit 143).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');
let dir: string;
let pg: TestDatabase | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-server-'));
  if (process.env.DATABASE_URL) {
    pg = await createTestDatabase();
    await pg.db.destroy();
  }
});
afterAll(async () => {
  child?.kill('SIGKILL');
  if (pg?.url) {
    const name = new URL(pg.url).pathname.slice(1);
    await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
  rmSync(dir, { recursive: true, force: true });
});

function start(): Promise<{ port: number; key: string; testKey: string; output: () => string }> {
  const env = {
    ...process.env,
    PORT: '0',
    LOG_LEVEL: 'info',
    SEED_DEMO: 'true', // the default is off on PostgreSQL
    DATABASE_URL: pg?.url ?? '',
    DATA_DIR: join(dir, 'pglite'),
    REDIS_URL: '',
  };
  child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'server.ts')], { env, cwd: root });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(check);
      reject(new Error(`server did not start:\n${out}`));
    }, 120_000); // a first start on a machine busy with other suites (initdb, migrations, demo shop) can take a while
    const check = setInterval(() => {
      const port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
      const key = /(mdk_(?!test_)[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      const testKey = /(mdk_test_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      if (port && key && testKey) {
        clearInterval(check);
        clearTimeout(timer);
        resolve({ port: Number(port), key, testKey, output: () => out });
      }
    }, 50);
  });
}

test('first start prints working live and test demo keys; SIGTERM drains the in-flight request, then exits 0', async () => {
  const { port, key, testKey, output } = await start();
  type Me = { data: { id: string; name: string; livemode: boolean; live_account_id: string | null } };
  const me = await fetch(`http://127.0.0.1:${port}/dev/v1/me`, { headers: { authorization: `Bearer ${key}` } });
  expect(me.status).toBe(200);
  const live = ((await me.json()) as Me).data;
  expect(live).toMatchObject({ name: 'Demo Shop', livemode: true });
  const testMe = await fetch(`http://127.0.0.1:${port}/dev/v1/me`, { headers: { authorization: `Bearer ${testKey}` } });
  expect(testMe.status).toBe(200);
  expect(((await testMe.json()) as Me).data).toMatchObject({ livemode: false, live_account_id: live.id });
  expect(output()).toContain(`/docs`);
  // Each key is labelled, and the sample order's checkout link is in test mode.
  expect(output()).toMatch(/Live key \(live mode; a live shop never offers the SANDBOX gateway\):\s+mdk_(?!test_)/);
  expect(output()).toMatch(
    /Test key \(use this to walk the README: create an order, pay on the sandbox page, receive the webhook\):\s+mdk_test_/,
  );
  expect(output()).toMatch(/sample pending order in TEST mode, to pay with the SANDBOX gateway: \S+\/invoice\//);

  // A request whose body has not fully arrived is in flight when SIGTERM comes.
  const socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let response = '';
  socket.on('data', (d) => (response += d.toString()));
  socket.write(
    `POST /dev/v1/products/prod_missing/duplicate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{',
  );
  await new Promise((r) => setTimeout(r, 300));
  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child!.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  expect(child!.exitCode).toBeNull(); // still draining
  const closed = new Promise((r) => socket.once('close', r));
  socket.write('}'); // the last body byte; no FIN, a real client waits for its answer
  expect(await exited).toBe(0);
  await closed; // the child's exit may be seen before the last bytes it sent
  expect(response).toMatch(/^HTTP\/1\.1 404/);
  expect(response).toContain('PRODUCT_NOT_FOUND');
  expect(output()).toContain('"message":"stopped"');
  // New connections are refused once it stopped.
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
}, 180_000);
