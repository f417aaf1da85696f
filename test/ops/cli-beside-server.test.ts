// The CLI beside a running embedded server (src/ops/cli-channel.ts): the real server (`npm start`'s command, a
// child process on a free port, a temporary data directory) and the real CLI (`npm run cli`'s command) as an
// operator runs them. A command runs inside the server, with the output and exit code of a standalone run; the
// secrets it prints travel only over the owner-only socket (the server's log never has them); once the server has
// stopped, cleanly or killed, the CLI opens the database itself again. Both database runs of the suite run this on
// the embedded database: it is the embedded database's problem (on PostgreSQL the CLI opens its own pool).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliCommand } from '../bench/processes';

const root = join(__dirname, '..', '..');
const minutes = 240_000;

let dir: string;
let env: NodeJS.ProcessEnv;
/** The demo shop the first start made. */
let shop: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-beside-'));
  env = {
    ...process.env,
    DATA_DIR: join(dir, 'pglite'),
    DATABASE_URL: '',
    REDIS_URL: '',
    PORT: '0',
    LOG_LEVEL: 'info',
    BOT_TOKEN: '',
    OWNER_PASSWORD: '',
  };
});

interface Server {
  child: ChildProcess;
  url: string;
  /** Everything the server printed so far (banner and log). */
  output: () => string;
  exited: Promise<void>;
}

const servers: Server[] = [];
/** A test that failed half-way leaves its server running: the next one needs the data directory. */
async function killServers(): Promise<void> {
  for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
}
afterEach(killServers);
afterAll(async () => {
  await killServers();
  rmSync(dir, { recursive: true, force: true });
});

/** `npm start` (its node flags left out) on this file's data directory; resolves once it listens. */
async function startServer(): Promise<Server> {
  const child = spawn(process.execPath, [join(root, 'codegen', 'start.mjs')], { cwd: root, env });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += String(d)));
  child.stderr.on('data', (d: Buffer) => (out += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server = { child, url: '', output: () => out, exited };
  servers.push(server);
  for (let waited = 0; ; waited += 50) {
    const port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
    // The banner ends with the key hint (or the demo keys): all of it is printed once that line is.
    if (port && /(Create an API key|Try: curl)[^\n]*\n/.test(out))
      return { ...server, url: `http://127.0.0.1:${port}` };
    if (child.exitCode !== null) throw new Error(`the server exited:\n${out}`);
    if (waited > 180_000) throw new Error(`the server did not listen within 180 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** `npm run -s cli -- …` (without npm), in cwd, with stdin piped. */
function cli(args: string[], options: { stdin?: string; cwd?: string } = {}): Promise<CliRun> {
  const { command, args: flags } = cliCommand();
  // The script's launcher path is relative to the project (npm runs it there); this CLI may run elsewhere.
  const base = flags.map((a) => (a.startsWith('-') ? a : join(root, a)));
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...base, ...args], { cwd: options.cwd ?? root, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += String(c)));
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: code ?? -1, stdout, stderr, json });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

async function me(url: string, key: string): Promise<{ status: number; id?: string }> {
  const res = await fetch(`${url}/dev/v1/me`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data?: { id: string } };
  return { status: res.status, id: body.data?.id };
}

const socket = () => join(dir, 'pglite.sock');

test(
  'beside a running server: key create (the key works at once), emails list, app create, owner create, seed, a failure',
  async () => {
    const server = await startServer();
    const demoKey = /(mdk_test_[A-Za-z0-9_-]{43})/.exec(server.output())![1]!;
    const testShop = (await me(server.url, demoKey)).id!;
    shop = /Created a demo shop \((shop_[0-9a-f]+)\)/.exec(server.output())![1]!;
    expect(statSync(socket()).mode & 0o777).toBe(0o600);

    // The command runs while HTTP requests are served.
    const [key, ...answers] = await Promise.all([
      cli(['key', 'create', '--shop', shop, '--scopes', '*', '--json']),
      ...Array.from({ length: 5 }, () => me(server.url, demoKey)),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect([key.code, key.stderr]).toEqual([0, '']);
    expect(key.stdout).toBe(`${JSON.stringify(key.json)}\n`);
    expect(key.json).toMatchObject({ key: expect.stringMatching(/^mdk_[A-Za-z0-9_-]{43}$/), shop_id: shop });
    expect(await me(server.url, key.json.key)).toEqual({ status: 200, id: shop });
    expect(testShop).not.toBe(shop);

    const emails = await cli(['emails', 'list', '--json']);
    expect([emails.code, Array.isArray(emails.json)]).toEqual([0, true]);

    const app = await cli(['app', 'create', '--name', 'Beside', '--redirect-uris', 'https://a.example/cb']);
    expect(app.code).toBe(2); // --scopes missing: a usage error, with the command's usage, as a standalone run
    expect(app.stderr).toMatch(/^--scopes is required\n\nUsage: npm run -s cli -- app create --name NAME /);
    const created = await cli([
      'app',
      'create',
      '--name',
      'Beside',
      '--redirect-uris',
      'https://a.example/cb',
      '--scopes',
      'orders.read',
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(
      /^App Beside \(confidential\)\nclient_id: app_\w+\nclient_secret \(shown only now\): mcs_/,
    );
    const secret = /client_secret \(shown only now\): (\S+)/.exec(created.stdout)![1]!;

    // A password from stdin crosses to the server; a relative --file means the CLI's working directory.
    const password = 'correct horse battery staple';
    const owner = await cli(['owner', 'create', '--shop', shop, '--email', 'o@beside.example', '--password-stdin'], {
      stdin: password,
    });
    expect([owner.code, owner.stdout]).toEqual([
      0,
      expect.stringMatching(/^Created owner own_\w+ \(o@beside\.example\)/),
    ]);
    writeFileSync(join(dir, 'fixtures.json'), JSON.stringify({ products: [{ title: 'Beside', price: '2.50' }] }));
    const seeded = await cli(['seed', '--shop', shop, '--file', 'fixtures.json', '--json'], { cwd: dir });
    expect([seeded.code, seeded.stderr, seeded.stdout]).toEqual([0, '', expect.anything()]);
    expect(seeded.json.products).toHaveLength(1);

    const failed = await cli(['key', 'create', '--shop', 'shop_missing', '--scopes', '*']);
    expect(failed).toMatchObject({ code: 1, stdout: '', stderr: 'No shop with id shop_missing\n' });
    const failedJson = await cli(['key', 'create', '--shop', 'shop_missing', '--scopes', '*', '--json']);
    expect([failedJson.code, failedJson.json]).toEqual([1, { error: { message: 'No shop with id shop_missing' } }]);

    const stray = await cli(['owner', 'create', 'hunter2-typed-as-a-word', '--shop', shop]);
    expect(stray.code).toBe(2);

    // The server logged the commands it ran, never what they printed or read, nor the words of a usage error.
    expect(server.output()).toMatch(/"command":"key create","exit_code":0/);
    expect(server.output()).toMatch(/"command":"\(usage error\)","exit_code":2/);
    for (const s of [key.json.key, secret, password, 'hunter2']) expect(server.output()).not.toContain(s);

    // Killed: its lock and socket stay behind, and neither blocks the CLI.
    server.child.kill('SIGKILL');
    await server.exited;
    expect(existsSync(socket())).toBe(true);
    const alone = await cli(['app', 'list', '--json']);
    expect(alone.code).toBe(0);
    expect(alone.json.map((a: { name: string }) => a.name)).toEqual(['Beside']);
    const aloneFailed = await cli(['key', 'create', '--shop', 'shop_missing', '--scopes', '*']);
    expect(aloneFailed).toMatchObject({ code: 1, stdout: '', stderr: failed.stderr });
  },
  minutes,
);

test(
  'a restarted server replaces the stale socket, names the shop in its banner, and removes the socket when it stops',
  async () => {
    const server = await startServer();
    // The banner's hint is one to paste: it names the (oldest live) shop.
    expect(server.output()).toContain(
      `Create an API key with: npm run -s cli -- key create --shop ${shop} --mode test --scopes "*"\n`,
    );
    const key = await cli(['key', 'create', '--shop', shop, '--scopes', 'orders.read', '--json']);
    expect(key.code).toBe(0);
    expect((await me(server.url, key.json.key)).status).toBe(200);

    server.child.kill('SIGTERM');
    await server.exited;
    expect(existsSync(socket())).toBe(false);
    const alone = await cli(['key', 'list', '--shop', shop, '--json']);
    expect(alone.code).toBe(0);
    expect(alone.json.map((k: { id: string }) => k.id)).toContain(key.json.id);
  },
  minutes,
);
