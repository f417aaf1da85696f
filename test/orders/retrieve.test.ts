// GET /orders/{id} and GET /invoices/{id} (beyond the specification, issue 36): one invoice is exactly what its list
// shows for that id, license-key rule included; an unknown id, another shop's, or another mode's is 404
// INVOICE_NOT_FOUND (never 403, never a success); a credential without orders.read is 403 even for its own ids.
// Three tenants hold the same invoices, made through the API: live shop A, its test twin (a test key), and live
// shop B, so only the shop and mode boundary can tell their answers apart.
import { snapshotTables } from '../helpers/db-snapshot';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopForMode } from '../../src/ops/admin';

let t: TestApp;

interface Tenant {
  label: string;
  shopId: string;
  /** A full-access key of the tenant's own mode. */
  key: string;
  /** A completed order of a license product (its keys issued), a pending order, and a generic payment. */
  licensed: string;
  pending: string;
  payment: string;
}
let live: Tenant;
let test_: Tenant;
let other: Tenant;

type Path = 'orders' | 'invoices';
const get = (path: string, key: string) => t.http.get(`/dev/v1/${path}`).set(bearer(key));

async function call(method: 'post', path: string, key: string, body: object) {
  const res = await t.http[method](`/dev/v1/${path}`).set(bearer(key)).send(body);
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body.data as { id: string; uniqid: string };
}

/** The same invoices in `shopId`, made through the API with a `*` key of its mode. */
async function tenant(label: string, shopId: string): Promise<Tenant> {
  const { key } = await t.createKey(shopId, ['*'], `retrieve ${label}`);
  const [service, license] = (
    await t.seed(shopId, {
      products: [
        { title: 'Retrieve Service', slug: 'retrieve-service', type: 'SERVICE', price: '25.00' },
        {
          title: 'Retrieve License',
          slug: 'retrieve-license',
          type: 'SERVICE',
          price: '30.00',
          license_activation_limit: 2,
        },
      ],
    })
  ).products;
  const licensed = await call('post', 'orders', key, {
    email: 'ada@example.com',
    items: [{ product_id: license, quantity: 2 }],
  });
  await call('post', `orders/${licensed.id}/complete`, key, { suppress_emails: true });
  const pending = await call('post', 'orders', key, {
    email: 'bob@example.com',
    items: [{ product_id: service, quantity: 1 }],
  });
  const payment = await call('post', 'payments', key, { title: 'Retrieve payment', value: 10.5, currency: 'USD' });
  // A payment is answered by its uniqid; the invoice list names it by its id.
  const row = await t.db.selectFrom('orders').select('id').where('uniqid', '=', payment.uniqid).executeTakeFirst();
  return { label, shopId, key, licensed: licensed.id, pending: pending.id, payment: row!.id };
}

beforeAll(async () => {
  t = await startTestApp();
  const a = await t.createShop({ name: 'Retrieve A' });
  live = await tenant('live A', a);
  test_ = await tenant('test twin of A', (await shopForMode(t.db, a, 'test')).id);
  other = await tenant('live B', await t.createShop({ name: 'Retrieve B' }));
});
afterAll(() => t?.close());

/** Every item of a list (one page of 100: each tenant holds three invoices). */
async function listed(path: Path, key: string): Promise<{ id: string }[]> {
  const res = await get(`${path}?limit=100`, key);
  expect(res.status).toBe(200);
  expect(res.body.pagination.has_more).toBe(false);
  return res.body.data;
}

describe.each(['orders', 'invoices'] as const)('GET /%s/{id}', (path) => {
  test.each([
    ['a full-access key', () => live.key],
    ['a test key, in test mode', () => test_.key],
    ['an orders.read key (no license keys)', async () => (await t.createKey(live.shopId, ['orders.read'])).key],
  ])('with %s: exactly what the list shows for that id', async (_name, keyOf) => {
    const key = await keyOf();
    const list = await listed(path, key);
    // Not vacuous: orders lists the two orders, invoices the payment as well.
    expect(list).toHaveLength(path === 'orders' ? 2 : 3);
    for (const item of list) {
      const res = await get(`${path}/${item.id}`, key);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual(item);
    }
  });

  test('the license rule is the list’s: keys for a credential that reads licenses, none for orders.read alone', async () => {
    const full = await get(`${path}/${live.licensed}`, live.key);
    expect(full.body.data.license_keys).toHaveLength(2);
    expect(full.body.data.status).toBe('COMPLETED');
    const { key } = await t.createKey(live.shopId, ['orders.read']);
    const reader = await get(`${path}/${live.licensed}`, key);
    expect(reader.status).toBe(200);
    expect(reader.body.data).not.toHaveProperty('license_keys');
    expect(reader.body.data.items[0]).not.toHaveProperty('license_keys');
    expect(reader.body.data.id).toBe(live.licensed);
  });
});

test('a generic payment is an invoice, not an order', async () => {
  const invoice = await get(`invoices/${live.payment}`, live.key);
  expect(invoice.status).toBe(200);
  expect(invoice.body.data).toMatchObject({ id: live.payment, total: 10.5, items: [] });
  const order = await get(`orders/${live.payment}`, live.key);
  expect([order.status, order.body.error.code]).toEqual([404, 'INVOICE_NOT_FOUND']);
});

describe('another shop’s, another mode’s or no invoice: 404 INVOICE_NOT_FOUND, nothing changed', () => {
  let before: Record<string, string>;
  beforeAll(async () => {
    before = await snapshotTables(t.db, { skipColumns: { credentials: ['last_used_at'] } });
  });

  const cases: [string, () => Tenant, () => Tenant][] = [
    ['shop B with shop A’s ids', () => other, () => live],
    ['shop A with shop B’s ids', () => live, () => other],
    ['a live key with test-mode ids', () => live, () => test_],
    ['a test key with live ids', () => test_, () => live],
  ];
  test.each(cases)('%s', async (_name, callerOf, ownerOf) => {
    const [caller, owner] = [callerOf(), ownerOf()];
    for (const [path, id] of [
      ['orders', owner.licensed],
      ['orders', owner.pending],
      ['invoices', owner.licensed],
      ['invoices', owner.pending],
      ['invoices', owner.payment],
    ] as const) {
      const res = await get(`${path}/${id}`, caller.key);
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 404,
        body: {
          error: {
            code: 'INVOICE_NOT_FOUND',
            message: 'Order not found.',
            doc_url: expect.stringMatching(/\/docs\/errors#INVOICE_NOT_FOUND$/),
          },
        },
      });
      // The owner reads it: the 404 is about the boundary, not the id.
      expect((await get(`${path}/${id}`, owner.key)).status).toBe(200);
    }
  });

  test('an id that exists nowhere: the same answer', async () => {
    for (const path of ['orders', 'invoices']) {
      const res = await get(`${path}/ord_00000000000000000000000000000000`, live.key);
      expect([res.status, res.body.error.code]).toEqual([404, 'INVOICE_NOT_FOUND']);
    }
  });

  test('no table changed', async () => {
    expect(await snapshotTables(t.db, { skipColumns: { credentials: ['last_used_at'] } })).toEqual(before);
  });
});

test('a key without orders.read is 403 even for its own shop’s ids; orders.write does not imply it', async () => {
  for (const scopes of [['licenses.read', 'products.read'], ['orders.write']]) {
    const { key } = await t.createKey(live.shopId, scopes);
    for (const path of [`orders/${live.licensed}`, `invoices/${live.payment}`, 'orders/ord_nosuchorder']) {
      const res = await get(path, key);
      expect({ scopes, path, status: res.status, code: res.body.error.code }).toEqual({
        scopes,
        path,
        status: 403,
        code: 'FORBIDDEN',
      });
      expect(res.headers['www-authenticate']).toContain('scope="orders.read"');
    }
  }
});
