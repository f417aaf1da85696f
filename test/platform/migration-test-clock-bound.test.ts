// The test-clock bound's migration (0030, issue 36) against a database of the previous version: a test shop whose
// clock an unbounded advance had taken past year 9999 is brought back to the bound (ten years ahead), one within it
// keeps its clock, and afterwards the database itself refuses an offset beyond the bound (or a live shop's clock).
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { migrations } from '../../db/migrations';
import { maxClockOffsetSeconds } from '../../src/domain/test-mode';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/test-database';

const previousVersion = '0029_trace_context';
const MAX_MS = maxClockOffsetSeconds * 1000;
// Where 800 advances of ten years took a clock before the bound: past year 10000.
const PAST_9999_MS = 800 * MAX_MS;

type AnyDb = Kysely<any>;
const migrator = (db: AnyDb) => new Migrator({ db, provider: { getMigrations: async () => migrations } });
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

const live = [id('shop'), id('shop')];
const far = id('shop');
const near = id('shop');

let database: TestDatabase;
beforeAll(async () => {
  database = await createEmptyTestDatabase();
  const up = await migrator(database.db).migrateTo(previousVersion);
  if (up.error) throw up.error;
  for (const shop of live) {
    await sql`insert into shops (id, name, plan, currency) values (${shop}, 'Live', 'free', 'USD')`.execute(
      database.db,
    );
  }
  await sql`insert into shops (id, name, plan, currency, livemode, live_shop_id, clock_offset_ms) values
    (${far}, 'Far', 'free', 'USD', false, ${live[0]}, ${PAST_9999_MS}),
    (${near}, 'Near', 'free', 'USD', false, ${live[1]}, ${35 * 86_400_000})`.execute(database.db);
  const latest = await migrator(database.db).migrateToLatest();
  if (latest.error) throw latest.error;
  expect((latest.results ?? []).map((r) => r.migrationName)).toContain('0030_test_clock_bound');
});
afterAll(() => database?.close());

const offsetOf = async (shop: string) =>
  Number(
    (await database.db.selectFrom('shops').select('clock_offset_ms').where('id', '=', shop).executeTakeFirstOrThrow())
      .clock_offset_ms,
  );

test('a clock past year 9999 is brought back to ten years ahead; one within the bound keeps its time', async () => {
  expect(new Date(Date.now() + PAST_9999_MS).toISOString()).toMatch(/^\+0\d{5}-/); // not a time PostgreSQL takes
  expect(await offsetOf(far)).toBe(MAX_MS);
  expect(await offsetOf(near)).toBe(35 * 86_400_000);
  expect(await offsetOf(live[0]!)).toBe(0);
});

test('the database refuses an offset beyond the bound, and any on a live shop; up to the bound it takes', async () => {
  const set = (shop: string, ms: number) =>
    sql`update shops set clock_offset_ms = ${ms} where id = ${shop}`.execute(database.db);
  await expect(set(near, MAX_MS + 1)).rejects.toMatchObject({ code: '23514' });
  await expect(set(live[1]!, 1000)).rejects.toMatchObject({ code: '23514' });
  expect(await offsetOf(near)).toBe(35 * 86_400_000);
  expect(await offsetOf(live[1]!)).toBe(0);
  await set(near, MAX_MS);
  expect(await offsetOf(near)).toBe(MAX_MS);
});
