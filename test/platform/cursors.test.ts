// Cursors are encrypted and authenticated, bound to their shop and their list's filters and sorts, and expire after
// 24 hours: tampered, expired, another shop's and mismatched cursors get 422 VALIDATION_ERROR with a detail on
// `query.cursor`; nothing of the rows they point at can be read out of them.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let key: string;
let clock = Date.parse('2026-11-22T03:10:00Z');

beforeAll(async () => {
  // Tampering tests send a few hundred requests.
  t = await startTestApp({ now: () => clock, env: { RATE_LIMIT_FREE: '100000' } });
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

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const customersPage2 = (cursor: string) => `/dev/v1/customers?limit=2&cursor=${encodeURIComponent(cursor)}`;

test('a cursor with any one character changed is rejected', async () => {
  const cursor = await firstCursor('/dev/v1/customers?limit=2');
  expect((await get(customersPage2(cursor))).status).toBe(200);
  for (let at = 0; at < cursor.length; at++) {
    // The neighbour in the alphabet differs in the lowest bit: the bit Node's decoder drops in the last character.
    const next = alphabet[(alphabet.indexOf(cursor[at]!) + 1) % alphabet.length]!;
    await expectCursorRejected(customersPage2(cursor.slice(0, at) + next + cursor.slice(at + 1)), /not a valid cursor/);
  }
});

test('a cursor with any one byte changed, or cut, or lengthened, is rejected', async () => {
  const cursor = await firstCursor('/dev/v1/customers?limit=2');
  const bytes = Buffer.from(cursor, 'base64url');
  for (let at = 0; at < bytes.length; at++) {
    for (const bit of [0x01, 0x80]) {
      const tampered = Buffer.from(bytes);
      tampered[at]! ^= bit;
      await expectCursorRejected(customersPage2(tampered.toString('base64url')), /not a valid cursor/);
    }
  }
  for (const cut of [1, 16, bytes.length - 1]) {
    await expectCursorRejected(customersPage2(bytes.subarray(0, bytes.length - cut).toString('base64url')));
    await expectCursorRejected(customersPage2(bytes.subarray(cut).toString('base64url')));
  }
  await expectCursorRejected(customersPage2(Buffer.concat([bytes, Buffer.of(0)]).toString('base64url')));
  await expectCursorRejected(customersPage2(`${cursor}A`));
  await expectCursorRejected(customersPage2(`${cursor}=`));
  // The base64 (not base64url) spelling: only a change when the cursor holds a - or _ (about 9 in 10 do).
  const plainBase64 = cursor.replace(/-/g, '+').replace(/_/g, '/');
  if (plainBase64 !== cursor) await expectCursorRejected(customersPage2(plainBase64));
  await expectCursorRejected(customersPage2(`+${cursor.slice(1)}`));
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

test('a cursor of another shop is rejected and reveals nothing of that shop', async () => {
  const page = await get('/dev/v1/customers?limit=1&sorts=email');
  const cursor = page.body.pagination.next_cursor as string;
  const other = await t.createShop({ name: 'Other' });
  const otherKey = (await t.createKey(other, ['*'])).key;
  // The other shop has customers too, so a cursor that leaked through would page them.
  await t.seed(other, { customers: [{ email: 'b0@example.com' }, { email: 'b1@example.com' }] });
  const defaultSortCursor = await firstCursor('/dev/v1/customers?limit=1');
  for (const url of [
    `/dev/v1/customers?limit=1&sorts=email&cursor=${encodeURIComponent(cursor)}`,
    `/dev/v1/customers?limit=1&cursor=${encodeURIComponent(defaultSortCursor)}`,
  ]) {
    const res = await t.http.get(url).set(bearer(otherKey));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([
      { field: 'query.cursor', message: expect.stringMatching(/not a valid cursor/) },
    ]);
    expect(res.text).not.toMatch(/c\d@example\.com|cus_/);
  }
  // The cursor is still good for the shop it was issued to.
  expect((await get(`/dev/v1/customers?limit=1&sorts=email&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
});

test('a cursor holds nothing readable of the row it points at, in any decoding', async () => {
  const local = 'ada.lovelace.analytical';
  const shop = await t.createShop({ name: 'Private' });
  const privateKey = (await t.createKey(shop, ['*'])).key;
  await t.seed(shop, { customers: [{ email: `${local}@engine.example` }, { email: 'zz@example.com' }] });
  const res = await t.http.get('/dev/v1/customers?limit=1&sorts=email').set(bearer(privateKey));
  expect(res.status).toBe(200);
  const row = res.body.data[0] as { id: string; email: string };
  expect(row.email).toBe(`${local}@engine.example`); // the cursor points right after this row
  const cursor = res.body.pagination.next_cursor as string;
  const secrets = [local, 'lovelace', 'engine.example', row.id, row.id.replace(/^cus_/, '')];
  for (const secret of secrets) expect(cursor.toLowerCase()).not.toContain(secret.toLowerCase());
  // Clear text would show up in the base64 decoding at one of the four character alignments.
  for (let shift = 0; shift < 4; shift++) {
    for (const encoding of ['base64url', 'base64'] as const) {
      const bytes = Buffer.from(cursor.slice(shift), encoding);
      for (const secret of secrets) {
        expect(bytes.includes(secret)).toBe(false);
        expect(bytes.includes(Buffer.from(secret, 'utf16le'))).toBe(false);
      }
    }
  }
});

test('cursors stay compact and URL-safe', async () => {
  const cursors = [
    await firstCursor('/dev/v1/customers?limit=1'),
    await firstCursor('/dev/v1/customers?limit=1&sorts=email'),
    await firstCursor('/dev/v1/products?limit=1'),
  ];
  for (const cursor of cursors) {
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(cursor)).toBe(cursor);
    expect(cursor.length).toBeLessThanOrEqual(160); // ~150 measured; the signed clear-text format took ~210
  }
});
