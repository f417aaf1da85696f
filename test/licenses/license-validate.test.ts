// POST /licenses/validate (issue 11, item 1): every rule and error code, each refusal checked for what it did not
// write (the license's last_validated_at, its devices), the activation limit (N devices), one round trip to the
// database per validation (counted on a database handle of this file's own), the idempotent path, and the races on
// real PostgreSQL: 20 first validations with different hwids on a 1-device license register exactly one.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool, type PoolClient } from 'pg';
import { createPGlite, wrapPGlite } from '../../db/database';
import type { Database } from '../../db/tables';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { shopById } from '../../db/queries/shops';
import { ManualClock } from '../../src/platform/clock';
import { rowCounts } from '../helpers/counts';
import { bearer, contractClient, memoryLogger, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';
import { createTestDatabase, snapshotPath } from '../helpers/test-database';
import { systemClock } from '../../src/platform/clock';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let keyA: string;
let writerA: string;
let keyB: string;
let productA: string;
let otherProductA: string;
let productB: string;

const NOW = Date.parse('2026-11-22T00:00:00Z');
const secs = (ms: number) => Math.floor(ms / 1000);

beforeAll(async () => {
  clock = new ManualClock(NOW);
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'Validate A', scopes: ['licenses.read'] },
    b: { name: 'Validate B' },
  }));
  writerA = (await t.createKey(shopA, ['licenses.write', 'licenses.read'])).key;
  [productA, otherProductA] = (
    await t.seed(shopA, {
      products: [
        { title: 'App', price: '10.00' },
        { title: 'Other', price: '10.00' },
      ],
    })
  ).products as [string, string];
  productB = (await t.seed(shopB, { products: [{ title: 'App', price: '10.00' }] })).products[0]!;
});
afterAll(() => t.close());

let requests = 0;
const validate = (body: object, key = keyA) =>
  t.http
    .post('/dev/v1/licenses/validate')
    .set(bearer(key))
    .set('X-Request-Id', `lv-${++requests}-${randomBytes(3).toString('hex')}`)
    .send(body);
const create = async (body: object, key = writerA) => {
  const res = await t.http.post('/dev/v1/licenses').set(bearer(key)).send(body);
  expect(res.status).toBe(201);
  return res.body.data as { id: string; key: string };
};

/** What a validation may change. */
const state = async (id: string) => ({
  license: await t.db
    .selectFrom('licenses')
    .select(['status', 'last_validated_at', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirst(),
  devices: (
    await t.db
      .selectFrom('license_devices')
      .select(['slot', 'hwid', 'last_validated_at'])
      .where('license_id', '=', id)
      .orderBy('slot')
      .execute()
  ).map((d) => `${d.slot}:${d.hwid}:${d.last_validated_at.toISOString()}`),
  counts: await rowCounts(t.db, ['licenses', 'license_devices', 'events']),
});

const entriesOf = async (requestId: string) =>
  t.db
    .selectFrom('audit_entries')
    .select(['operation_id', 'status', 'error_code', 'resource_type', 'resource_id', 'shop_id'])
    .where('request_id', '=', requestId)
    .execute();

describe('accepted', () => {
  test('a valid key without hwid: 200 { valid, license }, last_validated_at stamped, no device, one audit entry', async () => {
    const lic = await create({ product_id: productA, note: 'n' });
    clock.set(NOW + 7000);
    const res = await validate({ key: lic.key });
    expect(res.status).toBe(200);
    expect(res.headers['idempotency-status']).toBe('bypassed');
    expect(res.body.data).toEqual({
      valid: true,
      license: expect.objectContaining({
        id: lic.id,
        key: lic.key,
        status: 'ACTIVE',
        hwid: null,
        devices: [],
        note: 'n',
        last_validated_at: secs(NOW) + 7,
        updated_at: secs(NOW),
      }),
    });
    const after = await state(lic.id);
    expect(after.license!.last_validated_at!.getTime()).toBe(NOW + 7000);
    expect(after.devices).toEqual([]);
    expect(await entriesOf(res.headers['x-request-id']!)).toEqual([
      {
        operation_id: 'validateLicense',
        status: 200,
        error_code: null,
        resource_type: 'license',
        resource_id: lic.id,
        shop_id: shopA,
      },
    ]);
    // The same through GET.
    const read = await t.http.get(`/dev/v1/licenses/${lic.id}`).set(bearer(keyA));
    expect(read.body.data.last_validated_at).toBe(secs(NOW) + 7);
    clock.set(NOW);
  });

  test('the first validation with hwid registers the device; the same device again is valid and stamped', async () => {
    const lic = await create({ product_id: productA });
    const first = await validate({ key: lic.key, hwid: 'HW-1', product_id: productA });
    expect(first.status).toBe(200);
    expect(first.body.data.license).toMatchObject({
      hwid: 'HW-1',
      devices: [{ hwid: 'HW-1', registered_at: secs(NOW), last_validated_at: secs(NOW) }],
    });
    clock.set(NOW + 60_000);
    const again = await validate({ key: lic.key, hwid: 'HW-1' });
    expect(again.status).toBe(200);
    expect(again.body.data.license.devices).toEqual([
      { hwid: 'HW-1', registered_at: secs(NOW), last_validated_at: secs(NOW) + 60 },
    ]);
    expect((await state(lic.id)).devices).toEqual([`1:HW-1:${new Date(NOW + 60_000).toISOString()}`]);
    // Without hwid: still valid, the device is neither checked nor changed.
    const bare = await validate({ key: lic.key });
    expect([bare.status, bare.body.data.license.hwid]).toEqual([200, 'HW-1']);
    clock.set(NOW);
  });

  test('an activation limit of N: N devices register, the next is LICENSE_HWID_MISMATCH; releasing one frees a slot', async () => {
    const lic = await create({ product_id: productA, activation_limit: 3 });
    for (const hwid of ['A', 'B', 'C']) expect((await validate({ key: lic.key, hwid })).status).toBe(200);
    const before = await state(lic.id);
    const fourth = await validate({ key: lic.key, hwid: 'D' });
    expect([fourth.status, fourth.body.error.code]).toEqual([400, 'LICENSE_HWID_MISMATCH']);
    expect(await state(lic.id)).toEqual(before);
    // Every registered one is still valid.
    for (const hwid of ['C', 'A']) expect((await validate({ key: lic.key, hwid })).status).toBe(200);
    const released = await t.http
      .patch(`/dev/v1/licenses/${lic.id}`)
      .set(bearer(writerA))
      .send({ release_devices: ['B'] });
    expect(released.body.data.devices.map((d: { hwid: string }) => d.hwid)).toEqual(['A', 'C']);
    const d = await validate({ key: lic.key, hwid: 'D' });
    expect(d.status).toBe(200);
    // D takes the freed slot 2.
    expect(d.body.data.license.devices.map((x: { hwid: string }) => x.hwid)).toEqual(['A', 'D', 'C']);
    expect((await validate({ key: lic.key, hwid: 'B' })).status).toBe(400);
  });

  test('PATCH hwid: null releases the device: the next validation registers anew', async () => {
    const lic = await create({ product_id: productA, hwid: 'OLD' });
    expect((await validate({ key: lic.key, hwid: 'NEW' })).body.error.code).toBe('LICENSE_HWID_MISMATCH');
    await t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ hwid: null });
    expect((await validate({ key: lic.key, hwid: 'NEW' })).status).toBe(200);
    expect((await validate({ key: lic.key, hwid: 'OLD' })).body.error.code).toBe('LICENSE_HWID_MISMATCH');
  });

  test('with an Idempotency-Key it runs in the idempotent write path: replayed, registered once', async () => {
    const lic = await create({ product_id: productA });
    const send = () =>
      t.http
        .post('/dev/v1/licenses/validate')
        .set(bearer(keyA))
        .set('Idempotency-Key', `val-${lic.id}`)
        .send({ key: lic.key, hwid: 'IDEM' });
    const first = await send();
    expect([first.status, first.headers['idempotency-status']]).toEqual([200, 'created']);
    const replay = await send();
    expect([replay.status, replay.headers['idempotency-status']]).toEqual([200, 'cached']);
    expect(replay.body).toEqual(first.body);
    expect((await state(lic.id)).devices).toHaveLength(1);
    expect(await entriesOf(first.headers['x-request-id']!)).toEqual([
      expect.objectContaining({ operation_id: 'validateLicense', status: 200, resource_id: lic.id }),
    ]);
  });
});

describe('refused: 400 with the code, and nothing written (no stamp, no device)', () => {
  async function refused(body: object, code: string, licenseId?: string, key = keyA) {
    const before = licenseId
      ? await state(licenseId)
      : await rowCounts(t.db, ['licenses', 'license_devices', 'events']);
    const res = await validate(body, key);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code });
    expect(
      licenseId ? await state(licenseId) : await rowCounts(t.db, ['licenses', 'license_devices', 'events']),
    ).toEqual(before);
    // The refusal is in the audit trail, with its code.
    expect(await entriesOf(res.headers['x-request-id']!)).toEqual([
      expect.objectContaining({ operation_id: 'validateLicense', status: 400, error_code: code }),
    ]);
    return res;
  }

  test('unknown key: LICENSE_INVALID', async () => {
    await refused({ key: 'NOPE-NOPE-NOPE' }, 'LICENSE_INVALID');
    await refused({ key: 'NOPE-NOPE-NOPE', hwid: 'HW' }, 'LICENSE_INVALID');
  });

  test('malformed key (not visible ASCII): LICENSE_INVALID (400, not 422)', async () => {
    for (const key of ['has space', 'ключ-1234', 'tab\there', 'new\nline']) await refused({ key }, 'LICENSE_INVALID');
  });

  test('revoked: LICENSE_INVALID, even with its registered device; re-activated: valid again', async () => {
    const lic = await create({ product_id: productA, hwid: 'R-1' });
    await t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ status: 'REVOKED' });
    await refused({ key: lic.key }, 'LICENSE_INVALID', lic.id);
    await refused({ key: lic.key, hwid: 'R-1' }, 'LICENSE_INVALID', lic.id);
    await refused({ key: lic.key, hwid: 'R-2' }, 'LICENSE_INVALID', lic.id);
    await t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ status: 'ACTIVE' });
    expect((await validate({ key: lic.key, hwid: 'R-1' })).status).toBe(200);
  });

  test('another product’s key: LICENSE_INVALID, and its device is not registered', async () => {
    const lic = await create({ product_id: productA });
    await refused({ key: lic.key, product_id: otherProductA, hwid: 'P-1' }, 'LICENSE_INVALID', lic.id);
    await refused({ key: lic.key, product_id: 'prod_missing' }, 'LICENSE_INVALID', lic.id);
    expect((await validate({ key: lic.key, product_id: productA })).status).toBe(200);
  });

  test('another shop’s key: LICENSE_INVALID (a key belongs to its shop)', async () => {
    const theirs = await create({ product_id: productB }, keyB);
    await refused({ key: theirs.key, hwid: 'X' }, 'LICENSE_INVALID', theirs.id);
    await refused({ key: theirs.key, product_id: productB }, 'LICENSE_INVALID', theirs.id);
    expect((await validate({ key: theirs.key }, keyB)).status).toBe(200);
  });

  test('a deleted license: LICENSE_INVALID', async () => {
    const lic = await create({ product_id: productA });
    await t.http.delete(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA));
    await refused({ key: lic.key }, 'LICENSE_INVALID');
  });

  test('past expires_at: LICENSE_EXPIRED (checked after INVALID, before the device)', async () => {
    const lic = await create({ product_id: productA, expires_at: secs(NOW) + 60, hwid: 'E-1' });
    expect((await validate({ key: lic.key, hwid: 'E-1' })).status).toBe(200);
    clock.set(NOW + 60_000);
    await refused({ key: lic.key }, 'LICENSE_EXPIRED', lic.id);
    await refused({ key: lic.key, hwid: 'E-1' }, 'LICENSE_EXPIRED', lic.id);
    await refused({ key: lic.key, hwid: 'E-2' }, 'LICENSE_EXPIRED', lic.id);
    await refused({ key: lic.key, product_id: otherProductA }, 'LICENSE_INVALID', lic.id);
    await t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ status: 'REVOKED' });
    await refused({ key: lic.key }, 'LICENSE_INVALID', lic.id);
    clock.set(NOW);
    await t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ status: 'ACTIVE' });
    expect((await validate({ key: lic.key, hwid: 'E-1' })).status).toBe(200);
  });

  test('another device on a 1-device license: LICENSE_HWID_MISMATCH', async () => {
    const lic = await create({ product_id: productA });
    expect((await validate({ key: lic.key, hwid: 'MINE' })).status).toBe(200);
    const res = await refused({ key: lic.key, hwid: 'THEIRS' }, 'LICENSE_HWID_MISMATCH', lic.id);
    expect(res.body.error.message).toContain('another device');
  });

  test('a bad body is 422; no credential 401; a key without licenses.read 403', async () => {
    for (const body of [{}, { key: '' }, { key: 'x'.repeat(257) }, { key: 'K', hwid: '' }, { key: 'K', extra: 1 }]) {
      expect((await validate(body)).status).toBe(422);
    }
    expect((await t.http.post('/dev/v1/licenses/validate').send({ key: 'K' })).status).toBe(401);
    const noScope = (await t.createKey(shopA, ['orders.read'])).key;
    expect((await validate({ key: 'K' }, noScope)).status).toBe(403);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// One round trip: an app on a database handle of this file's own, counting every statement sent to the database.
// ---------------------------------------------------------------------------------------------------------------

interface CountingDb {
  db: Kysely<Database>;
  statements: string[];
  close(): Promise<void>;
}

async function countingDatabase(): Promise<CountingDb> {
  const statements: string[] = [];
  if (process.env.DATABASE_URL) {
    const created = await createTestDatabase();
    const pool = new Pool({ connectionString: created.url, max: 4 });
    pool.on('error', () => undefined);
    pool.on('connect', (client: PoolClient) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
        const first = args[0] as string | { text?: string };
        statements.push(typeof first === 'string' ? first : (first.text ?? ''));
        return query(...args);
      };
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      statements,
      close: async () => {
        await db.destroy();
        await created.close();
      },
    };
  }
  const pg = await createPGlite({ loadDataDir: new Blob([readFileSync(snapshotPath())]) });
  const query = pg.query.bind(pg);
  const transaction = pg.transaction.bind(pg);
  (pg as unknown as { query: unknown }).query = (text: string, ...rest: unknown[]) => {
    statements.push(text);
    return (query as (...a: unknown[]) => unknown)(text, ...rest);
  };
  (pg as unknown as { transaction: unknown }).transaction = (fn: unknown) => {
    statements.push('BEGIN (transaction)');
    return (transaction as (f: unknown) => unknown)(fn);
  };
  const handle = wrapPGlite(pg);
  return { db: handle.db, statements, close: () => handle.close() };
}

test('a validation is one round trip: the credential look-up and ONE statement, no transaction', async () => {
  const counting = await countingDatabase();
  try {
    const { logger } = memoryLogger();
    const app = await createApp({
      clock: systemClock,
      db: counting.db,
      config: loadConfig({ PUBLIC_URL: 'http://api.test', RATE_LIMIT_FREE: '100000' }),
      logger,
    });
    const http = contractClient(app);
    const shop = (await admin.createShop(counting.db, { name: 'Counting' })).id;
    const key = (await admin.createApiKey(counting.db, { shopId: shop, scopes: ['licenses.read', 'licenses.write'] }))
      .key;
    const shopRow = (await shopById(counting.db, shop))!;
    const seeded = await counting.db.transaction().execute((trx) =>
      seedFixtures(
        trx,
        shopRow,
        {
          products: [{ title: 'App', price: '1.00', license_activation_limit: 2 }],
          licenses: [{ product: 'App', key: 'COUNT-ME-1' }],
        },
        systemClock,
      ),
    );
    expect(seeded.licenses).toHaveLength(1);
    const post = (body: object) => http.post('/dev/v1/licenses/validate').set(bearer(key)).send(body);
    // Warm up: the credential's last-used stamp (once a minute) and the server secret of the keys (once per app).
    expect((await post({ key: 'COUNT-ME-1' })).status).toBe(200);

    const cases: [string, object][] = [
      ['no device', { key: 'COUNT-ME-1' }],
      ['first device (registers)', { key: 'COUNT-ME-1', hwid: 'DEV-1' }],
      ['known device', { key: 'COUNT-ME-1', hwid: 'DEV-1' }],
      ['second device (registers, last slot)', { key: 'COUNT-ME-1', hwid: 'DEV-2' }],
    ];
    for (const [label, body] of cases) {
      counting.statements.length = 0;
      const res = await post(body);
      expect({ label, status: res.status }).toEqual({ label, status: 200 });
      const sent = counting.statements.map((s) => s.trim().split(/\s+/).slice(0, 3).join(' '));
      expect({ label, count: sent.length }).toEqual({ label, count: 2 });
      // The credential look-up, then the validation statement (look-up, checks, device, stamp, audit entry).
      expect(counting.statements[1]).toMatch(/^\s*with lic as/);
      expect(counting.statements.some((s) => /^\s*(begin|BEGIN)/.test(s))).toBe(false);
    }
    // And it wrote what it says: two devices, an audit entry per request.
    const devices = await counting.db.selectFrom('license_devices').select('hwid').orderBy('slot').execute();
    expect(devices.map((d) => d.hwid)).toEqual(['DEV-1', 'DEV-2']);
    const entries = await counting.db
      .selectFrom('audit_entries')
      .select('status')
      .where('operation_id', '=', 'validateLicense')
      .execute();
    expect(entries).toHaveLength(5);
    // A device beyond the limit is a refusal: the statement (which sees no free slot: no second look) plus the
    // refusal's audit entry in a transaction of its own.
    counting.statements.length = 0;
    const third = await post({ key: 'COUNT-ME-1', hwid: 'DEV-3' });
    expect(third.body.error.code).toBe('LICENSE_HWID_MISMATCH');
    expect(counting.statements.filter((s) => /^\s*with lic as/.test(s))).toHaveLength(1);
  } finally {
    await counting.close();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Races (real PostgreSQL: PGlite has one connection, so its requests never overlap)
// ---------------------------------------------------------------------------------------------------------------

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly(
    '20 concurrent first validations with different hwids on a 1-device license: exactly one registers',
    async () => {
      for (let round = 0; round < 3; round++) {
        const lic = await create({ product_id: productA });
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => validate({ key: lic.key, hwid: `RACE-${round}-${i}` })),
        );
        const ok = results.filter((r) => r.status === 200);
        expect(ok).toHaveLength(1);
        const refused = results.filter((r) => r.status !== 200);
        expect(refused.map((r) => `${r.status} ${r.body.error.code}`)).toEqual(
          Array(19).fill('400 LICENSE_HWID_MISMATCH'),
        );
        const devices = (await state(lic.id)).devices;
        expect(devices).toHaveLength(1);
        expect(devices[0]).toContain(ok[0]!.body.data.license.hwid);
      }
    },
  );

  pgOnly('20 concurrent first validations on a 3-device license: exactly three register', async () => {
    const lic = await create({ product_id: productA, activation_limit: 3 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => validate({ key: lic.key, hwid: `TRIO-${i}` })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 400 && r.body.error.code === 'LICENSE_HWID_MISMATCH')).toHaveLength(17);
    expect((await state(lic.id)).devices).toHaveLength(3);
  });

  pgOnly('20 concurrent first validations of the SAME device: all valid, one registration', async () => {
    const lic = await create({ product_id: productA });
    const results = await Promise.all(Array.from({ length: 20 }, () => validate({ key: lic.key, hwid: 'SAME' })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect((await state(lic.id)).devices).toHaveLength(1);
  });

  pgOnly('validations racing a device reset and a revocation: no deadlock, every answer consistent', async () => {
    const lic = await create({ product_id: productA, activation_limit: 2, hwid: 'KEEP' });
    const work = [
      ...Array.from({ length: 10 }, (_, i) => validate({ key: lic.key, hwid: i % 2 ? 'KEEP' : `N-${i}` })),
      t.http.patch(`/dev/v1/licenses/${lic.id}`).set(bearer(writerA)).send({ hwid: null }),
      ...Array.from({ length: 10 }, (_, i) => validate({ key: lic.key, hwid: `M-${i}` })),
    ];
    const results = await Promise.all(work);
    expect(
      results.every((r) => r.status === 200 || (r.status === 400 && r.body.error.code === 'LICENSE_HWID_MISMATCH')),
    ).toBe(true);
    expect((await state(lic.id)).devices.length).toBeLessThanOrEqual(2);
  });
});
