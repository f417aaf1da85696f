// GET /orders and GET /invoices: cursor lists over the shop's invoices (orders alone, or orders and generic payments),
// every filter and sort, pages walked to the end, cursors bound to their list, filters, sorts and shop, exact amounts.
// Shops A and B hold the same invoices (the rows are seeded through the query layer, not POST /orders), so only the
// shop boundary can tell their answers apart.
import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import { insertCustomers } from '../../db/queries/customers';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import type { OrderRow } from '../../db/tables';
import { newCustomerRow } from '../../src/domain/customers/customers';
import { newId } from '../../src/ids';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

interface Seed {
  label: string;
  kind: 'ORDER' | 'PAYMENT';
  status: OrderRow['status'];
  payment_status: OrderRow['payment_status'];
  email: string | null;
  customer: 'ada' | 'bob' | null;
  gateway: string | null;
  currency: string;
  total: string;
  coupon: boolean;
  developer: boolean;
  /** Seconds after the base time. */
  created: number;
  updated: number;
  items: number;
}

const seeds: Seed[] = [
  // prettier-ignore
  { label: 'o1', kind: 'ORDER', status: 'PENDING', payment_status: 'PENDING', email: 'ada@example.com', customer: 'ada', gateway: 'STRIPE', currency: 'USD', total: '0.30000000', coupon: false, developer: false, created: 1, updated: 60, items: 2 },
  // prettier-ignore
  { label: 'o2', kind: 'ORDER', status: 'COMPLETED', payment_status: 'PAID', email: 'bob@example.com', customer: 'bob', gateway: 'PAYPAL', currency: 'EUR', total: '12345678901.12345678', coupon: true, developer: false, created: 2, updated: 50, items: 1 },
  // prettier-ignore
  { label: 'p3', kind: 'PAYMENT', status: 'COMPLETED', payment_status: 'PAID', email: 'ada@example.com', customer: null, gateway: 'STRIPE', currency: 'USD', total: '5', coupon: false, developer: true, created: 3, updated: 40, items: 0 },
  // o4 and o5 share created_at; o4 and p3 share a total: the ties break on id.
  // prettier-ignore
  { label: 'o4', kind: 'ORDER', status: 'VOIDED', payment_status: 'CANCELLED', email: 'ada@example.com', customer: 'ada', gateway: null, currency: 'USD', total: '5.00000000', coupon: false, developer: true, created: 4, updated: 30, items: 3 },
  // prettier-ignore
  { label: 'o5', kind: 'ORDER', status: 'REFUNDED', payment_status: 'REFUNDED', email: 'carl@example.com', customer: null, gateway: 'CRYPTO', currency: 'EUR', total: '100', coupon: false, developer: false, created: 4, updated: 70, items: 1 },
  // prettier-ignore
  { label: 'p6', kind: 'PAYMENT', status: 'PENDING', payment_status: 'PENDING', email: 'bob@example.com', customer: 'bob', gateway: 'PAYPAL', currency: 'EUR', total: '0.3', coupon: true, developer: true, created: 6, updated: 10, items: 1 },
  // prettier-ignore
  { label: 'o7', kind: 'ORDER', status: 'PROCESSING', payment_status: 'PROCESSING', email: null, customer: null, gateway: 'STRIPE', currency: 'GBP', total: '42.5', coupon: false, developer: false, created: 7, updated: 20, items: 2 },
];

const base = Date.parse('2026-03-01T12:00:00Z');

interface Seeded {
  /** Order id by label. */
  ids: Record<string, string>;
  customers: Record<string, string>;
  coupon: string;
}
let a: Seeded;
let b: Seeded;

async function seedShop(shopId: string): Promise<Seeded> {
  return t.db.transaction().execute(async (trx) => {
    const inserted = await insertCustomers(trx, shopId, [
      newCustomerRow({ currency: 'EUR' }, { email: 'ada@example.com' }, new Date()),
      newCustomerRow({ currency: 'EUR' }, { email: 'bob@example.com' }, new Date()),
    ]);
    const customers = Object.fromEntries(inserted.map((c) => [c.email.split('@')[0]!, c.id]));
    const coupon = newId('cpn');
    await sql`insert into coupons (id, shop_id, code, type, value) values (${coupon}, ${shopId}, 'spring', 'PERCENTAGE', 10)`.execute(
      trx,
    );
    const ids: Record<string, string> = {};
    for (const s of seeds) {
      const id = newId('ord');
      ids[s.label] = id;
      await insertOrder(trx, shopId, {
        id,
        uniqid: randomUUID(),
        kind: s.kind,
        customer_id: s.customer ? customers[s.customer]! : null,
        customer_email: s.email,
        currency: s.currency,
        status: s.status,
        payment_status: s.payment_status,
        gateway: s.gateway,
        subtotal: s.total,
        total: s.total,
        coupon_id: s.coupon ? coupon : null,
        is_developer_invoice: s.developer,
        developer_title: s.label,
        created_at: new Date(base + s.created * 1000),
        updated_at: new Date(base + s.updated * 1000),
      });
      await insertOrderItems(
        trx,
        shopId,
        Array.from({ length: s.items }, (_, i) => ({
          id: newId('item'),
          order_id: id,
          position: i,
          product_title: `${s.label} line ${i}`,
          product_type: 'SERVICE' as const,
          quantity: i + 1,
          unit_price: '0.1',
          total: new Decimal('0.1').times(i + 1).toFixed(),
        })),
      );
    }
    return { ids, customers, coupon };
  });
}

beforeAll(async () => {
  // Walking every sort and filter takes a few hundred requests.
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', currency: 'EUR', scopes: ['orders.read'] },
    b: { name: 'B', currency: 'EUR' },
  }));
  a = await seedShop(shopA);
  b = await seedShop(shopB);
});
afterAll(() => t.close());

type Path = 'orders' | 'invoices';
const get = (path: Path, query = '', key = keyA) => t.http.get(`/dev/v1/${path}${query}`).set(bearer(key));
type ListBody = { body: { data: { developer_title: string }[] } };
const labels = (res: ListBody) => res.body.data.map((o) => o.developer_title);

/** Every page of a list with `limit` per page: the labels in the order they came. */
async function walk(path: Path, query: string, limit: number, key = keyA): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 20; i++) {
    const sep = query ? '&' : '?';
    const res = await get(
      path,
      `${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      key,
    );
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    out.push(...labels(res));
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

/** What a list must answer: the seeds of its kinds matching `match`, in the sort's order, ties by id. */
function expected(path: Path, sort: string, match: (s: Seed) => boolean = () => true, ids = a.ids): string[] {
  const desc = sort.startsWith('-');
  const field = desc ? sort.slice(1) : sort;
  const key = (s: Seed) =>
    field === 'total' ? new Decimal(s.total) : new Decimal(field === 'created_at' ? s.created : s.updated);
  const rows = seeds.filter((s) => (path === 'invoices' || s.kind === 'ORDER') && match(s));
  rows.sort((x, y) => {
    const byKey = key(x).comparedTo(key(y));
    const byId = ids[x.label]! < ids[y.label]! ? -1 : 1;
    return (desc ? -1 : 1) * (byKey !== 0 ? byKey : byId);
  });
  return rows.map((s) => s.label);
}

async function snapshot() {
  const rows = await sql`select id, status, updated_at::text from orders order by id`.execute(t.db);
  return { rows: rows.rows, counts: await rowCounts(t.db, ['orders', 'order_items', 'events', 'audit_entries']) };
}

test('GET /orders: the shop own orders only (no generic payments), newest first, with their items', async () => {
  const res = await get('orders');
  expect(res.status).toBe(200);
  expect(labels(res)).toEqual(expected('orders', '-created_at'));
  expect(labels(res)).toEqual(['o7', ...(a.ids.o5! > a.ids.o4! ? ['o5', 'o4'] : ['o4', 'o5']), 'o2', 'o1']);
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  const ids = new Set(Object.values(a.ids));
  expect(res.body.data.every((o: { id: string; shop_id: string }) => ids.has(o.id) && o.shop_id === shopA)).toBe(true);
  const o1 = res.body.data.find((o: { developer_title: string }) => o.developer_title === 'o1');
  expect(o1).toMatchObject({
    id: a.ids.o1,
    customer_id: a.customers.ada,
    customer_email: 'ada@example.com',
    status: 'PENDING',
    payment_status: 'PENDING',
    gateway: 'STRIPE',
    currency: 'USD',
    total: 0.3,
    is_developer_invoice: false,
    coupon_id: null,
    created_at: base / 1000 + 1,
    updated_at: base / 1000 + 60,
  });
  expect(o1.checkout_url).toBe(`${t.config.checkoutBaseUrl}/invoice/${o1.uniqid}`);
  expect(
    o1.items.map((i: { product_title: string; quantity: number; total: number }) => [i.product_title, i.total]),
  ).toEqual([
    ['o1 line 0', 0.1],
    ['o1 line 1', 0.2],
  ]);
  const o4 = res.body.data.find((o: { developer_title: string }) => o.developer_title === 'o4');
  expect(o4.items).toHaveLength(3);
});

test('GET /invoices: orders and generic payments alike', async () => {
  const res = await get('invoices');
  expect(res.status).toBe(200);
  expect(labels(res)).toEqual(expected('invoices', '-created_at'));
  expect(labels(res)).toEqual(expect.arrayContaining(['p3', 'p6']));
  expect(res.body.data).toHaveLength(seeds.length);
  const p3 = res.body.data.find((o: { developer_title: string }) => o.developer_title === 'p3');
  expect(p3).toMatchObject({ id: a.ids.p3, customer_id: null, is_developer_invoice: true, total: 5, items: [] });
});

test('amounts are the stored digits: 0.30000000 is 0.3, 12345678901.12345678 is sent exactly', async () => {
  const res = await get('orders', '?filters=currency:EUR&sorts=total');
  expect(labels(res)).toEqual(['o5', 'o2']);
  expect(res.text).toContain('"total":12345678901.12345678,');
  expect(res.text).toContain('"subtotal":12345678901.12345678,');
  const small = await get('orders', '?filters=currency:USD&sorts=total');
  expect(small.text).toMatch(/"total":0\.3,/);
  expect(small.body.data[0].total).toBe(0.3);
});

test('every sort, both directions, walked 2 at a time: each row exactly once, in order, ties by id', async () => {
  for (const path of ['orders', 'invoices'] as const) {
    for (const sort of ['created_at', '-created_at', 'updated_at', '-updated_at', 'total', '-total']) {
      const got = await walk(path, `?sorts=${sort}`, 2);
      expect({ path, sort, got }).toEqual({ path, sort, got: expected(path, sort) });
      expect(new Set(got).size).toBe(got.length);
    }
    // The default is -created_at.
    expect(await walk(path, '', 2)).toEqual(expected(path, '-created_at'));
    expect(await walk(path, '', 1)).toEqual(expected(path, '-created_at'));
  }
});

test('every filter, on both lists, alone and combined, across pages', async () => {
  const cases: [string, (s: Seed) => boolean][] = [
    ['status:COMPLETED', (s) => s.status === 'COMPLETED'],
    ['status:VOIDED', (s) => s.status === 'VOIDED'],
    ['payment_status:PAID', (s) => s.payment_status === 'PAID'],
    ['payment_status:PENDING', (s) => s.payment_status === 'PENDING'],
    ['customer_email:ADA@Example.COM', (s) => s.email === 'ada@example.com'],
    ['customer_email:bob@example.com', (s) => s.email === 'bob@example.com'],
    ['customer_email:nobody@example.com', () => false],
    ['customer_id:ada', () => false],
    ['gateway:STRIPE', (s) => s.gateway === 'STRIPE'],
    ['gateway:PAYPAL', (s) => s.gateway === 'PAYPAL'],
    ['currency:EUR', (s) => s.currency === 'EUR'],
    ['currency:GBP', (s) => s.currency === 'GBP'],
    ['gateway:STRIPE,currency:USD', (s) => s.gateway === 'STRIPE' && s.currency === 'USD'],
    ['currency:USD,status:PENDING', (s) => s.currency === 'USD' && s.status === 'PENDING'],
  ];
  const withIds: [string, (s: Seed) => boolean][] = [
    [`customer_id:${a.customers.ada}`, (s) => s.customer === 'ada'],
    [`customer_id:${a.customers.bob}`, (s) => s.customer === 'bob'],
    [`coupon_id:${a.coupon}`, (s) => s.coupon],
    // Another shop's customer or coupon matches nothing here.
    [`customer_id:${b.customers.ada}`, () => false],
    [`coupon_id:${b.coupon}`, () => false],
  ];
  for (const path of ['orders', 'invoices'] as const) {
    for (const [filters, match] of [...cases, ...withIds]) {
      const want = expected(path, '-created_at', match);
      const got = labels(await get(path, `?filters=${encodeURIComponent(filters)}`));
      expect({ path, filters, got }).toEqual({ path, filters, got: want });
      expect({
        path,
        filters,
        walked: await walk(path, `?filters=${encodeURIComponent(filters)}&sorts=total`, 1),
      }).toEqual({
        path,
        filters,
        walked: expected(path, 'total', match),
      });
    }
  }
  // Sanity: the cases are not all empty.
  expect(labels(await get('orders', `?filters=customer_id:${a.customers.ada}`))).toHaveLength(2);
  expect(labels(await get('invoices', '?filters=status:COMPLETED'))).toHaveLength(2);
});

test('invoices filter on is_developer_invoice; orders do not allow it', async () => {
  expect(labels(await get('invoices', '?filters=is_developer_invoice:true'))).toEqual(
    expected('invoices', '-created_at', (s) => s.developer),
  );
  expect(await walk('invoices', '?filters=is_developer_invoice:false&sorts=-updated_at', 2)).toEqual(
    expected('invoices', '-updated_at', (s) => !s.developer),
  );
  const res = await get('orders', '?filters=is_developer_invoice:true');
  expect(res.status).toBe(422);
  expect(res.body.error.details[0]).toMatchObject({ field: 'query.filters' });
  expect(res.body.error.details[0].message).toMatch(/cannot be filtered/);
});

test('filters and sorts that are not allowed or not valid: 422 with details, nothing changed', async () => {
  const before = await snapshot();
  const cases: [Path, string, string][] = [
    ['orders', '?filters=status:SHIPPED', 'filters'],
    ['orders', '?filters=status:completed', 'filters'],
    ['invoices', '?filters=payment_status:DONE', 'filters'],
    ['orders', '?filters=customer_email:not-an-email', 'filters'],
    ['orders', '?filters=customer_id:a%20b', 'filters'],
    ['orders', '?filters=currency:usd', 'filters'],
    ['orders', '?filters=currency:EURO', 'filters'],
    ['orders', '?filters=gateway:STRIPE%3B%20drop', 'filters'],
    ['invoices', '?filters=coupon_id:x%27y', 'filters'],
    ['invoices', '?filters=is_developer_invoice:yes', 'filters'],
    ['orders', '?filters=kind:PAYMENT', 'filters'],
    ['invoices', '?filters=total:5', 'filters'],
    ['orders', '?filters=shop_id:x', 'filters'],
    ['orders', '?filters=status:PENDING,status:PAID', 'filters'],
    ['orders', '?filters=', 'filters'],
    ['orders', '?sorts=id', 'sorts'],
    ['invoices', '?sorts=-kind', 'sorts'],
    ['orders', '?limit=0', 'limit'],
    ['invoices', '?limit=101', 'limit'],
    ['orders', '?cursor=not-a-cursor', 'cursor'],
  ];
  for (const [path, query, field] of cases) {
    const res = await get(path, query);
    expect({ path, query, status: res.status, code: res.body.error?.code }).toEqual({
      path,
      query,
      status: 422,
      code: 'VALIDATION_ERROR',
    });
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect({ path, query, ok: fields.includes(`query.${field}`) }).toEqual({ path, query, ok: true });
  }
  const status = await get('orders', '?filters=status:SHIPPED');
  expect(status.body.error.details[0].message).toMatch(/status must be one of: PENDING, PROCESSING/);
  expect(await snapshot()).toEqual(before);
});

test('a cursor is valid only for its list, filters, sorts and shop: otherwise 422, nothing changed', async () => {
  const before = await snapshot();
  const first = await get('orders', '?filters=currency:USD&limit=1');
  expect(first.body.pagination.has_more).toBe(true);
  const cursor = encodeURIComponent(first.body.pagination.next_cursor as string);
  // The same filters in another order are the same query.
  const same = await get('invoices', '?filters=gateway:STRIPE,currency:USD&limit=1');
  expect(same.body.pagination.has_more).toBe(true);
  const sameCursor = encodeURIComponent(same.body.pagination.next_cursor as string);
  const next = await get('invoices', `?filters=currency:USD,gateway:STRIPE&limit=1&cursor=${sameCursor}`);
  expect(next.status).toBe(200);
  expect([...labels(same), ...labels(next)]).toEqual(
    expected('invoices', '-created_at', (s) => s.gateway === 'STRIPE' && s.currency === 'USD'),
  );
  expect((await get('orders', `?filters=currency:USD&limit=1&cursor=${cursor}`)).status).toBe(200);
  for (const [path, query, key] of [
    ['orders', `?filters=currency:EUR&cursor=${cursor}`, keyA],
    ['orders', `?cursor=${cursor}`, keyA],
    ['orders', `?filters=currency:USD,status:PENDING&cursor=${cursor}`, keyA],
    ['orders', `?filters=currency:USD&sorts=created_at&cursor=${cursor}`, keyA],
    ['orders', `?filters=currency:USD&sorts=-total&cursor=${cursor}`, keyA],
    ['invoices', `?filters=currency:USD&cursor=${cursor}`, keyA],
    ['orders', `?filters=currency:USD&cursor=${cursor}`, keyB],
  ] as [Path, string, string][]) {
    const res = await get(path, query, key);
    expect({ path, query, status: res.status, code: res.body.error?.code }).toEqual({
      path,
      query,
      status: 422,
      code: 'VALIDATION_ERROR',
    });
    expect(res.body.error.details[0].field).toBe('query.cursor');
  }
  expect(await snapshot()).toEqual(before);
});

test("another shop's invoices never appear: B lists its own copies, in the same order, under its own ids", async () => {
  for (const path of ['orders', 'invoices'] as const) {
    const own = new Set(Object.values(b.ids));
    const res = await get(path, '?sorts=-total&limit=100', keyB);
    expect(labels(res)).toEqual(expected(path, '-total', () => true, b.ids));
    expect(res.body.data.every((o: { id: string; shop_id: string }) => own.has(o.id) && o.shop_id === shopB)).toBe(
      true,
    );
    expect(await walk(path, '?sorts=updated_at', 2, keyB)).toEqual(expected(path, 'updated_at', () => true, b.ids));
    // A's filters on B's values find nothing in A.
    expect(labels(await get(path, `?filters=customer_id:${b.customers.bob}`))).toEqual([]);
  }
});

test('a key without orders.read: 403', async () => {
  const { key } = await t.createKey(shopA, ['products.read']);
  for (const path of ['orders', 'invoices'] as const) {
    const res = await get(path, '', key);
    expect(res.status).toBe(403);
  }
});
