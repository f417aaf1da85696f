// The Docker image, without a container engine: the Dockerfile is read, its build stage laid out in a temporary
// directory from its own COPY lines (the repository is the build context, less .dockerignore) and its build commands
// run there; its runtime stage laid out the same way, with production dependencies only (what `npm ci --omit=dev`
// installs: the package-lock.json entries not marked dev, hard-linked from this checkout's node_modules). From that
// directory the server runs as CMD says, then `npm start`, `npm run worker` and `npm run -s cli -- …` as the README
// says, with the image's ENV, Node 24 (the base image's) on the PATH and nothing of this repository's tools on it.
// An instruction this test does not know how to lay out fails it, so the layout cannot drift from the file.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { bearer, contractClient } from '../helpers/test-app';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');
let dir: string;
let pg: TestDatabase | undefined;
const running: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-docker-'));
  if (process.env.DATABASE_URL) {
    pg = await createTestDatabase();
    await pg.db.destroy();
  }
});
afterAll(async () => {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) process.kill(-c.pid!, 'SIGKILL');
  if (pg?.url) {
    const name = new URL(pg.url).pathname.slice(1);
    await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  name: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages and instructions (continuation lines joined, comments dropped). */
function readDockerfile(): Stage[] {
  const lines = readFileSync(join(root, 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  const stages: Stage[] = [];
  for (const line of joined.split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, op, args] = m as unknown as [string, string, string];
    if (op === 'FROM') stages.push({ name: /\bAS\s+(\S+)/i.exec(args)![1]!, instructions: [] });
    else stages.at(-1)!.instructions.push({ op, args: args.trim() });
  }
  return stages;
}

/** .dockerignore's patterns; only plain paths from the context's root, which is all this test can honour. */
function dockerignore(): string[] {
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const p of patterns) expect(p).toMatch(/^[\w.-]+(\/[\w.-]+)*$/);
  return patterns;
}

/** Hard links (or copies) of a file tree (symlinks kept as such); `skip` names children of `from` itself to leave out. */
function linkTree(from: string, to: string, skip: (rel: string) => boolean = () => false, base = from): void {
  const st = lstatSync(from);
  if (st.isSymbolicLink()) {
    mkdirSync(dirname(to), { recursive: true });
    symlinkSync(readlinkSync(from), to);
  } else if (st.isDirectory()) {
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from)) {
      if (skip(relative(base, join(from, name)))) continue;
      linkTree(join(from, name), join(to, name), skip, base);
    }
  } else {
    mkdirSync(dirname(to), { recursive: true });
    try {
      linkSync(from, to);
    } catch (err) {
      // A temporary directory on another file system than the checkout.
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      copyFileSync(from, to);
    }
  }
}

/** What `npm ci --omit=dev` puts in node_modules: every lock entry not marked dev, each package without the
 * packages nested in it (they are entries of their own). A platform's optional package not installed here is one
 * npm would not install either. */
function installProductionDependencies(app: string): void {
  const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean; link?: boolean }>;
  };
  for (const [path, meta] of Object.entries(lock.packages)) {
    if (path === '' || meta.dev || meta.devOptional) continue;
    expect(meta.link).toBeUndefined();
    if (!existsSync(join(root, path))) {
      expect(meta.optional).toBe(true);
      continue;
    }
    linkTree(join(root, path), join(app, path), (rel) => rel === 'node_modules');
  }
}

const nodeDir = dirname(process.execPath); // Node 24: the base image's node
const PATH = [nodeDir, '/usr/local/bin', '/usr/bin', '/bin'].join(':');

/** A build step the test runs itself, as `RUN` runs it: sh -c in the stage's directory. */
function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): void {
  const res = spawnSync('sh', ['-c', command], {
    cwd,
    env: { PATH, HOME: join(dir, 'home'), ...env },
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(`RUN ${command} exited ${res.status}:\n${res.stdout}${res.stderr}`);
}

interface Image {
  app: string;
  env: Record<string, string>;
  cmd: string[];
  healthcheck: string;
}

/** Lays out the build stage, then the runtime stage; returns the runtime's directory, ENV, CMD and HEALTHCHECK. */
function buildImage(): Image {
  const stages = readDockerfile();
  expect(stages.map((s) => s.name)).toEqual(['build', 'runtime']);
  const ignored = dockerignore();
  const fromContext = (rel: string) => !ignored.some((p) => rel === p || rel.startsWith(`${p}/`));
  const volume = join(dir, 'volume');
  const stageDirs = new Map<string, { dir: string; workdir: string }>();
  let image: Image | undefined;
  for (const stage of stages) {
    const stageDir = join(dir, stage.name);
    mkdirSync(stageDir);
    const env: Record<string, string> = {};
    let workdir = '';
    let cmd: string[] = [];
    let healthcheck = '';
    const volumes: string[] = [];
    // An absolute path of the container: the WORKDIR is the stage's directory, a VOLUME one of the test's.
    const local = (p: string) => {
      if (workdir && (p === workdir || p.startsWith(`${workdir}/`))) return join(stageDir, p.slice(workdir.length));
      const v = volumes.find((v) => p === v || p.startsWith(`${v}/`));
      if (v) return join(volume, p);
      return p.startsWith('/') ? undefined : join(stageDir, p);
    };
    for (const { op, args } of stage.instructions) {
      switch (op) {
        case 'WORKDIR':
          workdir = args;
          break;
        case 'ENV':
          for (const pair of args.split(/\s+/)) {
            const [k, v] = pair.split('=') as [string, string];
            env[k] = v;
          }
          break;
        case 'VOLUME':
          volumes.push(...(JSON.parse(args) as string[]));
          break;
        case 'COPY': {
          const words = args.split(/\s+/);
          const from = /^--from=(\S+)$/.exec(words[0]!)?.[1];
          if (from) words.shift();
          const target = words.pop()!;
          for (const source of words) {
            const origin = from
              ? join(stageDirs.get(from)!.dir, relative(stageDirs.get(from)!.workdir, source))
              : join(root, source);
            expect(from ? true : fromContext(source)).toBe(true);
            const into = target.endsWith('/') || words.length > 1;
            const dest = local(into ? join(target, source.split('/').pop()!) : target)!;
            linkTree(origin, dest, from ? undefined : (rel) => !fromContext(join(source, rel)));
          }
          break;
        }
        case 'RUN':
          for (const command of args.split(/\s*&&\s*/)) {
            if (/^npm ci\b/.test(command)) {
              if (stage.name === 'build') {
                // Development dependencies too, without install scripts: the 'node' package's would fetch a Node.
                expect(command).toMatch(/--ignore-scripts/);
                symlinkSync(join(root, 'node_modules'), join(stageDir, 'node_modules'));
              } else {
                expect(command).toMatch(/--omit=dev/);
                installProductionDependencies(stageDir);
              }
            } else if (/^npx tsc .*--noEmit$/.test(command)) {
              // The type check: .ci/run's typecheck step does it for the same sources.
            } else if (/^npm cache clean\b|^chown\b/.test(command)) {
              // Nothing in the layout: npm's download cache; file owners (the test runs as one user).
            } else {
              const mapped = command.replace(
                /(^|\s)(\/\S+)/g,
                (_, space: string, p: string) => space + (local(p) ?? p),
              );
              sh(mapped, stageDir, env);
            }
          }
          break;
        case 'CMD':
          cmd = JSON.parse(args) as string[];
          break;
        case 'HEALTHCHECK':
          healthcheck = /\bCMD\s+(.*)$/.exec(args)![1]!;
          break;
        case 'USER':
        case 'EXPOSE':
          break;
        default:
          throw new Error(`the test does not lay out a Dockerfile ${op} instruction`);
      }
    }
    stageDirs.set(stage.name, { dir: stageDir, workdir });
    const mapped = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, local(v) && v.startsWith('/') ? local(v)! : v]),
    );
    image = { app: stageDir, env: mapped, cmd, healthcheck };
  }
  return image!;
}

interface Run {
  child: ChildProcess;
  /** stdout and stderr as they came. */
  output(): string;
  stdout(): string;
  exited: Promise<number | null>;
  /** SIGTERM to the process group (npm and the node it runs), then waits for the exit. */
  stop(): Promise<number | null>;
}

function run(image: Image, command: string, args: string[]): Run {
  const child = spawn(command, args, {
    cwd: image.app,
    detached: true,
    env: {
      PATH,
      HOME: join(dir, 'home'),
      ...image.env,
      PORT: '0', // the image's 3000 may be taken on this machine
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: pg?.url ?? '',
    },
  });
  running.push(child);
  let out = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    output: () => out,
    stdout: () => stdout,
    exited,
    stop: () => {
      process.kill(-child.pid!, 'SIGTERM');
      return exited;
    },
  };
}

async function waitFor(r: Run, pattern: RegExp): Promise<RegExpExecArray> {
  for (let waited = 0; ; waited += 100) {
    const m = pattern.exec(r.output());
    if (m) return m;
    if (r.child.exitCode !== null) throw new Error(`exited ${r.child.exitCode} before ${pattern}:\n${r.output()}`);
    if (waited > 120_000) throw new Error(`no ${pattern} within 120 s:\n${r.output()}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The server's banner is printed; its last line is the key hint: resolves the base URL. */
async function listening(r: Run): Promise<string> {
  const port = (await waitFor(r, /listening on http:\/\/localhost:(\d+)[\s\S]*Create (an API key|a shop)[^\n]*\n/))[1];
  return `http://127.0.0.1:${port}`;
}

async function cli(image: Image, args: string[]): Promise<any> {
  const r = run(image, 'npm', ['run', '-s', 'cli', '--', ...args, '--json']);
  const code = await r.exited;
  if (code !== 0) throw new Error(`npm run -s cli -- ${args.join(' ')} exited ${code}:\n${r.output()}`);
  return JSON.parse(r.stdout());
}

test('the runtime image: production dependencies only; CMD, npm start, npm run worker and npm run cli work in it', async () => {
  const image = buildImage();
  const scripts = (
    JSON.parse(readFileSync(join(image.app, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  // CMD is `npm start` without npm in between.
  expect(image.cmd.join(' ')).toBe(scripts.start);
  // No compiler, bundler or second Node in the image: what runs is dist/ as the build stage made it.
  const modules = readdirSync(join(image.app, 'node_modules'));
  for (const dev of ['node', 'esbuild', 'tsx', 'typescript', 'jest']) expect(modules).not.toContain(dev);
  expect(modules).toEqual(expect.arrayContaining(['express', 'kysely', 'argon2', '@electric-sql']));
  expect(existsSync(join(image.app, 'src'))).toBe(false);
  // No demo shop whose full-access keys would be printed into the container's logs.
  expect(image.env.SEED_DEMO).toBe('false');

  // The image's CMD.
  const server = run(image, image.cmd[0]!, image.cmd.slice(1));
  const base = await listening(server);
  expect(server.output()).not.toMatch(/mdk_|brought up to date|rebuilt/);
  expect(server.output()).toContain('npm run -s cli -- shop create --name NAME');
  const health = spawnSync('sh', ['-c', image.healthcheck], {
    env: { PATH, PORT: new URL(base).port },
    encoding: 'utf8',
  });
  expect(health.status).toBe(0);
  // The CLI beside it, as the banner says (on the embedded database through the server).
  const shop = (await cli(image, ['shop', 'create', '--name', 'Docker Shop'])) as { id: string };
  const key = (await cli(image, ['key', 'create', '--shop', shop.id, '--scopes', '*'])) as { id: string; key: string };
  const http = contractClient(base);
  const me = await http.get('/dev/v1/me').set(bearer(key.key));
  expect([me.status, me.body.data?.id]).toEqual([200, shop.id]);
  expect(await server.stop()).toBe(0);

  // `npm start` on the same volume: the key made before still works.
  const started = run(image, 'npm', ['start']);
  const again = await listening(started);
  expect((await contractClient(again).get('/dev/v1/me').set(bearer(key.key))).status).toBe(200);
  await started.stop();

  // `npm run worker` (alone: the embedded database has one owner at a time).
  const worker = run(image, 'npm', ['run', 'worker']);
  await waitFor(worker, /"message":"worker started"/);
  await worker.stop();

  // The CLI with no server running.
  const keys = (await cli(image, ['key', 'list', '--shop', shop.id])) as { id: string }[];
  expect(keys.map((k) => k.id)).toEqual([key.id]);
}, 600_000);
