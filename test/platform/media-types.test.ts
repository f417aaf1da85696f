// Request bodies arrive as application/json, multipart/form-data or text/plain (JSON text) and are validated
// against the same schema; anything else is 415 and changes nothing.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { rowCounts } from '../helpers/counts';
import { sql } from 'kysely';

let t: TestApp;
let key: string;
let productId: string;

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['products.write'])).key;
  productId = (
    await t.seed(shop, {
      products: [
        { title: 'Keys', type: 'SERIALS', price: '3.00', serials: ['K-1', 'K-2', 'K-3', 'K-4', 'K-5', 'K-6'] },
      ],
    })
  ).products[0]!;
});
afterAll(() => t.close());

const claimed = async () =>
  Number(
    (await sql<{ n: string }>`select count(*)::text as n from product_serials where status = 'claimed'`.execute(t.db))
      .rows[0]!.n,
  );

test('application/json', async () => {
  const res = await t.http.post(`/dev/v1/products/${productId}/serials/claim`).set(bearer(key)).send({ amount: 2 });
  expect(res.status).toBe(200);
  expect(res.body.data.claimed_count).toBe(2);
});

test('multipart/form-data: fields become properties, a field holding JSON is parsed where the schema wants it', async () => {
  const res = await t.http.post(`/dev/v1/products/${productId}/serials/claim`).set(bearer(key)).field('amount', '1');
  expect(res.status).toBe(200);
  expect(res.body.data.claimed_count).toBe(1);
});

test('text/plain holding JSON', async () => {
  const res = await t.http
    .post(`/dev/v1/products/${productId}/serials/claim`)
    .set(bearer(key))
    .set('Content-Type', 'text/plain')
    .send('{"amount":1}');
  expect(res.status).toBe(200);
  expect(res.body.data.claimed_count).toBe(1);
});

test('the same schema applies whatever the media type: bad values are 422 and claim nothing', async () => {
  const before = await claimed();
  const multipart = await t.http
    .post(`/dev/v1/products/${productId}/serials/claim`)
    .set(bearer(key))
    .field('amount', 'lots');
  expect(multipart.status).toBe(422);
  expect(multipart.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'amount' })]));
  const text = await t.http
    .post(`/dev/v1/products/${productId}/serials/claim`)
    .set(bearer(key))
    .set('Content-Type', 'text/plain')
    .send('amount=1');
  expect(text.status).toBe(422);
  expect(text.body.error.details[0].field).toBe('body');
  const missing = await t.http.post(`/dev/v1/products/${productId}/serials/claim`).set(bearer(key)).send({});
  expect(missing.status).toBe(422);
  expect(await claimed()).toBe(before);
});

test('any other media type is 415 UNSUPPORTED_MEDIA_TYPE and claims nothing', async () => {
  const before = await rowCounts(t.db, ['product_serials']);
  const claimedBefore = await claimed();
  for (const type of ['application/xml', 'application/x-www-form-urlencoded', 'image/png']) {
    const res = await t.http
      .post(`/dev/v1/products/${productId}/serials/claim`)
      .set(bearer(key))
      .set('Content-Type', type)
      .send('amount=1');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  }
  expect(await rowCounts(t.db, ['product_serials'])).toEqual(before);
  expect(await claimed()).toBe(claimedBefore);
});
