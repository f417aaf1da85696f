// GET /customers (cursor list, filters, sorts) and GET /customers/{id} (include_affiliate), with tenancy: shops A and B
// hold the same customers (emails, times, referrals), so only the shop boundary can tell their answers apart.
import { sql } from 'kysely';
import { customerById, insertCustomers, referredCustomerCount } from '../../db/queries/customers';
import { newCustomerRow } from '../../src/domain/customers/customers';
import { seedCustomerPasts } from '../../src/ops/fixtures/customer-history';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
/** Customer ids by the email's local part, per shop. */
let ids: Record<string, string>;
let idsB: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', currency: 'EUR', scopes: ['customers.read'] },
    b: { name: 'B', currency: 'EUR' },
  }));
  // Five customers a second apart (oldest first), plus one created in the same microsecond as another.
  const base = Date.parse('2026-01-10T00:00:00Z');
  const customers = [
    {
      email: 'Ada@Example.com',
      name: 'Ada',
      country: 'GB',
      total_spent: '120.50',
      affiliate: {
        code: 'ADA10',
        commission_percent: '12.5',
        balance: '7.25',
        lifetime_earnings: '30',
        referred_orders: 4,
      },
    },
    { email: 'bob@example.com', name: 'Bob', country: 'US', total_spent: '5', blacklisted: true },
    { email: 'cy@example.com', name: null, country: 'US', total_spent: '99.99', wallet_balance: '15.00' },
    { email: 'dee@example.com', name: 'Dee', country: null, total_spent: '0' },
    { email: 'eve@example.com', name: 'Eve', country: 'DE', total_spent: '120.50' },
    { email: 'fay@example.com', name: 'Fay', country: 'DE', total_spent: '1' },
  ];
  const seed = async (shopId: string) => {
    const rows = customers.map((c, i) =>
      newCustomerRow(
        { currency: 'EUR' },
        { ...c, created_at: new Date(base + Math.min(i, 4) * 1000).toISOString() },
        new Date(),
      ),
    );
    const inserted = await t.db.transaction().execute(async (trx) => {
      const created = await insertCustomers(trx, shopId, rows);
      // Their spend and blacklisting are computed: seeded as a paid order each and an EMAIL blacklist entry.
      const pasts = created.map((row, i) => ({
        customerId: row.id,
        email: row.email,
        total_spent: customers[i]!.total_spent,
        blacklisted: 'blacklisted' in customers[i]! ? customers[i]!.blacklisted : undefined,
      }));
      await seedCustomerPasts(trx, { id: shopId, currency: 'EUR' }, pasts, new Date(base));
      return created;
    });
    const byName = Object.fromEntries(inserted.map((c) => [c.email.split('@')[0]!, c.id]));
    // Bob and Cy were referred by Ada.
    await sql`update customers set referred_by_customer_id = ${byName.ada} where id in (${byName.bob}, ${byName.cy})`.execute(
      t.db,
    );
    return byName;
  };
  ids = await seed(shopA);
  idsB = await seed(shopB);
});
afterAll(() => t.close());

const list = (query = '') => t.http.get(`/dev/v1/customers${query}`).set(bearer(keyA));
const emails = (res: { body: { data: { email: string }[] } }) => res.body.data.map((c) => c.email.split('@')[0] ?? '');

async function walk(query: string, limit: number): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 20; i++) {
    const sep: string = query ? '&' : '?';
    const res = await list(`${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    out.push(...emails(res));
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

async function snapshot() {
  return (await sql`select id, email, updated_at::text from customers order by id`.execute(t.db)).rows;
}

test('lists only the shop own customers, newest first (ties by id), without affiliate', async () => {
  const res = await list();
  expect(res.status).toBe(200);
  expect(res.body.data).toHaveLength(6);
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  expect(new Set(res.body.data.map((c: { id: string }) => c.id))).toEqual(new Set(Object.values(ids)));
  const order = emails(res);
  expect(order.slice(2)).toEqual(['dee', 'cy', 'bob', 'ada']);
  // eve and fay share a timestamp: descending by id
  expect(order.slice(0, 2)).toEqual([ids.eve! > ids.fay! ? 'eve' : 'fay', ids.eve! > ids.fay! ? 'fay' : 'eve']);
  expect(res.body.data[0]).not.toHaveProperty('affiliate');
  const ada = res.body.data.find((c: { id: string }) => c.id === ids.ada);
  expect(ada).toMatchObject({
    email: 'ada@example.com',
    country: 'GB',
    total_spent: 120.5,
    is_affiliate: true,
    blacklisted: false,
    wallet: { balance: 0, available_balance: 0, currency: 'EUR' },
    created_at: Date.parse('2026-01-10T00:00:00Z') / 1000,
  });
});

test('pages with a cursor: every customer once, in order', async () => {
  const all = emails(await list());
  expect(await walk('', 1)).toEqual(all);
  expect(await walk('', 4)).toEqual(all);
  const first = await list('?limit=2');
  expect(first.body.pagination.has_more).toBe(true);
  expect(typeof first.body.pagination.next_cursor).toBe('string');
});

test('sorts: email, -email, total_spent (ties by id), created_at, updated_at', async () => {
  expect(await walk('?sorts=email', 2)).toEqual(['ada', 'bob', 'cy', 'dee', 'eve', 'fay']);
  expect(await walk('?sorts=-email', 2)).toEqual(['fay', 'eve', 'dee', 'cy', 'bob', 'ada']);
  const bySpent = await walk('?sorts=total_spent', 2);
  expect(bySpent.slice(0, 4)).toEqual(['dee', 'fay', 'bob', 'cy']);
  expect(bySpent.slice(4)).toEqual(ids.ada! < ids.eve! ? ['ada', 'eve'] : ['eve', 'ada']);
  expect((await walk('?sorts=created_at', 3)).slice(0, 4)).toEqual(['ada', 'bob', 'cy', 'dee']);
  expect(await walk('?sorts=-updated_at', 5)).toEqual(await walk('', 5));
});

test('filters: email (case-insensitive), country, booleans, time range, min_total_spent, combined', async () => {
  expect(emails(await list('?filters=email:ADA@example.com'))).toEqual(['ada']);
  expect(emails(await list('?filters=country:US&sorts=email'))).toEqual(['bob', 'cy']);
  expect(emails(await list('?filters=is_affiliate:true'))).toEqual(['ada']);
  expect(emails(await list('?filters=blacklisted:true'))).toEqual(['bob']);
  expect(emails(await list('?filters=is_affiliate:false,blacklisted:false&sorts=email'))).toEqual([
    'cy',
    'dee',
    'eve',
    'fay',
  ]);
  expect(
    emails(await list('?filters=created_after:2026-01-10T00:00:02Z,created_before:1768003204&sorts=email')),
  ).toEqual(['cy', 'dee']);
  expect(emails(await list('?filters=min_total_spent:99.99&sorts=email'))).toEqual(['ada', 'cy', 'eve']);
  expect(await walk('?filters=country:DE,min_total_spent:0.5&sorts=email', 1)).toEqual(['eve', 'fay']);
  expect(emails(await list('?filters=email:nobody@example.com'))).toEqual([]);
});

test('filters and sorts that are not allowed or not valid: 422 with details, nothing written', async () => {
  const before = await snapshot();
  const cases: [string, string][] = [
    ['?filters=name:Ada', 'filters'],
    ['?filters=password:x', 'filters'],
    ['?filters=email:not-an-email', 'filters'],
    ['?filters=country:usa', 'filters'],
    ['?filters=is_affiliate:yes', 'filters'],
    ['?filters=created_after:yesterday', 'filters'],
    ['?filters=min_total_spent:1e3', 'filters'],
    ['?filters=email:a@b.co,email:c@d.co', 'filters'],
    ['?filters=email:a@b.co,,country:US', 'filters'],
    ['?filters=email:', 'filters'],
    ['?filters=:x', 'filters'],
    ['?filters=', 'filters'],
    ["?filters=email:a@b.co'%20or%201=1--", 'filters'],
    ['?sorts=name', 'sorts'],
    ['?sorts=--email', 'sorts'],
    ['?sorts=', 'sorts'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=x', 'limit'],
  ];
  for (const [query, field] of cases) {
    const res = await list(query);
    expect({ query, status: res.status, code: res.body.error?.code }).toEqual({
      query,
      status: 422,
      code: 'VALIDATION_ERROR',
    });
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect({ query, ok: fields.includes(`query.${field}`) }).toEqual({ query, ok: true });
  }
  const duplicate = await list('?filters=email:a@b.co,email:c@d.co');
  expect(duplicate.body.error.details[0].message).toMatch(/more than once/);
  const unknown = await list('?filters=name:Ada');
  expect(unknown.body.error.details[0].message).toMatch(/cannot be filtered/);
  expect(await snapshot()).toEqual(before);
});

test('GET /customers/{id}: the customer; include_affiliate adds the summary', async () => {
  const plain = await t.http.get(`/dev/v1/customers/${ids.ada}`).set(bearer(keyA));
  expect(plain.status).toBe(200);
  expect(plain.body.data.id).toBe(ids.ada);
  expect(plain.body.data).not.toHaveProperty('affiliate');

  const withAffiliate = await t.http.get(`/dev/v1/customers/${ids.ada}?include_affiliate=true`).set(bearer(keyA));
  expect(withAffiliate.status).toBe(200);
  expect(withAffiliate.body.data.affiliate).toEqual({
    code: 'ADA10',
    status: 'ACTIVE',
    commission_percent: 12.5,
    balance: 7.25,
    lifetime_earnings: 30,
    referred_customers: 2,
    referred_orders: 4,
  });

  const notAffiliate = await t.http.get(`/dev/v1/customers/${ids.cy}?include_affiliate=true`).set(bearer(keyA));
  expect(notAffiliate.body.data.affiliate).toBeNull();
  expect(notAffiliate.body.data.wallet).toMatchObject({ balance: 15, available_balance: 15, currency: 'EUR' });
  expect(notAffiliate.body.data.name).toBeNull();

  const explicitFalse = await t.http.get(`/dev/v1/customers/${ids.ada}?include_affiliate=false`).set(bearer(keyA));
  expect(explicitFalse.body.data).not.toHaveProperty('affiliate');
});

test('another shop, or an unknown id: 404 CUSTOMER_NOT_FOUND', async () => {
  for (const [id, key] of [
    [ids.ada!, keyB],
    [idsB.ada!, keyA],
  ] as [string, string][]) {
    const cross = await t.http.get(`/dev/v1/customers/${id}?include_affiliate=true`).set(bearer(key));
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('CUSTOMER_NOT_FOUND');
  }
  const unknown = await t.http.get('/dev/v1/customers/cus_doesnotexist').set(bearer(keyA));
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('CUSTOMER_NOT_FOUND');
});

test('the other shop lists its own copy of the same customers, in the same order, under its own ids', async () => {
  const other = await t.http.get('/dev/v1/customers').set(bearer(keyB));
  expect(other.status).toBe(200);
  // eve and fay share a timestamp: descending by id, and the ids differ between the shops
  const tie = idsB.eve! > idsB.fay! ? ['eve', 'fay'] : ['fay', 'eve'];
  const order = [...tie, 'dee', 'cy', 'bob', 'ada'];
  expect(emails(other)).toEqual(order);
  expect(other.body.data.map((c: { id: string }) => c.id)).toEqual(order.map((name) => idsB[name]));
  const filtered = await t.http.get('/dev/v1/customers?filters=email:ada@example.com').set(bearer(keyB));
  expect(filtered.body.data.map((c: { id: string }) => c.id)).toEqual([idsB.ada]);
  const affiliate = await t.http.get(`/dev/v1/customers/${idsB.ada}?include_affiliate=true`).set(bearer(keyB));
  expect(affiliate.body.data.affiliate.referred_customers).toBe(2);
});

test("the customer queries answer for their shop only, even when handed another shop's ids", async () => {
  expect(await customerById(t.db, shopB, ids.ada!)).toBeUndefined();
  expect((await customerById(t.db, shopA, ids.ada!))?.email).toBe('ada@example.com');
  expect(await referredCustomerCount(t.db, shopB, ids.ada!)).toBe(0);
  expect(await referredCustomerCount(t.db, shopA, ids.ada!)).toBe(2);
});

test('a key without customers.read: 403', async () => {
  const { key } = await t.createKey(shopA, ['products.read']);
  const res = await t.http.get('/dev/v1/customers').set(bearer(key));
  expect(res.status).toBe(403);
});
