// GET /products and POST /products/{id}/duplicate, with tenancy.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { rowCounts } from '../helpers/counts';

let t: TestApp;
let shopA: string;
let keyA: string;
let keyB: string;
let productA: string;

beforeAll(async () => {
  t = await startTestApp();
  shopA = await t.createShop({ name: 'A' });
  const shopB = await t.createShop({ name: 'B' });
  keyA = (await t.createKey(shopA, ['products.read', 'products.write'])).key;
  keyB = (await t.createKey(shopB, ['*'])).key;
  const seeded = await t.seed(shopA, {
    products: [
      {
        title: 'Game Key',
        slug: 'game-key',
        type: 'SERIALS',
        price: '19.99',
        description: 'Keys',
        description_tabs: [{ title: 'Info', content: '<p>Hi</p>' }],
        gateways: ['STRIPE'],
        variants: [
          { title: 'Standard', price: '19.99', stock: 3 },
          { title: 'Deluxe', price: '39.50', stock: 1 },
        ],
      },
      { title: 'Ebook', price: '5.00' },
    ],
  });
  productA = seeded.products[0]!;
  await t.seed(shopB, { products: [{ title: 'B only', price: '1.00' }] });
});
afterAll(() => t.close());

test('lists only the shop own products, newest first, variants without prices by default', async () => {
  const res = await t.http.get('/dev/v1/products').set(bearer(keyA));
  expect(res.status).toBe(200);
  expect(res.body.data.map((p: { title: string }) => p.title).sort()).toEqual(['Ebook', 'Game Key']);
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  const game = res.body.data.find((p: { id: string }) => p.id === productA);
  expect(game.variants).toHaveLength(2);
  expect(game.variants[0]).not.toHaveProperty('price');
  expect(game.price).toBe(19.99);
});

test('include_variants=true inlines variant prices', async () => {
  const res = await t.http.get('/dev/v1/products?include_variants=true').set(bearer(keyA));
  const game = res.body.data.find((p: { id: string }) => p.id === productA);
  expect(game.variants.map((v: { title: string; price: number }) => [v.title, v.price])).toEqual([
    ['Standard', 19.99],
    ['Deluxe', 39.5],
  ]);
});

test('pages with a cursor: each product once', async () => {
  const first = await t.http.get('/dev/v1/products?limit=1').set(bearer(keyA));
  expect(first.body.pagination.has_more).toBe(true);
  const second = await t.http
    .get(`/dev/v1/products?limit=1&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`)
    .set(bearer(keyA));
  expect(second.body.pagination).toEqual({ next_cursor: null, has_more: false });
  expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
});

test('duplicate: a new product with new identifiers that copies the rest, variants included', async () => {
  const before = await t.http.get('/dev/v1/products?include_variants=true').set(bearer(keyA));
  const original = before.body.data.find((p: { id: string }) => p.id === productA);
  const res = await t.http.post(`/dev/v1/products/${productA}/duplicate`).set(bearer(keyA));
  expect(res.status).toBe(201);
  const copy = res.body.data;
  expect(copy.id).not.toBe(original.id);
  expect(copy.uniqid).not.toBe(original.uniqid);
  expect(copy.slug).toBe('game-key-copy');
  const strip = (p: Record<string, unknown>) => {
    const { id: _i, uniqid: _u, slug: _s, created_at: _c, updated_at: _up, variants: _v, stock: _st, ...rest } = p;
    return rest;
  };
  expect(strip(copy)).toEqual(strip(original));
  expect(copy.variants.map((v: { title: string; price: number }) => [v.title, v.price])).toEqual([
    ['Standard', 19.99],
    ['Deluxe', 39.5],
  ]);
  const originalVariantIds = original.variants.map((v: { id: string }) => v.id);
  for (const v of copy.variants) expect(originalVariantIds).not.toContain(v.id);
  // A second copy gets the next free slug.
  const again = await t.http.post(`/dev/v1/products/${productA}/duplicate`).set(bearer(keyA));
  expect(again.body.data.slug).toBe('game-key-copy-2');
});

test("another shop's product is 404 PRODUCT_NOT_FOUND and nothing is written", async () => {
  const before = await rowCounts(t.db, ['products', 'product_variants']);
  const res = await t.http.post(`/dev/v1/products/${productA}/duplicate`).set(bearer(keyB));
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('PRODUCT_NOT_FOUND');
  const unknown = await t.http.post('/dev/v1/products/prod_doesnotexist/duplicate').set(bearer(keyA));
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('PRODUCT_NOT_FOUND');
  expect(await rowCounts(t.db, ['products', 'product_variants'])).toEqual(before);
});
