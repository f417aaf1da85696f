// `npm start` in a fresh checkout (no dist/): the first start compiles the sources and bundles the entry points
// (codegen/start.mjs) in the server's own process, and must leave no helper process of that build behind. esbuild's
// build runs in a service process that stayed a child of the server for its whole life until stopped.
// The checkout is a copy of this one's sources beside a link to its node_modules, so this repository's dist/ is
// neither used nor touched.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contractClient } from '../helpers/test-app';

const root = join(__dirname, '..', '..');
let dir: string;
let child: ChildProcess | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-first-start-'));
  const checkout = ['src', 'handlers', 'db', 'codegen', 'openapi.yaml', 'tsconfig.json', 'tsconfig.build.json'];
  execFileSync('cp', ['-a', ...checkout, 'package.json', 'package-lock.json', dir], { cwd: root });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
});
afterAll(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** The processes whose parent is pid, with their command lines. */
function childrenOf(pid: number): string[] {
  const tasks = readdirSync(`/proc/${pid}/task`);
  const pids = tasks.flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean));
  return pids.map((p) => {
    try {
      return `${p}: ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ')}`;
    } catch {
      return `${p}: (gone)`;
    }
  });
}

test('the first start builds dist/ and its bundles, then serves with no esbuild process left as its child', async () => {
  // `npm start` without npm's own launcher (its node flags are the package's, not this test's subject).
  child = spawn(process.execPath, [join(dir, 'codegen', 'start.mjs')], {
    cwd: dir,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '', REDIS_URL: '', SEED_DEMO: 'false' },
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let port: string | undefined;
  for (let waited = 0; !port; waited += 100) {
    if (child.exitCode !== null) throw new Error(`the server exited:\n${out}`);
    if (waited > 240_000) throw new Error(`the server did not listen within 240 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
    port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
  }
  // This very process compiled and bundled (a fresh checkout has neither).
  expect(out).toMatch(/start: dist\/ brought up to date \(\d+ file\(s\) compiled\)/);
  expect(out).toMatch(/start: dist\/bundle\/ rebuilt in \d+ ms/);
  expect((await contractClient(`http://127.0.0.1:${port}`).get('/healthz')).status).toBe(200);
  expect(childrenOf(child.pid!).filter((c) => c.includes('esbuild'))).toEqual([]);
}, 300_000);
