// The renewal cycle with the ManualClock, walked in one-day steps (the renewal job, then the order expiry job, then
// the renewal job again, as a worker runs them; renewal invoices paid through POST /orders/{id}/complete, the
// completion pipeline):
// - a year of monthly renewals: 12 renewal invoices, one per period, none twice, each issued when its period began;
// - paused from Mar 15 to May 15: no invoice while paused, ACTIVE again by itself at resume_at, the next period
//   starting then: 10 invoices in the year (Feb 1, Mar 1, then May 15 ... Dec 15);
// - unpaid: PAST_DUE after the first invoice expires, CANCELLED after the third (`subscription:cancelled`), nothing
//   billed afterwards; a late payment makes it ACTIVE again; an invoice expiring while paused does not count;
// - the renewal invoice is an order priced by the order pricing (tax), at the subscription's price;
// - two renewal jobs at once (interleaved, and concurrently on real PostgreSQL) create each renewal once.
import { sql, type Kysely } from 'kysely';
import { openPostgres } from '../../db/database';
import type { Database } from '../../db/tables';
import { ManualClock } from '../../src/platform/clock';
import { orderExpiryJob } from '../../src/worker/order-expiry';
import { subscriptionRenewalJob } from '../../src/worker/subscription-renewals';
import type { Job } from '../../src/worker/worker';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2027-01-01T00:00:00Z'));
const STEP = 24 * 3_600_000;
let t: TestApp;
let renewals: Job;
let expiry: Job;

beforeAll(async () => {
  t = await startTestApp({ clock });
  renewals = subscriptionRenewalJob(t.db, { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl });
  expiry = orderExpiryJob(t.db, { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl });
});
afterAll(() => t.close());

const iso = (s: string) => new Date(s);
const seconds = (s: string) => Math.floor(iso(s).getTime() / 1000);

interface Shop {
  id: string;
  key: string;
  product: string;
}

async function shopWithPlan(price = '10.00', fixtures: object = {}): Promise<Shop> {
  const id = await t.createShop({ name: 'Renewals' });
  const key = (await t.createKey(id, ['*'])).key;
  const product = (
    await t.seed(id, {
      products: [{ title: 'Monthly Plan', type: 'SUBSCRIPTION', price, billing: { interval: 'MONTH' } }],
      ...fixtures,
    })
  ).products[0]!;
  return { id, key, product };
}

/** A subscription started at `at` by a completed order (the clock is set there). */
async function subscribe(shop: Shop, at: string, email = 'ada@example.com', quantity = 1): Promise<string> {
  clock.set(at);
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(shop.key))
    .send({ email, items: [{ product_id: shop.product, quantity }] });
  expect(created.status).toBe(201);
  const done = await pay(shop, created.body.data.id);
  return done.subscription_id as string;
}

async function pay(shop: Shop, orderId: string) {
  const res = await t.http
    .post(`/dev/v1/orders/${orderId}/complete`)
    .set(bearer(shop.key))
    .send({ suppress_emails: true });
  expect(res.status).toBe(200);
  return res.body.data;
}

/** One worker round: renewals, expiry, renewals (what an expired invoice leads to is settled in the same round). */
async function round(): Promise<void> {
  await renewals.runOnce();
  if ((await expiry.runOnce()) > 0) await renewals.runOnce();
}

async function pendingInvoices(subscriptionId: string): Promise<string[]> {
  return (
    await t.db
      .selectFrom('orders')
      .select('id')
      .where('subscription_id', '=', subscriptionId)
      .where('flow_type', '=', 'SUBSCRIPTION_RENEWAL')
      .where('status', '=', 'PENDING')
      .execute()
  ).map((r) => r.id);
}

/**
 * Moves the clock in one-day steps until `until` (inclusive), running a round each step; pays the subscription's
 * open renewal invoices when `payUntil` is not yet passed. `each` sees every step.
 */
async function walk(
  shop: Shop,
  subscriptionId: string,
  until: string,
  options: { pay?: boolean; each?: (now: Date) => Promise<void> } = {},
): Promise<void> {
  const end = iso(until).getTime();
  while (clock.now().getTime() + STEP <= end) {
    clock.advance(STEP);
    await round();
    if (options.pay !== false) for (const id of await pendingInvoices(subscriptionId)) await pay(shop, id);
    await options.each?.(clock.now());
  }
}

interface Invoice {
  order_id: string;
  order_status: string;
  renewal_status: string;
  period_start: Date;
  period_end: Date;
  created_at: Date;
}

async function invoicesOf(subscriptionId: string): Promise<Invoice[]> {
  return t.db
    .selectFrom('subscription_renewals as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .select([
      'r.order_id',
      'o.status as order_status',
      'r.status as renewal_status',
      'r.period_start',
      'r.period_end',
      'o.created_at',
    ])
    .where('r.subscription_id', '=', subscriptionId)
    .orderBy('o.created_at')
    .orderBy('r.id')
    .execute();
}

async function subscriptionRow(id: string) {
  return t.db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function eventsAbout(type: string, subscriptionId: string) {
  const rows = await sql<{
    data: string;
  }>`select data from events where type = ${type} order by created_at, id`.execute(t.db);
  return rows.rows
    .map((r) => JSON.parse(r.data) as { id: string; status: string })
    .filter((e) => e.id === subscriptionId);
}

const monthStarts = (year: number, months: number[], day = 1) =>
  months.map((m) => new Date(Date.UTC(year + Math.floor(m / 12), m % 12, day)).toISOString());

test('a year of monthly renewals: 12 invoices, one per period, none twice, each at its period start', async () => {
  const shop = await shopWithPlan();
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z');
  await walk(shop, sub, '2028-01-01T00:00:00Z');
  const invoices = await invoicesOf(sub);
  expect(invoices).toHaveLength(12);
  // Feb 1 2027 ... Jan 1 2028, each a month long, each issued within a step of its period's start.
  expect(invoices.map((i) => i.period_start.toISOString())).toEqual(
    monthStarts(2027, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
  );
  for (const i of invoices) {
    expect(i.period_end.toISOString()).toBe(
      new Date(Date.UTC(i.period_start.getUTCFullYear(), i.period_start.getUTCMonth() + 1, 1)).toISOString(),
    );
    expect(i.created_at.getTime() - i.period_start.getTime()).toBeGreaterThanOrEqual(0);
    expect(i.created_at.getTime() - i.period_start.getTime()).toBeLessThan(STEP);
    expect([i.order_status, i.renewal_status]).toEqual(['COMPLETED', 'PAID']);
  }
  expect(new Set(invoices.map((i) => i.order_id)).size).toBe(12);
  const renewed = await eventsAbout('subscription:renewed', sub);
  expect(renewed).toHaveLength(12);
  const row = await subscriptionRow(sub);
  expect(row).toMatchObject({ status: 'ACTIVE', unpaid_renewals: 0 });
  expect([row.current_period_start.toISOString(), row.current_period_end.toISOString()]).toEqual([
    '2028-01-01T00:00:00.000Z',
    '2028-02-01T00:00:00.000Z',
  ]);
  // Running the job again, at the same time, bills nothing more.
  await round();
  expect(await invoicesOf(sub)).toHaveLength(12);
  // The orders that name the subscription: the one that started it and the 12 renewals.
  const named = await t.db.selectFrom('orders').select('id').where('subscription_id', '=', sub).execute();
  expect(named).toHaveLength(13);
}, 180_000);

test('paused for two months (Mar 15 to May 15): no invoice while paused, resumed by itself, 10 invoices in the year', async () => {
  const shop = await shopWithPlan();
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z');
  await walk(shop, sub, '2027-03-15T00:00:00Z');
  const paused = await t.http
    .post(`/dev/v1/subscriptions/${sub}/pause`)
    .set(bearer(shop.key))
    .send({ resume_at: seconds('2027-05-15T00:00:00Z'), reason: 'Travelling' });
  expect(paused.status).toBe(200);
  expect(paused.body.data).toMatchObject({ status: 'PAUSED', resume_at: seconds('2027-05-15T00:00:00Z') });
  const statuses: { at: string; status: string }[] = [];
  await walk(shop, sub, '2028-01-01T00:00:00Z', {
    each: async (now) => {
      if (now.getTime() <= iso('2027-05-16T00:00:00Z').getTime())
        statuses.push({ at: now.toISOString(), status: (await subscriptionRow(sub)).status });
    },
  });
  // PAUSED up to the step before resume_at; ACTIVE from the step at resume_at, with no request.
  expect(statuses.filter((s) => s.at < '2027-05-15T00:00:00.000Z').every((s) => s.status === 'PAUSED')).toBe(true);
  expect(statuses.filter((s) => s.at >= '2027-05-15T00:00:00.000Z').map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE']);
  const invoices = await invoicesOf(sub);
  // Feb 1 and Mar 1, then none for Apr 1 and May 1 (paused); the period restarts at the resumption: May 15 ... Dec 15.
  expect(invoices.map((i) => i.period_start.toISOString())).toEqual([
    ...monthStarts(2027, [1, 2]),
    ...monthStarts(2027, [4, 5, 6, 7, 8, 9, 10, 11], 15),
  ]);
  expect(invoices).toHaveLength(10);
  const inPause = invoices.filter(
    (i) => i.created_at > iso('2027-03-15T00:00:00Z') && i.created_at < iso('2027-05-15T00:00:00Z'),
  );
  expect(inPause).toEqual([]);
  expect(invoices.every((i) => i.order_status === 'COMPLETED')).toBe(true);
  const row = await subscriptionRow(sub);
  expect(row).toMatchObject({ status: 'ACTIVE', paused_at: null, resume_at: null, pause_reason: null });
  expect(row.current_period_end.toISOString()).toBe('2028-01-15T00:00:00.000Z');
  expect(await eventsAbout('subscription:paused', sub)).toHaveLength(1);
  expect(await eventsAbout('subscription:renewed', sub)).toHaveLength(10);
}, 180_000);

test('unpaid: PAST_DUE after the first expired invoice, CANCELLED after the third, nothing billed afterwards', async () => {
  const shop = await shopWithPlan();
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z');
  const seen: { at: string; status: string; unpaid: number }[] = [];
  await walk(shop, sub, '2027-02-10T00:00:00Z', { pay: false });
  // PAST_DUE: one invoice expired (Feb 8), the second (same period) is open.
  const pastDue = await subscriptionRow(sub);
  expect([pastDue.status, pastDue.unpaid_renewals]).toEqual(['PAST_DUE', 1]);
  const before = await t.db.selectFrom('subscriptions').selectAll().where('id', '=', sub).executeTakeFirstOrThrow();
  const refused = await t.http.post(`/dev/v1/subscriptions/${sub}/pause`).set(bearer(shop.key)).send({});
  expect([refused.status, refused.body.error.code]).toEqual([400, 'SUBSCRIPTION_NOT_ACTIVE']);
  expect(await subscriptionRow(sub)).toEqual(before);
  await walk(shop, sub, '2027-05-01T00:00:00Z', {
    pay: false,
    each: async (now) => {
      const row = await subscriptionRow(sub);
      seen.push({ at: now.toISOString(), status: row.status, unpaid: row.unpaid_renewals });
    },
  });
  const invoices = await invoicesOf(sub);
  // Three invoices for the period of Feb 1, each voided unpaid after 7 days, the next issued at once.
  expect(invoices).toHaveLength(3);
  expect(invoices.every((i) => i.period_start.toISOString() === '2027-02-01T00:00:00.000Z')).toBe(true);
  expect(invoices.map((i) => [i.order_status, i.renewal_status])).toEqual([
    ['VOIDED', 'EXPIRED'],
    ['VOIDED', 'EXPIRED'],
    ['VOIDED', 'EXPIRED'],
  ]);
  const row = await subscriptionRow(sub);
  expect(row).toMatchObject({ status: 'CANCELLED', unpaid_renewals: 3 });
  // Cancelled when the third expired: Feb 1 + 3 x 7 days, within a step.
  expect(row.cancelled_at!.getTime() - iso('2027-02-22T00:00:00Z').getTime()).toBeLessThanOrEqual(2 * STEP);
  expect(seen.find((s) => s.status === 'CANCELLED')!.unpaid).toBe(3);
  const cancelled = await eventsAbout('subscription:cancelled', sub);
  expect(cancelled).toHaveLength(1);
  expect(cancelled[0]!.status).toBe('CANCELLED');
  expect(await eventsAbout('subscription:renewed', sub)).toHaveLength(0);
  // A cancelled subscription cannot be paused, and the refusal writes nothing.
  const after = await subscriptionRow(sub);
  const again = await t.http
    .post(`/dev/v1/subscriptions/${sub}/pause`)
    .set(bearer(shop.key))
    .send({ resume_at: seconds('2027-06-01T00:00:00Z') });
  expect([again.status, again.body.error.code]).toEqual([400, 'SUBSCRIPTION_NOT_ACTIVE']);
  expect(await subscriptionRow(sub)).toEqual(after);
});

test('a late payment of the retried invoice makes a PAST_DUE subscription ACTIVE, its period from the renewal date', async () => {
  const shop = await shopWithPlan();
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z');
  await walk(shop, sub, '2027-02-10T00:00:00Z', { pay: false });
  expect((await subscriptionRow(sub)).status).toBe('PAST_DUE');
  const [open] = await pendingInvoices(sub);
  const paid = await pay(shop, open!);
  expect(paid.subscription_id).toBe(sub);
  const row = await subscriptionRow(sub);
  expect(row).toMatchObject({ status: 'ACTIVE', unpaid_renewals: 0 });
  expect([row.current_period_start.toISOString(), row.current_period_end.toISOString()]).toEqual([
    '2027-02-01T00:00:00.000Z',
    '2027-03-01T00:00:00.000Z',
  ]);
  expect(await eventsAbout('subscription:renewed', sub)).toHaveLength(1);
  await walk(shop, sub, '2027-03-01T00:00:00Z');
  expect((await invoicesOf(sub)).map((i) => i.period_start.toISOString())).toEqual([
    '2027-02-01T00:00:00.000Z',
    '2027-02-01T00:00:00.000Z',
    '2027-03-01T00:00:00.000Z',
  ]);
});

test('an invoice that expires while paused does not count; the resumption bills from resume_at', async () => {
  const shop = await shopWithPlan();
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z');
  await walk(shop, sub, '2027-02-01T00:00:00Z', { pay: false });
  expect(await pendingInvoices(sub)).toHaveLength(1);
  expect((await t.http.post(`/dev/v1/subscriptions/${sub}/pause`).set(bearer(shop.key)).send({})).status).toBe(200);
  await walk(shop, sub, '2027-02-20T00:00:00Z', { pay: false });
  const paused = await subscriptionRow(sub);
  expect(paused).toMatchObject({ status: 'PAUSED', unpaid_renewals: 0, resume_at: null });
  expect((await invoicesOf(sub)).map((i) => i.renewal_status)).toEqual(['EXPIRED']);
  // Pausing again schedules the resumption.
  const moved = await t.http
    .post(`/dev/v1/subscriptions/${sub}/pause`)
    .set(bearer(shop.key))
    .send({ resume_at: seconds('2027-03-01T00:00:00Z') });
  expect(moved.body.data).toMatchObject({ status: 'PAUSED', paused_at: paused.paused_at!.getTime() / 1000 });
  await walk(shop, sub, '2027-03-01T00:00:00Z');
  const invoices = await invoicesOf(sub);
  expect(invoices.map((i) => [i.period_start.toISOString(), i.renewal_status])).toEqual([
    ['2027-02-01T00:00:00.000Z', 'EXPIRED'],
    ['2027-03-01T00:00:00.000Z', 'PAID'],
  ]);
  expect(await subscriptionRow(sub)).toMatchObject({ status: 'ACTIVE', unpaid_renewals: 0 });
});

test('the renewal invoice is an order at the subscription’s price with the shop’s tax, paid by the usual pipeline', async () => {
  const shop = await shopWithPlan('4.99', { tax: { rate: '20' } });
  const sub = await subscribe(shop, '2027-01-01T00:00:00Z', 'tax@example.com', 3);
  // The catalog price changes later: the subscription keeps its own.
  await t.db.updateTable('products').set({ price: '7.00' }).where('id', '=', shop.product).execute();
  await walk(shop, sub, '2027-02-01T00:00:00Z', { pay: false });
  const [id] = await pendingInvoices(sub);
  const orders = await t.http.get('/dev/v1/orders?limit=10').set(bearer(shop.key));
  const invoice = orders.body.data.find((o: { id: string }) => o.id === id);
  expect(invoice).toMatchObject({
    status: 'PENDING',
    payment_status: 'PENDING',
    subscription_id: sub,
    flow_type: 'SUBSCRIPTION_RENEWAL',
    is_developer_invoice: false,
    customer_email: 'tax@example.com',
    subtotal: 14.97,
    tax: 2.99,
    tax_percentage: 20,
    total: 17.96,
    currency: 'USD',
  });
  expect(invoice.items).toEqual([
    expect.objectContaining({
      product_id: shop.product,
      product_type: 'SUBSCRIPTION',
      quantity: 3,
      unit_price: 4.99,
      total: 14.97,
      delivery_status: 'PENDING',
    }),
  ]);
  expect(invoice.checkout_url).toMatch(/\/invoice\/[0-9a-f-]{36}$/);
  const created = await sql<{ data: string }>`select data from events where type = 'order:created'`.execute(t.db);
  expect(created.rows.map((r) => JSON.parse(r.data).id)).toContain(id);
  const done = await pay(shop, id!);
  expect(done.items[0]).toMatchObject({
    delivery_status: 'DELIVERED',
    delivered_items: { subscription_id: sub, current_period_end: '2027-03-01T00:00:00.000Z' },
  });
  const paidEvents = await sql<{ data: string }>`select data from events where type = 'order:paid'`.execute(t.db);
  expect(paidEvents.rows.map((r) => JSON.parse(r.data).uniqid)).toContain(invoice.uniqid);
  expect((await subscriptionRow(sub)).current_period_end.toISOString()).toBe('2027-03-01T00:00:00.000Z');
});

/**
 * Twelve subscriptions renewed for six months by two renewal jobs (batches of 5, so both get work): at each month's
 * start, both run until neither finds work, `together` (at once) or one after the other; then the invoices are paid.
 */
async function twoSchedulers(together: boolean, year: number, secondDb: Kysely<Database> = t.db) {
  const shop = await shopWithPlan();
  const subs: string[] = [];
  for (let i = 0; i < 12; i++) subs.push(await subscribe(shop, `${year}-01-01T00:00:00Z`, `s${i}@example.com`));
  // The earlier tests' subscriptions catch up first (each gets an invoice, open past this walk: the expiry job does
  // not run below), so what the two jobs do during the walk is this shop's renewals alone.
  while ((await renewals.runOnce()) + (await expiry.runOnce()) > 0);
  const options = { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl, batchSize: 5 };
  const a = subscriptionRenewalJob(t.db, options);
  const b = subscriptionRenewalJob(secondDb, options);
  const handled = { a: 0, b: 0 };
  for (let month = 1; month <= 6; month++) {
    clock.set(new Date(Date.UTC(year, month, 1, 1)));
    for (;;) {
      let x: number;
      let y: number;
      if (together) [x, y] = await Promise.all([a.runOnce(), b.runOnce()]);
      else {
        x = await a.runOnce();
        y = await b.runOnce();
      }
      handled.a += x;
      handled.b += y;
      if (x + y === 0) break;
    }
    const open = await t.db
      .selectFrom('orders')
      .select('id')
      .where('shop_id', '=', shop.id)
      .where('flow_type', '=', 'SUBSCRIPTION_RENEWAL')
      .where('status', '=', 'PENDING')
      .execute();
    expect(open).toHaveLength(12);
    for (const o of open) await pay(shop, o.id);
  }
  for (const sub of subs) {
    const invoices = await invoicesOf(sub);
    expect(invoices.map((i) => i.period_start.toISOString())).toEqual(monthStarts(year, [1, 2, 3, 4, 5, 6]));
  }
  const all = await t.db
    .selectFrom('subscription_renewals')
    .select(['subscription_id', 'period_start'])
    .where('shop_id', '=', shop.id)
    .execute();
  expect(all).toHaveLength(12 * 6);
  expect(new Set(all.map((r) => `${r.subscription_id}@${r.period_start.toISOString()}`)).size).toBe(12 * 6);
  // Each job issued some of them, and together exactly one per subscription and month.
  expect(handled.a + handled.b).toBe(12 * 6);
  expect(handled.a).toBeGreaterThan(0);
  expect(handled.b).toBeGreaterThan(0);
  return handled;
}

test('two renewal jobs interleaved create each renewal once', async () => {
  await twoSchedulers(false, 2031);
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

pgOnly('two renewal jobs running at once on PostgreSQL create each renewal once', async () => {
  // The second scheduler has a connection pool of its own, as a second worker process would.
  const second = openPostgres(t.database.url!, { max: 5 });
  try {
    const handled = await twoSchedulers(true, 2032, second.db);
    console.log('two renewal jobs at once: invoices issued by each', handled);
  } finally {
    await second.close();
  }
});
