// Amounts leave the API with exactly the digits stored: the largest wallet balance numeric(20, 8) holds is not
// rounded to 1000000000000 on the way out (JSON numbers carry the digits, see src/platform/money.ts).
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let key: string;
let customerId: string;
beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop({ currency: 'USD' });
  key = (await t.createKey(shop, ['*'])).key;
  const seeded = await t.seed(shop, {
    products: [{ title: 'Big', price: '999999999999.99999999', variants: [{ title: 'Small', price: '0.00000001' }] }],
    customers: [
      {
        email: 'rich@example.com',
        wallet_balance: '999999999999.99999999',
        total_spent: '123456789012.34567891',
        affiliate: { code: 'RICH', balance: '0.1', lifetime_earnings: '999999999999.99999999' },
      },
    ],
  });
  customerId = seeded.customers[0]!;
});
afterAll(() => t.close());

test('a customer: wallet, spend and affiliate amounts with every stored digit', async () => {
  const res = await t.http.get(`/dev/v1/customers/${customerId}?include_affiliate=true`).set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.text).toContain('"balance":999999999999.99999999');
  expect(res.text).toContain('"available_balance":999999999999.99999999');
  expect(res.text).toContain('"total_spent":123456789012.34567891');
  expect(res.text).toContain('"lifetime_earnings":999999999999.99999999');
  expect(res.text).toContain('"balance":0.1,');
  expect(res.text).not.toContain('1000000000000');
});

test('a product page: prices with every stored digit, never in exponent form', async () => {
  const res = await t.http.get('/dev/v1/products?include_variants=true').set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.text).toContain('"price":999999999999.99999999');
  expect(res.text).toContain('"price":0.00000001');
  expect(res.text).not.toMatch(/":-?\d+(\.\d+)?e[-+]?\d/i);
});
