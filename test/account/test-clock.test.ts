// Test clocks (POST /me/test-clock/advance, `clock advance`): the worker runs what falls due on an advanced test
// shop's clock, each once, restricted to that shop; a live shop stays on real time and its key cannot see or move a
// clock.
// - advanced 35 days: a monthly subscription's renewal invoice is issued once (order, order:created; paying it:
//   subscription:renewed and the receipt mail, sent by the worker on the shop's clock), the unpaid order is voided
//   (order:voided), a license past expires_at answers LICENSE_EXPIRED; the live shop's pending order stays PENDING;
// - advancing again by 0 changes nothing, and the worker then finds nothing;
// - a live key: 404 TEST_CLOCK_NOT_FOUND for both operations, the live clock stays at 0;
// - refused bodies (422) and a key without `*` (403) move nothing;
// - the CLI's `clock advance` moves the test twin of the named shop, and the worker voids what fell due.
// - the bound: at most ten years ahead of real time in all, beyond it 400 TEST_CLOCK_LIMIT (the CLI the same rule),
//   nothing moved and nothing written.
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { inProcessCli } from '../helpers/cli';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const DAY = 86_400;
const START = new Date('2027-01-01T00:00:00Z');
// The real clock of the app and the worker: it never moves here, so only the test clock makes anything fall due.
const clock = new ManualClock(START);
let t: TestApp;
let worker: Worker;

let testShop: string;
let liveShop: string;
let testKey: string;
let liveKey: string;
let plan: string;
let widget: string;
let liveWidget: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  worker = await createWorker(t.db, t.config, t.logger, clock);
  testShop = await t.createShop({ mode: 'test', name: 'Clock Shop' });
  liveShop = (await shopRow(testShop)).live_shop_id!;
  testKey = (await t.createKey(testShop, ['*'])).key;
  liveKey = (await t.createKey(liveShop, ['*'])).key;
  [plan, widget] = (
    await t.seed(testShop, {
      products: [
        { title: 'Monthly Plan', type: 'SUBSCRIPTION', price: '10.00', billing: { interval: 'MONTH' } },
        { title: 'Widget', price: '5.00' },
      ],
    })
  ).products as [string, string];
  liveWidget = (await t.seed(liveShop, { products: [{ title: 'Widget', price: '5.00' }] })).products[0]!;
});
afterAll(() => t.close());

const shopRow = (id: string) => t.db.selectFrom('shops').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const offsetOf = async (id: string) => Number((await shopRow(id)).clock_offset_ms);
const advance = (body: unknown, key = testKey) =>
  t.http
    .post('/dev/v1/me/test-clock/advance')
    .set(bearer(key))
    .send(body as object);

async function createOrder(key: string, productId: string, email = 'ada@example.com') {
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email, items: [{ product_id: productId, quantity: 1 }] });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; status: string };
}

async function complete(orderId: string, body: object = { suppress_emails: true }) {
  const res = await t.http.post(`/dev/v1/orders/${orderId}/complete`).set(bearer(testKey)).send(body);
  expect(res.status).toBe(200);
  return res.body.data as { subscription_id: string | null };
}

const orderStatus = async (id: string) =>
  (await t.db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

/** Events of the shop of `type` whose data names `id` (its `id` or `uniqid` field). */
async function eventsOf(shopId: string, type: string, id?: string) {
  const rows = await t.db
    .selectFrom('events')
    .select(['data', 'livemode', 'created_at'])
    .where('shop_id', '=', shopId)
    .where('type', '=', type)
    .execute();
  return rows.filter((r) => {
    if (id === undefined) return true;
    const data = (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as Record<string, unknown>;
    return data.id === id || data.uniqid === id;
  });
}

const renewalInvoices = (subscriptionId: string) =>
  t.db
    .selectFrom('orders')
    .select(['id', 'uniqid', 'status', 'created_at'])
    .where('subscription_id', '=', subscriptionId)
    .where('flow_type', '=', 'SUBSCRIPTION_RENEWAL')
    .execute();

/** What the worker or a clock could change, per table, across both shops. */
async function snapshot() {
  const count = async (table: string) =>
    (
      await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}
        where shop_id in (${testShop}, ${liveShop})`.execute(t.db)
    ).rows[0]!.n;
  const orders = await t.db
    .selectFrom('orders')
    .select(['id', 'status', 'updated_at'])
    .where('shop_id', 'in', [testShop, liveShop])
    .orderBy('id')
    .execute();
  const mail = await t.db
    .selectFrom('outbound_emails')
    .select(['id', 'status'])
    .where('shop_id', 'in', [testShop, liveShop])
    .orderBy('id')
    .execute();
  const subs = await t.db
    .selectFrom('subscriptions')
    .select(['id', 'status', 'next_renewal_at'])
    .where('shop_id', 'in', [testShop, liveShop])
    .orderBy('id')
    .execute();
  return {
    events: await count('events'),
    renewals: await count('subscription_renewals'),
    orders,
    mail,
    subs,
    offsets: [await offsetOf(testShop), await offsetOf(liveShop)],
  };
}

test('advanced 35 days: one renewal, the unpaid order voided, the license expired; by 0: nothing; live untouched', async () => {
  // A monthly subscription started now, an unpaid order, a license expiring in 10 days; the same in the live shop.
  const subscriptionId = (await complete((await createOrder(testKey, plan)).id)).subscription_id!;
  expect(subscriptionId).toMatch(/^sub_/);
  const unpaid = await createOrder(testKey, widget, 'bob@example.com');
  const liveUnpaid = await createOrder(liveKey, liveWidget, 'bob@example.com');
  const license = await t.http
    .post('/dev/v1/licenses')
    .set(bearer(testKey))
    .send({ product_id: widget, expires_at: Math.floor(START.getTime() / 1000) + 10 * DAY });
  expect(license.status).toBe(201);
  const licenseKey = license.body.data.key as string;
  const validate = () => t.http.post('/dev/v1/licenses/validate').set(bearer(testKey)).send({ key: licenseKey });
  expect((await validate()).status).toBe(200);

  // On real time nothing is due yet.
  await worker.drain();
  expect(await renewalInvoices(subscriptionId)).toEqual([]);
  expect(await orderStatus(unpaid.id)).toBe('PENDING');

  const moved = await advance({ seconds: 35 * DAY });
  expect(moved.status).toBe(200);
  expect(moved.body.data).toEqual({
    livemode: false,
    now: new Date(START.getTime() + 35 * DAY * 1000).toISOString(),
    advanced_seconds: 35 * DAY,
  });
  expect(await offsetOf(testShop)).toBe(35 * DAY * 1000);
  const read = await t.http.get('/dev/v1/me/test-clock').set(bearer(testKey));
  expect(read.status).toBe(200);
  expect(read.body.data).toEqual(moved.body.data);

  await worker.drain();

  // The renewal invoice of the period that began Feb 1, issued once, on the shop's clock.
  const invoices = await renewalInvoices(subscriptionId);
  expect(invoices).toHaveLength(1);
  expect(invoices[0]!.status).toBe('PENDING');
  expect(invoices[0]!.created_at.toISOString()).toBe(new Date(START.getTime() + 35 * DAY * 1000).toISOString());
  const invoiceCreated = await eventsOf(testShop, 'order:created', invoices[0]!.id);
  expect(invoiceCreated).toHaveLength(1);
  expect(invoiceCreated[0]!.livemode).toBe(false);
  // The buyer is mailed the invoice to pay (once, marked as test mode), sent by the worker on the shop's clock.
  const invoiceMails = await t.db
    .selectFrom('outbound_emails')
    .select(['status', 'subject', 'text', 'created_at'])
    .where('shop_id', '=', testShop)
    .where('template', '=', 'renewal_invoice')
    .execute();
  expect(invoiceMails).toHaveLength(1);
  expect(invoiceMails[0]!.status).toBe('RECORDED');
  expect(invoiceMails[0]!.subject).toMatch(/^\[TEST MODE\] Your .* subscription at .* renews: invoice /);
  expect(invoiceMails[0]!.text).toContain(`/invoice/${invoices[0]!.uniqid}`);
  expect(invoiceMails[0]!.created_at.toISOString()).toBe(new Date(START.getTime() + 35 * DAY * 1000).toISOString());
  // The unpaid order voided, once; the license expired; the live shop's order untouched, its clock real.
  expect(await orderStatus(unpaid.id)).toBe('VOIDED');
  expect(await eventsOf(testShop, 'order:voided', unpaid.id)).toHaveLength(1);
  const expired = await validate();
  expect(expired.status).toBe(400);
  expect(expired.body.error.code).toBe('LICENSE_EXPIRED');
  expect(await orderStatus(liveUnpaid.id)).toBe('PENDING');
  expect(await eventsOf(liveShop, 'order:voided')).toHaveLength(0);
  expect(await offsetOf(liveShop)).toBe(0);

  // Paying the invoice renews the subscription; its receipt is queued on the shop's clock and the worker sends it
  // (recorded: no SMTP server here).
  const shopNow = START.getTime() + 35 * DAY * 1000;
  expect(invoiceCreated[0]!.created_at.getTime()).toBe(shopNow);
  await complete(invoices[0]!.id, {});
  const renewed = await eventsOf(testShop, 'subscription:renewed', subscriptionId);
  expect(renewed).toHaveLength(1);
  expect(renewed[0]!.created_at.getTime()).toBe(shopNow);
  await worker.drain();
  const receipts = await t.db
    .selectFrom('outbound_emails')
    .select(['status', 'created_at'])
    .where('shop_id', '=', testShop)
    .where('template', '=', 'receipt')
    .execute();
  expect(receipts).toHaveLength(1);
  expect(receipts[0]!.status).toBe('RECORDED');
  expect(receipts[0]!.created_at.getTime()).toBe(shopNow);

  // Advancing by 0: the same clock, and the worker finds nothing new.
  const before = await snapshot();
  const again = await advance({ seconds: 0 });
  expect(again.status).toBe(200);
  expect(again.body.data).toEqual(moved.body.data);
  expect(await worker.drain()).toBe(0);
  expect(await snapshot()).toEqual(before);
  expect(await renewalInvoices(subscriptionId)).toHaveLength(1);
});

test('a live key cannot see or move a clock: 404 TEST_CLOCK_NOT_FOUND, nothing moved', async () => {
  const before = [await offsetOf(liveShop), await offsetOf(testShop)];
  const read = await t.http.get('/dev/v1/me/test-clock').set(bearer(liveKey));
  expect(read.status).toBe(404);
  expect(read.body.error.code).toBe('TEST_CLOCK_NOT_FOUND');
  const moved = await advance({ seconds: 3600 }, liveKey);
  expect(moved.status).toBe(404);
  expect(moved.body.error.code).toBe('TEST_CLOCK_NOT_FOUND');
  expect([await offsetOf(liveShop), await offsetOf(testShop)]).toEqual(before);
  expect(before[0]).toBe(0);
});

test('refused bodies (422) and a key without full access (403) move nothing', async () => {
  const before = await offsetOf(testShop);
  for (const body of [
    { seconds: -1 },
    { seconds: 'x' },
    { seconds: 1.5 },
    { seconds: 10 * 366 * DAY + 1 },
    {},
    { seconds: 60, extra: true },
  ]) {
    const res = await advance(body);
    expect({ body, status: res.status }).toEqual({ body, status: 422 });
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  }
  const narrow = (await t.createKey(testShop, ['orders.read', 'orders.write'])).key;
  const forbidden = await advance({ seconds: 60 }, narrow);
  expect(forbidden.status).toBe(403);
  expect(await offsetOf(testShop)).toBe(before);
  // Reading the clock needs no more than a key of the shop.
  expect((await t.http.get('/dev/v1/me/test-clock').set(bearer(narrow))).status).toBe(200);
});

test('the CLI moves the named shop test twin clock; the worker then voids what fell due there only', async () => {
  const cli = inProcessCli(t.database);
  const twin = await t.createShop({ mode: 'test', name: 'CLI Clock' });
  const live = (await shopRow(twin)).live_shop_id!;
  const twinKey = (await t.createKey(twin, ['*'])).key;
  const product = (await t.seed(twin, { products: [{ title: 'Widget', price: '5.00' }] })).products[0]!;
  const pending = await createOrder(twinKey, product);
  // The other test shop's clock is where the first test left it; nothing of it is due anew.
  const otherOffset = await offsetOf(testShop);

  const refused = await cli('clock', 'advance', '--shop', live, '--seconds', '-5');
  expect(refused.code).not.toBe(0);
  expect(await offsetOf(twin)).toBe(0);

  const moved = await cli('clock', 'advance', '--shop', live, '--seconds', String(2 * 3600));
  expect(moved.code).toBe(0);
  // The operator's clock is the wall clock (the app's here is a ManualClock): its now is real time plus the offset.
  expect(moved.json).toMatchObject({ livemode: false, advanced_seconds: 2 * 3600 });
  expect(Math.abs(Date.parse(moved.json.now) - (Date.now() + 2 * 3600 * 1000))).toBeLessThan(60_000);
  expect(await offsetOf(twin)).toBe(2 * 3600 * 1000);
  expect(await offsetOf(live)).toBe(0);
  expect(await offsetOf(testShop)).toBe(otherOffset);

  expect(await worker.drain()).toBe(1);
  expect(await orderStatus(pending.id)).toBe('VOIDED');
  expect(await eventsOf(twin, 'order:voided', pending.id)).toHaveLength(1);
});

test('a clock runs at most ten years ahead: an advance beyond is 400 TEST_CLOCK_LIMIT and moves nothing, API and CLI', async () => {
  const MAX = 10 * 366 * DAY;
  const shop = await t.createShop({ mode: 'test', name: 'Bounded Clock' });
  const key = (await t.createKey(shop, ['*'])).key;
  const product = (await t.seed(shop, { products: [{ title: 'Widget', price: '5.00' }] })).products[0]!;
  await createOrder(key, product);

  // Two advances that each fit but not together: the second is refused whole.
  expect((await advance({ seconds: MAX - 100 }, key)).status).toBe(200);
  const events = async () =>
    (await t.db.selectFrom('events').select('id').where('shop_id', '=', shop).execute()).map((e) => e.id).sort();
  await worker.drain();
  const before = { row: await shopRow(shop), events: await events() };
  const refused = await advance({ seconds: 101 }, key);
  expect(refused.status).toBe(400);
  expect(refused.body.error.code).toBe('TEST_CLOCK_LIMIT');
  expect(refused.body.error.message).toContain('may move 100 more seconds');
  const cli = inProcessCli(t.database);
  const cliRefused = await cli('clock', 'advance', '--shop', shop, '--seconds', '101');
  expect(cliRefused.code).toBe(1);
  expect((cliRefused.json as { error: { message: string } }).error.message).toContain(
    'at most 316224000 seconds (ten years) ahead of real time: this one may move 100 more seconds',
  );
  expect({ row: await shopRow(shop), events: await events() }).toEqual(before);
  expect(await worker.drain()).toBe(0);
  const read = await t.http.get('/dev/v1/me/test-clock').set(bearer(key));
  expect(read.body.data.advanced_seconds).toBe(MAX - 100);

  // Up to the bound exactly is allowed (the CLI the same rule), and 0 still answers there.
  const cliMoved = await cli('clock', 'advance', '--shop', shop, '--seconds', '100');
  expect(cliMoved.code).toBe(0);
  const atMax = await advance({ seconds: 0 }, key);
  expect(atMax.status).toBe(200);
  expect(atMax.body.data).toEqual({
    livemode: false,
    now: new Date(START.getTime() + MAX * 1000).toISOString(),
    advanced_seconds: MAX,
  });
  expect((await advance({ seconds: 1 }, key)).body.error.code).toBe('TEST_CLOCK_LIMIT');
  expect(await offsetOf(shop)).toBe(MAX * 1000);
});
