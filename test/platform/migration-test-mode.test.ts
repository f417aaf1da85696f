// The test-mode migration (0028) run against a database of the previous version with data in it (issue 26): a shop
// as 0027 knew it (SANDBOX and STRIPE gateways, an API key, a product, an order with a pending SANDBOX session, an
// event) is migrated up. Nothing is lost but the SANDBOX gateway; the shop is live on real time; the key made before
// the migration still authenticates, as a live key; the event says livemode; and the sandbox session started before
// the migration can no longer be shown or paid (404, nothing changed).
import { randomBytes, randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { migrations } from '../../db/migrations';
import { generateCredential } from '../../src/auth/credentials';
import { rowCounts, snapshotTables } from '../helpers/db-snapshot';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/test-database';

const previousVersion = '0027_idempotency_leases';
const migrationNames = Object.keys(migrations).sort();

// The schema of 0027, not of today.
type AnyDb = Kysely<any>;

const migrator = (db: AnyDb) => new Migrator({ db, provider: { getMigrations: async () => migrations } });

const shopId = `shop_${randomBytes(12).toString('hex')}`;
const key = generateCredential('api_key');
const credentialId = `key_${randomBytes(12).toString('hex')}`;
const productId = `prod_${randomBytes(12).toString('hex')}`;
const orderId = `ord_${randomBytes(12).toString('hex')}`;
const orderUniqid = randomUUID();
const eventId = `evt_${randomBytes(12).toString('hex')}`;
const attemptId = `pat_${randomBytes(12).toString('hex')}`;
const session = `sbx_${randomBytes(16).toString('hex')}`;

/** The rows the previous version wrote, in its own schema (plain SQL: today's code writes today's columns). */
async function seedPreviousVersion(db: AnyDb): Promise<void> {
  await sql`insert into shops (id, name, plan, currency) values (${shopId}, 'Old Shop', 'free', 'USD')`.execute(db);
  await sql`insert into gateways (id, shop_id, code, kind) values
    (${`gw_${randomBytes(8).toString('hex')}`}, ${shopId}, 'SANDBOX', 'SESSION'),
    (${`gw_${randomBytes(8).toString('hex')}`}, ${shopId}, 'STRIPE', 'HOSTED')`.execute(db);
  await sql`insert into credentials (id, shop_id, kind, token_hash, display_prefix, scopes, name)
    values (${credentialId}, ${shopId}, 'api_key', ${key.hash}, ${key.displayPrefix}, ${sql.val(['*'])}, 'old key')`.execute(
    db,
  );
  await sql`insert into products (id, shop_id, uniqid, slug, type, title, currency, price, price_display)
    values (${productId}, ${shopId}, ${randomUUID()}, 'old-product', 'SERVICE', 'Old Product', 'USD', 25, 25)`.execute(
    db,
  );
  await sql`insert into orders (id, shop_id, uniqid, kind, currency, status, payment_status, subtotal, total,
      is_developer_invoice, customer_email)
    values (${orderId}, ${shopId}, ${orderUniqid}, 'ORDER', 'USD', 'PENDING', 'PENDING', 25, 25, false,
      'ada@example.com')`.execute(db);
  await sql`insert into order_items (id, shop_id, order_id, position, product_id, product_title, product_type,
      quantity, unit_price, total)
    values (${`itm_${randomBytes(12).toString('hex')}`}, ${shopId}, ${orderId}, 0, ${productId}, 'Old Product',
      'SERVICE', 1, 25, 25)`.execute(db);
  await sql`insert into events (id, shop_id, type, data)
    values (${eventId}, ${shopId}, 'order:created', ${JSON.stringify({ uniqid: orderUniqid, total: 25, currency: 'USD' })})`.execute(
    db,
  );
  await sql`insert into payment_attempts (id, shop_id, order_id, gateway, status, amount, session_id)
    values (${attemptId}, ${shopId}, ${orderId}, 'SANDBOX', 'PENDING', 25, ${session})`.execute(db);
}

let database: TestDatabase;
let t: TestApp | undefined;
let countsBefore: Record<string, number>;
let migrated: string[];
let countsAfter: Record<string, number>;

beforeAll(async () => {
  database = await createEmptyTestDatabase();
  const up = await migrator(database.db).migrateTo(previousVersion);
  if (up.error) throw up.error;
  expect((up.results ?? []).map((r) => r.migrationName)).toEqual(
    migrationNames.slice(0, migrationNames.indexOf(previousVersion) + 1),
  );
  await seedPreviousVersion(database.db);
  countsBefore = await rowCounts(database.db);
  const latest = await migrator(database.db).migrateToLatest();
  if (latest.error) throw latest.error;
  migrated = (latest.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  // Counted before the app starts (which writes its server secrets on first start).
  countsAfter = await rowCounts(database.db);
  t = await startTestApp({ database });
});
afterAll(async () => {
  if (t) await t.close();
  else await database?.close();
});

test('the database was of the previous version and is migrated to the latest, 0028 included', () => {
  expect(migrated).toEqual(migrationNames.slice(migrationNames.indexOf(previousVersion) + 1));
  expect(migrated).toContain('0028_test_mode');
});

test('nothing is lost: every table keeps its rows, but gateways, which lose the live SANDBOX only', async () => {
  // Not vacuous: the rows the previous version wrote are counted.
  for (const table of ['shops', 'gateways', 'credentials', 'products', 'orders', 'order_items', 'events']) {
    expect({ table, rows: countsBefore[table]! > 0 }).toEqual({ table, rows: true });
  }
  expect(countsBefore.payment_attempts).toBe(1);
  // Tables later migrations add (migrated to the latest here) start empty; the rest keep their rows.
  const added = Object.keys(countsAfter).filter((table) => !(table in countsBefore));
  expect(added.map((table) => countsAfter[table])).toEqual(added.map(() => 0));
  const kept = Object.fromEntries(Object.entries(countsAfter).filter(([table]) => table in countsBefore));
  expect(kept).toEqual({ ...countsBefore, gateways: countsBefore.gateways! - 1 });
  const gateways = await t!.db.selectFrom('gateways').select('code').where('shop_id', '=', shopId).execute();
  expect(gateways.map((g) => g.code)).toEqual(['STRIPE']);
  const attempt = await t!.db
    .selectFrom('payment_attempts')
    .select(['gateway', 'status', 'session_id'])
    .where('id', '=', attemptId)
    .executeTakeFirstOrThrow();
  expect(attempt).toEqual({ gateway: 'SANDBOX', status: 'PENDING', session_id: session });
});

test('the shop is live, on real time, with no test twin made by the migration', async () => {
  const shop = await t!.db
    .selectFrom('shops')
    .select(['livemode', 'live_shop_id', 'clock_offset_ms'])
    .where('id', '=', shopId)
    .executeTakeFirstOrThrow();
  expect({ ...shop, clock_offset_ms: Number(shop.clock_offset_ms) }).toEqual({
    livemode: true,
    live_shop_id: null,
    clock_offset_ms: 0,
  });
  expect(await t!.db.selectFrom('shops').select('id').where('livemode', '=', false).execute()).toEqual([]);
});

test('the key made before the migration still authenticates, as a live key of its shop', async () => {
  const me = await t!.http.get('/dev/v1/me').set(bearer(key.token));
  expect(me.status).toBe(200);
  expect(me.body.data).toMatchObject({ id: shopId, livemode: true, live_account_id: null });
  const products = await t!.http.get('/dev/v1/products').set(bearer(key.token));
  expect(products.status).toBe(200);
  expect(products.body.data.map((p: { id: string }) => p.id)).toEqual([productId]);
});

test('the event written before the migration is a live event, and the live key reads it', async () => {
  const row = await t!.db.selectFrom('events').select('livemode').where('id', '=', eventId).executeTakeFirstOrThrow();
  expect(row.livemode).toBe(true);
  const res = await t!.http.get(`/dev/v1/events/${eventId}`).set(bearer(key.token));
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ id: eventId, type: 'order:created', livemode: true });
});

test('the sandbox session started before the migration is gone: its page and its pay answer 404, nothing changed', async () => {
  const before = await snapshotTables(t!.db, { skipTables: (table) => table === 'credentials' });
  const page = await t!.http.get(`/sandbox/checkout/${session}`);
  expect(page.status).toBe(404);
  for (const action of ['pay', 'fail']) {
    const res = await t!.http.post(`/sandbox/checkout/${session}/${action}`);
    expect({ action, status: res.status }).toEqual({ action, status: 404 });
  }
  expect(await snapshotTables(t!.db, { skipTables: (table) => table === 'credentials' })).toEqual(before);
  const order = await t!.db
    .selectFrom('orders')
    .select(['status', 'payment_status'])
    .where('id', '=', orderId)
    .executeTakeFirstOrThrow();
  expect(order).toEqual({ status: 'PENDING', payment_status: 'PENDING' });
});
