import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

test('GET /me with a key', async () => {
  const shop = await t.createShop({ name: 'Smoke' });
  const { key } = await t.createKey(shop, ['*']);
  const res = await t.http.get('/dev/v1/me').set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.body.data.name).toBe('Smoke');
});
