// The blacklist: GET /blacklist (cursor list), entries written by the operator (`cli blacklist add`) and fixtures,
// POST /orders refusing a matching buyer (email, email domain, country sent or stored, IP address or range) with
// nothing written, and the customer figures that are computed instead of stored: `blacklisted` from the entries,
// `total_spent` / `total_orders` from paid orders minus refunds.
import { sql } from 'kysely';
import * as admin from '../../src/ops/admin';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2026-11-23T12:00:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let product: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { currency: 'USD' }, b: { currency: 'USD' } }));
  product = (await t.seed(shopA, { products: [{ title: 'Thing', price: '10.00' }] })).products[0]!;
  await t.seed(shopB, { products: [{ title: 'Thing', price: '10.00' }] });
});
afterAll(() => t.close());

const createOrder = (body: Record<string, unknown>, key = keyA) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ items: [{ product_id: product, quantity: 1 }], ...body });
const add = (shopId: string, type: string, value: string, note?: string) =>
  admin.addBlacklistEntry(t.operator, { shopId, type, value, ...(note === undefined ? {} : { note }) });

/** Everything a refused order must leave alone. */
async function world() {
  const count = async (table: string) =>
    Number((await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}`.execute(t.db)).rows[0]!.n);
  return {
    orders: await count('orders'),
    items: await count('order_items'),
    customers: await count('customers'),
    events: await count('events'),
    mail: await count('outbound_emails'),
    entries: await count('blacklist_entries'),
    coupons: (await t.db.selectFrom('coupons').select('uses').orderBy('id').execute()).map((r) => r.uses),
  };
}

describe('entries: the operator adds them, normalised; invalid ones are refused', () => {
  test('values are normalised; a repeated entry is refused; bad types and values write nothing', async () => {
    const s = await t.createShop({ name: 'Norm', currency: 'USD' });
    expect(await add(s, 'email', ' Mallory@Example.COM ', 'chargebacks')).toMatchObject({
      type: 'EMAIL',
      value: 'mallory@example.com',
      note: 'chargebacks',
      id: expect.stringMatching(/^bl_[0-9a-f]{32}$/),
    });
    expect((await add(s, 'EMAIL_DOMAIN', '@Spam.Example')).value).toBe('spam.example');
    expect((await add(s, 'COUNTRY', 'kp')).value).toBe('KP');
    expect((await add(s, 'IP', '203.0.113.7')).value).toBe('203.0.113.7');
    expect((await add(s, 'IP', '198.51.100.77/24')).value).toBe('198.51.100.0/24');
    expect((await add(s, 'IP', '2001:0db8:0000::/32')).value).toBe('2001:db8::/32');
    expect((await add(s, 'IP', '::ffff:192.0.2.1')).value).toBe('192.0.2.1');
    expect((await add(s, 'IP', '192.0.2.9/32')).value).toBe('192.0.2.9');
    const before = await world();
    for (const [type, value] of [
      ['EMAIL', 'MALLORY@example.com'],
      ['PHONE', '123'],
      ['EMAIL', 'not-an-email'],
      ['EMAIL_DOMAIN', 'no_tld'],
      ['COUNTRY', 'USA'],
      ['IP', '300.1.1.1'],
      ['IP', '10.0.0.0/33'],
    ]) {
      await expect(add(s, type!, value!)).rejects.toThrow(admin.AdminError);
    }
    await expect(add(s, 'EMAIL', 'x@example.com', 'n'.repeat(1001))).rejects.toThrow(admin.AdminError);
    await expect(add('shop_missing', 'EMAIL', 'x@example.com')).rejects.toThrow(/No shop/);
    expect(await world()).toEqual(before);
  });

  test('fixtures: a blacklist section and blacklisted customers; invalid values are refused before writing', async () => {
    const s = await t.createShop({ name: 'Fix', currency: 'USD' });
    const created = await t.seed(s, {
      customers: [{ email: 'Bad@Example.com', blacklisted: true }, { email: 'ok@example.com' }],
      blacklist: [
        { type: 'EMAIL_DOMAIN', value: 'Spam.example', note: 'spam' },
        { type: 'IP', value: '203.0.113.0/24' },
        { type: 'COUNTRY', value: 'KP' },
      ],
    });
    expect(created.blacklist).toHaveLength(3);
    const rows = await t.db
      .selectFrom('blacklist_entries')
      .select(['type', 'value', 'note'])
      .where('shop_id', '=', s)
      .orderBy('value')
      .execute();
    expect(rows).toEqual([
      { type: 'IP', value: '203.0.113.0/24', note: null },
      { type: 'COUNTRY', value: 'KP', note: null },
      { type: 'EMAIL', value: 'bad@example.com', note: null },
      { type: 'EMAIL_DOMAIN', value: 'spam.example', note: 'spam' },
    ]);
    for (const bad of [
      { blacklist: [{ type: 'IP', value: 'nope' }] },
      { blacklist: [{ type: 'COUNTRY', value: 'Germany' }] },
      { blacklist: [{ type: 'URL', value: 'x' }] },
      { blacklist: [{ type: 'EMAIL', value: 'a@b.co', extra: 1 }] },
      { customers: [{ email: 'a@b.co', total_spent: '5', total_orders: 0 }] },
    ]) {
      expect(() => parseFixtures(bad, new Date())).toThrow(FixtureError);
    }
  });
});

describe('GET /blacklist', () => {
  test('newest first with every field, only the shop own entries, walked by cursor; needs customers.read', async () => {
    const s = await t.createShop({ name: 'List', currency: 'USD' });
    const key = (await t.createKey(s, ['customers.read'])).key;
    const one = await add(s, 'EMAIL', 'one@example.com', 'first');
    const two = await add(s, 'IP', '203.0.113.7');
    const three = await add(s, 'COUNTRY', 'KP');
    await add(shopB, 'EMAIL', 'elsewhere@example.com');
    // Distinct times, oldest first.
    for (const [i, id] of [one.id, two.id, three.id].entries())
      await sql`update blacklist_entries set created_at = ${new Date(Date.UTC(2026, 5, 1 + i)).toISOString()}::timestamptz where id = ${id}`.execute(
        t.db,
      );
    const res = await t.http.get('/dev/v1/blacklist').set(bearer(key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        { id: three.id, type: 'COUNTRY', value: 'KP', note: null, created_at: Date.UTC(2026, 5, 3) / 1000 },
        { id: two.id, type: 'IP', value: '203.0.113.7', note: null, created_at: Date.UTC(2026, 5, 2) / 1000 },
        { id: one.id, type: 'EMAIL', value: 'one@example.com', note: 'first', created_at: Date.UTC(2026, 5, 1) / 1000 },
      ],
      pagination: { next_cursor: null, has_more: false },
    });
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: any } = await t.http
        .get('/dev/v1/blacklist')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set(bearer(key));
      expect(page.status).toBe(200);
      walked.push(...page.body.data.map((e: { id: string }) => e.id));
      cursor = page.body.pagination.next_cursor;
    } while (cursor);
    expect(walked).toEqual([three.id, two.id, one.id]);
    // Another shop's cursor is refused.
    const first = await t.http.get('/dev/v1/blacklist?limit=1').set(bearer(key));
    const other = await t.http
      .get('/dev/v1/blacklist')
      .query({ limit: 1, cursor: first.body.pagination.next_cursor })
      .set(bearer(keyB));
    expect([other.status, other.body.error.details[0].field]).toEqual([422, 'query.cursor']);
    const noScope = (await t.createKey(s, ['orders.read'])).key;
    expect((await t.http.get('/dev/v1/blacklist').set(bearer(noScope))).status).toBe(403);
  });
});

describe('POST /orders refuses a buyer an entry matches, and writes nothing', () => {
  beforeAll(async () => {
    await add(shopA, 'EMAIL', 'banned@example.com');
    await add(shopA, 'EMAIL_DOMAIN', 'spam.example');
    await add(shopA, 'COUNTRY', 'KP');
    await add(shopA, 'IP', '203.0.113.7');
    await add(shopA, 'IP', '198.51.100.0/24');
    await add(shopA, 'IP', '2001:db8::/32');
    // Shop B's entries do not concern shop A's buyers.
    await add(shopB, 'EMAIL', 'fine@example.com');
    await add(shopB, 'IP', '192.0.2.0/24');
    // A customer whose stored country is blacklisted.
    await t.seed(shopA, { customers: [{ email: 'kp-resident@example.com', country: 'KP' }] });
  });

  test.each([
    ['the email, in any case', { email: 'Banned@Example.com' }],
    ['the email domain', { email: 'anyone@spam.example' }],
    ['the country sent', { email: 'new1@example.com', country: 'KP' }],
    ['the customer stored country', { email: 'kp-resident@example.com' }],
    ['an IP address', { email: 'new2@example.com', ip_address: '203.0.113.7' }],
    ['an IP in a range', { email: 'new3@example.com', ip_address: '198.51.100.200' }],
    ['an IPv6 address in a range', { email: 'new4@example.com', ip_address: '2001:db8:1::5' }],
    ['an IPv4-mapped IPv6 address', { email: 'new5@example.com', ip_address: '::ffff:203.0.113.7' }],
  ])('%s: 400 BUYER_BLOCKED', async (_label, body) => {
    const before = await world();
    const res = await createOrder(body);
    expect([res.status, res.body.error.code]).toEqual([400, 'BUYER_BLOCKED']);
    // The message does not say which entry matched.
    expect(res.body.error.message).toBe('The shop does not accept orders from this buyer.');
    expect(await world()).toEqual(before);
  });

  test('buyers nothing matches are accepted (other countries, IPs, domains; another shop entries)', async () => {
    for (const body of [
      { email: 'fine@example.com' },
      { email: 'someone@notspam.example', country: 'US', ip_address: '203.0.113.8' },
      { email: 'v6@example.com', ip_address: '2001:db9::1' },
      { email: 'b-range@example.com', ip_address: '192.0.2.5' },
      // The country sent is the buyer's: it replaces the stored one.
      { email: 'kp-resident@example.com', country: 'DE' },
    ]) {
      const res = await createOrder(body);
      expect({ body, status: res.status }).toEqual({ body, status: 201 });
    }
  });

  test('an ip_address that is not an address, or a bad country, is a 422 that writes nothing', async () => {
    const before = await world();
    const ip = await createOrder({ email: 'x@example.com', ip_address: '999.1.1.1' });
    expect([ip.status, ip.body.error.details]).toEqual([422, [{ field: 'ip_address', message: expect.any(String) }]]);
    const country = await createOrder({ email: 'x@example.com', country: 'kp' });
    expect(country.status).toBe(422);
    expect(await world()).toEqual(before);
  });

  test('a coupon is not used by a refused buyer', async () => {
    await t.seed(shopA, { coupons: [{ code: 'BL10', type: 'PERCENTAGE', value: '10', max_uses: 5 }] });
    const before = await world();
    const res = await createOrder({ email: 'banned@example.com', coupon_code: 'bl10' });
    expect(res.body.error.code).toBe('BUYER_BLOCKED');
    expect(await world()).toEqual(before);
  });
});

describe('customer figures are computed, never stored', () => {
  const getCustomer = (id: string, key = keyA) => t.http.get(`/dev/v1/customers/${id}`).set(bearer(key));
  const listed = async (query: string) =>
    (await t.http.get(`/dev/v1/customers${query}`).set(bearer(keyA))).body.data.map((c: { email: string }) => c.email);

  test('blacklisted follows the entries (email, domain, stored country), with no write to the customer', async () => {
    const [plain, domain, country] = (
      await t.seed(shopA, {
        customers: [
          { email: 'fig-plain@example.com' },
          { email: 'fig@figdomain.example' },
          { email: 'fig-country@example.com', country: 'CU' },
        ],
      })
    ).customers as [string, string, string];
    const row = () => t.db.selectFrom('customers').selectAll().where('id', '=', plain).executeTakeFirstOrThrow();
    const stored = await row();
    expect((await getCustomer(plain)).body.data.blacklisted).toBe(false);
    await add(shopA, 'EMAIL', 'FIG-plain@example.com');
    await add(shopA, 'EMAIL_DOMAIN', 'figdomain.example');
    await add(shopA, 'COUNTRY', 'CU');
    for (const id of [plain, domain, country]) expect((await getCustomer(id)).body.data.blacklisted).toBe(true);
    expect(await row()).toEqual(stored);
    const flagged = await listed('?filters=blacklisted:true&limit=100');
    expect(flagged).toEqual(
      expect.arrayContaining(['fig-plain@example.com', 'fig@figdomain.example', 'fig-country@example.com']),
    );
    expect(flagged).not.toContain('fine@example.com');
    // Shop B's entry for the same email does not flag shop A's customer, and the other way round.
    expect((await getCustomer(plain, keyB)).status).toBe(404);
  });

  test('total_spent and total_orders: paid orders minus refunds; a pending one does not count', async () => {
    const email = 'spender@example.com';
    const first = await createOrder({ email, items: [{ product_id: product, quantity: 2 }] });
    const second = await createOrder({ email, items: [{ product_id: product, quantity: 1 }] });
    await createOrder({ email }); // stays pending
    const customerId = first.body.data.customer_id as string;
    const figures = async () => {
      const c = (await getCustomer(customerId)).body.data;
      return [c.total_spent, c.total_orders];
    };
    expect(await figures()).toEqual([0, 0]);
    expect((await t.http.post(`/dev/v1/orders/${first.body.data.id}/complete`).set(bearer(keyA)).send({})).status).toBe(
      200,
    );
    expect(await figures()).toEqual([20, 1]);
    expect(
      (await t.http.post(`/dev/v1/orders/${second.body.data.id}/complete`).set(bearer(keyA)).send({})).status,
    ).toBe(200);
    expect(await figures()).toEqual([30, 2]);
    // A partial refund takes its amount off; a full refund the rest of the order; the order still counts.
    expect(
      (await t.http.post(`/dev/v1/orders/${first.body.data.id}/refund`).set(bearer(keyA)).send({ amount: '2.50' }))
        .status,
    ).toBe(200);
    expect(await figures()).toEqual([27.5, 2]);
    expect((await t.http.post(`/dev/v1/orders/${second.body.data.id}/refund`).set(bearer(keyA)).send({})).status).toBe(
      200,
    );
    expect(await figures()).toEqual([17.5, 2]);
    // The list shows the same figures, and sorts and filters on them.
    const page = (await t.http.get('/dev/v1/customers?sorts=-total_spent&limit=1').set(bearer(keyA))).body;
    expect(page.data[0]).toMatchObject({ email, total_spent: 17.5, total_orders: 2 });
    expect(await listed('?filters=min_total_spent:17.5')).toEqual([email]);
    expect(await listed('?filters=min_total_spent:17.51')).toEqual([]);
  });

  test('sorting by total_spent walks every customer once, in order, across pages', async () => {
    const s = await t.createShop({ name: 'Sort', currency: 'USD' });
    const key = (await t.createKey(s, ['customers.read'])).key;
    await t.seed(s, {
      customers: [
        { email: 'a@example.com', total_spent: '5', total_orders: 2 },
        { email: 'b@example.com', total_spent: '100.5' },
        { email: 'c@example.com' },
        { email: 'd@example.com', total_spent: '5' },
        { email: 'e@example.com', total_spent: '0.01' },
      ],
    });
    const walk = async (sorts: string) => {
      const out: [string, number, number][] = [];
      let cursor: string | null = null;
      do {
        const res: { body: any } = await t.http
          .get('/dev/v1/customers')
          .query({ sorts, limit: 2, ...(cursor ? { cursor } : {}) })
          .set(bearer(key));
        out.push(
          ...res.body.data.map((c: { email: string; total_spent: number; total_orders: number }) => [
            c.email[0]!,
            c.total_spent,
            c.total_orders,
          ]),
        );
        cursor = res.body.pagination.next_cursor;
      } while (cursor);
      return out;
    };
    const asc = await walk('total_spent');
    expect(asc.map((r) => r[1])).toEqual([0, 0.01, 5, 5, 100.5]);
    expect(asc.find((r) => r[0] === 'a')).toEqual(['a', 5, 2]);
    expect(new Set(asc.map((r) => r[0])).size).toBe(5);
    const desc = await walk('-total_spent');
    expect(desc.map((r) => r[0])).toEqual([...asc.map((r) => r[0])].reverse());
  });

  test('the customer table has no stored copies left', async () => {
    const columns = await sql<{ column_name: string }>`select column_name from information_schema.columns
      where table_name = 'customers'`.execute(t.db);
    const names = columns.rows.map((r) => r.column_name);
    expect(names).toContain('email');
    for (const gone of ['total_spent', 'total_orders', 'blacklisted']) expect(names).not.toContain(gone);
  });
});
