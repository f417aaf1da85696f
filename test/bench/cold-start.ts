// Cold start: the time from spawning `npm start` to the first 200 on GET /dev/v1/me, as a user restarting the
// server sees it. Three settings: the embedded database in an empty data directory (initdb, migrations and the demo
// shop; its printed key is the one polled), the embedded database restarted on that directory, and PostgreSQL (a
// migrated database holding a shop and key made beforehand). Median of BENCH_COLD_RUNS runs (default 3). Each run
// also reports how long the process took to reach main() and to listen (`startup_ms` of its `listening` log line).
// Called by `npm run bench` (test/bench/run.ts); `tsx test/bench/cold-start.ts` runs it alone.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as admin from '../../src/domain/admin';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');

export interface ColdRun {
  /** spawn -> first 200 on /dev/v1/me */
  first200_ms: number;
  /** spawn -> the server's main() began (npm, node, compiled-code check, module loading) */
  toMain_ms: number;
  /** main() -> listening (database open, migrations check, app built), as the server logs it */
  startup_ms: number;
}

export interface ColdStartBench {
  embeddedFresh: ColdRun[];
  embeddedExisting: ColdRun[];
  postgres: ColdRun[] | null;
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

/** Spawns `npm start` in its own process group, polls /dev/v1/me until 200, then stops the group and waits. */
async function coldRun(env: Record<string, string>, key?: string): Promise<ColdRun & { key: string }> {
  const started = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: root,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', REDIS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    let listenSeen = 0;
    for (;;) {
      if (exited) throw new Error(`npm start exited:\n${out}`);
      if (performance.now() - started > 60_000) throw new Error(`no 200 within 60 s:\n${out}`);
      const port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
      const token = key ?? /(mdk_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      if (port && token) {
        listenSeen ||= performance.now() - started;
        const res = await fetch(`http://127.0.0.1:${port}/dev/v1/me`, { headers: { authorization: `Bearer ${token}` } })
          .then(async (r) => (await r.arrayBuffer(), r.status))
          .catch(() => 0);
        if (res === 200) {
          const first200 = performance.now() - started;
          const startup = Number(/"startup_ms":(\d+)/.exec(out)?.[1] ?? NaN);
          return {
            first200_ms: Math.round(first200),
            toMain_ms: Math.round(listenSeen - startup),
            startup_ms: startup,
            key: token,
          };
        }
        if (res !== 0) throw new Error(`GET /dev/v1/me answered ${res}:\n${out}`);
      }
      await sleep(5);
    }
  } finally {
    if (alive(child.pid!)) process.kill(-child.pid!, 'SIGTERM');
    for (let i = 0; i < 400 && alive(child.pid!); i++) await sleep(25);
    if (alive(child.pid!)) process.kill(-child.pid!, 'SIGKILL');
  }
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : Math.round((s[mid - 1]! + s[mid]!) / 2);
}

export async function benchColdStart(runs = Number(process.env.BENCH_COLD_RUNS ?? 3)): Promise<ColdStartBench> {
  // Compile once first: a start after an edit recompiles the changed files, which is not what is measured here.
  execFileSync(process.execPath, [join(root, 'codegen', 'start.mjs'), '--compile-only'], { cwd: root });
  const dir = mkdtempSync(join(tmpdir(), 'mdapi-cold-'));
  try {
    const embedded = { DATABASE_URL: '', SEED_DEMO: 'true' };
    const embeddedFresh: ColdRun[] = [];
    let last = { dataDir: '', key: '' };
    for (let i = 0; i < runs; i++) {
      const dataDir = join(dir, `pglite-${i}`);
      const { key, ...run } = await coldRun({ ...embedded, DATA_DIR: dataDir });
      embeddedFresh.push(run);
      last = { dataDir, key };
    }
    const embeddedExisting: ColdRun[] = [];
    for (let i = 0; i < runs; i++) {
      const { key: _key, ...run } = await coldRun({ ...embedded, DATA_DIR: last.dataDir }, last.key);
      embeddedExisting.push(run);
    }

    let postgres: ColdRun[] | null = null;
    if (process.env.DATABASE_URL) {
      await globalSetup();
      const database = await createTestDatabase(); // migrated, as a restart finds it
      try {
        const shop = await admin.createShop(database.db, { name: 'Cold', plan: 'business' });
        const { key } = await admin.createApiKey(database.db, { shopId: shop.id, scopes: ['*'] });
        postgres = [];
        for (let i = 0; i < runs; i++) {
          const { key: _key, ...run } = await coldRun({ DATABASE_URL: database.url!, SEED_DEMO: 'false' }, key);
          postgres.push(run);
        }
      } finally {
        await database.close();
      }
    }
    return { embeddedFresh, embeddedExisting, postgres };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printColdStart(r: ColdStartBench): void {
  const row = (name: string, runs: ColdRun[] | null, target: string) => {
    if (!runs) return console.log(`| ${name} | (set DATABASE_URL) | | | | |`);
    const all = runs.map((x) => x.first200_ms).join(', ');
    console.log(
      `| ${name} | ${median(runs.map((x) => x.first200_ms))} | ${median(runs.map((x) => x.toMain_ms))} | ` +
        `${median(runs.map((x) => x.startup_ms))} | ${all} | ${target} |`,
    );
  };
  console.log(`\nCold start, \`npm start\` -> first 200 on GET /dev/v1/me (median of ${r.embeddedFresh.length}), ms:`);
  console.log('| database | first 200 | to main() | main() -> listening | runs | target |');
  console.log('|---|---|---|---|---|---|');
  row('embedded, empty data directory', r.embeddedFresh, '');
  row('embedded, existing data directory', r.embeddedExisting, '< 3000');
  row('PostgreSQL', r.postgres, '< 1500');
}

if (require.main === module) {
  benchColdStart()
    .then((r) => {
      printColdStart(r);
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
