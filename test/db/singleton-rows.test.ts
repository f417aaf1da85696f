// A shop's singleton rows (its store settings, its reseller program) are inserted by the shop's first write and
// locked by every write. First writes racing on real PostgreSQL all succeed, one after the other, on one row. Their
// ids are derived from the shop's, so two inserts collide on the primary key as well as on shop_id; each round of
// concurrent first writes meets in a window of microseconds, hence many rounds of many writers (pool of 20).
import { writeProgram } from '../../src/domain/resellers/resellers';
import { writeSettingsFixture } from '../../src/domain/store/settings';
import { ManualClock } from '../../src/platform/clock';
import { Effects, shopWrite, type ShopWrite } from '../../src/platform/unit-of-work';
import * as admin from '../../src/ops/admin';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t.close());

const writers = 8;
const rounds = 40;

/** `writers` first writes of one new shop at once, per round; every failure, with its code. */
async function raceFirstWrites(write: (w: ShopWrite, i: number) => Promise<unknown>): Promise<string[]> {
  const failures: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const shop = await admin.createShop(t.db, { name: `Singleton ${round}` });
    const results = await Promise.allSettled(
      Array.from({ length: writers }, (_, i) =>
        t.db.transaction().execute((trx) => write(shopWrite(trx, shop.id, new Effects(), clock), i)),
      ),
    );
    for (const r of results) {
      if (r.status === 'rejected') failures.push(`${round}: ${(r.reason as { code?: string }).code} ${r.reason}`);
    }
  }
  return failures;
}

/** How many rows each shop that has any holds in `table`. */
async function rowsPerShop(table: 'store_settings' | 'reseller_programs'): Promise<number[]> {
  const rows = await t.db
    .selectFrom(table)
    .select(({ fn }) => fn.countAll<string>().as('rows'))
    .groupBy('shop_id')
    .execute();
  return rows.map((r) => Number(r.rows));
}

pgOnly('first store-settings writes at once: all succeed, one row per shop, the last writer wins', async () => {
  const failures = await raceFirstWrites((w, i) => writeSettingsFixture(w, { name: `Writer ${i}` }, undefined));
  expect(failures).toEqual([]);
  expect(await rowsPerShop('store_settings')).toEqual(Array.from({ length: rounds }, () => 1));
});

pgOnly('first reseller-program writes at once: all succeed, one row per shop', async () => {
  const failures = await raceFirstWrites((w, i) => writeProgram(w, { application_message: `Writer ${i}` }));
  expect(failures).toEqual([]);
  expect(await rowsPerShop('reseller_programs')).toEqual(Array.from({ length: rounds }, () => 1));
});
