// The affiliate program through HTTP: approving applications (POST /affiliates/applications/{id}/approve), the
// affiliate list (GET /affiliates/customers), attribution of orders (POST /orders `affiliate_code`, the buyer's
// referrer), commission accrued on completion and reversed in proportion by refunds, and converting unpaid
// commission into the wallet (POST /customers/{id}/affiliate/convert-to-balance). Every refusal is checked for what
// it did not write (customers, applications, ledger, wallet, events); every {id} of another shop is a 404; races on
// real PostgreSQL.
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import { seedShop } from '../../src/ops/admin';
import { applyAsOperator } from '../../src/domain/affiliates/affiliates';
import { ManualClock, systemClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
/** Product ids of shop A: a 10.00 service, a 33.33 service, a EUR product. */
let p10: string;
let p33: string;
let pEur: string;

beforeAll(async () => {
  // Races fire many requests at once: lift the per-shop rate limit, which is not what this file tests.
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { currency: 'USD' }, b: { currency: 'USD' } }));
  const seeded = await t.seed(shopA, {
    products: [
      { title: 'Ten', price: '10.00', type: 'SERVICE' },
      { title: 'Odd', price: '33.33', type: 'SERVICE' },
      { title: 'Euro', price: '10.00', type: 'SERVICE', currency: 'EUR' },
    ],
  });
  [p10, p33, pEur] = seeded.products as [string, string, string];
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

/** Customers (and applications) in shop A from a fixture; ids by email. */
async function seedA(fixtures: Parameters<TestApp['seed']>[1], shopId = shopA) {
  const created = await t.seed(shopId, fixtures);
  const rows = await t.db
    .selectFrom('customers')
    .select(['id', 'email'])
    .where('id', 'in', created.customers.length ? created.customers : ['-'])
    .execute();
  return {
    ids: Object.fromEntries(rows.map((r) => [r.email, r.id])) as Record<string, string>,
    applications: created.affiliateApplications,
  };
}

const approve = (id: string, key = keyA) =>
  t.http.post(`/dev/v1/affiliates/applications/${id}/approve`).set(bearer(key));
const createOrder = (body: Record<string, unknown>, key = keyA) =>
  t.http.post('/dev/v1/orders').set(bearer(key)).send(body);
const complete = (id: string, key = keyA) => t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(key)).send({});
const refund = (id: string, amount?: string) =>
  t.http
    .post(`/dev/v1/orders/${id}/refund`)
    .set(bearer(keyA))
    .send(amount === undefined ? {} : { amount });
const convert = (customerId: string, amount: unknown, key = keyA) =>
  t.http.post(`/dev/v1/customers/${customerId}/affiliate/convert-to-balance`).set(bearer(key)).send({ amount });
const summary = async (customerId: string, key = keyA) => {
  const res = await t.http.get(`/dev/v1/customers/${customerId}?include_affiliate=true`).set(bearer(key));
  expect(res.status).toBe(200);
  return res.body.data;
};

/** A completed order of `productId` by `email`, optionally with an affiliate code. */
async function paidOrder(email: string, productId: string, extra: Record<string, unknown> = {}) {
  const created = await createOrder({ email, items: [{ product_id: productId, quantity: 1 }], ...extra });
  expect(created.status).toBe(201);
  const done = await complete(created.body.data.id);
  expect(done.status).toBe(200);
  return created.body.data as { id: string; uniqid: string; affiliate_customer_id: string | null };
}

/** The ledger entries of an affiliate, oldest first. */
const ledger = async (affiliateId: string) =>
  (
    await t.db
      .selectFrom('affiliate_commissions')
      .select(['kind', 'amount', 'order_id', 'refund_id', 'wallet_transaction_id', 'commission_percent'])
      .where('affiliate_customer_id', '=', affiliateId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((r) => ({ ...r, amount: new Decimal(r.amount).toFixed() }));

/** Everything the affiliate operations may write, for "a refusal changed nothing". */
async function world() {
  const text = async (query: ReturnType<typeof sql<{ s: string | null }>>) => (await query.execute(t.db)).rows[0]!.s;
  return {
    customers: await text(sql`select string_agg(to_jsonb(c)::text, ',' order by id) as s from customers c`),
    applications: await text(
      sql`select string_agg(to_jsonb(a)::text, ',' order by id) as s from affiliate_applications a`,
    ),
    ledger: await text(sql`select string_agg(to_jsonb(l)::text, ',' order by id) as s from affiliate_commissions l`),
    wallet: await text(sql`select string_agg(to_jsonb(w)::text, ',' order by id) as s from wallet_transactions w`),
    orders: await text(sql`select string_agg(id || status, ',' order by id) as s from orders`),
    events: await text(sql`select string_agg(type || data::text, ',' order by id) as s from events`),
  };
}

const eventsOf = async (shopId: string, type: string) =>
  (
    await t.db
      .selectFrom('events')
      .select('data')
      .where('shop_id', '=', shopId)
      .where('type', '=', type)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((e) => JSON.parse(e.data) as Record<string, unknown>);

// ---------------------------------------------------------------------------------------------------------------

describe('POST /affiliates/applications/{id}/approve', () => {
  test('the applicant becomes an ACTIVE affiliate with the code and percent applied for; affiliate:approved', async () => {
    const email = `carol-${uid()}@example.com`;
    const { ids, applications } = await seedA({
      customers: [{ email }],
      affiliate_applications: [{ email, code: `CAROL${unique}`, commission_percent: '12.5', note: 'blog' }],
    });
    clock.set('2026-11-20T10:05:00Z');
    const res = await approve(applications[0]!);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      customer_id: ids[email],
      email,
      code: `CAROL${unique}`,
      status: 'ACTIVE',
      commission_percent: 12.5,
      balance: 0,
      lifetime_earnings: 0,
      referred_orders: 0,
      referred_revenue: 0,
      currency: 'USD',
      approved_at: Date.parse('2026-11-20T10:05:00Z') / 1000,
    });
    const app = await t.db
      .selectFrom('affiliate_applications')
      .select(['status', 'decided_at'])
      .where('id', '=', applications[0]!)
      .executeTakeFirstOrThrow();
    expect([app.status, app.decided_at?.toISOString()]).toEqual(['APPROVED', '2026-11-20T10:05:00.000Z']);
    const events = (await eventsOf(shopA, 'affiliate:approved')).filter((e) => e.customer_id === ids[email]);
    expect(events).toEqual([res.body.data]);
    // The customer record agrees.
    const customer = await summary(ids[email]!);
    expect(customer.is_affiliate).toBe(true);
    expect(customer.affiliate).toEqual({
      code: `CAROL${unique}`,
      status: 'ACTIVE',
      commission_percent: 12.5,
      balance: 0,
      lifetime_earnings: 0,
      referred_customers: 0,
      referred_orders: 0,
    });
  });

  test('a second approval, and a REJECTED application: 400 AFFILIATE_APPLICATION_NOT_PENDING, nothing changes', async () => {
    const [e1, e2] = [`twice-${uid()}@example.com`, `rejected-${uid()}@example.com`];
    const { ids, applications } = await seedA({
      customers: [{ email: e1 }, { email: e2 }],
      affiliate_applications: [{ email: e1 }, { email: e2, status: 'REJECTED' }],
    });
    expect((await approve(applications[0]!)).status).toBe(200);
    const before = await world();
    const again = await approve(applications[0]!);
    expect([again.status, again.body.error.code]).toEqual([400, 'AFFILIATE_APPLICATION_NOT_PENDING']);
    expect(again.body.error.message).toBe('The application is APPROVED; only a PENDING application can be approved.');
    const rejected = await approve(applications[1]!);
    expect([rejected.status, rejected.body.error.code]).toEqual([400, 'AFFILIATE_APPLICATION_NOT_PENDING']);
    expect(await world()).toEqual(before);
    expect((await summary(ids[e2]!)).affiliate).toBeNull();
  });

  test('no code asked for, or the code was taken since: a generated code; the default percent is 10', async () => {
    const taken = `TAKEN${uid()}`.toUpperCase();
    const [owner, wants, none] = [`owner-${uid()}@x.com`, `dan.o-${uid()}@x.com`, `zed-${uid()}@x.com`];
    const { applications } = await seedA({
      customers: [{ email: owner, affiliate: { code: taken } }, { email: wants }, { email: none }],
      affiliate_applications: [{ email: wants, code: taken }, { email: none }],
    });
    const first = await approve(applications[0]!);
    expect(first.status).toBe(200);
    expect(first.body.data.code).toMatch(/^DANO[A-Z0-9]{0,4}[A-HJ-NP-Z2-9]{4}$/);
    expect(first.body.data.code).not.toBe(taken);
    const second = await approve(applications[1]!);
    expect(second.body.data.code).toMatch(/^ZED[A-Z0-9]{0,5}[A-HJ-NP-Z2-9]{4}$/);
    expect(second.body.data.commission_percent).toBe(10);
  });

  test('unknown, and another shop’s application: 404 AFFILIATE_APPLICATION_NOT_FOUND, nothing changes', async () => {
    const email = `b-${uid()}@example.com`;
    const { ids, applications } = await seedA({ customers: [{ email }], affiliate_applications: [{ email }] }, shopB);
    const before = await world();
    const cross = await approve(applications[0]!, keyA);
    const missing = await approve('aapp_00000000000000000000000000000000', keyA);
    expect([cross.status, cross.body.error.code]).toEqual([404, 'AFFILIATE_APPLICATION_NOT_FOUND']);
    expect([missing.status, missing.body.error]).toEqual([404, cross.body.error]);
    expect(await world()).toEqual(before);
    // B's own key approves it.
    expect((await approve(applications[0]!, keyB)).body.data.customer_id).toBe(ids[email]);
  });

  test('a key without affiliates.write: 403, nothing changes', async () => {
    const email = `scope-${uid()}@example.com`;
    const { applications } = await seedA({ customers: [{ email }], affiliate_applications: [{ email }] });
    const readOnly = (await t.createKey(shopA, ['affiliates.read'])).key;
    const before = await world();
    const res = await approve(applications[0]!, readOnly);
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await world()).toEqual(before);
  });

  pgOnly('10 concurrent approvals of one application: exactly one wins, one event', async () => {
    const email = `race-${uid()}@example.com`;
    const { ids, applications } = await seedA({ customers: [{ email }], affiliate_applications: [{ email }] });
    const results = await Promise.all(Array.from({ length: 10 }, () => approve(applications[0]!)));
    expect(results.map((r) => r.status).sort()).toEqual([200, ...Array<number>(9).fill(400)]);
    expect(
      results.filter((r) => r.status === 400).every((r) => r.body.error.code === 'AFFILIATE_APPLICATION_NOT_PENDING'),
    ).toBe(true);
    expect((await eventsOf(shopA, 'affiliate:approved')).filter((e) => e.customer_id === ids[email])).toHaveLength(1);
  });
});

describe('fixtures: affiliate applications', () => {
  test('refused before anything is written: unknown email, an affiliate applying, two pending of one customer', async () => {
    const before = await world();
    // What `cli seed` runs: the file is validated before anything is written.
    await expect(
      seedShop(t.operator, shopA, {
        customers: [{ email: 'fx1@example.com', affiliate: { code: `FX${uid()}` } }, { email: 'fx2@example.com' }],
        affiliate_applications: [
          { email: 'nobody@example.com' },
          { email: 'fx1@example.com' },
          { email: 'fx2@example.com' },
          { email: 'fx2@example.com' },
        ],
      }),
    ).rejects.toThrow(
      /affiliate_applications\/0\/email names no customer[\s\S]*affiliate_applications\/1\/email names a customer who is already an affiliate[\s\S]*affiliate_applications\/3\/email has a second PENDING/,
    );
    expect(await world()).toEqual(before);
  });
});

describe('cli affiliate apply (applyAsOperator)', () => {
  test('an application of an existing customer, approvable; every refusal writes nothing', async () => {
    const [email, aff] = [`cli-${uid()}@example.com`, `cliaff-${uid()}@example.com`];
    const { ids } = await seedA({ customers: [{ email }, { email: aff, affiliate: { code: `CLI${uid()}` } }] });
    const before = await world();
    const refusals: [Parameters<typeof applyAsOperator>[1], RegExp][] = [
      [{ shopId: shopA, email: 'nobody@example.com' }, /no customer nobody@example.com/],
      [{ shopId: 'shop_missing', email }, /No shop with id shop_missing/],
      [{ shopId: shopA, email: aff }, /already an affiliate/],
      [{ shopId: shopA, email, code: 'bad code' }, /code must be 1 to 64 letters/],
      [{ shopId: shopA, email, commissionPercent: '101' }, /commission_percent must be a percent/],
    ];
    for (const [input, message] of refusals)
      await expect(applyAsOperator(t.db, input, systemClock)).rejects.toThrow(message);
    expect(await world()).toEqual(before);
    // The command line's clock: the wall clock.
    const application = await applyAsOperator(
      t.db,
      { shopId: shopA, email: email.toUpperCase(), commissionPercent: '7.5', note: 'cli' },
      systemClock,
    );
    expect(application).toMatchObject({
      customer_id: ids[email],
      status: 'PENDING',
      commission_percent: '7.5',
      note: 'cli',
    });
    await expect(applyAsOperator(t.db, { shopId: shopA, email }, systemClock)).rejects.toThrow(
      /already has a pending application/,
    );
    const approved = await approve(application.id);
    expect(approved.body.data).toMatchObject({ customer_id: ids[email], commission_percent: 7.5, status: 'ACTIVE' });
  });
});

describe('GET /affiliates/customers', () => {
  test('the shop’s affiliates, most recently approved first, cursor walk; figures as the customer record shows', async () => {
    const shop = await t.createShop({ name: 'List', currency: 'USD' });
    const key = (await t.createKey(shop, ['*'])).key;
    const { ids, applications } = await seedA(
      {
        customers: [
          {
            email: 'old@example.com',
            affiliate: { code: 'OLD', balance: '7.25', lifetime_earnings: '30', referred_orders: 4 },
          },
          { email: 'new@example.com' },
          { email: 'plain@example.com' },
        ],
        affiliate_applications: [{ email: 'new@example.com', code: 'NEW' }],
      },
      shop,
    );
    // Approved after 'old' was created.
    clock.set(new Date(Date.now() + 60_000));
    expect((await approve(applications[0]!, key)).status).toBe(200);
    const first = await t.http.get('/dev/v1/affiliates/customers?limit=1').set(bearer(key));
    expect(first.status).toBe(200);
    expect(first.body.data.map((a: { code: string }) => a.code)).toEqual(['NEW']);
    expect(first.body.pagination.has_more).toBe(true);
    const second = await t.http
      .get(`/dev/v1/affiliates/customers?limit=1&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`)
      .set(bearer(key));
    expect(second.body.data).toEqual([
      {
        customer_id: ids['old@example.com'],
        email: 'old@example.com',
        code: 'OLD',
        status: 'ACTIVE',
        commission_percent: 10,
        balance: 7.25,
        lifetime_earnings: 30,
        referred_orders: 4,
        referred_revenue: 0,
        currency: 'USD',
        approved_at: expect.any(Number),
      },
    ]);
    expect(second.body.pagination).toEqual({ next_cursor: null, has_more: false });
    const old = (await summary(ids['old@example.com']!, key)).affiliate;
    expect(old).toMatchObject({ balance: 7.25, lifetime_earnings: 30, referred_orders: 4 });
    // Another shop's list never shows them.
    const b = await t.http.get('/dev/v1/affiliates/customers?limit=100').set(bearer(keyB));
    expect(b.body.data.map((a: { customer_id: string }) => a.customer_id)).not.toContain(ids['old@example.com']);
    // A cursor of this shop is refused in another.
    const stolen = await t.http
      .get(`/dev/v1/affiliates/customers?cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`)
      .set(bearer(keyB));
    expect(stolen.status).toBe(422);
  });
});

describe('attribution of orders', () => {
  test('affiliate_code: unknown, SUSPENDED, or the buyer’s own: 422 on affiliate_code, nothing written', async () => {
    const [aff, sus] = [`AFF${uid()}`, `SUS${uid()}`];
    const affEmail = `aff-${uid()}@example.com`;
    await seedA({
      customers: [
        { email: affEmail, affiliate: { code: aff } },
        { email: `sus-${uid()}@example.com`, affiliate: { code: sus, status: 'SUSPENDED' } },
      ],
    });
    const before = await world();
    for (const [email, code] of [
      [`new-${uid()}@example.com`, 'NOPE'],
      [`new-${uid()}@example.com`, sus],
      [affEmail, aff],
    ] as const) {
      const res = await createOrder({ email, items: [{ product_id: p10, quantity: 1 }], affiliate_code: code });
      expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['affiliate_code']);
    }
    expect(await world()).toEqual(before);
  });

  test('a code attributes the order and makes a new buyer referred; later orders follow the referrer', async () => {
    const [x, y] = [`X${uid()}`, `Y${uid()}`];
    const { ids } = await seedA({
      customers: [
        { email: `x-${uid()}@example.com`, affiliate: { code: x } },
        { email: `y-${uid()}@example.com`, affiliate: { code: y } },
      ],
    });
    const [xId, yId] = Object.values(ids) as [string, string];
    const buyer = `buyer-${uid()}@example.com`;
    const first = await createOrder({ email: buyer, items: [{ product_id: p10, quantity: 1 }], affiliate_code: x });
    expect(first.status).toBe(201);
    expect([first.body.data.affiliate_customer_id, first.body.data.affiliate_code]).toEqual([xId, x]);
    const buyerRow = await t.db
      .selectFrom('customers')
      .select(['id', 'referred_by_customer_id'])
      .where('email', '=', buyer)
      .executeTakeFirstOrThrow();
    expect(buyerRow.referred_by_customer_id).toBe(xId);
    // No code: the referrer.
    const second = await createOrder({ email: buyer, items: [{ product_id: p10, quantity: 1 }] });
    expect([second.body.data.affiliate_customer_id, second.body.data.affiliate_code]).toEqual([xId, x]);
    // Another affiliate's code: that one gets the order; the referrer stays.
    const third = await createOrder({ email: buyer, items: [{ product_id: p10, quantity: 1 }], affiliate_code: y });
    expect(third.body.data.affiliate_customer_id).toBe(yId);
    expect(
      (
        await t.db
          .selectFrom('customers')
          .select('referred_by_customer_id')
          .where('id', '=', buyerRow.id)
          .executeTakeFirstOrThrow()
      ).referred_by_customer_id,
    ).toBe(xId);
    expect((await summary(xId)).affiliate.referred_customers).toBe(1);
    // Not referred, no code: no one.
    const plain = await createOrder({ email: `plain-${uid()}@example.com`, items: [{ product_id: p10, quantity: 1 }] });
    expect([plain.body.data.affiliate_customer_id, plain.body.data.affiliate_code]).toEqual([null, null]);
    // A referrer who is suspended since gets nothing attributed.
    await t.db.updateTable('customers').set({ affiliate_status: 'SUSPENDED' }).where('id', '=', xId).execute();
    const later = await createOrder({ email: buyer, items: [{ product_id: p10, quantity: 1 }] });
    expect(later.body.data.affiliate_customer_id).toBeNull();
  });
});

describe('commission: accrued on completion, reversed in proportion by refunds', () => {
  async function affiliate(percent: string) {
    const code = `C${uid()}`;
    const { ids } = await seedA({
      customers: [{ email: `${code.toLowerCase()}@example.com`, affiliate: { code, commission_percent: percent } }],
    });
    return { id: Object.values(ids)[0]!, code };
  }

  test('15% of 33.33 = 4.9995 -> 5.00, one ACCRUAL; summary and list agree', async () => {
    const a = await affiliate('15');
    const order = await paidOrder(`b-${uid()}@example.com`, p33, { affiliate_code: a.code });
    expect(await ledger(a.id)).toEqual([
      {
        kind: 'ACCRUAL',
        amount: '5',
        order_id: order.id,
        refund_id: null,
        wallet_transaction_id: null,
        commission_percent: '15.00',
      },
    ]);
    expect((await summary(a.id)).affiliate).toMatchObject({ balance: 5, lifetime_earnings: 5, referred_orders: 1 });
    const list = await t.http.get('/dev/v1/affiliates/customers?limit=100').set(bearer(keyA));
    expect(list.body.data.find((x: { customer_id: string }) => x.customer_id === a.id)).toMatchObject({
      balance: 5,
      lifetime_earnings: 5,
      referred_orders: 1,
      referred_revenue: 33.33,
    });
  });

  test('no accrual: an order left PENDING, an affiliate SUSPENDED before completion, an order in another currency', async () => {
    const a = await affiliate('10');
    const pending = await createOrder({
      email: `p-${uid()}@example.com`,
      items: [{ product_id: p10, quantity: 1 }],
      affiliate_code: a.code,
    });
    expect(pending.status).toBe(201);
    const euro = await paidOrder(`e-${uid()}@example.com`, pEur, { affiliate_code: a.code });
    expect(euro.affiliate_customer_id).toBe(a.id);
    const suspendedLater = await createOrder({
      email: `s-${uid()}@example.com`,
      items: [{ product_id: p10, quantity: 1 }],
      affiliate_code: a.code,
    });
    await t.db.updateTable('customers').set({ affiliate_status: 'SUSPENDED' }).where('id', '=', a.id).execute();
    expect((await complete(suspendedLater.body.data.id)).status).toBe(200);
    expect(await ledger(a.id)).toEqual([]);
    expect((await summary(a.id)).affiliate).toMatchObject({ balance: 0, lifetime_earnings: 0, referred_orders: 0 });
  });

  test('10% of 10.00 refunded 3.33 + 3.33 + 3.34: reversals 0.33, 0.34, 0.33 add up to the 1.00 accrued', async () => {
    const a = await affiliate('10');
    const order = await paidOrder(`r-${uid()}@example.com`, p10, { affiliate_code: a.code });
    for (const amount of ['3.33', '3.33', '3.34']) expect((await refund(order.id, amount)).status).toBe(200);
    const rows = await ledger(a.id);
    expect(rows.map((r) => [r.kind, r.amount])).toEqual([
      ['ACCRUAL', '1'],
      ['REVERSAL', '-0.33'],
      ['REVERSAL', '-0.34'],
      ['REVERSAL', '-0.33'],
    ]);
    const refunds = await t.db
      .selectFrom('refunds')
      .select('id')
      .where('order_id', '=', order.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    expect(rows.slice(1).map((r) => r.refund_id)).toEqual(refunds.map((r) => r.id));
    expect((await summary(a.id)).affiliate).toMatchObject({ balance: 0, lifetime_earnings: 0, referred_orders: 1 });
  });

  test('a 3.33 refund of a 10.00 order reverses 33.3% of the commission, rounded to the cent (15%: 0.4995 -> 0.50)', async () => {
    const a = await affiliate('15');
    const order = await paidOrder(`r-${uid()}@example.com`, p10, { affiliate_code: a.code });
    expect((await refund(order.id, '3.33')).status).toBe(200);
    expect((await ledger(a.id)).map((r) => r.amount)).toEqual(['1.5', '-0.5']);
    expect((await summary(a.id)).affiliate).toMatchObject({ balance: 1, lifetime_earnings: 1 });
    // The rest in one refund: the reversals add up to the accrual.
    expect((await refund(order.id)).status).toBe(200);
    expect((await ledger(a.id)).map((r) => r.amount)).toEqual(['1.5', '-0.5', '-1']);
  });

  test('generated splits: every full set of partial refunds reverses exactly the accrual; each step is the rounded share', async () => {
    // Deterministic pseudo-random cases (a linear congruential generator), so a failure is reproducible.
    let seed = 20261120;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let c = 0; c < 8; c++) {
      const percent = ['7.5', '12.5', '15', '33.33', '3'][next(5)]!;
      const a = await affiliate(percent);
      const order = await paidOrder(`g-${uid()}@example.com`, c % 2 ? p33 : p10, { affiliate_code: a.code });
      const total = new Decimal(c % 2 ? '33.33' : '10.00');
      const accrual = total.times(percent).dividedBy(100).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
      let remaining = total;
      let refunded = new Decimal(0);
      const parts = 1 + next(4);
      for (let i = 0; i < parts; i++) {
        const cents =
          i === parts - 1
            ? remaining.times(100).toNumber()
            : 1 + next(Math.max(1, remaining.times(100).toNumber() - (parts - i)));
        const amount = new Decimal(cents).dividedBy(100);
        expect((await refund(order.id, amount.toFixed(2))).status).toBe(200);
        refunded = refunded.plus(amount);
        remaining = remaining.minus(amount);
        const reversed = (await ledger(a.id))
          .filter((r) => r.kind === 'REVERSAL')
          .reduce((s, r) => s.minus(r.amount), new Decimal(0));
        expect(reversed.toFixed()).toBe(
          accrual.times(refunded).dividedBy(total).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(),
        );
      }
      const sum = (await ledger(a.id)).reduce((s, r) => s.plus(r.amount), new Decimal(0));
      expect(sum.toFixed()).toBe('0');
    }
  });
});

describe('commission under concurrency (real PostgreSQL)', () => {
  pgOnly('5 concurrent partial refunds of one order: the reversals add up to the accrual exactly', async () => {
    const code = `PR${uid()}`;
    const { ids } = await seedA({
      customers: [{ email: `${code.toLowerCase()}@example.com`, affiliate: { code, commission_percent: '15' } }],
    });
    const id = Object.values(ids)[0]!;
    const order = await paidOrder(`pr-${uid()}@example.com`, p33, { affiliate_code: code });
    // 33.33 in five refunds of 6.66 and one of 0.03 (fired together: they run one after another under the order lock).
    const results = await Promise.all([...Array<string>(5).fill('6.66'), '0.03'].map((a) => refund(order.id, a)));
    expect(results.map((r) => r.status)).toEqual(Array<number>(6).fill(200));
    const rows = await ledger(id);
    expect(rows.filter((r) => r.kind === 'REVERSAL')).toHaveLength(6);
    expect(rows.reduce((s, r) => s.plus(r.amount), new Decimal(0)).toFixed()).toBe('0');
    expect((await summary(id)).affiliate).toMatchObject({ balance: 0, lifetime_earnings: 0 });
  });
});

describe('POST /customers/{id}/affiliate/convert-to-balance', () => {
  async function earner(code: string, opening = '7.25') {
    const { ids } = await seedA({
      customers: [
        { email: `${code.toLowerCase()}@example.com`, affiliate: { code, balance: opening, lifetime_earnings: '30' } },
      ],
    });
    return Object.values(ids)[0]!;
  }
  const wallet = async (customerId: string) => {
    const row = await t.db
      .selectFrom('customers')
      .select('wallet_balance')
      .where('id', '=', customerId)
      .executeTakeFirstOrThrow();
    const sum = await t.db
      .selectFrom('wallet_transactions')
      .select(sql<string>`coalesce(sum(amount), 0)::text`.as('s'))
      .where('customer_id', '=', customerId)
      .executeTakeFirstOrThrow();
    expect(new Decimal(sum.s).eq(row.wallet_balance)).toBe(true);
    return new Decimal(row.wallet_balance).toFixed();
  };

  test('moves commission into the wallet: AFFILIATE_COMMISSION credit, CONVERSION entry, balance 7.25 -> 2.25', async () => {
    const id = await earner(`CV${uid()}`);
    const res = await convert(id, 5);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {} });
    expect(await wallet(id)).toBe('5');
    const tx = await t.db
      .selectFrom('wallet_transactions')
      .select(['id', 'type', 'amount'])
      .where('customer_id', '=', id)
      .executeTakeFirstOrThrow();
    expect([tx.type, new Decimal(tx.amount).toFixed()]).toEqual(['AFFILIATE_COMMISSION', '5']);
    expect(await ledger(id)).toEqual([
      {
        kind: 'CONVERSION',
        amount: '-5',
        order_id: null,
        refund_id: null,
        wallet_transaction_id: tx.id,
        commission_percent: null,
      },
    ]);
    const after = await summary(id);
    expect(after.affiliate).toMatchObject({ balance: 2.25, lifetime_earnings: 30 });
    expect(after.wallet).toMatchObject({ balance: 5, available_balance: 5 });
    // Exactly what is left converts too; then nothing is left.
    expect((await convert(id, 2.25)).status).toBe(200);
    expect((await summary(id)).affiliate.balance).toBe(0);
    expect(await wallet(id)).toBe('7.25');
  });

  test('more than the unpaid commission: 400 INSUFFICIENT_FUNDS; not an affiliate: 400 NOT_AN_AFFILIATE; nothing changes', async () => {
    const id = await earner(`IF${uid()}`);
    const { ids } = await seedA({ customers: [{ email: `plain-${uid()}@example.com`, wallet_balance: '3.00' }] });
    const plain = Object.values(ids)[0]!;
    const before = await world();
    const over = await convert(id, 7.26);
    expect([over.status, over.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
    expect(over.body.error.message).toBe(
      "The affiliate's unpaid commission is 7.25 USD; 7.26 USD cannot be converted. Nothing changed.",
    );
    const notAffiliate = await convert(plain, 1);
    expect([notAffiliate.status, notAffiliate.body.error.code]).toEqual([400, 'NOT_AN_AFFILIATE']);
    expect(await world()).toEqual(before);
  });

  test('bad amounts: 422 on amount (zero, negative, a string, more decimals than the currency), nothing changes', async () => {
    const id = await earner(`BA${uid()}`);
    const before = await world();
    for (const amount of [0, -1, '5', 0.001, 1000001]) {
      const res = await convert(id, amount);
      expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
      expect(res.body.error.details.map((d: { field: string }) => d.field).join()).toMatch(/amount/);
    }
    expect(await world()).toEqual(before);
  });

  test('unknown customer and another shop’s affiliate: 404 CUSTOMER_NOT_FOUND, nothing changes', async () => {
    const { ids } = await seedA(
      { customers: [{ email: `bb-${uid()}@example.com`, affiliate: { code: `BB${uid()}`, balance: '5' } }] },
      shopB,
    );
    const bAffiliate = Object.values(ids)[0]!;
    const before = await world();
    const cross = await convert(bAffiliate, 1);
    const missing = await convert('cus_00000000000000000000000000000000', 1);
    expect([cross.status, cross.body.error.code]).toEqual([404, 'CUSTOMER_NOT_FOUND']);
    expect(missing.body.error).toEqual(cross.body.error);
    expect(await world()).toEqual(before);
  });

  test('a refund after a conversion can take the balance below zero; conversion then refuses', async () => {
    const code = `NG${uid()}`;
    const id = await earner(code, '0');
    const order = await paidOrder(`ng-${uid()}@example.com`, p10, { affiliate_code: code });
    expect((await summary(id)).affiliate.balance).toBe(1);
    expect((await convert(id, 1)).status).toBe(200);
    expect((await refund(order.id)).status).toBe(200);
    const after = await summary(id);
    expect(after.affiliate).toMatchObject({ balance: -1, lifetime_earnings: 30 });
    expect(after.wallet.balance).toBe(1);
    const res = await convert(id, 0.01);
    expect([res.status, res.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
    // The next commission settles the debt first.
    await paidOrder(`ng2-${uid()}@example.com`, p10, { affiliate_code: code });
    await paidOrder(`ng3-${uid()}@example.com`, p10, { affiliate_code: code });
    expect((await summary(id)).affiliate.balance).toBe(1);
  });

  pgOnly('10 concurrent conversions of the whole balance: exactly one wins; wallet and ledger exact', async () => {
    const id = await earner(`RC${uid()}`, '10');
    const results = await Promise.all(Array.from({ length: 10 }, () => convert(id, 10)));
    expect(results.map((r) => r.status).sort()).toEqual([200, ...Array<number>(9).fill(400)]);
    expect(results.filter((r) => r.status === 400).every((r) => r.body.error.code === 'INSUFFICIENT_FUNDS')).toBe(true);
    expect(await wallet(id)).toBe('10');
    expect((await ledger(id)).map((r) => [r.kind, r.amount])).toEqual([['CONVERSION', '-10']]);
    expect((await summary(id)).affiliate.balance).toBe(0);
  });

  pgOnly('20 concurrent conversions of 1.00 from 5.00: exactly five win', async () => {
    const id = await earner(`RD${uid()}`, '5');
    const results = await Promise.all(Array.from({ length: 20 }, () => convert(id, 1)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 400 && r.body.error.code === 'INSUFFICIENT_FUNDS')).toHaveLength(15);
    expect(await wallet(id)).toBe('5');
    expect(await ledger(id)).toHaveLength(5);
    expect((await summary(id)).affiliate.balance).toBe(0);
  });
});
