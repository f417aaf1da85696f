// `npm run bench:profile -- writes|licenses|stripe-webhooks`: one scenario of `npm run bench` alone (the order
// writes, license validation, or Stripe webhooks beside POST /orders/{id}/complete), on its own test database as the bench makes it, with BENCH_PROFILE_DIR set (a temporary folder when
// it is not) so each measured run is profiled: where the whole stack's CPU goes, without the full bench's 14 minutes.
// Prints each side's req/s and CPU per request, then the attribution tables (test/bench/profile.ts). The bench's
// settings apply (test/bench/settings.ts); small ones keep it short:
// BENCH_ROUNDS=1 BENCH_SECONDS=3 BENCH_WARMUP_SECONDS=1 BENCH_COMPLETIONS=300. With `--unprofiled` nothing is
// profiled: the figures are then what the bench would measure (sampling costs CPU of its own).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';
import { benchGatewayWebhooks } from './gateway-webhooks';
import { benchLicenseValidate } from './license-validate';
import type { Load } from './load';
import { benchOrderWrites } from './order-writes';
import { reportProfiles } from './profile';

interface SideBySide {
  baseline: Load;
  full: Load;
  ratio: number;
}

const scenarios: Record<string, (db: Kysely<Database>) => Promise<Record<string, SideBySide>>> = {
  writes: async (db) => ({ ...(await benchOrderWrites(db)) }),
  licenses: async (db) => ({ validate: await benchLicenseValidate(db) }),
  'stripe-webhooks': async (db) => {
    const r = await benchGatewayWebhooks(db);
    return {
      'stripe-webhooks (baseline: POST /orders/{id}/complete)': {
        full: r.webhook,
        baseline: r.complete,
        ratio: r.ratio,
      },
    };
  },
};

const side = (l: Load) =>
  `${l.rps} req/s, ${l.cost?.cpuMs ?? '?'} CPU ms/req (database ${l.cost?.dbCpuMs ?? '?'}), ${l.cost?.roundTrips ?? '?'} round trips`;

async function main(name: string | undefined, unprofiled: boolean): Promise<void> {
  const scenario = name === undefined ? undefined : scenarios[name];
  if (!scenario)
    throw new Error(`usage: tsx test/bench/profile-run.ts ${Object.keys(scenarios).join('|')} [--unprofiled]`);
  if (unprofiled) delete process.env.BENCH_PROFILE_DIR;
  else process.env.BENCH_PROFILE_DIR ||= join(tmpdir(), 'mdapi-bench-profile');
  await globalSetup();
  const database = await createTestDatabase();
  try {
    const rows = await scenario(database.db);
    for (const [row, r] of Object.entries(rows)) {
      console.log(`${row}: ratio ${r.ratio.toFixed(2)}; whole stack ${side(r.full)}; bare ${side(r.baseline)}`);
    }
    if (!unprofiled) reportProfiles();
  } finally {
    await database.close();
  }
}

main(process.argv[2], process.argv.includes('--unprofiled')).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
