// The real process (`src/server.ts`, TypeScript loaded by `node --import tsx`): first start creates the demo shop and
// prints its key, and SIGTERM lets an in-flight request finish before the process exits 0. Node itself is the child,
// not the `tsx` launcher: the launcher relays signals through a handshake with a 30 ms wait, and on a loaded machine
// it then killed the server before its own SIGTERM handler drained anything (exit 143).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');
let dir: string;
let pg: TestDatabase | undefined;
let pgEarly: TestDatabase | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-server-'));
  if (process.env.DATABASE_URL) {
    pg = await createTestDatabase();
    await pg.db.destroy();
    pgEarly = await createTestDatabase();
    await pgEarly.db.destroy();
  }
});
afterAll(async () => {
  child?.kill('SIGKILL');
  for (const url of [pg?.url, pgEarly?.url]) {
    if (!url) continue;
    const name = new URL(url).pathname.slice(1);
    await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The server process on a fresh database, its output collected. */
function spawnServer(opts: { port: number; url: string | undefined; dataDir: string }): () => string {
  const env = {
    ...process.env,
    PORT: String(opts.port),
    LOG_LEVEL: 'info',
    SEED_DEMO: 'true', // the default is off on PostgreSQL
    DATABASE_URL: opts.url ?? '',
    DATA_DIR: opts.dataDir,
    REDIS_URL: '',
  };
  child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'server.ts')], { env, cwd: root });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return () => out;
}

function start(): Promise<{ port: number; key: string; testKey: string; output: () => string }> {
  const output = spawnServer({ port: 0, url: pg?.url, dataDir: join(dir, 'pglite') });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(check);
      reject(new Error(`server did not start:\n${output()}`));
    }, 120_000); // a first start on a machine busy with other suites (initdb, migrations, demo shop) can take a while
    const check = setInterval(() => {
      const out = output();
      const port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
      const key = /(mdk_(?!test_)[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      const testKey = /(mdk_test_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      if (port && key && testKey) {
        clearInterval(check);
        clearTimeout(timer);
        resolve({ port: Number(port), key, testKey, output });
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

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  return port;
}

// The port is bound before the demo shop is made (a start that cannot listen leaves nothing behind). A signal in
// between, while the demo is made, used to find no handler and kill the process (exit 143, signal SIGTERM): now the
// start's steps finish, the keys made are printed, and the process drains and exits 0. (On PostgreSQL the signal lands
// while the demo is made; on the embedded database, whose queries resolve without the event loop turning, it is seen
// once the demo is made, still before the handlers the old code registered last.)
test('SIGTERM as soon as the port is bound, during the first start: the keys are printed and it exits 0', async () => {
  const port = await freePort();
  const output = spawnServer({ port, url: pgEarly?.url, dataDir: join(dir, 'pglite-early') });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const bound = await new Promise<boolean>((r) => {
      // From another loopback address: a connect from 127.0.0.1 to a free port of the ephemeral range can land on its
      // own source port (TCP self-connect) and look like a bound server.
      const s = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      s.once('connect', () => (s.destroy(), r(true)));
      s.once('error', () => r(false));
    });
    if (bound) break;
    if (Date.now() > deadline) throw new Error(`server did not bind:\n${output()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const exited = new Promise<[number | null, string | null]>((r) =>
    child!.once('exit', (code, signal) => r([code, signal])),
  );
  child!.kill('SIGTERM');
  expect(await exited).toEqual([0, null]);
  const out = output();
  expect(out).toMatch(/"message":"shutting down"/);
  expect(out).toContain('"message":"stopped"');
  // The demo shop was made in this start and its keys, shown only once, were printed before the process left.
  expect(out).toMatch(/Live key[^\n]*:\s+mdk_(?!test_)[A-Za-z0-9_-]{43}/);
  expect(out).toMatch(/Test key[^\n]*:\s+mdk_test_[A-Za-z0-9_-]{43}/);
}, 180_000);
