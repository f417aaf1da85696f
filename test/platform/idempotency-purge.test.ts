// The purge of expired idempotency keys (src/platform/idempotency.ts): what it deletes, the background schedule the
// server runs, its log lines, and that a failing purge is logged rather than thrown.
import { insertIdempotencyKey } from '../../db/queries/idempotency-keys';
import * as admin from '../../src/ops/admin';
import {
  PURGE_INTERVAL_MS,
  purgeExpiredIdempotencyKeys,
  REPLAY_WINDOW_MS,
  scheduleIdempotencyPurge,
} from '../../src/platform/idempotency';
import { ManualClock, systemClock } from '../../src/platform/clock';
import { memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

let database: TestDatabase;
let credentialId: string;
beforeAll(async () => {
  database = await createTestDatabase();
  const shop = await admin.createShop(database.db, { name: 'Purge' });
  credentialId = (await admin.createApiKey(database.db, { shopId: shop.id, scopes: ['*'] })).id;
});
afterAll(() => database?.close());

const T = Date.parse('2026-05-01T12:00:00Z');

async function keyExpiringAt(key: string, expiresAt: number): Promise<void> {
  await insertIdempotencyKey(database.db, {
    credential_id: credentialId,
    operation_id: 'duplicateProduct',
    key,
    fingerprint: 'f',
    state: 'processing',
    locked_at: new Date(expiresAt - REPLAY_WINDOW_MS),
    response_status: null,
    response_body: null,
    created_at: new Date(expiresAt - REPLAY_WINDOW_MS),
    expires_at: new Date(expiresAt),
  });
}

const keys = async () =>
  (await database.db.selectFrom('idempotency_keys').select('key').orderBy('key').execute()).map((r) => r.key);

test('the windows: 24 hours of replay, a purge every 10 minutes', () => {
  expect(REPLAY_WINDOW_MS).toBe(24 * 60 * 60 * 1000);
  expect(PURGE_INTERVAL_MS).toBe(10 * 60 * 1000);
});

test('deletes the keys whose window ended by then (at the instant included), keeps the rest; takes a Date or ms', async () => {
  await keyExpiringAt('a-expired', T - 1);
  await keyExpiringAt('b-at-now', T);
  await keyExpiringAt('c-later', T + 1);
  expect(await purgeExpiredIdempotencyKeys(database.db, T)).toBe(2);
  expect(await keys()).toEqual(['c-later']);
  expect(await purgeExpiredIdempotencyKeys(database.db, new Date(T))).toBe(0);
  expect(await purgeExpiredIdempotencyKeys(database.db, new Date(T + 1))).toBe(1);
  expect(await keys()).toEqual([]);
});

test('scheduled: purges in the background at each interval with the clock given, logs what it deleted', async () => {
  const { logger, logs } = memoryLogger();
  await keyExpiringAt('d-expired', T - 1000);
  await keyExpiringAt('e-kept', T + 1000);
  const stop = scheduleIdempotencyPurge(database.db, logger, new ManualClock(T), { intervalMs: 30 });
  try {
    await until(async () => (await keys()).length === 1);
    expect(await keys()).toEqual(['e-kept']);
    await until(async () => logs.some((l) => l.message === 'expired idempotency keys purged'));
    expect(logs.find((l) => l.message === 'expired idempotency keys purged')).toMatchObject({
      level: 'info',
      deleted: 1,
    });
    // Later runs find nothing to delete and say nothing.
    await new Promise((r) => setTimeout(r, 150));
    expect(logs.filter((l) => l.message === 'expired idempotency keys purged')).toHaveLength(1);
  } finally {
    stop();
  }
  // Stopped: a key that expires now stays.
  await keyExpiringAt('f-after-stop', T - 1);
  await new Promise((r) => setTimeout(r, 150));
  expect(await keys()).toEqual(['e-kept', 'f-after-stop']);
  await purgeExpiredIdempotencyKeys(database.db, T + 2000);
});

test('a failing purge is logged as a warning and the schedule carries on', async () => {
  const { logger, logs } = memoryLogger();
  const broken = {
    deleteFrom: () => {
      throw new Error('database unreachable');
    },
  } as unknown as TestDatabase['db'];
  const stop = scheduleIdempotencyPurge(broken, logger, systemClock, { intervalMs: 20 });
  try {
    await until(async () => logs.filter((l) => l.message === 'idempotency purge failed').length >= 2);
  } finally {
    stop();
  }
  expect(logs.find((l) => l.message === 'idempotency purge failed')).toMatchObject({
    level: 'warn',
    error: 'database unreachable',
  });
});

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`condition not met in ${ms} ms`);
}
