// GET /products and POST /products/{id}/duplicate, with tenancy. Shops A and B hold the same catalog (titles, slugs,
// creation times), so only the shop boundary can tell their answers apart; the products have distinct creation times,
// so "newest first" is one exact order, and it is neither the seeding order nor its reverse.
import { sql } from 'kysely';
import * as products from '../../db/queries/products';
import { serialsOfProduct } from '../../db/queries/serials';
import type { Fixtures } from '../../src/ops/fixtures/fixtures';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';
import { rowCounts } from '../helpers/counts';

const catalog: Fixtures = {
  products: [
    {
      title: 'Game Key',
      slug: 'game-key',
      type: 'SERIALS',
      price: '19.99',
      description: 'Keys',
      description_tabs: [{ title: 'Info', content: '<p>Hi</p>' }],
      gateways: ['STRIPE'],
      serials: ['GK-0001', 'GK-0002', 'GK-0003'],
      variants: [
        { title: 'Standard', price: '19.99', stock: 3 },
        { title: 'Deluxe', price: '39.50', stock: 1 },
      ],
    },
    {
      title: 'Ebook',
      slug: 'ebook',
      type: 'FILE',
      price: '5.00',
      stock: 7,
      variants: [{ title: 'PDF', price: '5.00', stock: 2 }],
    },
    { title: 'Course', slug: 'course', price: '49.00' },
  ],
};
/** When each product was created (set after seeding, the same in both shops). */
const createdAt: Record<string, string> = {
  'Game Key': '2026-01-01T00:00:00Z',
  Ebook: '2026-01-03T00:00:00Z',
  Course: '2026-01-02T00:00:00Z',
};
/** The order GET /products must answer, written out: newest first. */
const newestFirst = ['Ebook', 'Course', 'Game Key'];

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
/** Product ids by title, per shop. */
let idsA: Record<string, string>;
let idsB: Record<string, string>;
let productA: string;

async function seedCatalog(shopId: string): Promise<Record<string, string>> {
  const seeded = await t.seed(shopId, catalog);
  const ids: Record<string, string> = {};
  catalog.products!.forEach((p, i) => (ids[p.title] = seeded.products[i]!));
  for (const [title, at] of Object.entries(createdAt)) {
    await sql`update products set created_at = ${at}::timestamptz where id = ${ids[title]!}`.execute(t.db);
  }
  return ids;
}

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', scopes: ['products.read', 'products.write'] },
    b: { name: 'B' },
  }));
  idsA = await seedCatalog(shopA);
  idsB = await seedCatalog(shopB);
  productA = idsA['Game Key']!;
});
afterAll(() => t.close());

type Product = {
  id: string;
  title: string;
  stock: number;
  created_at: number;
  variants: { id: string; title: string; stock: number; price?: number }[];
};
const list = (key: string, query = '') => t.http.get(`/dev/v1/products${query}`).set(bearer(key));
const titles = (res: { body: { data: Product[] } }) => res.body.data.map((p) => p.title);

async function walk(key: string, limit: number): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 10; i++) {
    const res = await list(key, `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    out.push(...res.body.data.map((p: Product) => p.id));
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

test('lists only the shop own products, newest first, variants without prices by default', async () => {
  const res = await list(keyA);
  expect(res.status).toBe(200);
  expect(titles(res)).toEqual(newestFirst);
  expect(res.body.data.map((p: Product) => p.id)).toEqual(newestFirst.map((title) => idsA[title]));
  expect(res.body.data.map((p: Product) => p.created_at)).toEqual(
    newestFirst.map((title) => Date.parse(createdAt[title]!) / 1000),
  );
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  const game = res.body.data.find((p: Product) => p.id === productA);
  expect(game.variants.map((v: Product['variants'][number]) => [v.title, v.stock])).toEqual([
    ['Standard', 3],
    ['Deluxe', 1],
  ]);
  expect(game.variants[0]).not.toHaveProperty('price');
  expect(game.price).toBe(19.99);
  expect(game.stock).toBe(3);
  const course = res.body.data.find((p: Product) => p.title === 'Course');
  expect(course.variants).toEqual([]);
});

test('the other shop sees its own copy of the same catalog, in the same order, under its own ids', async () => {
  const res = await list(keyB);
  expect(res.status).toBe(200);
  expect(res.body.data.map((p: Product) => p.id)).toEqual(newestFirst.map((title) => idsB[title]));
  const variantIdsA = new Set(
    (await list(keyA)).body.data.flatMap((p: Product) => p.variants.map((v) => v.id)) as string[],
  );
  for (const p of res.body.data as Product[]) for (const v of p.variants) expect(variantIdsA.has(v.id)).toBe(false);
});

test('include_variants=true inlines variant prices', async () => {
  const res = await list(keyA, '?include_variants=true');
  const game = res.body.data.find((p: Product) => p.id === productA);
  expect(game.variants.map((v: Product['variants'][number]) => [v.title, v.price])).toEqual([
    ['Standard', 19.99],
    ['Deluxe', 39.5],
  ]);
});

test('pages with a cursor: each product once, in the same newest-first order', async () => {
  const expected = newestFirst.map((title) => idsA[title]);
  expect(await walk(keyA, 1)).toEqual(expected);
  expect(await walk(keyA, 2)).toEqual(expected);
  const first = await list(keyA, '?limit=2');
  expect(first.body.pagination.has_more).toBe(true);
  expect(titles(first)).toEqual(newestFirst.slice(0, 2));
});

test('duplicate: a new product with new identifiers that copies the rest, variants included', async () => {
  const before = await list(keyA, '?include_variants=true');
  const original = before.body.data.find((p: Product) => p.id === productA);
  // Shop B copies its own Game Key first: its "game-key-copy" must not take the slug in shop A.
  const inB = await t.http.post(`/dev/v1/products/${idsB['Game Key']}/duplicate`).set(bearer(keyB));
  expect(inB.status).toBe(201);
  expect(inB.body.data.slug).toBe('game-key-copy');

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

test('duplicate of a SERIALS product: the copy starts with no stock and no serials; the original keeps them', async () => {
  const serialsBefore = await serialsOfProduct(t.db, shopA, productA);
  expect(serialsBefore.map((s) => [s.serial, s.status])).toEqual([
    ['GK-0001', 'available'],
    ['GK-0002', 'available'],
    ['GK-0003', 'available'],
  ]);
  const res = await t.http.post(`/dev/v1/products/${productA}/duplicate`).set(bearer(keyA));
  expect(res.status).toBe(201);
  const copy = res.body.data;
  expect(copy.slug).toBe('game-key-copy-3'); // the third copy: -copy and -copy-2 are taken
  expect(copy.id).toMatch(/^prod_/);
  for (const v of copy.variants) expect(v.id).toMatch(/^var_/);
  expect(copy.type).toBe('SERIALS');
  expect(copy.stock).toBe(0);
  expect(copy.variants.map((v: Product['variants'][number]) => [v.title, v.stock])).toEqual([
    ['Standard', 0],
    ['Deluxe', 0],
  ]);
  // What the list shows afterwards: the copy empty, the original as it was.
  const after = (await list(keyA)).body.data as Product[];
  const listed = after.find((p) => p.id === copy.id)!;
  expect([listed.stock, ...listed.variants.map((v) => v.stock)]).toEqual([0, 0, 0]);
  const original = after.find((p) => p.id === productA)!;
  expect([original.stock, ...original.variants.map((v) => v.stock)]).toEqual([3, 3, 1]);
  // The serials stay with the original, unclaimed; the copy has none.
  expect(await serialsOfProduct(t.db, shopA, copy.id)).toEqual([]);
  expect(await serialsOfProduct(t.db, shopA, productA)).toEqual(serialsBefore);
});

test('duplicate of a product that is not SERIALS copies its stock and its variants stock', async () => {
  const res = await t.http.post(`/dev/v1/products/${idsA.Ebook}/duplicate`).set(bearer(keyA));
  expect(res.status).toBe(201);
  expect(res.body.data.slug).toBe('ebook-copy');
  expect(res.body.data.stock).toBe(7);
  expect(res.body.data.variants.map((v: Product['variants'][number]) => [v.title, v.stock])).toEqual([['PDF', 2]]);
});

test("another shop's product is 404 PRODUCT_NOT_FOUND and nothing is written", async () => {
  const before = await rowCounts(t.db, ['products', 'product_variants', 'product_serials']);
  const res = await t.http.post(`/dev/v1/products/${productA}/duplicate`).set(bearer(keyB));
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('PRODUCT_NOT_FOUND');
  const reverse = await t.http.post(`/dev/v1/products/${idsB.Ebook}/duplicate`).set(bearer(keyA));
  expect(reverse.status).toBe(404);
  expect(reverse.body.error.code).toBe('PRODUCT_NOT_FOUND');
  const unknown = await t.http.post('/dev/v1/products/prod_doesnotexist/duplicate').set(bearer(keyA));
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('PRODUCT_NOT_FOUND');
  expect(await rowCounts(t.db, ['products', 'product_variants', 'product_serials'])).toEqual(before);
});

test("the product queries answer for their shop only, even when handed another shop's ids", async () => {
  expect(await products.productById(t.db, shopB, productA)).toBeUndefined();
  expect((await products.productById(t.db, shopA, productA))?.id).toBe(productA);
  expect((await products.variantsByProduct(t.db, shopB, [productA])).size).toBe(0);
  expect((await products.variantsByProduct(t.db, shopA, [productA])).get(productA)).toHaveLength(2);
  // Only shop A has copies of "ebook" (the test above made one): shop B sees its own slug alone.
  expect([...(await products.slugsStartingWith(t.db, shopB, 'ebook'))]).toEqual(['ebook']);
});
