// Licenses issued by orders (issue 11, item 1): completing an order for a license product (a product with
// `license_activation_limit`, shown as its `license` terms) issues one key per unit, shown in the order's and the
// item's `license_keys` (and in GET /orders), mailed to the buyer, `license:created` each; the keys validate, expire
// `license_duration_days` after completion, belong to the buyer; a full refund revokes them (`license:revoked`), a
// partial one or a refused one does not. Orders without license products carry no `license_keys` at all.
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let clock: ManualClock;
let shop: string;
let key: string;
let otherShop: string;
let otherKey: string;
let yearly: string;
let lifetime: string;
let download: string;
let plain: string;

const NOW = Date.parse('2026-11-22T00:00:00Z');
const DAY = 86_400;
const generatedKey = /^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){4}$/;

beforeAll(async () => {
  clock = new ManualClock(NOW);
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
  shop = await t.createShop({ name: 'License orders' });
  key = (await t.createKey(shop, ['*'])).key;
  otherShop = await t.createShop({ name: 'Other' });
  otherKey = (await t.createKey(otherShop, ['*'])).key;
  [yearly, lifetime, download, plain] = (
    await t.seed(shop, {
      products: [
        {
          title: 'Pro Yearly',
          type: 'SERVICE',
          price: '49.00',
          license_activation_limit: 2,
          license_duration_days: 365,
          description: 'Yearly license',
        },
        { title: 'Pro Lifetime', type: 'SERVICE', price: '99.00', license_activation_limit: 1 },
        {
          title: 'Pro Download',
          type: 'FILE',
          price: '20.00',
          license_activation_limit: 1,
          files: [{ filename: 'setup.txt', content: 'installer' }],
        },
        { title: 'Consulting', type: 'SERVICE', price: '10.00' },
      ],
    })
  ).products as [string, string, string, string];
});
afterAll(() => t.close());

const createOrder = (items: { product_id: string; quantity: number }[], email = 'buyer@example.com') =>
  t.http.post('/dev/v1/orders').set(bearer(key)).send({ email, items });
const complete = (id: string) => t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(key)).send({});
const refund = (id: string, body: object = {}) =>
  t.http.post(`/dev/v1/orders/${id}/refund`).set(bearer(key)).send(body);
const validate = (body: object, k = key) => t.http.post('/dev/v1/licenses/validate').set(bearer(k)).send(body);

async function completedOrder(items: { product_id: string; quantity: number }[], email?: string) {
  const created = await createOrder(items, email);
  expect(created.status).toBe(201);
  expect(created.body.data.license_keys).toBeUndefined();
  const done = await complete(created.body.data.id);
  expect(done.status).toBe(200);
  return done.body.data;
}

const eventsOf = async (type: string) =>
  (
    await t.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', type)
      .where('shop_id', '=', shop)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((e) => JSON.parse(e.data) as Record<string, any>);

const licensesOfOrder = (orderId: string) =>
  t.db.selectFrom('licenses').selectAll().where('order_id', '=', orderId).orderBy('created_at').orderBy('id').execute();

test('a license product shows its terms as `license`; other products have no such key', async () => {
  const res = await t.http.get('/dev/v1/products?limit=100').set(bearer(key));
  const byId = new Map(res.body.data.map((p: { id: string }) => [p.id, p]));
  expect((byId.get(yearly) as any).license).toEqual({ activation_limit: 2, duration_days: 365 });
  expect((byId.get(lifetime) as any).license).toEqual({ activation_limit: 1, duration_days: null });
  expect(byId.get(plain)).not.toHaveProperty('license');
  // A copy is a license product too.
  const copy = await t.http.post(`/dev/v1/products/${yearly}/duplicate`).set(bearer(key));
  expect(copy.body.data.license).toEqual({ activation_limit: 2, duration_days: 365 });
});

test('completing issues one key per unit, on the order and on its item, license:created each, mailed to the buyer', async () => {
  const createdBefore = (await eventsOf('license:created')).length;
  const mailBefore = (await t.db.selectFrom('outbound_emails').select('id').execute()).map((m) => m.id);
  clock.set(NOW + 1000);
  const order = await completedOrder(
    [
      { product_id: yearly, quantity: 3 },
      { product_id: plain, quantity: 1 },
    ],
    'Ada@Example.com',
  );
  expect(order.license_keys).toHaveLength(3);
  const [licensed, service] = order.items;
  expect(licensed.license_keys).toEqual(order.license_keys);
  expect(service).not.toHaveProperty('license_keys');
  expect(service.delivery_status).toBe('AWAITING_FULFILLMENT');
  // A SERVICE license item is delivered by its keys.
  expect(licensed.delivery_status).toBe('DELIVERED');
  expect(licensed.delivered_items.license_ids).toEqual(order.license_keys.map((k: { id: string }) => k.id));
  const expires = Math.floor((NOW + 1000) / 1000) + 365 * DAY;
  for (const ref of order.license_keys) {
    expect(ref).toEqual({
      id: expect.stringMatching(/^lic_/),
      key: expect.stringMatching(generatedKey),
      product_id: yearly,
      status: 'ACTIVE',
      expires_at: expires,
    });
  }
  expect(new Set(order.license_keys.map((k: { key: string }) => k.key)).size).toBe(3);

  // The licenses: the buyer's, for 2 devices, issued for this order and item.
  const rows = await licensesOfOrder(order.id);
  expect(rows).toHaveLength(3);
  for (const row of rows) {
    expect(row).toMatchObject({
      product_id: yearly,
      order_id: order.id,
      order_item_id: licensed.id,
      customer_id: order.customer_id,
      customer_email: 'ada@example.com',
      status: 'ACTIVE',
      activation_limit: 2,
    });
  }
  const created = (await eventsOf('license:created')).slice(createdBefore);
  expect(created.map((e) => e.id).sort()).toEqual(order.license_keys.map((k: { id: string }) => k.id).sort());
  expect(created[0]).toMatchObject({ order_id: order.id, activation_limit: 2, devices: [], status: 'ACTIVE' });
  // order:completed does not carry them (no event holds a key); the item's delivered_items names the licenses.
  const completed = (await eventsOf('order:completed')).find((e) => e.id === order.id)!;
  expect(completed).not.toHaveProperty('license_keys');
  expect(completed.items[0]).not.toHaveProperty('license_keys');
  expect(completed.items[0].delivered_items.license_ids).toEqual(licensed.delivered_items.license_ids);
  for (const ref of order.license_keys) expect(JSON.stringify(completed)).not.toContain(ref.key);

  // The delivery mail holds the keys.
  const mail = await t.db
    .selectFrom('outbound_emails')
    .select(['template', 'text', 'to_address'])
    .where('id', 'not in', mailBefore.length ? mailBefore : ['-'])
    .where('template', '=', 'delivery')
    .execute();
  expect(mail).toHaveLength(1);
  for (const ref of order.license_keys) expect(mail[0]!.text).toContain(ref.key);

  // GET /orders shows the same keys; GET /licenses lists them for the buyer.
  const listed = await t.http.get('/dev/v1/orders?limit=100').set(bearer(key));
  const inList = listed.body.data.find((o: { id: string }) => o.id === order.id);
  expect(inList.license_keys).toEqual(order.license_keys);
  expect(inList.items[0].license_keys).toEqual(order.license_keys);
  const byCustomer = await t.http.get(`/dev/v1/licenses?customer_id=${order.customer_id}&limit=100`).set(bearer(key));
  expect(byCustomer.body.data.map((l: { id: string }) => l.id).sort()).toEqual(
    order.license_keys.map((k: { id: string }) => k.id).sort(),
  );

  // An issued key validates, for its product, on up to 2 devices.
  const first = order.license_keys[0].key;
  expect((await validate({ key: first, product_id: yearly, hwid: 'PC-1' })).status).toBe(200);
  expect((await validate({ key: first, hwid: 'PC-2' })).status).toBe(200);
  expect((await validate({ key: first, hwid: 'PC-3' })).body.error.code).toBe('LICENSE_HWID_MISMATCH');
  expect((await validate({ key: first, product_id: lifetime })).body.error.code).toBe('LICENSE_INVALID');
  // Another shop knows nothing of it.
  expect((await validate({ key: first }, otherKey)).body.error.code).toBe('LICENSE_INVALID');
  // It expires after the license's duration.
  clock.set(NOW + 1000 + 365 * DAY * 1000);
  expect((await validate({ key: first, hwid: 'PC-1' })).body.error.code).toBe('LICENSE_EXPIRED');
  clock.set(NOW);
});

test('a lifetime license never expires; a FILE license product delivers its files and a key', async () => {
  const order = await completedOrder([
    { product_id: lifetime, quantity: 1 },
    { product_id: download, quantity: 2 },
  ]);
  const [life, file] = order.items;
  expect(life.license_keys).toHaveLength(1);
  expect(life.license_keys[0].expires_at).toBeNull();
  expect(file.license_keys).toHaveLength(2);
  expect(file.delivery_status).toBe('DELIVERED');
  expect(file.delivered_items.files).toEqual([expect.objectContaining({ filename: 'setup.txt' })]);
  expect(file.delivered_items.license_ids).toHaveLength(2);
  expect(order.license_keys).toHaveLength(3);
});

test('an order without license products has no license_keys key, on the order or its items', async () => {
  const order = await completedOrder([{ product_id: plain, quantity: 2 }]);
  expect(order).not.toHaveProperty('license_keys');
  expect(order.items[0]).not.toHaveProperty('license_keys');
  expect(await licensesOfOrder(order.id)).toEqual([]);
  const listed = await t.http.get('/dev/v1/orders?limit=100').set(bearer(key));
  expect(listed.body.data.find((o: { id: string }) => o.id === order.id)).not.toHaveProperty('license_keys');
});

test('a partial refund leaves the keys; the full refund revokes them (license:revoked each); they no longer validate', async () => {
  const order = await completedOrder([{ product_id: lifetime, quantity: 2 }]);
  const keys = order.license_keys.map((k: { key: string }) => k.key) as string[];
  const revokedBefore = (await eventsOf('license:revoked')).length;

  const partial = await refund(order.id, { amount: '50.00' });
  expect(partial.status).toBe(200);
  expect((await licensesOfOrder(order.id)).map((l) => l.status)).toEqual(['ACTIVE', 'ACTIVE']);
  expect((await eventsOf('license:revoked')).length).toBe(revokedBefore);
  expect((await validate({ key: keys[0]! })).status).toBe(200);

  // A refused refund (over what remains) writes nothing: the keys stay.
  const over = await refund(order.id, { amount: '1000.00' });
  expect([over.status, over.body.error.code]).toEqual([400, 'REFUND_EXCEEDS_REMAINING']);
  expect((await licensesOfOrder(order.id)).map((l) => l.status)).toEqual(['ACTIVE', 'ACTIVE']);

  const rest = await refund(order.id);
  expect(rest.status).toBe(200);
  expect((await licensesOfOrder(order.id)).map((l) => l.status)).toEqual(['REVOKED', 'REVOKED']);
  const revoked = (await eventsOf('license:revoked')).slice(revokedBefore);
  expect(revoked.map((e) => e.key_hint).sort()).toEqual(keys.map((k) => k.slice(-5)).sort());
  expect(revoked.some((e) => 'key' in e)).toBe(false);
  expect(revoked.every((e) => e.status === 'REVOKED' && e.order_id === order.id)).toBe(true);
  for (const k of keys) expect((await validate({ key: k })).body.error.code).toBe('LICENSE_INVALID');
  // The order list shows them REVOKED.
  const listed = await t.http.get('/dev/v1/orders?limit=100').set(bearer(key));
  const inList = listed.body.data.find((o: { id: string }) => o.id === order.id);
  expect(inList.license_keys.map((k: { status: string }) => k.status)).toEqual(['REVOKED', 'REVOKED']);
});

test('a full refund in one go revokes; a license re-activated by hand stays so on a later refund attempt', async () => {
  const order = await completedOrder([{ product_id: lifetime, quantity: 1 }]);
  expect((await refund(order.id)).status).toBe(200);
  const [row] = await licensesOfOrder(order.id);
  expect(row!.status).toBe('REVOKED');
  const back = await t.http.patch(`/dev/v1/licenses/${row!.id}`).set(bearer(key)).send({ status: 'ACTIVE' });
  expect(back.body.data.status).toBe('ACTIVE');
  const again = await refund(order.id);
  expect(again.status).toBe(400);
  expect((await licensesOfOrder(order.id))[0]!.status).toBe('ACTIVE');
});

test('a completion refused (not pending) issues nothing more', async () => {
  const order = await completedOrder([{ product_id: lifetime, quantity: 1 }]);
  const before = await licensesOfOrder(order.id);
  const createdBefore = (await eventsOf('license:created')).length;
  const again = await complete(order.id);
  expect([again.status, again.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
  expect(await licensesOfOrder(order.id)).toEqual(before);
  expect((await eventsOf('license:created')).length).toBe(createdBefore);
});
