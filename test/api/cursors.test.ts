// Cursors are signed, bound to their list's filters and sorts, and expire after 24 hours: tampered, expired and
// mismatched cursors get 422 VALIDATION_ERROR with a detail on `cursor`.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let key: string;
let clock = Date.parse('2026-11-22T03:10:00Z');

beforeAll(async () => {
  t = await startTestApp({ now: () => clock });
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['*'])).key;
  await t.seed(shop, {
    products: Array.from({ length: 3 }, (_, i) => ({ title: `P${i}`, price: '1.00' })),
    customers: Array.from({ length: 5 }, (_, i) => ({ email: `c${i}@example.com`, country: i % 2 ? 'US' : 'DE' })),
  });
});
afterAll(() => t.close());

const get = (url: string) => t.http.get(url).set(bearer(key));

async function firstCursor(url: string): Promise<string> {
  const res = await get(url);
  expect(res.status).toBe(200);
  expect(res.body.pagination.has_more).toBe(true);
  return res.body.pagination.next_cursor as string;
}

async function expectCursorRejected(url: string, message?: RegExp) {
  const res = await get(url);
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  const detail = (res.body.error.details as { field: string; message: string }[]).find(
    (d) => d.field === 'query.cursor',
  );
  expect(detail).toBeDefined();
  if (message) expect(detail!.message).toMatch(message);
}

const flip = (c: string) => (c === 'A' ? 'B' : 'A');

test('a tampered cursor (any one character changed, or truncated) is rejected', async () => {
  const cursor = await firstCursor('/dev/v1/customers?limit=2');
  expect((await get(`/dev/v1/customers?limit=2&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
  const dot = cursor.indexOf('.');
  for (const at of [0, Math.floor(dot / 2), dot - 1, dot + 1, cursor.length - 1]) {
    const tampered = cursor.slice(0, at) + flip(cursor[at]!) + cursor.slice(at + 1);
    await expectCursorRejected(
      `/dev/v1/customers?limit=2&cursor=${encodeURIComponent(tampered)}`,
      /not a valid cursor/,
    );
  }
  await expectCursorRejected(`/dev/v1/customers?limit=2&cursor=${encodeURIComponent(cursor.slice(0, -3))}`);
  await expectCursorRejected(`/dev/v1/customers?limit=2&cursor=${encodeURIComponent(cursor.slice(0, dot))}`);
  await expectCursorRejected('/dev/v1/customers?limit=2&cursor=garbage');
  await expectCursorRejected('/dev/v1/products?limit=1&cursor=a.b.c');
});

test('a cursor older than 24 hours is rejected; one just younger is accepted', async () => {
  const start = clock;
  try {
    const cursor = encodeURIComponent(await firstCursor('/dev/v1/customers?limit=2'));
    const productCursor = encodeURIComponent(await firstCursor('/dev/v1/products?limit=1'));
    clock = start + 24 * 3600 * 1000 - 1000;
    expect((await get(`/dev/v1/customers?limit=2&cursor=${cursor}`)).status).toBe(200);
    clock = start + 24 * 3600 * 1000 + 1000;
    await expectCursorRejected(`/dev/v1/customers?limit=2&cursor=${cursor}`, /expired/);
    await expectCursorRejected(`/dev/v1/products?limit=1&cursor=${productCursor}`, /expired/);
  } finally {
    clock = start;
  }
});

test('a cursor sent with other filters or sorts, or to another list, is rejected', async () => {
  const cursor = encodeURIComponent(await firstCursor('/dev/v1/customers?limit=1&filters=country:DE&sorts=email'));
  expect((await get(`/dev/v1/customers?limit=1&filters=country:DE&sorts=email&cursor=${cursor}`)).status).toBe(200);
  // the same filters, written differently, are the same query
  const two = encodeURIComponent(await firstCursor('/dev/v1/customers?limit=1&filters=country:DE,is_affiliate:false'));
  expect((await get(`/dev/v1/customers?limit=1&filters=is_affiliate:false,country:DE&cursor=${two}`)).status).toBe(200);

  await expectCursorRejected(
    `/dev/v1/customers?limit=1&filters=country:US&sorts=email&cursor=${cursor}`,
    /other filters or sorts/,
  );
  await expectCursorRejected(`/dev/v1/customers?limit=1&sorts=email&cursor=${cursor}`, /other filters or sorts/);
  await expectCursorRejected(
    `/dev/v1/customers?limit=1&filters=country:DE&sorts=-email&cursor=${cursor}`,
    /other filters or sorts/,
  );
  await expectCursorRejected(`/dev/v1/customers?limit=1&filters=country:DE&cursor=${cursor}`, /other filters or sorts/);
  await expectCursorRejected(`/dev/v1/products?limit=1&cursor=${cursor}`, /other filters or sorts/);
  const productCursor = encodeURIComponent(await firstCursor('/dev/v1/products?limit=1'));
  await expectCursorRejected(`/dev/v1/customers?limit=1&cursor=${productCursor}`, /other filters or sorts/);
  // the page size may change between pages
  expect((await get(`/dev/v1/customers?limit=3&filters=country:DE&sorts=email&cursor=${cursor}`)).status).toBe(200);
});

test('a cursor of another shop reveals nothing: it pages that shop list only for the caller own rows', async () => {
  const cursor = encodeURIComponent(await firstCursor('/dev/v1/customers?limit=1&sorts=email'));
  const other = await t.createShop({ name: 'Other' });
  const otherKey = (await t.createKey(other, ['*'])).key;
  const res = await t.http.get(`/dev/v1/customers?limit=1&sorts=email&cursor=${cursor}`).set(bearer(otherKey));
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual([]);
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
});
