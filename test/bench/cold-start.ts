// Cold start: from spawning the server to its first 200 on an authenticated GET, as a restart looks to a user.
// The whole stack in three settings: the embedded database in an empty data directory (initdb, migrations and the
// demo shop; its printed key is the one polled), the embedded database restarted on that directory, and PostgreSQL
// (a migrated database holding a shop and key made beforehand); against the bare express + pg server
// (test/bench/bare-server.mjs) started on that same PostgreSQL database. Median of settings.coldRuns starts each.
// Without DATABASE_URL the PostgreSQL row and the baseline are not measured (a bare pg server needs a server).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as admin from '../../src/ops/admin';
import { createTestDatabase } from '../helpers/test-database';
import { median } from './load';
import { startServer, type ServerKind } from './processes';
import { settings } from './settings';

const root = join(__dirname, '..', '..');

export interface ColdStartBench {
  /** Medians of first 200, ms, and every run's figure. */
  embeddedFresh: number[];
  embeddedExisting: number[];
  postgres: number[] | null;
  bare: number[] | null;
}

async function coldRun(kind: ServerKind, env: Record<string, string>, key?: string) {
  const server = await startServer(kind, env, key);
  await server.stop();
  return server;
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
    for (let i = 0; i < runs; i++)
      embeddedExisting.push((await coldRun('full', { ...embedded, DATA_DIR: last.dataDir }, last.key)).first200Ms);

    if (!process.env.DATABASE_URL) return { embeddedFresh, embeddedExisting, postgres: null, bare: null };
    const database = await createTestDatabase(); // migrated, as a restart finds it
    try {
      const shop = await admin.createShop(database.db, { name: 'Cold', plan: 'business' });
      const { key } = await admin.createApiKey(database.db, { shopId: shop.id, scopes: ['*'] });
      const env = { DATABASE_URL: database.url!, SEED_DEMO: 'false' };
      const postgres: number[] = [];
      const bare: number[] = [];
      // Alternating, so both see the same machine.
      for (let i = 0; i < runs; i++) {
        bare.push((await coldRun('bare', env, key)).first200Ms);
        postgres.push((await coldRun('full', env, key)).first200Ms);
      }
      return { embeddedFresh, embeddedExisting, postgres, bare };
    } finally {
      await database.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const coldMedian = (runs: number[] | null) => (runs ? median(runs) : null);
