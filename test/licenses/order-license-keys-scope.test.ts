// Issue 24, point 2, the last side door: an order's `license_keys` (and its items') are full license keys, so they are
// shown only to a credential that may read licenses (`licenses.read`, or `*`). `orders.read` alone reads orders and
// invoices without them, `orders.write` alone completes, fulfils and (wallet-paid) creates orders without them,
// while the licenses are issued all the same and stay named by id in `delivered_items.license_ids`. Without this a
// key refused by GET /licenses read every key through GET /orders.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let shop: string;
let product: string;
/** The API key of each set of scopes, by a short name. */
const keys: Record<string, string> = {};
const scopeSets = {
  full: ['*'],
  ordersRead: ['orders.read'],
  ordersReadLicenses: ['orders.read', 'licenses.read'],
  ordersWrite: ['orders.write'],
  ordersWriteLicenses: ['orders.write', 'licenses.read'],
} as const;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000' } });
  shop = await t.createShop({ name: 'License key scopes' });
  for (const [name, scopes] of Object.entries(scopeSets)) keys[name] = (await t.createKey(shop, [...scopes])).key;
  [product] = (
    await t.seed(shop, {
      products: [{ title: 'Pro', type: 'SERVICE', price: '10.00', license_activation_limit: 2 }],
    })
  ).products as [string];
});
afterAll(() => t.close());

type Order = Record<string, any> & { id: string; items: Record<string, any>[] };

const newOrder = async (email = 'buyer@example.com'): Promise<Order> => {
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(keys.full!))
    .send({ email, items: [{ product_id: product, quantity: 2 }] });
  expect(res.status).toBe(201);
  return res.body.data;
};

const licensesOf = async (orderId: string) =>
  (
    await t.db
      .selectFrom('licenses')
      .select('id')
      .where('order_id', '=', orderId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((l) => l.id);

/** The order as a list shows it to this key (one page is enough: the test shop has few orders). */
async function listed(path: '/dev/v1/orders' | '/dev/v1/invoices', key: string, id: string): Promise<Order> {
  const res = await t.http.get(`${path}?limit=100`).set(bearer(key));
  expect(res.status).toBe(200);
  const found = (res.body.data as Order[]).find((o) => o.id === id);
  expect(found).toBeDefined();
  return found!;
}

/** No key at all: neither on the order nor on any item, while the licenses are still named by id. */
function expectNoKeys(order: Order, licenseIds: string[]) {
  expect(order).not.toHaveProperty('license_keys');
  for (const item of order.items) expect(item).not.toHaveProperty('license_keys');
  expect(order.items[0]!.delivered_items.license_ids).toEqual(licenseIds);
  expect(JSON.stringify(order)).not.toMatch(/"key"/);
}

/** The keys, on the order and on its item, those of the licenses issued. */
function expectKeys(order: Order, licenseIds: string[]) {
  expect(order.license_keys.map((k: { id: string }) => k.id)).toEqual(licenseIds);
  for (const ref of order.license_keys) expect(ref.key).toEqual(expect.any(String));
  expect(order.items[0]!.license_keys).toEqual(order.license_keys);
}

describe('an order completed by a full-access key', () => {
  let completed: Order;
  let licenseIds: string[];

  beforeAll(async () => {
    const order = await newOrder();
    const res = await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(keys.full!)).send({});
    expect(res.status).toBe(200);
    completed = res.body.data;
    licenseIds = await licensesOf(order.id);
    expect(licenseIds).toHaveLength(2);
  });

  test('`*` sees its keys in the completion and in GET /orders and GET /invoices', async () => {
    expectKeys(completed, licenseIds);
    for (const path of ['/dev/v1/orders', '/dev/v1/invoices'] as const)
      expect((await listed(path, keys.full!, completed.id)).license_keys).toEqual(completed.license_keys);
  });

  test('orders.read alone: GET /orders and GET /invoices show the order without keys; GET /licenses is refused', async () => {
    for (const path of ['/dev/v1/orders', '/dev/v1/invoices'] as const) {
      const order = await listed(path, keys.ordersRead!, completed.id);
      expectNoKeys(order, licenseIds);
      // The rest of the order is as a full-access key sees it.
      const { license_keys: _keys, ...rest } = await listed(path, keys.full!, completed.id);
      expect(order).toEqual({ ...rest, items: rest.items.map(({ license_keys: _k, ...item }: any) => item) });
    }
    const licenses = await t.http.get('/dev/v1/licenses').set(bearer(keys.ordersRead!));
    expect(licenses.status).toBe(403);
  });

  test('orders.read with licenses.read sees the keys on both lists', async () => {
    for (const path of ['/dev/v1/orders', '/dev/v1/invoices'] as const)
      expect((await listed(path, keys.ordersReadLicenses!, completed.id)).license_keys).toEqual(completed.license_keys);
  });

  test('every order of a page is shown alike: none has keys for orders.read, each its own for licenses.read', async () => {
    const second = await newOrder('second@example.com');
    const done = await t.http.post(`/dev/v1/orders/${second.id}/complete`).set(bearer(keys.full!)).send({});
    expect(done.status).toBe(200);
    const page = async (key: string) =>
      (await t.http.get('/dev/v1/orders?limit=100').set(bearer(key))).body.data as Order[];
    const withKeys = (await page(keys.ordersReadLicenses!)).filter((o) => o.license_keys !== undefined);
    expect(withKeys.map((o) => o.id)).toEqual(expect.arrayContaining([completed.id, second.id]));
    for (const o of await page(keys.ordersRead!)) {
      expect(o).not.toHaveProperty('license_keys');
      for (const item of o.items) expect(item).not.toHaveProperty('license_keys');
    }
  });
});

describe('writes that return the order', () => {
  test('POST /orders/{id}/complete with orders.write alone: no keys returned, the licenses issued all the same', async () => {
    const order = await newOrder();
    const res = await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(keys.ordersWrite!)).send({});
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('COMPLETED');
    const licenseIds = await licensesOf(order.id);
    expect(licenseIds).toHaveLength(2);
    expectNoKeys(res.body.data, licenseIds);
    // They exist, for a reader that may see them.
    expectKeys(await listed('/dev/v1/orders', keys.full!, order.id), licenseIds);
  });

  test('POST /orders/{id}/complete with orders.write and licenses.read returns the keys', async () => {
    const order = await newOrder();
    const res = await t.http
      .post(`/dev/v1/orders/${order.id}/complete`)
      .set(bearer(keys.ordersWriteLicenses!))
      .send({});
    expect(res.status).toBe(200);
    expectKeys(res.body.data, await licensesOf(order.id));
  });

  test('POST /orders/{id}/fulfill: keys only with licenses.read', async () => {
    const hidden = await newOrder();
    const res = await t.http.post(`/dev/v1/orders/${hidden.id}/fulfill`).set(bearer(keys.ordersWrite!)).send({});
    expect(res.status).toBe(200);
    expectNoKeys(res.body.data, await licensesOf(hidden.id));

    const shown = await newOrder();
    const ok = await t.http.post(`/dev/v1/orders/${shown.id}/fulfill`).set(bearer(keys.ordersWriteLicenses!)).send({});
    expect(ok.status).toBe(200);
    expectKeys(ok.body.data, await licensesOf(shown.id));
  });

  test('an Idempotency-Key replay answers what the first response showed, no more', async () => {
    const order = await newOrder();
    const send = () =>
      t.http
        .post(`/dev/v1/orders/${order.id}/complete`)
        .set(bearer(keys.ordersWrite!))
        .set('Idempotency-Key', `complete-${order.id}`)
        .send({});
    const first = await send();
    const replay = await send();
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.body).toEqual(first.body);
    expectNoKeys(replay.body.data, await licensesOf(order.id));
  });

  test('POST /orders paid entirely from the wallet completes at once: keys only with licenses.read', async () => {
    const create = async (key: string, email: string) => {
      await t.seed(shop, { customers: [{ email, wallet_balance: '20.00' }] });
      const res = await t.http
        .post('/dev/v1/orders')
        .set(bearer(key))
        .send({ email, use_wallet_balance: true, items: [{ product_id: product, quantity: 2 }] });
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe('COMPLETED');
      return res.body.data as Order;
    };
    const hidden = await create(keys.ordersWrite!, 'wallet1@example.com');
    expectNoKeys(hidden, await licensesOf(hidden.id));
    const shown = await create(keys.ordersWriteLicenses!, 'wallet2@example.com');
    expectKeys(shown, await licensesOf(shown.id));
  });
});
