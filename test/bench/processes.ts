// Servers as processes of their own, for the scenarios that measure a process (cold start, resident memory): the
// whole stack as `npm start` runs it (`node codegen/start.mjs`: the compiled server; npm's own launcher, ~0.3-3 s
// on these machines, is left out of both sides) and the bare baseline (test/bench/bare-server.mjs). Each is spawned
// in its own process group and polled with an authenticated GET until it answers 200.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

const scripts = () =>
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The node flags `npm start` gives the server (package.json's start script), so the bench measures what ships. */
function startFlags(): string[] {
  return scripts()
    .start!.split(/\s+/)
    .filter((arg) => arg.startsWith('--'));
}

/** `npm run cli` without npm (package.json's cli script: node, its flags, the launcher); the command follows. */
export function cliCommand(): { command: string; args: string[] } {
  const [node, ...args] = scripts().cli!.split(/\s+/);
  if (node !== 'node') throw new Error(`package.json's cli script does not start with node: ${scripts().cli}`);
  return { command: process.execPath, args };
}

export type ServerKind = 'full' | 'bare';

const commands: Record<ServerKind, { args: string[]; banner: RegExp; probe: string }> = {
  full: {
    args: [...startFlags(), join(root, 'codegen', 'start.mjs')],
    banner: /listening on http:\/\/localhost:(\d+)/,
    probe: '/dev/v1/me',
  },
  bare: {
    args: [join(root, 'test', 'bench', 'bare-server.mjs')],
    banner: /listening on http:\/\/127\.0\.0\.1:(\d+)/,
    probe: '/me',
  },
};

export interface RunningServer {
  pid: number;
  url: string;
  /** The API key polled (the one given, or the demo key the first start printed). */
  key: string;
  /** spawn -> first 200 on the probe, ms. */
  first200Ms: number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopGroup(pid: number): Promise<void> {
  if (alive(pid)) process.kill(-pid, 'SIGTERM');
  for (let i = 0; i < 400 && alive(pid); i++) await sleep(25);
  if (alive(pid)) process.kill(-pid, 'SIGKILL');
}

/**
 * Starts a server and waits for its first 200. Without `key` the whole stack's first-start banner must print the
 * demo key (SEED_DEMO on an empty database). `nodeFlags` come before the server's own (a CPU profile's, say).
 */
export async function startServer(
  kind: ServerKind,
  env: Record<string, string>,
  key?: string,
  nodeFlags: string[] = [],
): Promise<RunningServer> {
  const { args, banner, probe } = commands[kind];
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, ...args], {
    cwd: root,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'silent', REDIS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid!;
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    for (;;) {
      if (exited) throw new Error(`${kind} server exited:\n${out}`);
      if (performance.now() - started > 180_000) throw new Error(`${kind} server: no 200 within 180 s:\n${out}`);
      const port = banner.exec(out)?.[1];
      const token = key ?? /(mdk_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      if (port && token) {
        const url = `http://127.0.0.1:${port}`;
        const status = await fetch(`${url}${probe}`, { headers: { authorization: `Bearer ${token}` } })
          .then(async (r) => (await r.arrayBuffer(), r.status))
          .catch(() => 0);
        if (status === 200) {
          const first200Ms = Math.round(performance.now() - started);
          child.stdout.removeAllListeners('data');
          child.stderr.removeAllListeners('data');
          child.stdout.resume();
          child.stderr.resume();
          return { pid, url, key: token, first200Ms, stop: () => stopGroup(pid) };
        }
        if (status !== 0) throw new Error(`${kind} server: GET ${probe} answered ${status}:\n${out}`);
      }
      await sleep(5);
    }
  } catch (err) {
    await stopGroup(pid);
    throw err;
  }
}

/**
 * The embedded starts' floor (test/bench/bare-pglite.mjs): spawn -> PGlite open on `dataDir` and one query answered,
 * ms, with the flags `npm start` gives the server (PGlite's WebAssembly compiles as it would there).
 */
export function timeBarePGlite(dataDir: string, unpack: boolean): Promise<number> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...startFlags(), join(root, 'test', 'bench', 'bare-pglite.mjs'), dataDir, ...(unpack ? ['unpack'] : [])],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  return new Promise((resolve, reject) => {
    let readyMs: number | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (readyMs === undefined && out.includes('ready')) readyMs = Math.round(performance.now() - started);
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 && readyMs !== undefined ? resolve(readyMs) : reject(new Error(`bare PGlite exited ${code}:\n${out}`)),
    );
  });
}
