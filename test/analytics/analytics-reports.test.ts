// Analytics reports through HTTP and the worker's job: figures checked against orders, refunds and customers created
// here (inside the period, outside it, and in another shop), CSV safety, the signed download link (expired,
// tampered, superseded), 409 while GENERATING, 422 periods, 404 across shops, scopes, the FAILED paths (too many
// rows; workers that keep dying), a crashed worker's lease retaken, and on PostgreSQL two workers / two requests
// at once.
import Decimal from 'decimal.js';
import request from 'supertest';
import { claimDueGenerations } from '../../db/queries/analytics';
import { ManualClock } from '../../src/platform/clock';
import { analyticsReportJob } from '../../src/worker/analytics-reports';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const DAY = 86_400_000;
const realNow = Date.now();
const P0 = new Date(realNow - 10 * DAY);
const P1 = new Date(realNow + 10 * DAY);
const IN = new Date(realNow - 5 * DAY);
const BEFORE = new Date(realNow - 15 * DAY);
const AFTER = new Date(realNow + 12 * DAY);
const clock = new ManualClock(IN);
const onPostgres = Boolean(process.env.DATABASE_URL);
const pgTest = onPostgres ? test : test.skip;

let t: TestApp;
let shop: string;
let key: string;
let other: { shop: string; key: string; report: string };
const products: Record<string, string> = {};
const reports: Record<string, string> = {};
const totals: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestApp({ clock });
  shop = await t.createShop({ name: 'Reports', currency: 'USD' });
  key = (await t.createKey(shop, ['*'])).key;
  const seeded = await t.seed(shop, {
    products: [
      { title: 'Widget', type: 'SERVICE', price: '25.00' },
      { title: 'Gadget', type: 'SERVICE', price: '10.50' },
    ],
    customers: [
      { email: 'olga@example.com', name: 'Olga Old' },
      { email: 'ada@example.com', name: 'Ada Lovelace' },
      { email: 'bob@example.com', name: '=HYPERLINK("http://evil.example","x")' },
      { email: 'eve@example.com', name: 'Eve "Quoted", Jr.' },
    ],
    analytics_reports: [
      { name: 'Sales', type: 'SALES' },
      { name: 'Customers', type: 'CUSTOMERS' },
      { name: 'Products', type: 'PRODUCTS', format: 'JSON' },
      { name: 'Gateways', type: 'GATEWAYS' },
    ],
  });
  products.widget = seeded.products[0]!;
  products.gadget = seeded.products[1]!;
  const [sales, customers, productsReport, gateways] = seeded.analyticsReports as [string, string, string, string];
  Object.assign(reports, { sales, customers, products: productsReport, gateways });
  // Olga and Ada were customers long before the period (a history import): they are not new in it.
  await t.db
    .updateTable('customers')
    .set({ created_at: new Date(realNow - 40 * DAY) })
    .where('shop_id', '=', shop)
    .where('email', 'in', ['olga@example.com', 'ada@example.com'])
    .execute();

  // In the period: three completed orders (one partly, one fully refunded) and one still pending.
  clock.set(IN);
  totals.o1 = (await order(key, 'ada@example.com', products.widget, 2, true)).total;
  const o2 = await order(key, 'bob@example.com', products.gadget, 1, true);
  const o3 = await order(key, 'carol@example.com', products.widget, 1, true);
  totals.o2 = o2.total;
  totals.o3 = o3.total;
  totals.o4 = (await order(key, 'dave@example.com', products.gadget, 1, false)).total;
  // Before the period: a completed order, refunded in part during the period.
  clock.set(BEFORE);
  const o5 = await order(key, 'ada@example.com', products.widget, 1, true);
  // After the period: a completed order that must not count.
  clock.set(AFTER);
  await order(key, 'ada@example.com', products.gadget, 1, true);
  clock.set(new Date(IN.getTime() + 3_600_000));
  await refund(key, o2.id, '4.25');
  await refund(key, o3.id, undefined);
  await refund(key, o5.id, '5.00');

  // Another shop: the same buyer buys in the period; none of it may appear in this shop's reports.
  const otherShop = await t.createShop({ name: 'Other', currency: 'USD' });
  const otherKey = (await t.createKey(otherShop, ['*'])).key;
  const o = await t.seed(otherShop, {
    products: [{ title: 'Widget', type: 'SERVICE', price: '99.00' }],
    analytics_reports: [{ name: 'Other sales', type: 'SALES' }],
  });
  clock.set(IN);
  await order(otherKey, 'ada@example.com', o.products[0]!, 1, true);
  other = { shop: otherShop, key: otherKey, report: o.analyticsReports[0]! };
});
afterAll(() => t.close());

async function order(k: string, email: string, product: string, quantity: number, complete: boolean) {
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(k))
    .send({ email, items: [{ product_id: product, quantity }] });
  expect(created.status).toBe(201);
  if (complete) {
    const done = await t.http
      .post(`/dev/v1/orders/${created.body.data.id}/complete`)
      .set(bearer(k))
      .send({ suppress_emails: true });
    expect(done.status).toBe(200);
  }
  const row = await t.db
    .selectFrom('orders')
    .select(['id', 'total'])
    .where('id', '=', created.body.data.id)
    .executeTakeFirstOrThrow();
  return { id: row.id, total: row.total };
}

async function refund(k: string, id: string, amount: string | undefined) {
  const res = await t.http
    .post(`/dev/v1/orders/${id}/refund`)
    .set(bearer(k))
    .send(amount === undefined ? {} : { amount });
  expect(res.status).toBe(200);
}

const job = (extra: Partial<Parameters<typeof analyticsReportJob>[1]> = {}) =>
  analyticsReportJob(t.db, { clock, logger: t.logger, ...extra });

const period = { from: P0.toISOString(), to: P1.toISOString() };

async function generate(id: string, body: object = period, k = key) {
  return t.http.post(`/dev/v1/analytics/reports/${id}/generate`).set(bearer(k)).send(body);
}

async function listed(id: string, k = key) {
  const res = await t.http.get('/dev/v1/analytics/reports?limit=100').set(bearer(k));
  expect(res.status).toBe(200);
  return res.body.data.find((r: { id: string }) => r.id === id);
}

async function download(url: string) {
  const u = new URL(url);
  return request(t.app).get(`${u.pathname}${u.search}`);
}

async function generated(id: string) {
  expect((await generate(id)).status).toBe(202);
  await job().runOnce();
  const view = await listed(id);
  expect(view.status).toBe('READY');
  return view;
}

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  return rows;
}

async function currentGeneration(id: string) {
  return (
    await t.db.selectFrom('analytics_reports').select('generation_id').where('id', '=', id).executeTakeFirstOrThrow()
  ).generation_id;
}

const money = (...xs: string[]) => xs.reduce((a, x) => a.plus(x), new Decimal(0)).toFixed(2);

describe('generation and figures', () => {
  test('SALES: generate (202 GENERATING), the worker computes it, the CSV matches what was created', async () => {
    const res = await generate(reports.sales!);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({
      id: reports.sales,
      status: 'GENERATING',
      type: 'SALES',
      format: 'CSV',
      download_url: null,
      generated_at: null,
      period_from: P0.toISOString(),
      period_to: P1.toISOString(),
    });
    expect((await listed(reports.sales!)).status).toBe('GENERATING');
    expect(await job().runOnce()).toBe(1);
    const view = await listed(reports.sales!);
    expect(view.status).toBe('READY');
    expect(view.generated_at).toBe(clock.now().toISOString());
    const file = await download(view.download_url);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.headers['content-disposition']).toMatch(/^attachment; filename="rpt_[A-Za-z0-9]+-sales-.*\.csv"$/);
    const gross = money(totals.o1!, money(totals.o2!), money(totals.o3!));
    expect(gross).toBe('85.50');
    expect(parseCsv(file.text)).toEqual([
      [
        'currency',
        'completed_orders',
        'gross_revenue',
        'refund_count',
        'refund_amount'.replace('refund_amount', 'refunded_amount'),
        'net_revenue',
        'pending_orders',
        'pending_amount',
      ],
      [
        'USD',
        '3',
        gross,
        '3',
        money('4.25', money(totals.o3!), '5.00'),
        new Decimal(gross).minus(money('4.25', money(totals.o3!), '5.00')).toFixed(2),
        '1',
        money(totals.o4!),
      ],
    ]);
  });

  test('CUSTOMERS: one row per buyer and currency, new customers, formula injection neutralised, quotes escaped', async () => {
    const view = await generated(reports.customers!);
    const rows = parseCsv((await download(view.download_url)).text);
    const cust = await t.db
      .selectFrom('customers')
      .select(['id', 'email', 'created_at'])
      .where('shop_id', '=', shop)
      .execute();
    const c = (email: string) => cust.find((x) => x.email === email)!;
    const line = (
      email: string,
      name: string,
      isNew: string,
      currency: string,
      n: string,
      spent: string,
      refunded: string,
    ) => [c(email).id, email, name, c(email).created_at.toISOString(), isNew, currency, n, spent, refunded];
    expect(rows).toEqual([
      [
        'customer_id',
        'email',
        'name',
        'customer_created_at',
        'new_in_period',
        'currency',
        'completed_orders',
        'spent',
        'refunded_amount',
      ],
      line('ada@example.com', 'Ada Lovelace', 'no', 'USD', '1', money(totals.o1!), '5.00'),
      line('bob@example.com', `'=HYPERLINK("http://evil.example","x")`, 'yes', 'USD', '1', money(totals.o2!), '4.25'),
      line('carol@example.com', '', 'yes', 'USD', '1', money(totals.o3!), money(totals.o3!)),
      line('dave@example.com', '', 'yes', '', '0', '0', '0'),
      line('eve@example.com', 'Eve "Quoted", Jr.', 'yes', '', '0', '0', '0'),
    ]);
    // Quoted and neutralised in the raw text too.
    const raw = (await download(view.download_url)).text;
    expect(raw).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(raw).toContain('"Eve ""Quoted"", Jr."');
  });

  test('PRODUCTS in JSON; GATEWAYS in CSV', async () => {
    const view = await generated(reports.products!);
    expect(view.format).toBe('JSON');
    const file = await download(view.download_url);
    expect(file.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = JSON.parse(file.text);
    expect(body.rows).toEqual([
      expect.objectContaining({
        product_title: 'Gadget',
        currency: 'USD',
        orders: '1',
        quantity: '1',
        revenue: money(totals.o2!),
      }),
      expect.objectContaining({
        product_title: 'Widget',
        currency: 'USD',
        orders: '2',
        quantity: '3',
        revenue: money(totals.o1!, money(totals.o3!)),
      }),
    ]);
    const gw = await generated(reports.gateways!);
    const rows = parseCsv((await download(gw.download_url)).text);
    expect(rows.slice(1).map((r) => r[1])).toEqual(['USD']);
    expect(rows[1]!.slice(2)).toEqual(['3', '85.50', money('4.25', money(totals.o3!), '5.00'), '51.25']);
  });
});

describe('refusals change nothing', () => {
  const state = async (id: string) => ({
    report: await t.db.selectFrom('analytics_reports').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    generations: await t.db
      .selectFrom('analytics_report_generations')
      .select('id')
      .where('report_id', '=', id)
      .execute(),
  });

  test('already GENERATING: 409 CONFLICT, no second generation', async () => {
    expect((await generate(reports.sales!)).status).toBe(202);
    const before = await state(reports.sales!);
    const res = await generate(reports.sales!, {
      from: P0.toISOString(),
      to: new Date(P0.getTime() + DAY).toISOString(),
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(await state(reports.sales!)).toEqual(before);
    await job().runOnce();
  });

  test.each([
    [{ from: P1.toISOString(), to: P0.toISOString() }, 'to'],
    [{ from: P0.toISOString(), to: P0.toISOString() }, 'to'],
    [{ from: P0.toISOString(), to: new Date(P0.getTime() + 367 * DAY).toISOString() }, 'to'],
    [{ from: 'yesterday', to: P1.toISOString() }, 'from'],
  ])('bad period %j: 422', async (body, field) => {
    const before = await state(reports.sales!);
    const res = await generate(reports.sales!, body);
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await state(reports.sales!)).toEqual(before);
  });

  test("another shop's report or an unknown id: 404 REPORT_NOT_FOUND", async () => {
    const before = await state(other.report);
    for (const id of [other.report, 'rpt_00000000000000000000000000000000']) {
      const res = await generate(id);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('REPORT_NOT_FOUND');
    }
    expect(await state(other.report)).toEqual(before);
    expect(await listed(other.report)).toBeUndefined();
  });

  test('scopes: analytics.read lists but cannot generate; analytics.write generates; others are 403', async () => {
    const read = (await t.createKey(shop, ['analytics.read'])).key;
    const write = (await t.createKey(shop, ['analytics.write'])).key;
    const none = (await t.createKey(shop, ['orders.read'])).key;
    const before = await state(reports.gateways!);
    expect((await t.http.get('/dev/v1/analytics/reports').set(bearer(read))).status).toBe(200);
    expect((await t.http.get('/dev/v1/analytics/reports').set(bearer(none))).status).toBe(403);
    expect((await t.http.get('/dev/v1/analytics/reports').set(bearer(write))).status).toBe(403);
    expect((await generate(reports.gateways!, period, read)).status).toBe(403);
    expect((await generate(reports.gateways!, period, none)).status).toBe(403);
    expect(await state(reports.gateways!)).toEqual(before);
    expect((await generate(reports.gateways!, period, write)).status).toBe(202);
    await job().runOnce();
  });
});

describe('download links', () => {
  test('tampered: 403; expired: 410; superseded by a new generation: 410', async () => {
    const view = await generated(reports.sales!);
    const url = new URL(view.download_url);
    const tampered = new URL(url);
    tampered.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    expect((await download(tampered.toString())).status).toBe(403);
    const otherShop = new URL(url);
    otherShop.searchParams.set('shop', other.shop);
    expect((await download(otherShop.toString())).status).toBe(403);
    const badSig = new URL(url);
    badSig.searchParams.set('signature', 'A'.repeat(43));
    expect((await download(badSig.toString())).status).toBe(403);
    const noSig = new URL(url);
    noSig.searchParams.delete('signature');
    expect((await download(noSig.toString())).status).toBe(403);
    expect((await download(url.toString())).status).toBe(200);
    clock.advance(3_600_000);
    const expired = await download(url.toString());
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('DOWNLOAD_LINK_EXPIRED');
    clock.advance(-3_600_000);
    const fresh = (await listed(reports.sales!)).download_url;
    await generated(reports.sales!);
    expect((await download(fresh)).status).toBe(410);
  });
});

describe('the worker', () => {
  test('too many rows: FAILED with a reason, no link', async () => {
    expect((await generate(reports.customers!)).status).toBe(202);
    expect(await job({ maxRows: 2 }).runOnce()).toBe(1);
    const view = await listed(reports.customers!);
    expect(view).toMatchObject({ status: 'FAILED', download_url: null, generated_at: null });
    const row = await t.db
      .selectFrom('analytics_reports')
      .selectAll()
      .where('id', '=', reports.customers!)
      .executeTakeFirstOrThrow();
    expect(row.failure_reason).toMatch(/more than the 2 a report may hold/);
    expect(row.content).toBeNull();
  });

  test("a crashed worker's claim is retaken after its lease; one that keeps dying ends FAILED", async () => {
    expect((await generate(reports.gateways!)).status).toBe(202);
    const now = clock.now();
    // A worker claims it and dies.
    expect(await claimDueGenerations(t.db, now, new Date(now.getTime() + 60_000), 'dead', 10)).toHaveLength(1);
    expect(await job().runOnce()).toBe(0);
    clock.advance(61_000);
    expect(await job().runOnce()).toBe(1);
    expect((await listed(reports.gateways!)).status).toBe('READY');
    const g = await t.db
      .selectFrom('analytics_report_generations')
      .selectAll()
      .where('id', '=', (await currentGeneration(reports.gateways!))!)
      .executeTakeFirstOrThrow();
    expect(g).toMatchObject({ status: 'DONE', attempts: 2 });

    expect((await generate(reports.gateways!)).status).toBe(202);
    for (let i = 0; i < 3; i++) {
      const at = clock.now();
      expect(await claimDueGenerations(t.db, at, new Date(at.getTime() + 60_000), `dead${i}`, 10)).toHaveLength(1);
      clock.advance(61_000);
    }
    expect(await job().runOnce()).toBe(1);
    expect((await listed(reports.gateways!)).status).toBe('FAILED');
    const row = await t.db
      .selectFrom('analytics_reports')
      .select('failure_reason')
      .where('id', '=', reports.gateways!)
      .executeTakeFirstOrThrow();
    expect(row.failure_reason).toMatch(/Gave up after 3 attempts/);
  });
});

describe('races (PostgreSQL)', () => {
  pgTest('two workers at once: the generation is computed and settled once', async () => {
    expect((await generate(reports.sales!)).status).toBe(202);
    const handled = await Promise.all([job().runOnce(), job().runOnce(), job().runOnce()]);
    expect(handled.reduce((a, b) => a + b, 0)).toBe(1);
    const g = await t.db
      .selectFrom('analytics_report_generations')
      .selectAll()
      .where('id', '=', (await currentGeneration(reports.sales!))!)
      .executeTakeFirstOrThrow();
    expect(g).toMatchObject({ status: 'DONE', attempts: 1 });
    expect((await listed(reports.sales!)).status).toBe('READY');
  });

  pgTest('two generate requests at once: one 202, one 409, one queued generation', async () => {
    const before = (
      await t.db
        .selectFrom('analytics_report_generations')
        .select('id')
        .where('report_id', '=', reports.sales!)
        .execute()
    ).length;
    const res = await Promise.all([generate(reports.sales!), generate(reports.sales!)]);
    expect(res.map((r) => r.status).sort()).toEqual([202, 409]);
    const after = await t.db
      .selectFrom('analytics_report_generations')
      .select(['id', 'status'])
      .where('report_id', '=', reports.sales!)
      .execute();
    expect(after.length).toBe(before + 1);
    expect(after.filter((g) => g.status === 'QUEUED')).toHaveLength(1);
    await job().runOnce();
  });
});
