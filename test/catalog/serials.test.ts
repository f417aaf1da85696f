// POST /products/{id}/serials/claim: atomic claims (a race of 50 on 30 serials), and every rejection leaves serials
// and stock unchanged. Shop B holds the same serial products (same titles, same serial values) as shop A, so a claim
// that reached across the shop boundary would show in B's serials.
import { sql } from 'kysely';
import { availableSerialCount, oldestAvailableSerials, serialsOfProduct } from '../../db/queries/serials';
import { claimSerials, maxClaimAmount } from '../../src/domain/catalog/serials';
import { ValidationError } from '../../src/errors';
import { systemClock } from '../../src/platform/clock';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', scopes: ['products.write'] },
    b: { name: 'B' },
  }));
});
afterAll(() => t.close());

const serialValues = (n: number, prefix = 'KEY') =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

/** Shop B's twin of each product of shop A made by serialProduct(), by A's product id. */
const twinInB = new Map<string, string>();

/** A SERIALS product of shop A with `n` serials, and its identical twin in shop B. */
async function serialProduct(n: number, extra: Record<string, unknown> = {}): Promise<string> {
  const fixtures = {
    products: [{ title: `Serials ${n}`, type: 'SERIALS' as const, price: '9.99', serials: serialValues(n), ...extra }],
  };
  const id = (await t.seed(shopA, fixtures)).products[0]!;
  twinInB.set(id, (await t.seed(shopB, fixtures)).products[0]!);
  return id;
}

const claim = (productId: string, body: unknown, key = keyA) =>
  t.http
    .post(`/dev/v1/products/${productId}/serials/claim`)
    .set(bearer(key))
    .send(body as object);

async function state(productId: string, shopId = shopA) {
  const product = await t.db
    .selectFrom('products')
    .select(['stock', 'updated_at'])
    .where('id', '=', productId)
    .executeTakeFirstOrThrow();
  const serials = await serialsOfProduct(t.db, shopId, productId);
  return {
    stock: product.stock,
    updated_at: product.updated_at.toISOString(),
    serials: serials.map((s) => [s.id, s.status, s.claimed_at?.toISOString() ?? null]),
  };
}

test('claims the oldest serials and returns them with the remaining stock', async () => {
  const id = await serialProduct(5);
  expect((await state(id)).stock).toBe(5);
  const twin = twinInB.get(id)!;
  const twinBefore = await state(twin, shopB);
  const res = await claim(id, { amount: 2 });
  expect(res.status).toBe(200);
  expect(res.body.data.claimed_count).toBe(2);
  expect(res.body.data.remaining_stock).toBe(3);
  expect(res.body.data.serials.map((s: { serial: string }) => s.serial)).toEqual(['KEY-0000', 'KEY-0001']);
  for (const s of res.body.data.serials) {
    expect(s.id).toMatch(/^ser_/);
    expect(s.variant_id).toBeNull();
    expect(s.variant_title).toBeNull();
    expect(new Date(s.created_at).toISOString()).toBe(s.created_at);
  }
  const after = await state(id);
  expect(after.stock).toBe(3);
  expect(after.serials.filter((s) => s[1] === 'claimed')).toHaveLength(2);

  const rest = await claim(id, { amount: 3 });
  expect(rest.status).toBe(200);
  expect(rest.body.data.serials.map((s: { serial: string }) => s.serial)).toEqual(['KEY-0002', 'KEY-0003', 'KEY-0004']);
  expect(rest.body.data.remaining_stock).toBe(0);
  // The twin in shop B, with the same serial values, is untouched.
  expect(await state(twin, shopB)).toEqual(twinBefore);
  expect((await state(twin, shopB)).serials.every((s) => s[1] === 'available')).toBe(true);
});

test('50 concurrent claims of one serial on 30 serials: exactly 30 succeed, none twice, stock ends at 0', async () => {
  const id = await serialProduct(30);
  const results = await Promise.all(Array.from({ length: 50 }, () => claim(id, { amount: 1 })));
  const ok = results.filter((r) => r.status === 200);
  const rejected = results.filter((r) => r.status === 400);
  expect(ok).toHaveLength(30);
  expect(rejected).toHaveLength(20);
  for (const r of rejected) expect(r.body.error.code).toBe('OUT_OF_STOCK');
  const handedOut = ok.map((r) => r.body.data.serials[0].serial as string);
  expect(new Set(handedOut).size).toBe(30);
  expect(handedOut.sort()).toEqual(serialValues(30));
  const remaining = ok.map((r) => r.body.data.remaining_stock as number).sort((a, b) => a - b);
  expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => i)); // each claim saw the one before it
  const after = await state(id);
  expect(after.stock).toBe(0);
  expect(after.serials.every((s) => s[1] === 'claimed')).toBe(true);
  console.log(
    `serial race on ${t.database.kind}: ${ok.length} x 200, ${rejected.length} x 400 OUT_OF_STOCK, ${new Set(handedOut).size} distinct serials`,
  );
});

test('more than available: 400 OUT_OF_STOCK, nothing claimed', async () => {
  const id = await serialProduct(3);
  await claim(id, { amount: 1 });
  const before = await state(id);
  const res = await claim(id, { amount: 3 });
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('OUT_OF_STOCK');
  expect(res.body.error.message).toBe('Only 2 serials available; 3 requested. Nothing was claimed.');
  expect(await state(id)).toEqual(before);
  await claim(id, { amount: 1 });
  const one = await claim(id, { amount: 2 });
  expect(one.body.error.message).toBe('Only 1 serial available; 2 requested. Nothing was claimed.');
  await claim(id, { amount: 1 });
  const none = await claim(id, { amount: 1 });
  expect(none.body.error.message).toBe('Only 0 serials available; 1 requested. Nothing was claimed.');
});

/** The domain function called directly, in a transaction of its own, as shop A's write. */
const claimInA = (id: string, amount: number) =>
  t.db.transaction().execute((trx) => claimSerials(shopWrite(trx, shopA, new Effects(), systemClock), id, amount));

test('the claim itself refuses amounts outside 1 to 1000, whatever the contract lets through', async () => {
  const id = await serialProduct(2);
  const before = await state(id);
  for (const amount of [0, -1, 1.5, Number.NaN, maxClaimAmount + 1]) {
    const attempt = claimInA(id, amount);
    await expect(attempt).rejects.toBeInstanceOf(ValidationError);
    await expect(claimInA(id, amount)).rejects.toMatchObject({
      details: [{ field: 'amount', message: 'must be an integer from 1 to 1000' }],
    });
  }
  expect(await state(id)).toEqual(before);
  // The bounds themselves are allowed: 1000 asks for more than there is (400), not for an invalid amount (422).
  await expect(claimInA(id, maxClaimAmount)).rejects.toMatchObject({ code: 'OUT_OF_STOCK' });
  const claimed = await claimInA(id, 1);
  expect(claimed.claimed_count).toBe(1);
});

test('a product with variants, or not a SERIALS product: 400 PRODUCT_NOT_SERIAL, nothing changed', async () => {
  const withVariants = await serialProduct(4, { variants: [{ title: 'Personal', price: '9.99' }] });
  const file = (await t.seed(shopA, { products: [{ title: 'File', type: 'FILE', price: '1.00', stock: 7 }] }))
    .products[0]!;
  for (const [id, message] of [
    [withVariants, /variants/],
    [file, /FILE/],
  ] as const) {
    const before = await state(id);
    const res = await claim(id, { amount: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('PRODUCT_NOT_SERIAL');
    expect(res.body.error.message).toMatch(message);
    expect(await state(id)).toEqual(before);
  }
});

test('another shop, or an unknown product: 404 PRODUCT_NOT_FOUND, nothing changed', async () => {
  const id = await serialProduct(2);
  const before = await state(id);
  const twin = twinInB.get(id)!;
  const twinBefore = await state(twin, shopB);
  const cross = await claim(id, { amount: 1 }, keyB);
  expect(cross.status).toBe(404);
  expect(cross.body.error.code).toBe('PRODUCT_NOT_FOUND');
  const reverse = await claim(twin, { amount: 1 });
  expect(reverse.status).toBe(404);
  expect(reverse.body.error.code).toBe('PRODUCT_NOT_FOUND');
  expect(await state(twin, shopB)).toEqual(twinBefore);
  const unknown = await claim('prod_doesnotexist', { amount: 1 });
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('PRODUCT_NOT_FOUND');
  expect(await state(id)).toEqual(before);
});

test('invalid amounts: 422 VALIDATION_ERROR on amount, nothing changed', async () => {
  const id = await serialProduct(2);
  const before = await state(id);
  for (const body of [
    { amount: 0 },
    { amount: -1 },
    { amount: 'x' },
    { amount: 1.5 },
    { amount: 1001 },
    {},
    { amount: 1, extra: true },
  ]) {
    const res = await claim(id, body);
    expect({ body, status: res.status }).toEqual({ body, status: 422 });
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect(fields.some((f) => f === 'amount' || f === 'extra')).toBe(true);
  }
  expect(await state(id)).toEqual(before);
  const { count } = (
    await sql<{
      count: string;
    }>`select count(*)::text as count from product_serials where status = 'claimed' and product_id = ${id}`.execute(
      t.db,
    )
  ).rows[0]!;
  expect(count).toBe('0');
});

test('a key without products.write: 403, nothing changed', async () => {
  const id = await serialProduct(1);
  const before = await state(id);
  const { key } = await t.createKey(shopA, ['products.read']);
  const res = await claim(id, { amount: 1 }, key);
  expect(res.status).toBe(403);
  expect(await state(id)).toEqual(before);
});

test("the serial queries answer for their shop only, even when handed another shop's product", async () => {
  const id = await serialProduct(3);
  expect(await availableSerialCount(t.db, shopA, id)).toBe(3);
  expect(await availableSerialCount(t.db, shopB, id)).toBe(0);
  expect(await serialsOfProduct(t.db, shopB, id)).toEqual([]);
  await t.db.transaction().execute(async (trx) => {
    expect((await oldestAvailableSerials(trx, shopA, id, 2)).map((s) => s.serial)).toEqual(['KEY-0000', 'KEY-0001']);
    expect(await oldestAvailableSerials(trx, shopB, id, 2)).toEqual([]);
  });
});
