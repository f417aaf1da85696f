// The reseller program through HTTP: the program (lazy default, partial patch, OPEN needs a default tier, unknown
// tier), the tiers (read-only, sort order, live member counts), invitations (program enabled, tier resolvable, 409
// on a live email, a REJECTED email invited again on the same row, the mail and the event), suspend and reinstate
// (status rules, the event only on suspend), the list and one reseller, the moves the specification leaves open
// (the CLI functions), wholesale pricing on orders and the lifetime figures completion and refunds move. Every
// refusal is checked for what it did not change (reseller rows, program, tiers, customers, events, mail); races on
// real PostgreSQL.
import { sql } from 'kysely';
import {
  applyResellerAsOperator,
  createTierAsOperator,
  moveResellerAsOperator,
  type TierCommand,
} from '../../src/ops/reseller-admin';
import { programIdOf } from '../../src/domain/resellers/resellers';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

interface Shop {
  id: string;
  key: string;
  /** A 10.00 SERVICE product and a 33.33 one. */
  p10: string;
  p33: string;
}

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Resale ${uid()}`, currency: 'USD' });
  const key = (await t.createKey(id, ['*'])).key;
  const seeded = await t.seed(id, {
    products: [
      { title: 'Ten', price: '10.00', type: 'SERVICE' },
      { title: 'Odd', price: '33.33', type: 'SERVICE' },
    ],
  });
  const [p10, p33] = seeded.products as [string, string];
  return { id, key, p10, p33 };
}

const tier = async (shop: Shop, input: Omit<TierCommand, 'shopId'>) =>
  (await createTierAsOperator(t.operator, { shopId: shop.id, ...input })).id;

const getProgram = (s: Shop, key = s.key) => t.http.get('/dev/v1/reseller-program').set(bearer(key));
const patchProgram = (s: Shop, body: Record<string, unknown>, key = s.key) =>
  t.http.patch('/dev/v1/reseller-program').set(bearer(key)).send(body);
const tiers = (s: Shop, key = s.key) => t.http.get('/dev/v1/reseller-tiers').set(bearer(key));
const invite = (s: Shop, body: Record<string, unknown>, key = s.key) =>
  t.http.post('/dev/v1/resellers/invite').set(bearer(key)).send(body);
const getReseller = (s: Shop, id: string, key = s.key) => t.http.get(`/dev/v1/resellers/${id}`).set(bearer(key));
const list = (s: Shop, query: Record<string, string | number> = {}, key = s.key) =>
  t.http.get('/dev/v1/resellers').query(query).set(bearer(key));
const suspend = (s: Shop, id: string, key = s.key) =>
  t.http.post(`/dev/v1/resellers/${id}/suspend`).set(bearer(key)).send({});
const reinstate = (s: Shop, id: string, key = s.key) =>
  t.http.post(`/dev/v1/resellers/${id}/reinstate`).set(bearer(key)).send({});

/** The reseller row of an email in the shop. */
const row = async (s: Shop, email: string) =>
  t.db
    .selectFrom('resellers')
    .selectAll()
    .where('shop_id', '=', s.id)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirstOrThrow();

/** Invites `email` (the program enabled with `tierId` as default when asked) and returns the reseller id. */
async function invited(s: Shop, email: string, tierId?: string): Promise<string> {
  const res = await invite(s, { email, ...(tierId ? { tier_id: tierId } : {}) });
  expect(res.status).toBe(200);
  return (await row(s, email)).id;
}

/** A shop with the program enabled and a default tier `Base` (percent given). */
async function programShop(discount = '10'): Promise<Shop & { base: string }> {
  const s = await newShop();
  const base = await tier(s, { name: 'Base', discount, sortOrder: '0', isDefault: true });
  expect((await patchProgram(s, { enabled: true })).status).toBe(200);
  return { ...s, base };
}

/** An ACTIVE reseller: invited, then the invitation accepted (CLI). */
async function activeReseller(s: Shop, email: string, tierId?: string): Promise<string> {
  const id = await invited(s, email, tierId);
  await moveResellerAsOperator(t.operator, { shopId: s.id, email }, 'accept');
  return id;
}

/** Everything the reseller operations may write in a shop, for "a refusal changed nothing". */
async function world(shopId: string) {
  const text = async (query: ReturnType<typeof sql<{ s: string | null }>>) => (await query.execute(t.db)).rows[0]!.s;
  return {
    resellers: await text(
      sql`select string_agg(to_jsonb(r)::text, ',' order by id) as s from resellers r where shop_id = ${shopId}`,
    ),
    program: await text(
      sql`select string_agg(to_jsonb(p)::text, ',' order by id) as s from reseller_programs p where shop_id = ${shopId}`,
    ),
    tiers: await text(
      sql`select string_agg(to_jsonb(x)::text, ',' order by id) as s from reseller_tiers x where shop_id = ${shopId}`,
    ),
    customers: await text(
      sql`select string_agg(to_jsonb(c)::text, ',' order by id) as s from customers c where shop_id = ${shopId}`,
    ),
    events: await text(
      sql`select string_agg(type || data::text, ',' order by id) as s from events where shop_id = ${shopId}`,
    ),
    mail: await text(
      sql`select string_agg(to_address || template, ',' order by id) as s from outbound_emails where shop_id = ${shopId}`,
    ),
    orders: await text(
      sql`select string_agg(id || status || total::text, ',' order by id) as s from orders where shop_id = ${shopId}`,
    ),
  };
}

const eventsOf = async (shopId: string, type: string) =>
  (
    await t.db
      .selectFrom('events')
      .select('data')
      .where('shop_id', '=', shopId)
      .where('type', '=', type)
      .orderBy('id')
      .execute()
  ).map((e) => (typeof e.data === 'string' ? JSON.parse(e.data) : e.data));

const mailOf = async (shopId: string) =>
  t.db
    .selectFrom('outbound_emails')
    .select(['to_address', 'template', 'text'])
    .where('shop_id', '=', shopId)
    .where('template', '=', 'reseller_invitation')
    .orderBy('id')
    .execute();

// ---------------------------------------------------------------------------------------------------------------
// Program
// ---------------------------------------------------------------------------------------------------------------

describe('GET /reseller-program', () => {
  test('a shop that never had one reads a disabled MANUAL program (never 404), and the read stores nothing', async () => {
    const s = await newShop();
    const res = await getProgram(s);
    expect(res.status).toBe(200);
    expect(res.body.data.program).toMatchObject({
      id: programIdOf(s.id),
      enabled: false,
      enrollment_mode: 'MANUAL',
      application_message: null,
      require_application_note: false,
      default_tier_id: null,
    });
    expect((await world(s.id)).program).toBeNull();
    // The same program (id, created_at) once written.
    const patched = await patchProgram(s, { enabled: true });
    expect(patched.status).toBe(200);
    expect(patched.body.data.program.id).toBe(res.body.data.program.id);
    expect(patched.body.data.program.created_at).toBe(res.body.data.program.created_at);
    expect((await getProgram(s)).body.data.program).toEqual(patched.body.data.program);
  });
});

describe('PATCH /reseller-program', () => {
  test('partial: only the fields sent change', async () => {
    const s = await newShop();
    const gold = await tier(s, { name: 'Gold', discount: '20' });
    const first = await patchProgram(s, {
      enabled: true,
      application_message: 'Tell us about your audience.',
      require_application_note: true,
    });
    expect(first.status).toBe(200);
    clock.advance(60_000);
    const second = await patchProgram(s, { enrollment_mode: 'APPLICATION', default_tier_id: gold });
    expect(second.status).toBe(200);
    expect(second.body.data.program).toMatchObject({
      enabled: true,
      enrollment_mode: 'APPLICATION',
      application_message: 'Tell us about your audience.',
      require_application_note: true,
      default_tier_id: gold,
    });
    const cleared = await patchProgram(s, { application_message: null });
    expect(cleared.body.data.program).toMatchObject({
      application_message: null,
      enabled: true,
      default_tier_id: gold,
    });
  });

  test('application_message: 2000 characters pass, 2001 are 422 and change nothing', async () => {
    const s = await newShop();
    expect((await patchProgram(s, { application_message: 'x'.repeat(2000) })).status).toBe(200);
    const before = await world(s.id);
    const res = await patchProgram(s, { application_message: 'y'.repeat(2001), enabled: true });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(await world(s.id)).toEqual(before);
  });

  test('OPEN without a default tier (none sent, none stored): 422 DEFAULT_TIER_REQUIRED, nothing changes', async () => {
    const s = await newShop();
    await tier(s, { name: 'Base', discount: '5' });
    const before = await world(s.id);
    const res = await patchProgram(s, { enrollment_mode: 'OPEN', enabled: true });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('DEFAULT_TIER_REQUIRED');
    expect(await world(s.id)).toEqual(before);
    expect((await getProgram(s)).body.data.program).toMatchObject({ enabled: false, enrollment_mode: 'MANUAL' });
  });

  test('OPEN with the default tier sent, or already stored: accepted', async () => {
    const s = await newShop();
    const base = await tier(s, { name: 'Base', discount: '5' });
    const sent = await patchProgram(s, { enrollment_mode: 'OPEN', default_tier_id: base });
    expect(sent.status).toBe(200);
    expect(sent.body.data.program).toMatchObject({ enrollment_mode: 'OPEN', default_tier_id: base });

    const s2 = await newShop();
    const base2 = await tier(s2, { name: 'Base', discount: '5' });
    expect((await patchProgram(s2, { default_tier_id: base2 })).status).toBe(200);
    const stored = await patchProgram(s2, { enrollment_mode: 'OPEN' });
    expect(stored.status).toBe(200);
    expect(stored.body.data.program).toMatchObject({ enrollment_mode: 'OPEN', default_tier_id: base2 });
  });

  test("unknown default_tier_id (or another shop's): 404 RESELLER_TIER_NOT_FOUND, nothing changes", async () => {
    const s = await newShop();
    const other = await newShop();
    const foreign = await tier(other, { name: 'Foreign', discount: '5' });
    expect((await patchProgram(s, { enabled: true })).status).toBe(200);
    const before = await world(s.id);
    for (const id of ['tier_nope', foreign]) {
      const res = await patchProgram(s, { default_tier_id: id, enabled: false, enrollment_mode: 'OPEN' });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('RESELLER_TIER_NOT_FOUND');
    }
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Tiers
// ---------------------------------------------------------------------------------------------------------------

describe('GET /reseller-tiers', () => {
  test('ordered by sort_order, with a live member_count (ACTIVE and SUSPENDED) and is_default', async () => {
    const s = await newShop();
    const gold = await tier(s, { name: 'Gold', discount: '20', sortOrder: '2', revenue: '1000', orders: '10' });
    const base = await tier(s, { name: 'Base', discount: '5', sortOrder: '0', isDefault: true });
    const silver = await tier(s, { name: 'Silver', discount: '12.5', sortOrder: '1', orders: '3', requiresBoth: true });
    expect((await patchProgram(s, { enabled: true })).status).toBe(200);
    const empty = await tiers(s);
    expect(empty.status).toBe(200);
    expect(empty.body.data.tiers.map((x: { id: string }) => x.id)).toEqual([base, silver, gold]);
    expect(empty.body.data.tiers[1]).toMatchObject({
      name: 'Silver',
      discount_percent: 12.5,
      auto_advance_revenue: null,
      auto_advance_orders: 3,
      auto_advance_requires_both: true,
      sort_order: 1,
      member_count: 0,
      is_default: false,
    });
    expect(empty.body.data.tiers[2]).toMatchObject({ auto_advance_revenue: '1000.00', auto_advance_orders: 10 });
    expect(empty.body.data.tiers.map((x: { is_default: boolean }) => x.is_default)).toEqual([true, false, false]);

    await invited(s, 'inv@example.com'); // INVITED: not a member yet
    await activeReseller(s, 'act@example.com');
    const sus = await activeReseller(s, 'sus@example.com');
    expect((await suspend(s, sus)).status).toBe(200);
    await activeReseller(s, 'gold@example.com', gold);
    const counts = (await tiers(s)).body.data.tiers.map((x: { member_count: number }) => x.member_count);
    expect(counts).toEqual([2, 0, 1]);
    // The default follows the program.
    expect((await patchProgram(s, { default_tier_id: gold })).status).toBe(200);
    expect((await tiers(s)).body.data.tiers.map((x: { is_default: boolean }) => x.is_default)).toEqual([
      false,
      false,
      true,
    ]);
  });

  test('read-only through the API: no write method on /reseller-tiers', async () => {
    const s = await newShop();
    const before = await world(s.id);
    const res = await t.http
      .post('/dev/v1/reseller-tiers')
      .set(bearer(s.key))
      .send({ name: 'Sneaky', discount_percent: 50 });
    expect(res.status).toBe(405);
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Invite
// ---------------------------------------------------------------------------------------------------------------

describe('POST /resellers/invite', () => {
  test('the program must be enabled: 422 RESELLER_PROGRAM_DISABLED, nothing written (no row, customer, mail, event)', async () => {
    const s = await newShop();
    const base = await tier(s, { name: 'Base', discount: '5', isDefault: true });
    const before = await world(s.id);
    const res = await invite(s, { email: 'new@example.com', tier_id: base });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('RESELLER_PROGRAM_DISABLED');
    expect(await world(s.id)).toEqual(before);
  });

  test('no tier_id and no program default: 422 asking for a tier, nothing written', async () => {
    const s = await newShop();
    await tier(s, { name: 'Base', discount: '5' });
    expect((await patchProgram(s, { enabled: true })).status).toBe(200);
    const before = await world(s.id);
    const res = await invite(s, { email: 'new@example.com' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('RESELLER_TIER_REQUIRED');
    expect(res.body.error.message).toMatch(/tier/i);
    expect(await world(s.id)).toEqual(before);
  });

  test("unknown tier_id (or another shop's): 404 RESELLER_TIER_NOT_FOUND, nothing written", async () => {
    const s = await programShop();
    const other = await newShop();
    const foreign = await tier(other, { name: 'Foreign', discount: '5' });
    const before = await world(s.id);
    for (const id of ['tier_nope', foreign]) {
      const res = await invite(s, { email: 'new@example.com', tier_id: id });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('RESELLER_TIER_NOT_FOUND');
    }
    expect(await world(s.id)).toEqual(before);
  });

  test('invites with the program default tier: INVITED row, the customer, the invitation mail, reseller:invited', async () => {
    const s = await programShop('7.5');
    const res = await invite(s, { email: 'Ada@Example.com' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {} });
    const r = await row(s, 'ada@example.com');
    expect(r).toMatchObject({ status: 'INVITED', tier_id: s.base, lifetime_orders: 0, approved_at: null });
    const customer = await t.db
      .selectFrom('customers')
      .select(['id', 'email'])
      .where('shop_id', '=', s.id)
      .where('id', '=', r.customer_id)
      .executeTakeFirstOrThrow();
    expect(customer.email).toBe('ada@example.com');
    const got = await getReseller(s, r.id);
    expect(got.status).toBe(200);
    expect(got.body.data.reseller).toMatchObject({
      id: r.id,
      customer_id: customer.id,
      email: 'ada@example.com',
      status: 'INVITED',
      tier: { id: s.base, name: 'Base', discount_percent: 7.5 },
      application_note: null,
      lifetime_revenue: '0.00',
      lifetime_orders: 0,
      approved_at: null,
      suspended_at: null,
      rejected_at: null,
    });
    const mail = await mailOf(s.id);
    expect(mail).toHaveLength(1);
    expect(mail[0]!.to_address).toBe('ada@example.com');
    // No link to a page that does not exist: the invitee is told how to accept.
    expect(mail[0]!.text).toContain('To accept, answer');
    expect(mail[0]!.text).not.toMatch(/https?:\/\//);
    expect(await eventsOf(s.id, 'reseller:invited')).toEqual([got.body.data.reseller]);
  });

  test('tier_id chooses the tier over the default', async () => {
    const s = await programShop();
    const gold = await tier(s, { name: 'Gold', discount: '20', sortOrder: '5' });
    const id = await invited(s, 'gold@example.com', gold);
    expect((await getReseller(s, id)).body.data.reseller.tier).toEqual({
      id: gold,
      name: 'Gold',
      discount_percent: 20,
    });
  });

  test('an email INVITED, APPLIED, ACTIVE or SUSPENDED: 409 CONFLICT (any letter case), nothing written', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'APPLICATION' })).status).toBe(200);
    await invited(s, 'invited@example.com');
    await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'applied@example.com' });
    await activeReseller(s, 'active@example.com');
    const sus = await activeReseller(s, 'suspended@example.com');
    expect((await suspend(s, sus)).status).toBe(200);
    expect((await list(s)).body.data.items.map((x: { status: string }) => x.status).sort()).toEqual([
      'ACTIVE',
      'APPLIED',
      'INVITED',
      'SUSPENDED',
    ]);
    const before = await world(s.id);
    for (const email of ['invited@example.com', 'APPLIED@example.com', 'active@example.com', 'Suspended@Example.com']) {
      const res = await invite(s, { email });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    }
    expect(await world(s.id)).toEqual(before);
  });

  test('a REJECTED email can be invited again: the same row moves back to INVITED (history kept)', async () => {
    const s = await programShop();
    const gold = await tier(s, { name: 'Gold', discount: '20', sortOrder: '5' });
    const id = await invited(s, 'again@example.com');
    const rejected = await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'again@example.com' }, 'reject');
    expect(rejected).toMatchObject({ status: 'REJECTED' });
    expect(rejected.rejected_at).not.toBeNull();
    const rows = async () =>
      (await t.db.selectFrom('resellers').select('id').where('shop_id', '=', s.id).execute()).length;
    expect(await rows()).toBe(1);
    const res = await invite(s, { email: 'again@example.com', tier_id: gold });
    expect(res.status).toBe(200);
    expect(await rows()).toBe(1);
    const again = (await getReseller(s, id)).body.data.reseller;
    expect(again).toMatchObject({ id, status: 'INVITED', tier: { id: gold }, rejected_at: rejected.rejected_at });
    expect(await mailOf(s.id)).toHaveLength(2);
    expect(await eventsOf(s.id, 'reseller:invited')).toHaveLength(2);
  });

  test('Idempotency-Key: a retried invitation is replayed (cached), not a 409; one row, one mail, one event', async () => {
    const s = await programShop();
    const send = () =>
      t.http
        .post('/dev/v1/resellers/invite')
        .set(bearer(s.key))
        .set('Idempotency-Key', 'inv-1')
        .send({ email: 'retry@example.com' });
    const first = await send();
    const second = await send();
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.headers['idempotency-status']).toBe('created');
    expect(second.headers['idempotency-status']).toBe('cached');
    expect(await mailOf(s.id)).toHaveLength(1);
    expect(await eventsOf(s.id, 'reseller:invited')).toHaveLength(1);
  });

  test('an invalid email or an unknown field: 422 VALIDATION_ERROR, nothing written', async () => {
    const s = await programShop();
    const before = await world(s.id);
    for (const body of [{ email: 'not-an-email' }, {}, { email: 'a@example.com', status: 'ACTIVE' }]) {
      const res = await invite(s, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Suspend and reinstate
// ---------------------------------------------------------------------------------------------------------------

describe('suspend and reinstate', () => {
  test('suspend an ACTIVE reseller: SUSPENDED, suspended_at, event reseller:suspended with the Reseller', async () => {
    const s = await programShop();
    const id = await activeReseller(s, 'sus@example.com');
    const res = await suspend(s, id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {} });
    const r = (await getReseller(s, id)).body.data.reseller;
    expect(r.status).toBe('SUSPENDED');
    expect(r.suspended_at).toBe(clock.now().toISOString());
    expect(await eventsOf(s.id, 'reseller:suspended')).toEqual([r]);
  });

  test('suspend anything but ACTIVE: 422 RESELLER_INVALID_STATUS, nothing changes', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'APPLICATION' })).status).toBe(200);
    const ids = [
      await invited(s, 'i@example.com'),
      (await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'a@example.com' })).id,
      await activeReseller(s, 's@example.com'),
      await invited(s, 'r@example.com'),
    ];
    expect((await suspend(s, ids[2]!)).status).toBe(200);
    await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'r@example.com' }, 'reject');
    const before = await world(s.id);
    for (const id of ids) {
      const res = await suspend(s, id);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('RESELLER_INVALID_STATUS');
    }
    expect(await world(s.id)).toEqual(before);
  });

  test('reinstate a SUSPENDED reseller: ACTIVE, and no event at all (there is no reseller:reinstated)', async () => {
    const s = await programShop();
    const id = await activeReseller(s, 'back@example.com');
    expect((await suspend(s, id)).status).toBe(200);
    const eventsBefore = (await world(s.id)).events;
    const res = await reinstate(s, id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {} });
    expect((await getReseller(s, id)).body.data.reseller.status).toBe('ACTIVE');
    expect((await world(s.id)).events).toEqual(eventsBefore);
    expect(await eventsOf(s.id, 'reseller:reinstated')).toEqual([]);
  });

  test('reinstate anything but SUSPENDED: 422 RESELLER_INVALID_STATUS, nothing changes', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'APPLICATION' })).status).toBe(200);
    const ids = [
      await invited(s, 'i@example.com'),
      (await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'a@example.com' })).id,
      await activeReseller(s, 'act@example.com'),
      await invited(s, 'r@example.com'),
    ];
    await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'r@example.com' }, 'reject');
    const before = await world(s.id);
    for (const id of ids) {
      const res = await reinstate(s, id);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('RESELLER_INVALID_STATUS');
    }
    expect(await world(s.id)).toEqual(before);
  });

  test("unknown or another shop's reseller: 404 RESELLER_NOT_FOUND on get, suspend and reinstate", async () => {
    const s = await programShop();
    const other = await programShop();
    const theirs = await activeReseller(other, 'theirs@example.com');
    const before = await world(other.id);
    for (const id of ['rsl_nope', theirs]) {
      for (const res of [await getReseller(s, id), await suspend(s, id), await reinstate(s, id)]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('RESELLER_NOT_FOUND');
      }
    }
    expect(await world(other.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// List
// ---------------------------------------------------------------------------------------------------------------

describe('GET /resellers', () => {
  test('newest first, { items, total, page, per_page }, defaults page 1 / per_page 25', async () => {
    const s = await programShop();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      ids.push(await invited(s, `n${i}@example.com`));
    }
    const res = await list(s);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 3, page: 1, per_page: 25 });
    expect(res.body.data.items.map((x: { id: string }) => x.id)).toEqual([...ids].reverse());
  });

  test('status filter, search on email (case-insensitive substring), pages', async () => {
    const s = await programShop();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      ids.push(await invited(s, `shop${i}@${i % 2 ? 'odd' : 'even'}.example.com`));
    }
    await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'shop0@even.example.com' }, 'accept');
    const active = await list(s, { status: 'ACTIVE' });
    expect(active.body.data).toMatchObject({ total: 1, items: [{ id: ids[0], status: 'ACTIVE' }] });
    const odd = await list(s, { search: 'ODD.example' });
    expect(odd.body.data.total).toBe(2);
    expect(odd.body.data.items.map((x: { id: string }) => x.id)).toEqual([ids[3], ids[1]]);
    const percent = await list(s, { search: '%' });
    expect(percent.body.data.total).toBe(0);
    const page2 = await list(s, { page: 2, per_page: 2 });
    expect(page2.body.data).toMatchObject({ total: 5, page: 2, per_page: 2 });
    expect(page2.body.data.items.map((x: { id: string }) => x.id)).toEqual([ids[2], ids[1]]);
    const past = await list(s, { page: 4, per_page: 2 });
    expect(past.body.data).toMatchObject({ total: 5, items: [] });
    const both = await list(s, { status: 'INVITED', search: 'even' });
    expect(both.body.data.items.map((x: { id: string }) => x.id)).toEqual([ids[4], ids[2]]);
    const full = await list(s, { per_page: 100 });
    expect(full.body.data.items).toHaveLength(5);
  });

  test('limits: page >= 1, per_page 1 to 100, search up to 128 characters, status of the enum: else 422', async () => {
    const s = await programShop();
    for (const query of [
      { page: 0 } as Record<string, string | number>,
      { per_page: 0 },
      { per_page: 101 },
      { search: 'x'.repeat(129) },
      { status: 'DELETED' },
    ]) {
      const res = await list(s, query);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect((await list(s, { search: 'x'.repeat(128) })).status).toBe(200);
  });

  test("another shop's resellers are not listed", async () => {
    const s = await programShop();
    const other = await programShop();
    await invited(other, 'elsewhere@example.com');
    expect((await list(s)).body.data).toMatchObject({ total: 0, items: [] });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The moves the specification leaves open (CLI)
// ---------------------------------------------------------------------------------------------------------------

describe('moves out of INVITED and APPLIED, into REJECTED (CLI functions)', () => {
  test('accept: INVITED -> ACTIVE with approved_at; anything else is refused and changes nothing', async () => {
    const s = await programShop();
    const id = await invited(s, 'acc@example.com');
    const view = await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'acc@example.com' }, 'accept');
    expect(view).toMatchObject({ id, status: 'ACTIVE' });
    expect(view.approved_at).not.toBeNull();
    const before = await world(s.id);
    await expect(
      moveResellerAsOperator(t.operator, { shopId: s.id, email: 'acc@example.com' }, 'accept'),
    ).rejects.toMatchObject({ code: 'RESELLER_INVALID_STATUS' });
    await expect(
      moveResellerAsOperator(t.operator, { shopId: s.id, email: 'nobody@example.com' }, 'accept'),
    ).rejects.toMatchObject({ code: 'RESELLER_NOT_FOUND' });
    expect(await world(s.id)).toEqual(before);
  });

  test('apply: refused while the program is disabled or MANUAL (invite only); nothing written', async () => {
    const s = await newShop();
    await tier(s, { name: 'Base', discount: '5', isDefault: true });
    const before = await world(s.id);
    await expect(applyResellerAsOperator(t.operator, { shopId: s.id, email: 'x@example.com' })).rejects.toMatchObject({
      code: 'RESELLER_PROGRAM_DISABLED',
    });
    expect((await patchProgram(s, { enabled: true })).status).toBe(200);
    const enabled = await world(s.id);
    await expect(applyResellerAsOperator(t.operator, { shopId: s.id, email: 'x@example.com' })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    expect(await world(s.id)).toEqual(enabled);
    expect(before.resellers).toBeNull();
  });

  test('apply (APPLICATION mode): APPLIED with the note; a required note must be sent; approve -> ACTIVE', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'APPLICATION', require_application_note: true })).status).toBe(
      200,
    );
    const before = await world(s.id);
    await expect(applyResellerAsOperator(t.operator, { shopId: s.id, email: 'app@example.com' })).rejects.toMatchObject(
      {
        code: 'VALIDATION_ERROR',
      },
    );
    expect(await world(s.id)).toEqual(before);
    const applied = await applyResellerAsOperator(t.operator, {
      shopId: s.id,
      email: 'app@example.com',
      note: 'I run a gaming community.',
    });
    expect(applied).toMatchObject({
      status: 'APPLIED',
      application_note: 'I run a gaming community.',
      approved_at: null,
    });
    await expect(
      applyResellerAsOperator(t.operator, { shopId: s.id, email: 'app@example.com', note: 'again' }),
    ).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    const approved = await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'app@example.com' }, 'approve');
    expect(approved).toMatchObject({ id: applied.id, status: 'ACTIVE' });
    expect(approved.approved_at).toBe((await getReseller(s, applied.id)).body.data.reseller.approved_at);
    expect(approved.approved_at).not.toBeNull();
    await expect(
      moveResellerAsOperator(t.operator, { shopId: s.id, email: 'app@example.com' }, 'approve'),
    ).rejects.toMatchObject({ code: 'RESELLER_INVALID_STATUS' });
  });

  test('reject: APPLIED or INVITED -> REJECTED with rejected_at; a REJECTED applicant may apply again (same row)', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'APPLICATION' })).status).toBe(200);
    const applied = await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'no@example.com' });
    const rejected = await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'no@example.com' }, 'reject');
    expect(rejected).toMatchObject({ id: applied.id, status: 'REJECTED' });
    expect(rejected.rejected_at).not.toBeNull();
    await invited(s, 'declines@example.com');
    expect(
      await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'declines@example.com' }, 'reject'),
    ).toMatchObject({ status: 'REJECTED' });
    const activeId = await activeReseller(s, 'stays@example.com');
    const before = await world(s.id);
    await expect(
      moveResellerAsOperator(t.operator, { shopId: s.id, email: 'stays@example.com' }, 'reject'),
    ).rejects.toMatchObject({ code: 'RESELLER_INVALID_STATUS' });
    expect(await world(s.id)).toEqual(before);
    expect((await getReseller(s, activeId)).body.data.reseller.status).toBe('ACTIVE');
    const again = await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'no@example.com' });
    expect(again).toMatchObject({ id: applied.id, status: 'APPLIED', rejected_at: rejected.rejected_at });
  });

  test('apply in OPEN mode: ACTIVE at once in the default tier, approved_at set', async () => {
    const s = await programShop();
    expect((await patchProgram(s, { enrollment_mode: 'OPEN' })).status).toBe(200);
    const view = await applyResellerAsOperator(t.operator, { shopId: s.id, email: 'open@example.com' });
    expect(view).toMatchObject({ status: 'ACTIVE', tier: { id: s.base } });
    expect(view.approved_at).not.toBeNull();
  });

  test('tier create: a duplicate name or a bad percent is refused and writes nothing', async () => {
    const s = await newShop();
    await tier(s, { name: 'Base', discount: '5' });
    const before = await world(s.id);
    await expect(tier(s, { name: 'Base', discount: '6' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(tier(s, { name: 'Over', discount: '100.5' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(tier(s, { name: 'Neg', discount: '5', revenue: '-1' })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Wholesale pricing, lifetime figures
// ---------------------------------------------------------------------------------------------------------------

const createOrder = (s: Shop, body: Record<string, unknown>) =>
  t.http.post('/dev/v1/orders').set(bearer(s.key)).send(body);
const complete = (s: Shop, id: string) => t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(s.key)).send({});
const refund = (s: Shop, id: string, amount: string) =>
  t.http.post(`/dev/v1/orders/${id}/refund`).set(bearer(s.key)).send({ amount });

async function order(s: Shop, email: string, productId: string, extra: Record<string, unknown> = {}) {
  const res = await createOrder(s, { email, items: [{ product_id: productId, quantity: 1 }], ...extra });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; subtotal: number; discount: number; total: number };
}

describe('wholesale pricing', () => {
  test("an ACTIVE reseller's order gets the tier's discount_percent (decimal, rounded to the minor unit)", async () => {
    const s = await programShop('12.5');
    await activeReseller(s, 'Whole@Example.com');
    const o = await order(s, 'whole@example.com', s.p33);
    // 33.33 x 12.5% = 4.16625 -> 4.17
    expect(o).toMatchObject({ subtotal: 33.33, discount: 4.17, total: 29.16 });
    const stored = await t.db
      .selectFrom('orders')
      .select(['reseller_id', 'reseller_discount_percent'])
      .where('id', '=', o.id)
      .executeTakeFirstOrThrow();
    expect(stored.reseller_id).toBe((await row(s, 'whole@example.com')).id);
    expect(Number(stored.reseller_discount_percent)).toBe(12.5);
    // Anyone else pays full price.
    expect(await order(s, 'retail@example.com', s.p33)).toMatchObject({ discount: 0, total: 33.33 });
  });

  test('INVITED (not yet ACTIVE) pays full price; SUSPENDED pays full price from the next order; reinstated gets it again', async () => {
    const s = await programShop('10');
    await invited(s, 'later@example.com');
    expect(await order(s, 'later@example.com', s.p10)).toMatchObject({ discount: 0, total: 10 });
    await moveResellerAsOperator(t.operator, { shopId: s.id, email: 'later@example.com' }, 'accept');
    expect(await order(s, 'later@example.com', s.p10)).toMatchObject({ discount: 1, total: 9 });
    const id = (await row(s, 'later@example.com')).id;
    expect((await suspend(s, id)).status).toBe(200);
    expect(await order(s, 'later@example.com', s.p10)).toMatchObject({ discount: 0, total: 10 });
    expect((await reinstate(s, id)).status).toBe(200);
    expect(await order(s, 'later@example.com', s.p10)).toMatchObject({ discount: 1, total: 9 });
  });

  test('with a coupon: the wholesale percent applies to what remains after the coupon', async () => {
    const s = await programShop('10');
    await t.seed(s.id, { coupons: [{ code: 'half', type: 'PERCENTAGE', value: '50' }] } as never);
    await activeReseller(s, 'both@example.com');
    // 33.33 - 16.67 (coupon, 16.665 rounded) = 16.66; 10% of it 1.666 -> 1.67; discount 18.34, total 14.99
    expect(await order(s, 'both@example.com', s.p33, { coupon_code: 'half' })).toMatchObject({
      subtotal: 33.33,
      discount: 18.34,
      total: 14.99,
    });
  });
});

describe('lifetime figures', () => {
  test('completion adds the order total and one order; a refund takes its amount back', async () => {
    const s = await programShop('10');
    const id = await activeReseller(s, 'rev@example.com');
    const a = await order(s, 'rev@example.com', s.p33); // 29.997 -> 30.00 total? 33.33 - 3.33 = 30.00
    const b = await order(s, 'rev@example.com', s.p10); // 9.00
    expect((await getReseller(s, id)).body.data.reseller).toMatchObject({
      lifetime_revenue: '0.00',
      lifetime_orders: 0,
    });
    expect((await complete(s, a.id)).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller).toMatchObject({
      lifetime_revenue: '30.00',
      lifetime_orders: 1,
    });
    expect((await complete(s, b.id)).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller).toMatchObject({
      lifetime_revenue: '39.00',
      lifetime_orders: 2,
    });
    expect((await refund(s, a.id, '12.34')).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller).toMatchObject({
      lifetime_revenue: '26.66',
      lifetime_orders: 2,
    });
    // A retail buyer's order counts for no reseller.
    const retail = await order(s, 'retail@example.com', s.p10);
    expect((await complete(s, retail.id)).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller.lifetime_revenue).toBe('26.66');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Auto-advance
// ---------------------------------------------------------------------------------------------------------------

interface TierSpec {
  name: string;
  sort: number;
  revenue?: string;
  orders?: number;
  both?: boolean;
}

/**
 * A shop with a 0% Base tier (sort 0, the default) and the given tiers (0% too, so every order of the 10.00 product
 * totals 10.00), a reseller ACTIVE in `start` (Base by default); after each of `orders` completed orders, the name
 * of the reseller's tier.
 */
async function advanceRun(specs: TierSpec[], orders: number, start = 'Base'): Promise<string[]> {
  const s = await programShop('0');
  const ids: Record<string, string> = { Base: s.base };
  for (const spec of specs)
    ids[spec.name] = await tier(s, {
      name: spec.name,
      discount: '0',
      sortOrder: String(spec.sort),
      revenue: spec.revenue,
      orders: spec.orders === undefined ? undefined : String(spec.orders),
      requiresBoth: spec.both,
    });
  const id = await activeReseller(s, 'climber@example.com', ids[start]);
  const names: string[] = [];
  for (let i = 0; i < orders; i++) {
    const o = await order(s, 'climber@example.com', s.p10);
    expect(o.total).toBe(10);
    expect((await complete(s, o.id)).status).toBe(200);
    names.push((await getReseller(s, id)).body.data.reseller.tier.name);
  }
  return names;
}

describe('auto-advance after a completed order', () => {
  test.each<[string, TierSpec[], number, string[], string?]>([
    ['revenue only (25.00)', [{ name: 'Silver', sort: 1, revenue: '25' }], 3, ['Base', 'Base', 'Silver']],
    ['orders only (2)', [{ name: 'Silver', sort: 1, orders: 2 }], 3, ['Base', 'Silver', 'Silver']],
    [
      'both, requires_both false: the orders threshold alone suffices',
      [{ name: 'Silver', sort: 1, revenue: '1000', orders: 2, both: false }],
      2,
      ['Base', 'Silver'],
    ],
    [
      'both, requires_both false: the revenue threshold alone suffices',
      [{ name: 'Silver', sort: 1, revenue: '15', orders: 100, both: false }],
      2,
      ['Base', 'Silver'],
    ],
    [
      'both, requires_both true: only when both are met',
      [{ name: 'Silver', sort: 1, revenue: '25', orders: 2, both: true }],
      3,
      ['Base', 'Base', 'Silver'],
    ],
    [
      'requires_both true with a null revenue threshold: the orders threshold alone is the condition',
      [{ name: 'Silver', sort: 1, orders: 2, both: true }],
      2,
      ['Base', 'Silver'],
    ],
    [
      'both thresholds null: never auto-advances (requires_both false)',
      [{ name: 'Silver', sort: 1, both: false }],
      3,
      ['Base', 'Base', 'Base'],
    ],
    [
      'both thresholds null: never auto-advances (requires_both true)',
      [{ name: 'Silver', sort: 1, both: true }],
      3,
      ['Base', 'Base', 'Base'],
    ],
    [
      'the highest tier met wins (straight past a lower one)',
      [
        { name: 'Silver', sort: 1, orders: 1 },
        { name: 'Gold', sort: 2, orders: 1 },
      ],
      1,
      ['Gold'],
    ],
    [
      'climbs tier by tier as thresholds are met',
      [
        { name: 'Silver', sort: 1, orders: 1 },
        { name: 'Gold', sort: 2, revenue: '30' },
      ],
      3,
      ['Silver', 'Silver', 'Gold'],
    ],
    [
      'never moves a reseller down to a lower tier that is met',
      [
        { name: 'Silver', sort: 1, orders: 1 },
        { name: 'Gold', sort: 2 },
      ],
      2,
      ['Gold', 'Gold'],
      'Gold',
    ],
  ])('%s', async (...row) => {
    // (One rest parameter: jest reads a callback declaring more parameters than the row has as taking `done`.)
    const [, specs, orders, expected, start] = row;
    expect(await advanceRun(specs, orders, start)).toEqual(expected);
  });

  test('a refund moves no one down, and an advanced reseller buys at the new tier percent', async () => {
    const s = await programShop('0');
    const silver = await tier(s, { name: 'Silver', discount: '20', sortOrder: '1', revenue: '10' });
    const id = await activeReseller(s, 'up@example.com');
    const first = await order(s, 'up@example.com', s.p10);
    expect((await complete(s, first.id)).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller.tier.id).toBe(silver);
    expect(await order(s, 'up@example.com', s.p10)).toMatchObject({ discount: 2, total: 8 });
    expect((await refund(s, first.id, '10.00')).status).toBe(200);
    expect((await getReseller(s, id)).body.data.reseller).toMatchObject({
      tier: { id: silver },
      lifetime_revenue: '0.00',
      lifetime_orders: 1,
    });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------------------------------

describe('scopes', () => {
  const operations: {
    name: string;
    write: boolean;
    call: (s: Shop, key: string, id: string) => Promise<{ status: number }>;
  }[] = [
    { name: 'getResellerProgram', write: false, call: (s, k) => getProgram(s, k) },
    { name: 'listResellerTiers', write: false, call: (s, k) => tiers(s, k) },
    { name: 'listResellers', write: false, call: (s, k) => list(s, {}, k) },
    { name: 'getReseller', write: false, call: (s, k, id) => getReseller(s, id, k) },
    { name: 'updateResellerProgram', write: true, call: (s, k) => patchProgram(s, { enabled: true }, k) },
    { name: 'inviteReseller', write: true, call: (s, k) => invite(s, { email: `scope-${uid()}@example.com` }, k) },
    { name: 'suspendReseller', write: true, call: (s, k, id) => suspend(s, id, k) },
    { name: 'reinstateReseller', write: true, call: (s, k, id) => reinstate(s, id, k) },
  ];

  test('resellers.read for the four reads, resellers.write for the four writes, * for all; nothing else implies them', async () => {
    const s = await programShop();
    const id = await activeReseller(s, 'scoped@example.com');
    const keys = {
      read: (await t.createKey(s.id, ['resellers.read'])).key,
      write: (await t.createKey(s.id, ['resellers.write'])).key,
      customers: (await t.createKey(s.id, ['customers.read', 'customers.write', 'affiliates.read', 'affiliates.write']))
        .key,
      all: s.key,
    };
    const seen: string[] = [];
    for (const op of operations) {
      for (const [holder, key] of Object.entries(keys)) {
        const before = await world(s.id);
        const res = await op.call(s, key, id);
        const allowed = holder === 'all' || (holder === 'read' && !op.write) || (holder === 'write' && op.write);
        seen.push(`${op.name}/${holder}/${res.status}`);
        if (allowed) {
          expect([200, 422]).toContain(res.status); // 422: suspend/reinstate from the status the previous call left
        } else {
          expect(res.status).toBe(403);
          expect((res as unknown as { body: { error: { code: string } } }).body.error.code).toBe('FORBIDDEN');
          expect(await world(s.id)).toEqual(before);
        }
      }
    }
    expect(seen.filter((x) => x.endsWith('/403'))).toHaveLength(16);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Races (real PostgreSQL)
// ---------------------------------------------------------------------------------------------------------------

describe('races', () => {
  pgOnly('two invitations of one email at once: one 200, one 409, one row, one mail, one event', async () => {
    for (let round = 0; round < 5; round++) {
      const s = await programShop();
      const email = `race${round}@example.com`;
      const results = await Promise.all([invite(s, { email }), invite(s, { email: email.toUpperCase() })]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.body.error.code).toBe('CONFLICT');
      const rows = await t.db.selectFrom('resellers').select('id').where('shop_id', '=', s.id).execute();
      expect(rows).toHaveLength(1);
      expect(await mailOf(s.id)).toHaveLength(1);
      expect(await eventsOf(s.id, 'reseller:invited')).toHaveLength(1);
      const customers = await t.db.selectFrom('customers').select('id').where('shop_id', '=', s.id).execute();
      expect(customers).toHaveLength(1);
    }
  });

  pgOnly('suspend against reinstate: the outcome is one of the serial orders, never a lost update', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 8; round++) {
      const s = await programShop();
      const id = await activeReseller(s, `tug${round}@example.com`);
      const [sus, rein] = await Promise.all([suspend(s, id), reinstate(s, id)]);
      const status = (await getReseller(s, id)).body.data.reseller.status;
      const events = await eventsOf(s.id, 'reseller:suspended');
      outcomes.push(`${sus.status}/${rein.status}/${status}`);
      // Suspend first then reinstate: 200/200 and ACTIVE. Reinstate first (refused: still ACTIVE), then suspend:
      // 200/422 and SUSPENDED. Nothing else is possible.
      expect(['200/200/ACTIVE', '200/422/SUSPENDED']).toContain(`${sus.status}/${rein.status}/${status}`);
      expect(events).toHaveLength(1);
    }
    console.log(`suspend vs reinstate outcomes: ${outcomes.join(', ')}`);
  });

  pgOnly('two suspensions at once: one 200, one 422, one event', async () => {
    const s = await programShop();
    const id = await activeReseller(s, 'twice@example.com');
    const results = await Promise.all([suspend(s, id), suspend(s, id)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 422]);
    expect(await eventsOf(s.id, 'reseller:suspended')).toHaveLength(1);
  });
});
