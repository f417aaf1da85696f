// Throughput of `POST /licenses/validate` (the hottest public call of a software seller) through the whole stack,
// against a bare express + pg + auth route doing the same work: the credential look-up, then the SAME single
// validation statement (db/queries/licenses.ts: look-up by keyed hash, checks, device stamp, last_validated_at, the
// audit entry), measured side by side as in test/bench/run.ts (target >= 0.9x). settings.licenses (1,000) licenses with one registered
// device each; every request validates another of them from its device (the common case), so the runs measure the
// path and not one row's lock. Called by `npm run bench` (test/bench/run.ts).
import express from 'express';
import { sql, type Kysely } from 'kysely';
import { validateLicenseByHash } from '../../db/queries/licenses';
import type { Database } from '../../db/tables';
import { shopById } from '../../db/queries/shops';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { newId } from '../../src/ids';
import { createLogger } from '../../src/logger';
import { loadLicenseKeyring } from '../../src/platform/license-keys';
import { bearerTokenOf, hashCredential } from './bench-auth';
import { listen, load, median, sideBySide, type Load, type LoadOptions } from './load';
import { settings } from './settings';
import { systemClock } from '../../src/platform/clock';

const HWID = 'BENCH-DEVICE';

export interface LicenseValidateBench {
  baseline: Load;
  full: Load;
  /** whole stack / baseline, req/s, median of the rounds. */
  ratio: number;
}

export async function benchLicenseValidate(db: Kysely<Database>): Promise<LicenseValidateBench> {
  const shop = await admin.createShop(db, { name: 'License bench', plan: 'business' });
  const { key, id: credentialId } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['licenses.read'] });
  const row = (await shopById(db, shop.id))!;
  const keys = Array.from({ length: settings.licenses }, (_, i) => `BENCH-${String(i).padStart(5, '0')}-KEY`);
  await db.transaction().execute((trx) =>
    seedFixtures(
      trx,
      row,
      {
        products: [{ title: 'Bench App', price: '10.00', license_activation_limit: 1 }],
        licenses: keys.map((k) => ({ product: 'Bench App', key: k, hwids: [HWID] })),
      },
      systemClock,
    ),
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
  const app = await createApp({ clock: systemClock, db, config, logger: createLogger('silent') });
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

  const shots = keys.map((k) => ({ body: { key: k, hwid: HWID } }));
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
    const posts = (label: string): LoadOptions => ({ method: 'POST', shots, cost: true, label });
    const runs = await sideBySide(
      () => load(`${baseline.url}/licenses/validate`, key, posts('validate-bare')),
      () => load(`${full.url}/dev/v1/licenses/validate`, key, posts('validate-full')),
    );
    return {
      baseline: runs.baseline,
      full: runs.full,
      ratio: median(runs.rounds.map((r) => r.full.rps / r.baseline.rps)),
    };
  } finally {
    full.server.close();
    baseline.server.close();
  }
}
