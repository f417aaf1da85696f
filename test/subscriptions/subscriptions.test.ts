// Subscriptions through HTTP: a completed order of a SUBSCRIPTION product starts one (and only then, and once);
// GET /subscriptions (cursor, newest first, this shop's only), plan options from the product's real variants and
// intervals, pause (every rule: re-pause, resume_at in the past or now, statuses that cannot pause) and custom
// fields (set, remove, the 50-field limit); each refusal checked for what it did not write; other shops' ids 404;
// the fixture format's subscriptions, including the example of docs/fixtures.md.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2027-01-10T09:30:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let readOnlyA: string;
let plan: string;
let monthly: string;
let yearly: string;
let weekly: string;

const seconds = (iso: string) => Math.floor(new Date(iso).getTime() / 1000);

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t));
  readOnlyA = (await t.createKey(shopA, ['subscriptions.read', 'orders.write'])).key;
  const seeded = await t.seed(shopA, {
    products: [
      {
        title: 'Pro Plan',
        type: 'SUBSCRIPTION',
        price: '9.99',
        billing: { interval: 'MONTH' },
        variants: [
          { title: 'Monthly', price: '9.99' },
          { title: 'Yearly', price: '99.00', billing: { interval: 'YEAR' } },
        ],
      },
      {
        title: 'Fortnightly Box',
        type: 'SUBSCRIPTION',
        price: '4.50',
        billing: { interval: 'WEEK', interval_count: 2 },
      },
    ],
  });
  plan = seeded.products[0]!;
  monthly = seeded.variants[0]!;
  yearly = seeded.variants[1]!;
  weekly = seeded.products[1]!;
  await t.seed(shopB, { products: [{ title: 'B Plan', type: 'SUBSCRIPTION', price: '5.00' }] });
});
afterAll(() => t.close());

const createOrder = (body: unknown, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send(body as object);
const complete = (id: string, key = keyA) =>
  t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(key)).send({ suppress_emails: true });
const list = (query = '', key = keyA) => t.http.get(`/dev/v1/subscriptions${query}`).set(bearer(key));
const planOptions = (id: string, key = keyA) => t.http.get(`/dev/v1/subscriptions/${id}/plan-options`).set(bearer(key));
const pause = (id: string, body?: object, key = keyA) => {
  const req = t.http.post(`/dev/v1/subscriptions/${id}/pause`).set(bearer(key));
  return body === undefined ? req : req.send(body);
};
const setFields = (id: string, body: object, key = keyA) =>
  t.http.patch(`/dev/v1/subscriptions/${id}/custom-fields`).set(bearer(key)).send(body);

/** A completed order of one line; returns the order (its view) and the subscription it started. */
async function subscribe(
  item: { product_id: string; variant_id?: string; quantity?: number },
  email = 'ada@example.com',
  extra: object = {},
  key = keyA,
) {
  const created = await createOrder({ email, items: [{ quantity: 1, ...item }], ...extra }, key);
  expect(created.status).toBe(201);
  const done = await complete(created.body.data.id, key);
  expect(done.status).toBe(200);
  return { order: done.body.data, subscriptionId: done.body.data.subscription_id as string };
}

const eventsOf = async (type: string) =>
  (
    await sql<{ data: string; shop_id: string }>`select data, shop_id from events where type = ${type}
      order by created_at, id`.execute(t.db)
  ).rows.map((r) => ({ shop: r.shop_id, data: JSON.parse(r.data) as Record<string, unknown> }));

/** Everything a refused subscription request must leave alone. */
async function world() {
  const rows = async (q: ReturnType<typeof sql<{ s: string | null }>>) => (await q.execute(t.db)).rows[0]!.s;
  return {
    subscriptions: await rows(sql<{ s: string | null }>`select string_agg(
      id || status || coalesce(paused_at::text, '-') || coalesce(resume_at::text, '-') || coalesce(pause_reason, '-')
      || custom_fields::text || updated_at::text || next_renewal_at::text, ',' order by id) as s from subscriptions`),
    renewals: await rows(sql<{ s: string | null }>`select count(*)::text as s from subscription_renewals`),
    orders: await rows(sql<{ s: string | null }>`select count(*)::text as s from orders`),
    events: await rows(sql<{ s: string | null }>`select count(*)::text as s from events`),
    mail: await rows(sql<{ s: string | null }>`select count(*)::text as s from outbound_emails`),
  };
}

describe('completing an order for a SUBSCRIPTION product starts a subscription', () => {
  test('one subscription for the line, as the order bought it, with its event, the order linked to it', async () => {
    const before = await eventsOf('subscription:created');
    const { order, subscriptionId } = await subscribe(
      { product_id: plan, variant_id: yearly, quantity: 2 },
      'Start@Example.com',
      { custom_fields: { discord: 'ada#1234', seats: 3 } },
    );
    expect(subscriptionId).toMatch(/^sub_[0-9a-f]{32}$/);
    expect(order.items[0]).toMatchObject({
      product_type: 'SUBSCRIPTION',
      delivery_status: 'DELIVERED',
      delivered_items: { subscription_id: subscriptionId, current_period_end: '2028-01-10T09:30:00.000Z' },
    });
    const page = await list();
    const sub = page.body.data.find((s: { id: string }) => s.id === subscriptionId);
    expect(sub).toEqual({
      id: subscriptionId,
      customer_id: order.customer_id,
      customer_email: 'start@example.com',
      product_id: plan,
      variant_id: yearly,
      status: 'ACTIVE',
      price: 198,
      currency: 'USD',
      interval: 'YEAR',
      interval_count: 1,
      current_period_start: seconds('2027-01-10T09:30:00Z'),
      current_period_end: seconds('2028-01-10T09:30:00Z'),
      cancel_at_period_end: false,
      paused_at: null,
      resume_at: null,
      // Text values of the order's custom fields (the number is not text).
      custom_fields: { discord: 'ada#1234' },
      created_at: seconds('2027-01-10T09:30:00Z'),
      updated_at: seconds('2027-01-10T09:30:00Z'),
    });
    const created = (await eventsOf('subscription:created')).slice(before.length);
    expect(created).toEqual([{ shop: shopA, data: sub }]);
    // The order names it, as GET /orders shows.
    const orders = await t.http.get('/dev/v1/orders?limit=100').set(bearer(keyA));
    expect(orders.body.data.find((o: { id: string }) => o.id === order.id).subscription_id).toBe(subscriptionId);
  });

  test('a product without variants bills by its own interval; without one, monthly', async () => {
    const { subscriptionId } = await subscribe({ product_id: weekly, quantity: 3 });
    const sub = (await list()).body.data.find((s: { id: string }) => s.id === subscriptionId);
    expect(sub).toMatchObject({ variant_id: null, interval: 'WEEK', interval_count: 2, price: 13.5 });
    expect(sub.current_period_end - sub.current_period_start).toBe(14 * 86400);
    const b = await subscribe({ product_id: (await productOf(shopB, 'B Plan'))! }, 'b@example.com', {}, keyB);
    const bSub = (await list('', keyB)).body.data.find((s: { id: string }) => s.id === b.subscriptionId);
    expect(bSub).toMatchObject({
      interval: 'MONTH',
      interval_count: 1,
      current_period_end: seconds('2027-02-10T09:30:00Z'),
    });
  });

  test('a pending order starts nothing; a second completion is refused and starts no second subscription', async () => {
    const count = async () =>
      Number((await sql<{ n: string }>`select count(*)::text as n from subscriptions`.execute(t.db)).rows[0]!.n);
    const before = await count();
    const created = await createOrder({
      email: 'twice@example.com',
      items: [{ product_id: plan, variant_id: monthly, quantity: 1 }],
    });
    expect(created.body.data.subscription_id).toBeNull();
    expect(await count()).toBe(before);
    expect((await complete(created.body.data.id)).status).toBe(200);
    expect(await count()).toBe(before + 1);
    const again = await complete(created.body.data.id);
    expect([again.status, again.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
    expect(await count()).toBe(before + 1);
  });
});

async function productOf(shopId: string, title: string): Promise<string | undefined> {
  return (
    await t.db
      .selectFrom('products')
      .select('id')
      .where('shop_id', '=', shopId)
      .where('title', '=', title)
      .executeTakeFirst()
  )?.id;
}

describe('GET /subscriptions', () => {
  test('newest first, walked with the cursor without repeats; only this shop’s', async () => {
    for (let i = 0; i < 3; i++) {
      clock.advance(60_000);
      await subscribe({ product_id: plan, variant_id: monthly }, `walk${i}@example.com`);
    }
    const all = (await list('?limit=100')).body;
    expect(all.pagination).toEqual({ next_cursor: null, has_more: false });
    const ids: string[] = all.data.map((s: { id: string }) => s.id);
    const created = all.data.map((s: { created_at: number }) => s.created_at);
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    const rows = await t.db.selectFrom('subscriptions').select(['id', 'shop_id']).execute();
    expect(new Set(ids)).toEqual(new Set(rows.filter((r) => r.shop_id === shopA).map((r) => r.id)));
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      walked.push(...res.body.data.map((s: { id: string }) => s.id));
      cursor = res.body.pagination.next_cursor;
      expect(res.body.pagination.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(walked).toEqual(ids);
    // Shop B's cursor is not shop A's.
    const first = await list('?limit=1');
    const foreign = await list(`?limit=1&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`, keyB);
    expect([foreign.status, foreign.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
  });

  test('a key without subscriptions.read is refused', async () => {
    const key = (await t.createKey(shopA, ['orders.read'])).key;
    const res = await list('', key);
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
  });
});

describe('GET /subscriptions/{id}/plan-options', () => {
  test('each variant with its own or its product’s interval, the current one marked', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'plans@example.com');
    const res = await planOptions(subscriptionId);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      subscription_id: subscriptionId,
      options: [
        {
          product_id: plan,
          variant_id: monthly,
          title: 'Monthly',
          price: 9.99,
          currency: 'USD',
          interval: 'MONTH',
          interval_count: 1,
          is_current: true,
        },
        {
          product_id: plan,
          variant_id: yearly,
          title: 'Yearly',
          price: 99,
          currency: 'USD',
          interval: 'YEAR',
          interval_count: 1,
          is_current: false,
        },
      ],
    });
  });

  test('a product without variants is its one plan; another shop’s or an unknown id is 404', async () => {
    const { subscriptionId } = await subscribe({ product_id: weekly }, 'box@example.com');
    expect((await planOptions(subscriptionId)).body.data.options).toEqual([
      {
        product_id: weekly,
        variant_id: null,
        title: 'Fortnightly Box',
        price: 4.5,
        currency: 'USD',
        interval: 'WEEK',
        interval_count: 2,
        is_current: true,
      },
    ]);
    for (const [id, key] of [
      [subscriptionId, keyB],
      ['sub_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', keyA],
    ] as const) {
      const res = await planOptions(id, key);
      expect([res.status, res.body.error.code]).toEqual([404, 'SUBSCRIPTION_NOT_FOUND']);
    }
  });
});

describe('POST /subscriptions/{id}/pause', () => {
  test('pauses with resume_at: PAUSED, paused_at, the event; pausing again moves resume_at, keeps paused_at', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'pause@example.com');
    clock.advance(3_600_000);
    const now = Math.floor(clock.now().getTime() / 1000);
    const before = (await eventsOf('subscription:paused')).length;
    const res = await pause(subscriptionId, { resume_at: now + 86400, reason: 'Holiday' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: subscriptionId,
      status: 'PAUSED',
      paused_at: now,
      resume_at: now + 86400,
      updated_at: now,
    });
    const row = await t.db
      .selectFrom('subscriptions')
      .select(['pause_reason'])
      .where('id', '=', subscriptionId)
      .executeTakeFirstOrThrow();
    expect(row.pause_reason).toBe('Holiday');
    clock.advance(60_000);
    const again = await pause(subscriptionId, { resume_at: now + 7 * 86400 });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ status: 'PAUSED', paused_at: now, resume_at: now + 7 * 86400 });
    const events = (await eventsOf('subscription:paused')).slice(before);
    expect(events.map((e) => e.data)).toEqual([res.body.data, again.body.data]);
    // The audit trail names the subscription.
    const audit = await t.db
      .selectFrom('audit_entries')
      .select(['action', 'resource_id', 'status'])
      .where('operation_id', '=', 'pauseSubscription')
      .where('resource_id', '=', subscriptionId)
      .execute();
    expect(audit).toHaveLength(2);
  });

  test('without a body it pauses until further notice (resume_at null)', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'forever@example.com');
    const res = await pause(subscriptionId);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'PAUSED', resume_at: null });
  });

  test('resume_at in the past or now: 422 on resume_at, nothing written', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'past@example.com');
    const now = Math.floor(clock.now().getTime() / 1000);
    const before = await world();
    for (const resumeAt of [now - 1, now, 0]) {
      const res = await pause(subscriptionId, { resume_at: resumeAt, reason: 'no' });
      expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
      expect(res.body.error.details).toEqual([{ field: 'resume_at', message: 'must be in the future' }]);
    }
    // Shape errors too (a string, an unknown field, a too long reason).
    for (const body of [{ resume_at: 'tomorrow' }, { resume: now + 10 }, { reason: 'x'.repeat(501) }]) {
      const res = await pause(subscriptionId, body);
      expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    }
    expect(await world()).toEqual(before);
  });

  test('a CANCELLED subscription cannot be paused: 400 SUBSCRIPTION_NOT_ACTIVE, nothing written', async () => {
    const seeded = await t.seed(shopA, {
      products: [{ title: 'Old Plan', type: 'SUBSCRIPTION', price: '3.00' }],
      customers: [{ email: 'gone@example.com' }],
      subscriptions: [{ customer: 'gone@example.com', product: 'Old Plan', status: 'CANCELLED' }],
    });
    const id = seeded.subscriptions[0]!;
    const before = await world();
    const res = await pause(id, { resume_at: Math.floor(clock.now().getTime() / 1000) + 3600 });
    expect([res.status, res.body.error.code]).toEqual([400, 'SUBSCRIPTION_NOT_ACTIVE']);
    expect(res.body.error.message).toMatch(/CANCELLED/);
    expect(await world()).toEqual(before);
    // The refusal is in the audit trail, as every refused write.
    const audit = await t.db
      .selectFrom('audit_entries')
      .select(['status', 'error_code'])
      .where('operation_id', '=', 'pauseSubscription')
      .where('status', '=', 400)
      .execute();
    expect(audit.map((a) => a.error_code)).toContain('SUBSCRIPTION_NOT_ACTIVE');
  });

  test('another shop’s id, an unknown id, a read-only key: refused, nothing written', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'guard@example.com');
    const before = await world();
    const foreign = await pause(subscriptionId, {}, keyB);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'SUBSCRIPTION_NOT_FOUND']);
    const unknown = await pause('sub_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', {});
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'SUBSCRIPTION_NOT_FOUND']);
    const readOnly = await pause(subscriptionId, {}, readOnlyA);
    expect([readOnly.status, readOnly.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await world()).toEqual(before);
  });

  test('an Idempotency-Key replays the pause instead of pausing twice', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'idem@example.com');
    const body = { resume_at: Math.floor(clock.now().getTime() / 1000) + 3600 };
    const first = await t.http
      .post(`/dev/v1/subscriptions/${subscriptionId}/pause`)
      .set(bearer(keyA))
      .set('Idempotency-Key', 'pause-once')
      .send(body);
    const before = await world();
    const second = await t.http
      .post(`/dev/v1/subscriptions/${subscriptionId}/pause`)
      .set(bearer(keyA))
      .set('Idempotency-Key', 'pause-once')
      .send(body);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.headers['idempotency-status']).toBe('cached');
    expect(second.body).toEqual(first.body);
    expect(await world()).toEqual(before);
  });
});

describe('PATCH /subscriptions/{id}/custom-fields', () => {
  test('sets keys, removes keys with null, leaves the others; no change leaves updated_at alone', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'fields@example.com', {
      custom_fields: { discord: 'ada#1', team: 'red' },
    });
    clock.advance(60_000);
    const res = await setFields(subscriptionId, { custom_fields: { team: null, seat: 'A-4', discord: 'ada#2' } });
    expect(res.status).toBe(200);
    expect(res.body.data.custom_fields).toEqual({ discord: 'ada#2', seat: 'A-4' });
    const updatedAt = res.body.data.updated_at;
    expect(updatedAt).toBe(Math.floor(clock.now().getTime() / 1000));
    clock.advance(60_000);
    const same = await setFields(subscriptionId, { custom_fields: { seat: 'A-4', missing: null } });
    expect(same.status).toBe(200);
    expect(same.body.data).toEqual(res.body.data);
    const empty = await setFields(subscriptionId, { custom_fields: {} });
    expect(empty.body.data.updated_at).toBe(updatedAt);
    // `__proto__` is a key like any other (kept as data, never an object's prototype).
    const proto = await setFields(subscriptionId, { custom_fields: JSON.parse('{"__proto__": "p"}') as object });
    expect(proto.status).toBe(200);
    expect(Object.entries(proto.body.data.custom_fields).sort()).toEqual([
      ['__proto__', 'p'],
      ['discord', 'ada#2'],
      ['seat', 'A-4'],
    ]);
  });

  test('more than 50 fields in all, or bad keys and values: 422, nothing written', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'many@example.com');
    const fields = (n: number, prefix: string) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, 'v']));
    expect((await setFields(subscriptionId, { custom_fields: fields(30, 'a') })).status).toBe(200);
    const before = await world();
    const tooMany = await setFields(subscriptionId, { custom_fields: fields(21, 'b') });
    expect([tooMany.status, tooMany.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(tooMany.body.error.details[0].field).toBe('custom_fields');
    for (const body of [
      { custom_fields: fields(51, 'c') },
      { custom_fields: { '': 'empty key' } },
      { custom_fields: { ['k'.repeat(101)]: 'long key' } },
      { custom_fields: { k: 'x'.repeat(1001) } },
      { custom_fields: { k: 5 } },
      {},
    ]) {
      const res = await setFields(subscriptionId, body);
      expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    }
    expect(await world()).toEqual(before);
    // Removing one while adding 21 stays at 50: allowed.
    const fifty = await setFields(subscriptionId, { custom_fields: { ...fields(21, 'b'), a0: null } });
    expect(fifty.status).toBe(200);
    expect(Object.keys(fifty.body.data.custom_fields)).toHaveLength(50);
  });

  test('another shop’s id or an unknown id: 404, nothing written', async () => {
    const { subscriptionId } = await subscribe({ product_id: plan, variant_id: monthly }, 'fguard@example.com');
    const before = await world();
    for (const [id, key] of [
      [subscriptionId, keyB],
      ['sub_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', keyA],
    ] as const) {
      const res = await setFields(id, { custom_fields: { x: 'y' } }, key);
      expect([res.status, res.body.error.code]).toEqual([404, 'SUBSCRIPTION_NOT_FOUND']);
    }
    expect(await world()).toEqual(before);
  });
});

describe('fixtures', () => {
  test('the example of docs/fixtures.md seeds: intervals, variants, paid up to the current period, paused', async () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'fixtures.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Subscriptions'));
    const json = section.slice(section.indexOf('```json') + 7, section.indexOf('```', section.indexOf('```json') + 7));
    const fixtures = parseFixtures(JSON.parse(json), clock.now());
    const shop = await t.createShop({ name: 'Fixture shop' });
    const key = (await t.createKey(shop, ['*'])).key;
    const seeded = await t.seed(shop, fixtures);
    expect(seeded.subscriptions).toHaveLength(2);
    const subs = (await list('', key)).body.data as Record<string, unknown>[];
    const byId = new Map(subs.map((s) => [s.id, s]));
    // Started 2026-09-15 monthly: paid up to the period holding the seeding time (the app's clock, which `seed` reads).
    const first = byId.get(seeded.subscriptions[0])!;
    expect(first).toMatchObject({
      status: 'ACTIVE',
      interval: 'MONTH',
      price: 9.99,
      custom_fields: { discord: 'ada#1234' },
    });
    expect(first.created_at).toBe(seconds('2026-09-15T00:00:00Z'));
    const now = clock.now().getTime() / 1000;
    expect(first.current_period_start as number).toBeLessThanOrEqual(now);
    expect(first.current_period_end as number).toBeGreaterThan(now);
    expect(new Date((first.current_period_start as number) * 1000).getUTCDate()).toBe(15);
    expect(byId.get(seeded.subscriptions[1])).toMatchObject({
      status: 'PAUSED',
      interval: 'YEAR',
      price: 99,
      resume_at: seconds('2030-01-01T00:00:00Z'),
    });
    const options = await planOptions(seeded.subscriptions[1]!, key);
    expect(
      options.body.data.options.map((o: { title: string; interval: string }) => `${o.title}:${o.interval}`),
    ).toEqual(['Monthly:MONTH', 'Yearly:YEAR']);
  });

  test('bad references and misplaced fields are refused by the parser, each problem listed', async () => {
    const bad = {
      products: [
        { title: 'Plan', type: 'SUBSCRIPTION', price: '1.00', variants: [{ title: 'V', price: '1.00' }] },
        { title: 'Thing', price: '1.00' },
      ],
      customers: [{ email: 'x@example.com' }],
      subscriptions: [
        { customer: 'nobody@example.com', product: 'Plan', variant: 'V' },
        { customer: 'x@example.com', product: 'Thing' },
        { customer: 'x@example.com', product: 'Plan' },
        { customer: 'x@example.com', product: 'Plan', variant: 'W' },
        { customer: 'x@example.com', product: 'Nope' },
        { customer: 'x@example.com', product: 'Plan', variant: 'V', started_at: '2999-01-01T00:00:00Z' },
        {
          customer: 'x@example.com',
          product: 'Plan',
          variant: 'V',
          status: 'PAUSED',
          resume_at: '2000-01-01T00:00:00Z',
        },
      ],
    };
    let message = '';
    try {
      parseFixtures(bad, new Date());
    } catch (err) {
      expect(err).toBeInstanceOf(FixtureError);
      message = (err as Error).message;
    }
    for (const problem of [
      '/subscriptions/0/customer names no customer of this file',
      '/subscriptions/1/product names a product that is not SUBSCRIPTION',
      '/subscriptions/2/variant is required: the product has variants',
      '/subscriptions/3/variant names no variant of the product',
      '/subscriptions/4/product names no product of this file',
      '/subscriptions/5/started_at is in the future',
      '/subscriptions/6/resume_at must be in the future',
    ])
      expect(message).toContain(problem);
    // The schema: billing only on a SUBSCRIPTION product, resume_at only when PAUSED.
    expect(() =>
      parseFixtures({ products: [{ title: 'S', price: '1', billing: { interval: 'MONTH' } }] }, new Date()),
    ).toThrow(FixtureError);
    expect(() =>
      parseFixtures(
        {
          products: [{ title: 'P', type: 'SUBSCRIPTION', price: '1' }],
          customers: [{ email: 'y@example.com' }],
          subscriptions: [{ customer: 'y@example.com', product: 'P', resume_at: '2030-01-01T00:00:00Z' }],
        },
        new Date(),
      ),
    ).toThrow(FixtureError);
  });
});
