// The authentication and scope matrix: 401 for anything but a live credential, 403 for a suspended shop or a
// missing scope, revocation effective on the very next request, and no credential ever in a log line.
import { createApiKey, revokeApiKey, setShopStatus } from '../../src/ops/admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  shopId = await t.createShop({ name: 'Auth Shop', plan: 'pro' });
});
afterAll(() => t.close());

function expectError(
  res: { status: number; body: any; headers: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.doc_url).toBe(`http://api.test/docs/errors#${code}`);
  expect(typeof res.headers['x-request-id']).toBe('string');
}

describe('401 UNAUTHORIZED', () => {
  test('no Authorization header', async () => {
    expectError(await t.http.get('/dev/v1/me'), 401, 'UNAUTHORIZED');
  });
  test('wrong scheme', async () => {
    const { key } = await t.createKey(shopId, ['*']);
    expectError(await t.http.get('/dev/v1/me').set('Authorization', `Basic ${key}`), 401, 'UNAUTHORIZED');
  });
  test('malformed credential', async () => {
    expectError(await t.http.get('/dev/v1/me').set('Authorization', 'Bearer not-a-key'), 401, 'UNAUTHORIZED');
    expectError(await t.http.get('/dev/v1/me').set('Authorization', 'Bearer '), 401, 'UNAUTHORIZED');
  });
  test('well-formed but unknown key', async () => {
    const unknown = `mdk_${'A'.repeat(43)}`;
    expectError(await t.http.get('/dev/v1/me').set(bearer(unknown)), 401, 'UNAUTHORIZED');
  });
  test('a revoked key fails on the very next request', async () => {
    const { id, key } = await t.createKey(shopId, ['*']);
    expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
    await revokeApiKey(t.db, id);
    expectError(await t.http.get('/dev/v1/me').set(bearer(key)), 401, 'UNAUTHORIZED');
  });
});

describe('403 FORBIDDEN', () => {
  test('a suspended shop', async () => {
    const suspended = await t.createShop({ name: 'Suspended' });
    const { key } = await t.createKey(suspended, ['*']);
    await setShopStatus(t.db, suspended, 'suspended');
    const res = await t.http.get('/dev/v1/me').set(bearer(key));
    expectError(res, 403, 'FORBIDDEN');
    expect(res.body.error.message).toMatch(/suspended/);
    await setShopStatus(t.db, suspended, 'active');
    expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
  });
  test('a missing scope, named in the message', async () => {
    const { key } = await t.createKey(shopId, ['orders.read']);
    const res = await t.http.get('/dev/v1/products').set(bearer(key));
    expectError(res, 403, 'FORBIDDEN');
    expect(res.body.error.message).toContain('products.read');
  });
  test('no scope implies another: customers.read does not read products, products.read does not write', async () => {
    const { key: customers } = await t.createKey(shopId, ['customers.read', 'customers.write']);
    expectError(await t.http.get('/dev/v1/products').set(bearer(customers)), 403, 'FORBIDDEN');
    const { key: reader } = await t.createKey(shopId, ['products.read']);
    const res = await t.http.post('/dev/v1/products/prod_x/duplicate').set(bearer(reader));
    expectError(res, 403, 'FORBIDDEN');
    expect(res.body.error.message).toContain('products.write');
  });
  test('the scope check comes before validation: no schema detail leaks', async () => {
    const { key } = await t.createKey(shopId, ['orders.read']);
    expectError(await t.http.get('/dev/v1/products?limit=0').set(bearer(key)), 403, 'FORBIDDEN');
  });
});

describe('granted', () => {
  test('the exact scope', async () => {
    const { key } = await t.createKey(shopId, ['products.read']);
    expect((await t.http.get('/dev/v1/products').set(bearer(key))).status).toBe(200);
  });
  test('* is full access', async () => {
    const { key } = await t.createKey(shopId, ['*']);
    expect((await t.http.get('/dev/v1/products').set(bearer(key))).status).toBe(200);
  });
  test('any valid credential reads /me and /me/capabilities', async () => {
    const { key, id } = await t.createKey(shopId, ['orders.read'], 'Backend');
    const me = await t.http.get('/dev/v1/me').set(bearer(key));
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({
      id: shopId,
      name: 'Auth Shop',
      currency: 'USD',
      livemode: true,
      live_account_id: null,
      created_at: expect.any(Number),
    });
    const caps = await t.http.get('/dev/v1/me/capabilities').set(bearer(key));
    expect(caps.status).toBe(200);
    expect(caps.body.data).toMatchObject({
      scopes: ['orders.read'],
      full_access: false,
      readable_resources: ['orders'],
      writable_resources: [],
      enabledPaymentMethods: [], // a new live shop offers no SANDBOX: only test mode does (src/domain/payments/gateways.ts)
      features: { nativeCryptoCheckout: true },
      credential: { id, kind: 'api_key', name: 'Backend', client: null },
      plan: 'pro',
      livemode: true,
    });
    // A test key acts in the shop's test twin, which has the SANDBOX gateway.
    const testKey = await createApiKey(t.db, { shopId, scopes: ['orders.read'], mode: 'test' });
    const testMe = await t.http.get('/dev/v1/me').set(bearer(testKey.key));
    expect(testMe.body.data).toMatchObject({ id: testKey.shop_id, livemode: false, live_account_id: shopId });
    const testCaps = await t.http.get('/dev/v1/me/capabilities').set(bearer(testKey.key));
    expect(testCaps.body.data).toMatchObject({ enabledPaymentMethods: ['SANDBOX'], livemode: false });
  });
  test('a full-access key can read and write every resource group', async () => {
    const { key } = await t.createKey(shopId, ['*']);
    const caps = await t.http.get('/dev/v1/me/capabilities').set(bearer(key));
    expect(caps.body.data.full_access).toBe(true);
    expect(caps.body.data.readable_resources).toEqual(expect.arrayContaining(['products']));
    expect(caps.body.data.writable_resources).toEqual(expect.arrayContaining(['products']));
  });
});

test('no log line carries a credential', async () => {
  const { key } = await t.createKey(shopId, ['*']);
  await t.http.get('/dev/v1/me').set(bearer(key));
  await t.http.get('/dev/v1/me').set(bearer(`${key.slice(0, -1)}x`));
  const text = JSON.stringify(t.logs);
  expect(t.logs.length).toBeGreaterThan(0);
  expect(text).not.toContain(key);
  expect(text).not.toContain(key.slice(4));
});
