// Throughput of `POST /licenses/validate` (the hottest public call of a software seller) through the whole stack,
// against a bare express + pg + auth route doing the same work: the credential look-up, then the SAME single
// validation statement (db/queries/licenses.ts: look-up by keyed hash, checks, device stamp, last_validated_at, the
// audit entry), measured side by side as in test/bench/run.ts (target >= 0.9x). 1,000 licenses with one registered
// device each; every request validates another of them from its device (the common case), so the runs measure the
// path and not one row's lock. Called by `npm run bench`; `tsx test/bench/license-validate.ts` runs it alone on a
// fresh database (BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS as for the rest). Prints a table; asserts nothing.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import express from 'express';
import { sql, type Kysely } from 'kysely';
import { validateLicenseByHash } from '../../db/queries/licenses';
import type { Database } from '../../db/tables';
import { shopById } from '../../db/queries/shops';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/domain/admin';
import { seedFixtures } from '../../src/domain/fixtures';
import { newId } from '../../src/ids';
import { createLogger } from '../../src/logger';
import { loadLicenseKeyring } from '../../src/platform/license-keys';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';
import { bearerTokenOf, hashCredential } from './bench-auth';
import { median } from './cold-start';
import { connections, listen, rounds, seconds, summary, type Load } from './load';

const LICENSES = 1_000;
const HWID = 'BENCH-DEVICE';
const run = promisify(execFile);

export interface LicenseValidateBench {
  baseline: Load;
  full: Load;
  /** whole stack / baseline, req/s, per round. */
  ratios: number[];
  /** The whole stack's CPU per request beyond the baseline's, in microseconds, per round. */
  beyond: number[];
}

// autocannon in a process of its own (as load.ts does), here through its API: each request POSTs the next key.
const cannonScript = `
const autocannon = require('autocannon');
const [url, key, keysFile, connections, duration] = process.argv.slice(1);
const keys = require(keysFile);
let i = 0;
autocannon({
  url, connections: Number(connections), duration: Number(duration), method: 'POST',
  headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
  requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ key: keys[i++ % keys.length], hwid: ${JSON.stringify(HWID)} }) }) }],
}, (err, result) => { if (err) { console.error(err); process.exit(1); } process.stdout.write(JSON.stringify(result)); });
`;

async function cannon(url: string, key: string, keysFile: string, duration: number) {
  const { stdout } = await run(
    process.execPath,
    ['-e', cannonScript, url, key, keysFile, String(connections), String(duration)],
    { maxBuffer: 64 * 1024 * 1024, cwd: join(__dirname, '..', '..') },
  );
  return JSON.parse(stdout) as {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  };
}

async function loadPost(url: string, key: string, keysFile: string): Promise<Load> {
  await cannon(url, key, keysFile, 2); // warm-up
  const cpu = process.cpuUsage();
  const r = await cannon(url, key, keysFile, seconds);
  const used = process.cpuUsage(cpu);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuUs: Math.round((used.user + used.system) / r.requests.total),
  };
}

export async function benchLicenseValidate(db: Kysely<Database>): Promise<LicenseValidateBench> {
  const shop = await admin.createShop(db, { name: 'License bench', plan: 'business' });
  const { key, id: credentialId } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['licenses.read'] });
  const row = (await shopById(db, shop.id))!;
  const keys = Array.from({ length: LICENSES }, (_, i) => `BENCH-${String(i).padStart(5, '0')}-KEY`);
  await db.transaction().execute((trx) =>
    seedFixtures(trx, row, {
      products: [{ title: 'Bench App', price: '10.00', license_activation_limit: 1 }],
      licenses: keys.map((k) => ({ product: 'Bench App', key: k, hwids: [HWID] })),
    }),
  );
  await sql`analyze licenses`.execute(db);
  await sql`analyze license_devices`.execute(db);
  const keyring = await loadLicenseKeyring(db);

  const config = loadConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_BUSINESS: '1000000',
    SEED_DEMO: 'false',
    PUBLIC_URL: 'http://bench',
  });
  const app = await createApp({ db, config, logger: createLogger('silent') });
  const full = await listen(app);

  // The baseline: the credential look-up and the same statement, with nothing around them.
  const bare = express();
  bare.use(express.json());
  bare.post('/licenses/validate', async (req, res) => {
    const token = bearerTokenOf(req.headers.authorization);
    const auth = await sql<{ shop_id: string }>`select c.shop_id from credentials c join shops s on s.id = c.shop_id
      where c.token_hash = ${hashCredential(token)} and c.revoked_at is null`.execute(db);
    const shopId = auth.rows[0]?.shop_id;
    if (!shopId) return void res.status(401).end();
    const body = req.body as { key: string; hwid?: string };
    const now = new Date();
    const result = await validateLicenseByHash(
      db,
      {
        shopId,
        keyHash: keyring.hash(body.key),
        productId: null,
        hwid: body.hwid ?? null,
        now,
        deviceId: newId('ldv'),
      },
      {
        id: newId('aud'),
        credential_id: credentialId,
        credential_kind: 'api_key',
        operation_id: 'validateLicense',
        method: 'POST',
        path: '/licenses/validate',
        action: 'licenses.validate',
        resource_type: 'license',
        resource_id: null,
        path_params: '{}',
        status: 200,
        ip: req.ip ?? null,
        user_agent: req.headers['user-agent'] ?? null,
        request_id: 'bench',
      },
    );
    if (result.touched_at === null) return void res.status(400).end();
    res.json({ data: { valid: true, license: result } });
  });
  const baseline = await listen(bare);

  const dir = mkdtempSync(join(tmpdir(), 'license-bench-'));
  const keysFile = join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify(keys));
  try {
    // The whole stack answers what it should before it is measured.
    const check = await fetch(`${full.url}/dev/v1/licenses/validate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: keys[0], hwid: HWID }),
    });
    const answer = (await check.json()) as { data?: { valid: boolean; license: { key: string } } };
    if (check.status !== 200 || answer.data?.license.key !== keys[0]) {
      throw new Error(`validate is not answering as expected: ${check.status} ${JSON.stringify(answer).slice(0, 300)}`);
    }
    const runs: { baseline: Load[]; full: Load[] } = { baseline: [], full: [] };
    for (let i = 0; i < rounds; i++) {
      runs.baseline.push(await loadPost(`${baseline.url}/licenses/validate`, key, keysFile));
      runs.full.push(await loadPost(`${full.url}/dev/v1/licenses/validate`, key, keysFile));
    }
    return {
      baseline: summary(runs.baseline),
      full: summary(runs.full),
      ratios: runs.full.map((f, i) => f.rps / runs.baseline[i]!.rps),
      beyond: runs.full.map((f, i) => f.cpuUs - runs.baseline[i]!.cpuUs),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    full.server.close();
    baseline.server.close();
  }
}

export function printLicenseValidate(r: LicenseValidateBench, database: string): void {
  console.log(
    `\nPOST /licenses/validate (${database}; ${connections} connections, ${seconds} s per run, ${rounds} round(s)); ` +
      `${LICENSES.toLocaleString('en')} licenses, each request another key from its registered device:\n`,
  );
  console.log('| scenario | req/s | p50 ms | p99 ms | server CPU per request, us |');
  console.log('|---|---|---|---|---|');
  const line = (name: string, l: Load) => console.log(`| ${name} | ${l.rps} | ${l.p50} | ${l.p99} | ${l.cpuUs} |`);
  line('bare express + auth + the same validation statement (baseline)', r.baseline);
  line('POST /dev/v1/licenses/validate, whole stack', r.full);
  const each = (xs: number[]) => (xs.length > 1 ? ` (rounds: ${xs.map((x) => x.toFixed(2)).join(', ')})` : '');
  console.log(
    `\nwhole stack / baseline: ${median(r.ratios.map((x) => Math.round(x * 100))) / 100}x${each(r.ratios)} ` +
      '(target >= 0.9x)',
  );
  console.log(
    `whole stack's own CPU per request beyond the baseline: ${median(r.beyond)} us` +
      `${r.beyond.length > 1 ? ` (rounds: ${r.beyond.join(', ')})` : ''}`,
  );
}

if (require.main === module) {
  (async () => {
    await globalSetup();
    const database = await createTestDatabase();
    try {
      printLicenseValidate(await benchLicenseValidate(database.db), database.kind);
    } finally {
      await database.close();
    }
  })().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
