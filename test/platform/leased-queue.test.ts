// The leased-outbox protocol written once for dynamic deliveries, bot notifications and email-marketing syncs
// (db/queries/leased-queue.ts, src/worker/leased-queue.ts), checked on a real outbox table (email_marketing_syncs,
// rows queued as a buyer queues them) with a send the test holds open: while a lease holds no other worker claims
// the row; once it runs out another worker takes the row over and records its attempt, and the first worker's late
// outcome is dropped (and logged), not recorded, both attempts counted; a row whose outcome the database refuses to
// record is sent at most maxAttempts times, then FAILED; settling releases the lease; a row not yet due is not
// claimed; and scheduledDelayMs follows its schedule with jitter and ends after the last entry. Each queue's own outcomes,
// schedules and dead-lettering are checked in its own test file.
import { claimDueEmailMarketingSyncs, type ClaimedEmailMarketingSync } from '../../db/queries/email-marketing-sync';
import { sql } from 'kysely';
import { settleLeasedRow, UNRECORDED_ERROR } from '../../db/queries/leased-queue';
import { setEmailMarketingAsOperator } from '../../src/ops/marketing-admin';
import { ManualClock } from '../../src/platform/clock';
import { leasedQueueJob, scheduledDelayMs } from '../../src/worker/leased-queue';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2027-05-01T10:00:00Z'));
const LEASE_MS = 60_000;
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
});
afterAll(async () => {
  await t.close();
});

/** A shop with one queued sync row (due now); returns the shop's id. */
async function shopWithQueuedRow(): Promise<string> {
  const shopId = await t.createShop({ name: 'Leased' });
  const key = (await t.createKey(shopId, ['*'])).key;
  const product = (await t.seed(shopId, { products: [{ title: 'Ebook', price: '5.00' } as never] })).products[0]!;
  await setEmailMarketingAsOperator(t.operator, { shopId, provider: 'KLAVIYO', list: 'l1', apiKey: 'pk_leased' });
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: product, quantity: 1 }] });
  expect(res.status).toBe(201);
  return shopId;
}

/** What the email-marketing queue records for a sync its receiver took: SYNCED, with the attempt it made. */
const recordSynced = (
  trx: Parameters<typeof settleLeasedRow>[0],
  claim: Pick<ClaimedEmailMarketingSync, 'shop_id' | 'id'>,
  attemptsBefore: number,
) => {
  const now = clock.now();
  return settleLeasedRow(trx, 'email_marketing_syncs', claim.shop_id, claim.id, {
    status: 'SYNCED',
    attempts: attemptsBefore + 1,
    next_attempt_at: null,
    synced_at: now,
    updated_at: now,
  });
};

const rowsOf = (shopId: string) =>
  t.db.selectFrom('email_marketing_syncs').selectAll().where('shop_id', '=', shopId).execute();

/** A job over the sync outbox whose send waits until the test releases it, and which records every outcome. */
function probeJob(label: string, recorded: { label: string; id: string; attemptsBefore: number }[]) {
  const waiting: (() => void)[] = [];
  const sendCalled: ClaimedEmailMarketingSync[] = [];
  const job = leasedQueueJob(
    t.db,
    { clock, logger: t.logger, leaseMs: LEASE_MS },
    {
      name: `probe-${label}`,
      table: 'email_marketing_syncs',
      noun: 'probe row',
      idField: 'probe_id',
      maxAttempts: 5,
      claim: claimDueEmailMarketingSyncs,
      send: async (claim) => {
        sendCalled.push(claim);
        await new Promise<void>((resolve) => waiting.push(resolve));
        return label;
      },
      record: async (trx, claim, attemptsBefore, verdict) => {
        recorded.push({ label: verdict, id: claim.id, attemptsBefore });
        await recordSynced(trx, claim, attemptsBefore);
      },
    },
  );
  const releaseAll = () => waiting.splice(0).forEach((resolve) => resolve());
  return { job, sendCalled, releaseAll };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

test('a held lease keeps the row; a lease that ran out is taken over, and the late outcome is not recorded', async () => {
  const shopId = await shopWithQueuedRow();
  const [row] = await rowsOf(shopId);
  expect(row).toMatchObject({ status: 'PENDING', attempts: 0, lease_token: null });
  const recorded: { label: string; id: string; attemptsBefore: number }[] = [];
  const a = probeJob('a', recorded);
  const b = probeJob('b', recorded);

  const roundA = a.job.runOnce();
  await until(() => a.sendCalled.length === 1);
  expect(a.sendCalled[0]).toEqual({
    id: row!.id,
    shop_id: shopId,
    setting_id: row!.setting_id,
    email: 'buyer@example.com',
    attempts: 1, // counted by the claim, before the attempt is made
  });
  const leased = (await rowsOf(shopId))[0]!;
  expect(leased.lease_token).not.toBeNull();
  expect(leased.lease_until!.getTime()).toBe(clock.now().getTime() + LEASE_MS);

  // The lease holds (to its last millisecond): nobody else claims the row.
  clock.advance(LEASE_MS - 1);
  expect(await b.job.runOnce()).toBe(0);
  expect(b.sendCalled).toEqual([]);

  // It ran out: b takes the row over.
  clock.advance(1);
  const roundB = b.job.runOnce();
  await until(() => b.sendCalled.length === 1);
  expect(b.sendCalled[0]!.id).toBe(row!.id);

  // a's answer comes while b holds the row: a's lease was taken over, so nothing of it is recorded.
  a.releaseAll();
  expect(await roundA).toBe(1);
  expect(recorded).toEqual([]);
  expect(t.logs).toContainEqual(
    expect.objectContaining({ message: 'probe row finished after its lease was taken over', probe_id: row!.id }),
  );
  // Both claims counted an attempt: both were sent.
  expect((await rowsOf(shopId))[0]).toMatchObject({ status: 'PENDING', attempts: 2 });

  // b's answer is the one recorded, a's lost attempt counted before it.
  b.releaseAll();
  expect(await roundB).toBe(1);
  expect(recorded).toEqual([{ label: 'b', id: row!.id, attemptsBefore: 1 }]);
  const settled = (await rowsOf(shopId))[0]!;
  expect(settled).toMatchObject({ status: 'SYNCED', attempts: 2, lease_until: null, lease_token: null });
  expect(await a.job.runOnce()).toBe(0);
});

test('a row not due yet is not claimed; once due it is', async () => {
  const shopId = await shopWithQueuedRow();
  const due = new Date(clock.now().getTime() + 5_000);
  await t.db.updateTable('email_marketing_syncs').set({ next_attempt_at: due }).where('shop_id', '=', shopId).execute();
  const recorded: { label: string; id: string; attemptsBefore: number }[] = [];
  const p = probeJob('p', recorded);
  expect(await p.job.runOnce()).toBe(0);
  clock.advance(5_000);
  const round = p.job.runOnce();
  await until(() => p.sendCalled.length === 1);
  p.releaseAll();
  expect(await round).toBe(1);
  expect(recorded).toEqual([{ label: 'p', id: (await rowsOf(shopId))[0]!.id, attemptsBefore: 0 }]);
});

test('an outcome that cannot be recorded: sent at most maxAttempts times, then FAILED, never sent again', async () => {
  const shopId = await shopWithQueuedRow();
  const [row] = await rowsOf(shopId);
  const maxAttempts = 3;
  const sent: string[] = [];
  const job = leasedQueueJob(
    t.db,
    { clock, logger: t.logger, leaseMs: LEASE_MS },
    {
      name: 'probe-unrecorded',
      table: 'email_marketing_syncs',
      noun: 'probe row',
      idField: 'probe_id',
      maxAttempts,
      claim: claimDueEmailMarketingSyncs,
      send: async (claim) => {
        sent.push(claim.id);
        return 'sent';
      },
      record: async (trx, claim, attemptsBefore) => {
        await recordSynced(trx, claim, attemptsBefore);
      },
    },
  );
  // PostgreSQL refuses to record this shop's outcome (as it refused a NUL byte in an answer).
  await sql`create function refuse_sync_recording() returns trigger language plpgsql as $$
    begin raise exception 'recording refused (test fault)'; end $$`.execute(t.db);
  await sql`create trigger refuse_sync_recording before update on email_marketing_syncs for each row
    when (new.status = 'SYNCED' and new.shop_id = ${sql.lit(shopId)}) execute function refuse_sync_recording()`.execute(
    t.db,
  );
  try {
    for (let round = 0; round < maxAttempts + 3; round++) {
      await job.runOnce();
      clock.advance(LEASE_MS);
    }
    // Sent once per claim, every claim counted: maxAttempts sends, then given up, and nothing more.
    expect(sent).toEqual(Array.from({ length: maxAttempts }, () => row!.id));
    expect((await rowsOf(shopId))[0]).toMatchObject({
      status: 'FAILED',
      attempts: maxAttempts,
      next_attempt_at: null,
      lease_until: null,
      lease_token: null,
      last_error: UNRECORDED_ERROR,
      synced_at: null,
    });
    expect(t.logs).toContainEqual(
      expect.objectContaining({ message: 'probe row could not be recorded', probe_id: row!.id }),
    );
    expect(await job.runOnce()).toBe(0);
  } finally {
    await sql`drop trigger refuse_sync_recording on email_marketing_syncs`.execute(t.db);
    await sql`drop function refuse_sync_recording()`.execute(t.db);
  }
});

test('scheduledDelayMs: the schedule entry for the attempt, ±jitter; undefined (no draw) after the last', () => {
  const schedule = [1_000, 60_000];
  expect(scheduledDelayMs(schedule, 1, () => 0.5)).toBe(1_000);
  expect(scheduledDelayMs(schedule, 1, () => 0)).toBe(900);
  expect(scheduledDelayMs(schedule, 1, () => 1)).toBe(1_100);
  expect(scheduledDelayMs(schedule, 2, () => 0, 0.2)).toBe(48_000);
  let draws = 0;
  expect(
    scheduledDelayMs(schedule, 3, () => {
      draws++;
      return 0.5;
    }),
  ).toBeUndefined();
  expect(draws).toBe(0);
});
