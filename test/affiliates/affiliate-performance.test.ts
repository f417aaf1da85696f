// GET /affiliates/customers/{customerId}/performance: the figures of a period (and of each day, week or month in
// it) checked against orders created, completed and refunded in this test at chosen times, and against the orders
// and refunds tables directly; the list and the customer record show the same all-time figures; every refusal.
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-10-31T12:00:00Z'));
let t: TestApp;
let shop: string;
let key: string;
let keyB: string;
let affiliate: string;
let other: string;
let plain: string;
let bAffiliate: string;
const orderIds: Record<string, string> = {};
const s = (iso: string) => Date.parse(iso) / 1000;

const createOrder = (body: Record<string, unknown>) => t.http.post('/dev/v1/orders').set(bearer(key)).send(body);
const complete = (id: string) => t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(key)).send({});
const performance = (id: string, query = '', k = key) =>
  t.http.get(`/dev/v1/affiliates/customers/${id}/performance${query}`).set(bearer(k));

beforeAll(async () => {
  t = await startTestApp({ clock });
  shop = await t.createShop({ name: 'Perf', currency: 'USD' });
  key = (await t.createKey(shop, ['*'])).key;
  const shopB = await t.createShop({ name: 'Other', currency: 'USD' });
  keyB = (await t.createKey(shopB, ['*'])).key;
  const seeded = await t.seed(shop, {
    products: [
      { title: 'Ten', price: '10.00', type: 'SERVICE' },
      { title: 'Twenty', price: '20.00', type: 'SERVICE' },
    ],
    customers: [
      { email: 'aff@example.com', affiliate: { code: 'AFF', commission_percent: '10' } },
      { email: 'oth@example.com', affiliate: { code: 'OTH', commission_percent: '50' } },
      { email: 'plain@example.com' },
    ],
  });
  const [ten, twenty] = seeded.products as [string, string];
  const byEmail = Object.fromEntries(
    (await t.db.selectFrom('customers').select(['id', 'email']).where('shop_id', '=', shop).execute()).map((c) => [
      c.email,
      c.id,
    ]),
  );
  [affiliate, other, plain] = [byEmail['aff@example.com']!, byEmail['oth@example.com']!, byEmail['plain@example.com']!];
  const bSeed = await t.seed(shopB, { customers: [{ email: 'aff@example.com', affiliate: { code: 'AFF' } }] });
  bAffiliate = bSeed.customers[0]!;

  const at = async (iso: string, step: () => Promise<unknown>) => {
    clock.set(iso);
    await step();
  };
  const order = async (name: string, product: string, extra: Record<string, unknown> = {}) => {
    const res = await createOrder({
      email: `${name}@buyers.example`,
      items: [{ product_id: product, quantity: 1 }],
      ...extra,
    });
    expect(res.status).toBe(201);
    orderIds[name] = res.body.data.id;
  };
  const done = async (name: string) => expect((await complete(orderIds[name]!)).status).toBe(200);
  const refund = async (name: string, amount: string) =>
    expect(
      (await t.http.post(`/dev/v1/orders/${orderIds[name]}/refund`).set(bearer(key)).send({ amount })).status,
    ).toBe(200);

  // Created on 31 October, completed on 2 November: it counts when it completed.
  await at('2026-10-31T12:00:00Z', () => order('o1', ten, { affiliate_code: 'AFF' }));
  await at('2026-11-02T10:00:00Z', () => done('o1'));
  await at('2026-11-03T23:59:59Z', async () => {
    await order('o2', twenty, { affiliate_code: 'AFF' });
    await done('o2');
  });
  await at('2026-11-04T00:00:00Z', () => refund('o1', '3.33'));
  await at('2026-11-10T12:00:00Z', async () => {
    const res = await t.http
      .post(`/dev/v1/customers/${affiliate}/affiliate/convert-to-balance`)
      .set(bearer(key))
      .send({ amount: 1 });
    expect(res.status).toBe(200);
  });
  // Not this affiliate's: another affiliate's order, an order of no one, an order never completed.
  await at('2026-11-10T13:00:00Z', async () => {
    await order('o3', ten, { affiliate_code: 'OTH' });
    await done('o3');
    await order('o4', ten);
    await done('o4');
    await order('o5', twenty, { affiliate_code: 'AFF' });
  });
  // After the November period.
  await at('2026-12-01T00:00:00Z', async () => {
    await order('o6', twenty, { affiliate_code: 'AFF' });
    await done('o6');
  });
  clock.set('2026-12-05T00:00:00Z');
});
afterAll(() => t.close());

const zeroPeriod = {
  referred_orders: 0,
  referred_revenue: 0,
  refunded_amount: 0,
  commission_earned: 0,
  commission_reversed: 0,
  commission_paid: 0,
};

type Period = typeof zeroPeriod & { from: number; to: number };

/** The periods' figures added up (exactly): they must equal the totals. */
function sumOf(periods: Period[]) {
  const add = (k: keyof typeof zeroPeriod) => periods.reduce((acc, p) => acc.plus(p[k]), new Decimal(0)).toNumber();
  return {
    referred_orders: add('referred_orders'),
    referred_revenue: add('referred_revenue'),
    refunded_amount: add('refunded_amount'),
    commission_earned: add('commission_earned'),
    commission_reversed: add('commission_reversed'),
    commission_paid: add('commission_paid'),
  };
}

/** The same figures straight from the orders and refunds tables (not the ledger). */
async function fromOrders(from: string, to: string) {
  const orders = await sql<{ n: string; revenue: string | null }>`
    select count(*)::text as n, sum(total)::text as revenue from orders
    where shop_id = ${shop} and affiliate_customer_id = ${affiliate}
      and completed_at >= ${from}::timestamptz and completed_at < ${to}::timestamptz`.execute(t.db);
  const refunds = await sql<{ refunded: string | null }>`
    select sum(r.amount)::text as refunded from refunds r join orders o on o.shop_id = r.shop_id and o.id = r.order_id
    where o.shop_id = ${shop} and o.affiliate_customer_id = ${affiliate}
      and r.created_at >= ${from}::timestamptz and r.created_at < ${to}::timestamptz`.execute(t.db);
  return {
    referred_orders: Number(orders.rows[0]!.n),
    referred_revenue: new Decimal(orders.rows[0]!.revenue ?? 0).toNumber(),
    refunded_amount: new Decimal(refunds.rows[0]!.refunded ?? 0).toNumber(),
  };
}

test('November by day: totals, the days they happened on, and the orders table agree', async () => {
  const res = await performance(affiliate, `?from=${s('2026-11-01T00:00:00Z')}&to=${s('2026-12-01T00:00:00Z')}`);
  expect(res.status).toBe(200);
  const d = res.body.data;
  expect(d).toMatchObject({
    customer_id: affiliate,
    currency: 'USD',
    from: s('2026-11-01T00:00:00Z'),
    to: s('2026-12-01T00:00:00Z'),
    interval: 'day',
    referred_orders: 2,
    referred_revenue: 30,
    refunded_amount: 3.33,
    commission_earned: 3,
    commission_reversed: 0.33,
    commission_paid: 1,
    // Now (whatever the period): 3 - 0.33 - 1 + 2 (December's order).
    balance: 3.67,
  });
  expect(d.periods).toHaveLength(30);
  const day = (n: number) => d.periods[n - 1];
  expect(day(1)).toEqual({ from: s('2026-11-01T00:00:00Z'), to: s('2026-11-02T00:00:00Z'), ...zeroPeriod });
  expect(day(2)).toMatchObject({ referred_orders: 1, referred_revenue: 10, commission_earned: 1 });
  expect(day(3)).toMatchObject({ referred_orders: 1, referred_revenue: 20, commission_earned: 2 });
  expect(day(4)).toMatchObject({ refunded_amount: 3.33, commission_reversed: 0.33, referred_orders: 0 });
  expect(day(10)).toMatchObject({ commission_paid: 1, referred_orders: 0 });
  const busy = new Set([2, 3, 4, 10]);
  d.periods.forEach((p: Period, i: number) => {
    if (!busy.has(i + 1)) expect(p).toMatchObject(zeroPeriod);
    expect(p.to - p.from).toBe(86400);
  });
  expect(sumOf(d.periods)).toEqual({
    referred_orders: d.referred_orders,
    referred_revenue: d.referred_revenue,
    refunded_amount: d.refunded_amount,
    commission_earned: d.commission_earned,
    commission_reversed: d.commission_reversed,
    commission_paid: d.commission_paid,
  });
  expect(await fromOrders('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z')).toEqual({
    referred_orders: 2,
    referred_revenue: 30,
    refunded_amount: 3.33,
  });
});

test('by ISO week from a Sunday: the first and last periods are cut at the period’s ends', async () => {
  const res = await performance(
    affiliate,
    `?from=${s('2026-11-01T00:00:00Z')}&to=${s('2026-12-01T00:00:00Z')}&interval=week`,
  );
  expect(res.status).toBe(200);
  const bounds = res.body.data.periods.map((p: Period) => [p.from, p.to]);
  expect(bounds).toEqual(
    [
      ['2026-11-01', '2026-11-02'],
      ['2026-11-02', '2026-11-09'],
      ['2026-11-09', '2026-11-16'],
      ['2026-11-16', '2026-11-23'],
      ['2026-11-23', '2026-11-30'],
      ['2026-11-30', '2026-12-01'],
    ].map(([a, b]) => [s(`${a}T00:00:00Z`), s(`${b}T00:00:00Z`)]),
  );
  const [, second, third] = res.body.data.periods;
  expect(second).toMatchObject({
    referred_orders: 2,
    referred_revenue: 30,
    refunded_amount: 3.33,
    commission_earned: 3,
    commission_reversed: 0.33,
    commission_paid: 0,
  });
  expect(third).toMatchObject({ referred_orders: 0, commission_paid: 1 });
  expect(sumOf(res.body.data.periods)).toMatchObject({ referred_orders: 2, commission_paid: 1 });
});

test('by month over mid-October to mid-December: December’s order in the last period', async () => {
  const [from, to] = ['2026-10-15T00:00:00Z', '2026-12-15T00:00:00Z'];
  const res = await performance(affiliate, `?from=${s(from)}&to=${s(to)}&interval=month`);
  expect(res.status).toBe(200);
  const d = res.body.data;
  expect(d.periods.map((p: Period) => [p.from, p.to])).toEqual([
    [s(from), s('2026-11-01T00:00:00Z')],
    [s('2026-11-01T00:00:00Z'), s('2026-12-01T00:00:00Z')],
    [s('2026-12-01T00:00:00Z'), s(to)],
  ]);
  expect(d.periods[0]).toMatchObject(zeroPeriod);
  expect(d.periods[2]).toMatchObject({ referred_orders: 1, referred_revenue: 20, commission_earned: 2 });
  expect(d).toMatchObject({
    referred_orders: 3,
    referred_revenue: 50,
    commission_earned: 5,
    commission_reversed: 0.33,
  });
  expect(await fromOrders(from, to)).toEqual({ referred_orders: 3, referred_revenue: 50, refunded_amount: 3.33 });
});

test('the default period is the 30 days before now; a period with nothing in it is all zeros', async () => {
  clock.set('2026-11-20T00:00:00Z');
  const res = await performance(affiliate);
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({
    from: s('2026-10-21T00:00:00Z'),
    to: s('2026-11-20T00:00:00Z'),
    referred_orders: 2,
    commission_paid: 1,
  });
  expect(res.body.data.periods).toHaveLength(30);
  clock.set('2026-12-05T00:00:00Z');
  const empty = await performance(
    affiliate,
    `?from=${s('2025-01-01T00:00:00Z')}&to=${s('2025-02-01T00:00:00Z')}&interval=month`,
  );
  expect(empty.body.data).toMatchObject({ ...zeroPeriod, referred_customers: 0, balance: 3.67 });
  expect(empty.body.data.periods).toEqual([
    { from: s('2025-01-01T00:00:00Z'), to: s('2025-02-01T00:00:00Z'), ...zeroPeriod },
  ]);
});

test('referred customers: those referred by the affiliate created in the period', async () => {
  const now = Math.floor(Date.now() / 1000);
  const res = await performance(affiliate, `?from=${now - 3600}&to=${now + 3600}&interval=month`);
  // o1, o2, o5 and o6's buyers were new and came with AFF's code; o3's came with OTH's.
  expect(res.body.data.referred_customers).toBe(4);
  const o = await performance(other, `?from=${now - 3600}&to=${now + 3600}&interval=month`);
  expect(o.body.data.referred_customers).toBe(1);
});

test('the list and the customer record show the same all-time figures', async () => {
  const list = await t.http.get('/dev/v1/affiliates/customers').set(bearer(key));
  const row = list.body.data.find((a: { customer_id: string }) => a.customer_id === affiliate);
  expect(row).toMatchObject({
    code: 'AFF',
    balance: 3.67,
    lifetime_earnings: 4.67,
    referred_orders: 3,
    referred_revenue: 46.67,
  });
  const customer = await t.http.get(`/dev/v1/customers/${affiliate}?include_affiliate=true`).set(bearer(key));
  expect(customer.body.data.affiliate).toEqual({
    code: 'AFF',
    status: 'ACTIVE',
    commission_percent: 10,
    balance: row.balance,
    lifetime_earnings: row.lifetime_earnings,
    referred_customers: 4,
    referred_orders: row.referred_orders,
  });
  // OTH: 50% of o3 (10.00).
  expect(list.body.data.find((a: { customer_id: string }) => a.customer_id === other)).toMatchObject({
    balance: 5,
    referred_orders: 1,
    referred_revenue: 10,
  });
});

test('refusals: 422 for from not before to, too many periods, an unknown interval; 404 for no affiliate; 403 scope', async () => {
  const bad = async (query: string, field: string) => {
    const res = await performance(affiliate, query);
    expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(res.body.error.details.map((x: { field: string }) => x.field).join()).toContain(field);
  };
  await bad(`?from=${s('2026-11-02T00:00:00Z')}&to=${s('2026-11-02T00:00:00Z')}`, 'from');
  await bad(`?from=${s('2026-11-03T00:00:00Z')}&to=${s('2026-11-02T00:00:00Z')}`, 'from');
  await bad(`?from=${s('2024-01-01T00:00:00Z')}&to=${s('2026-01-01T00:00:00Z')}`, 'interval');
  await bad('?interval=year', 'interval');
  await bad('?from=-1', 'from');
  // Two years by month is fine.
  expect(
    (await performance(affiliate, `?from=${s('2024-01-01T00:00:00Z')}&to=${s('2026-01-01T00:00:00Z')}&interval=month`))
      .body.data.periods,
  ).toHaveLength(24);

  const notAffiliate = await performance(plain);
  expect([notAffiliate.status, notAffiliate.body.error.code]).toEqual([404, 'CUSTOMER_NOT_FOUND']);
  const unknown = await performance('cus_00000000000000000000000000000000');
  const cross = await performance(bAffiliate);
  expect([cross.status, cross.body.error]).toEqual([404, unknown.body.error]);
  expect((await performance(affiliate, '', keyB)).status).toBe(404);
  const customersOnly = (await t.createKey(shop, ['customers.read'])).key;
  const forbidden = await performance(affiliate, '', customersOnly);
  expect([forbidden.status, forbidden.body.error.code]).toEqual([403, 'FORBIDDEN']);
  const list = await t.http.get('/dev/v1/affiliates/customers').set(bearer(customersOnly));
  expect(list.status).toBe(403);
});
