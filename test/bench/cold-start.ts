// Cold start: from spawning the server to its first 200 on an authenticated GET, as a restart looks to a user.
// The whole stack in three settings: the embedded database in an empty data directory (the schema image unpacked,
// newer migrations and the demo shop; its printed key is the one polled), the embedded database restarted on that
// directory, and PostgreSQL (a migrated database holding a shop and key made beforehand); against the bare express +
// pg server (test/bench/bare-server.mjs) started on that same PostgreSQL database. Beside the embedded starts, their
// floor: a process that only opens PGlite (test/bench/bare-pglite.mjs), on a directory unpacked from the schema
// image and on the restarted one. Median of settings.coldRuns starts
// each. Also the embedded server's resident memory once idle after a restart (settings.idleSeconds after its first
// 200: its validators compiled, nothing asked) beside the PostgreSQL server's, and the wall time of one admin CLI command on PostgreSQL as
// `npm run cli` runs it (`key list`, a read: the process start, the database opened, one query, the exit).
// Without DATABASE_URL the PostgreSQL rows and the baseline are not measured (a bare pg server needs a server).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as admin from '../../src/ops/admin';
import { createTestDatabase } from '../helpers/test-database';
import { median, rssMbOf } from './load';
import { cliCommand, startServer, timeBarePGlite, type ServerKind } from './processes';
import { settings } from './settings';

const root = join(__dirname, '..', '..');

export interface ColdStartBench {
  /** Medians of first 200, ms, and every run's figure. */
  embeddedFresh: number[];
  embeddedExisting: number[];
  /** Their floor: a process that only opens PGlite (after unpacking the schema image, for a first start), ms. */
  embeddedFloorFresh: number[];
  embeddedFloorExisting: number[];
  /** RSS of the restarted embedded server once idle, MB, per restart. */
  embeddedIdleRssMb: number[];
  postgres: number[] | null;
  /** RSS of the PostgreSQL server once idle, MB, per start: the embedded figure's baseline. */
  postgresIdleRssMb: number[] | null;
  bare: number[] | null;
  /** Wall time of `npm run cli -- key list` on PostgreSQL, ms, per run. */
  cli: number[] | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function coldRun(kind: ServerKind, env: Record<string, string>, key?: string, idleRss?: number[]) {
  const server = await startServer(kind, env, key);
  if (idleRss) {
    await sleep(settings.idleSeconds * 1000);
    idleRss.push(rssMbOf(server.pid));
  }
  await server.stop();
  return server;
}

/** One CLI command as `npm run cli` runs it (npm's own launcher left out, as for the servers), ms. */
function cliRun(env: Record<string, string>, args: string[]): number {
  const { command, args: launch } = cliCommand();
  const started = performance.now();
  const res = spawnSync(command, [...launch, ...args], {
    cwd: root,
    env: { ...process.env, REDIS_URL: '', LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
  });
  const ms = Math.round(performance.now() - started);
  if (res.status !== 0) throw new Error(`cli ${args.join(' ')} exited ${res.status}:\n${res.stdout}${res.stderr}`);
  return ms;
}

export async function benchColdStart(runs = settings.coldRuns): Promise<ColdStartBench> {
  // Compile once first: a start after an edit recompiles the changed files, which is not what is measured here.
  execFileSync(process.execPath, [join(root, 'codegen', 'start.mjs'), '--compile-only'], { cwd: root });
  const dir = mkdtempSync(join(tmpdir(), 'mdapi-cold-'));
  try {
    const embedded = { DATABASE_URL: '', SEED_DEMO: 'true' };
    const embeddedFresh: number[] = [];
    let last = { dataDir: '', key: '' };
    for (let i = 0; i < runs; i++) {
      const dataDir = join(dir, `pglite-${i}`);
      const { key, first200Ms } = await coldRun('full', { ...embedded, DATA_DIR: dataDir });
      embeddedFresh.push(first200Ms);
      last = { dataDir, key };
    }
    const embeddedExisting: number[] = [];
    const embeddedIdleRssMb: number[] = [];
    for (let i = 0; i < runs; i++)
      embeddedExisting.push(
        (await coldRun('full', { ...embedded, DATA_DIR: last.dataDir }, last.key, embeddedIdleRssMb)).first200Ms,
      );

    // The floor of each, same machine, same run: PGlite alone, on a new directory from the image and on the
    // restarted one (its server stopped).
    const embeddedFloorFresh: number[] = [];
    const embeddedFloorExisting: number[] = [];
    for (let i = 0; i < runs; i++) {
      embeddedFloorFresh.push(await timeBarePGlite(join(dir, `floor-${i}`), true));
      embeddedFloorExisting.push(await timeBarePGlite(last.dataDir, false));
    }

    const embeddedOnly = {
      embeddedFresh,
      embeddedExisting,
      embeddedFloorFresh,
      embeddedFloorExisting,
      embeddedIdleRssMb,
    };
    if (!process.env.DATABASE_URL)
      return { ...embeddedOnly, postgres: null, postgresIdleRssMb: null, bare: null, cli: null };
    const database = await createTestDatabase(); // migrated, as a restart finds it
    try {
      const shop = await admin.createShop(database.db, { name: 'Cold', plan: 'business' });
      const { key } = await admin.createApiKey(database.db, { shopId: shop.id, scopes: ['*'] });
      const env = { DATABASE_URL: database.url!, SEED_DEMO: 'false' };
      const postgres: number[] = [];
      const postgresIdleRssMb: number[] = [];
      const bare: number[] = [];
      // Alternating, so both see the same machine.
      for (let i = 0; i < runs; i++) {
        bare.push((await coldRun('bare', env, key)).first200Ms);
        postgres.push((await coldRun('full', env, key, postgresIdleRssMb)).first200Ms);
      }
      const cli: number[] = [];
      for (let i = 0; i < runs; i++) cli.push(cliRun(env, ['key', 'list', '--shop', shop.id, '--json']));
      return { ...embeddedOnly, postgres, postgresIdleRssMb, bare, cli };
    } finally {
      await database.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const coldMedian = (runs: number[] | null) => (runs ? median(runs) : null);
