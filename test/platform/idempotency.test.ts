// Idempotency through HTTP: claim, replay, conflict, in-progress, release on 5xx, stored business rejections,
// lapsed-lease takeover, expiry and purge. Every response goes through the contract-validating client, and every
// rejected request is checked for what it did not write. Races only mean something on real PostgreSQL
// (DATABASE_URL); on PGlite (one connection) the same tests run serialised.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { insertIdempotencyKey, idempotencyKeyByScope } from '../../db/queries/idempotency-keys';
import { duplicateProduct as realDuplicate } from '../../handlers/catalog';
import { NotFoundError } from '../../src/errors';
import type { OperationHandler } from '../../src/http/handler';
import { purgeExpiredIdempotencyKeys, requestFingerprint } from '../../src/platform/idempotency';
import { countWhere } from '../helpers/counts';
import {
  duplicateUrl,
  productCount as productCountOf,
  shopWithProduct as shopWithProductOf,
  type IdempotencyShop,
} from '../helpers/idempotency-shop';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const HOUR = 60 * 60 * 1000;
let t: TestApp;
let clock = Date.parse('2026-11-20T10:00:00Z');
/** What POST /products/{id}/duplicate does in this file; tests swap it and put it back. */
let duplicate: OperationHandler<'duplicateProduct'> = realDuplicate;

beforeAll(async () => {
  t = await startTestApp({
    now: () => clock,
    handlers: { duplicateProduct: (ctx) => duplicate(ctx) },
  });
});
afterAll(() => t.close());
afterEach(() => {
  duplicate = realDuplicate;
});

type Shop = IdempotencyShop;
const shopWithProduct = () => shopWithProductOf(t);
const productCount = (shopId: string) => productCountOf(t, shopId);
const keyRows = (credentialId: string) => countWhere(t.db, 'idempotency_keys', 'credential_id', credentialId);

/**
 * A `processing` record of a duplicate request claimed `ageMs` ago, whose lease is still held (a running request)
 * or lapsed (its owner died and stopped renewing it). Leases are database time: this database runs on this machine.
 */
async function leftProcessing(s: Shop, key: string, ageMs: number, lease: 'held' | 'lapsed'): Promise<void> {
  await insertIdempotencyKey(t.db, {
    credential_id: s.credentialId,
    operation_id: 'duplicateProduct',
    key,
    fingerprint: requestFingerprint('POST', duplicateUrl(s.productId), {}, undefined),
    state: 'processing',
    locked_at: new Date(clock - ageMs),
    owner_token: randomUUID(),
    lease_expires_at: new Date(Date.now() + (lease === 'held' ? 60_000 : -1_000)),
    response_status: null,
    response_body: null,
    created_at: new Date(clock - ageMs),
    expires_at: new Date(clock - ageMs + 24 * HOUR),
  });
}

function post(s: Shop, idempotencyKey?: string, productId = s.productId) {
  const req = t.http.post(duplicateUrl(productId)).set(bearer(s.key));
  return idempotencyKey === undefined ? req : req.set('Idempotency-Key', idempotencyKey);
}

describe('first request and replay', () => {
  test('no key: bypassed, every request writes', async () => {
    const s = await shopWithProduct();
    const a = await post(s);
    const b = await post(s);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.headers['idempotency-status']).toBe('bypassed');
    expect(b.headers['idempotency-status']).toBe('bypassed');
    expect(a.body.data.id).not.toBe(b.body.data.id);
    expect(await productCount(s.shopId)).toBe(3);
    expect(await keyRows(s.credentialId)).toBe(0);
  });

  test('a read ignores a key and carries no Idempotency-Status (the contract declares it on writes only)', async () => {
    const s = await shopWithProduct();
    const res = await t.http.get('/dev/v1/products').set(bearer(s.key)).set('Idempotency-Key', 'read-1');
    expect(res.status).toBe(200);
    expect(res.headers['idempotency-status']).toBeUndefined();
    expect(await keyRows(s.credentialId)).toBe(0);
  });

  test('same key: created once, then the stored response is replayed byte for byte', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const first = await post(s, key);
    expect(first.status).toBe(201);
    expect(first.headers['idempotency-status']).toBe('created');
    const second = await post(s, key);
    const third = await post(s, key);
    for (const replay of [second, third]) {
      expect(replay.status).toBe(201);
      expect(replay.headers['idempotency-status']).toBe('cached');
      expect(replay.text).toBe(first.text);
      expect(replay.headers['content-type']).toBe(first.headers['content-type']);
    }
    // A replay is a new HTTP exchange: its own request id.
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(await productCount(s.shopId)).toBe(2);
    expect(await keyRows(s.credentialId)).toBe(1);
  });

  test('a response holding a secret shown once is stored sealed, and its replay shows the same secret', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const create = () =>
      t.http
        .post('/dev/v1/webhooks')
        .set(bearer(s.key))
        .set('Idempotency-Key', key)
        .send({ url: 'https://hooks.example.com/in', events: ['order:paid'] });
    const first = await create();
    expect(first.status).toBe(201);
    const secret = first.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const stored = await t.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('credential_id', '=', s.credentialId)
      .executeTakeFirstOrThrow();
    expect(stored.response_body).toMatch(/^sealed:v1:/);
    expect(stored.response_body).not.toContain(secret);
    expect(stored.response_body).not.toContain(secret.slice('whsec_'.length));
    const replay = await create();
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.text).toBe(first.text);
    expect(await countWhere(t.db, 'webhook_endpoints', 'shop_id', s.shopId)).toBe(1);
  });

  test('X-Idempotency-Key behaves the same, and names the same key as Idempotency-Key', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const first = await t.http.post(duplicateUrl(s.productId)).set(bearer(s.key)).set('X-Idempotency-Key', key);
    expect(first.status).toBe(201);
    expect(first.headers['idempotency-status']).toBe('created');
    const again = await t.http.post(duplicateUrl(s.productId)).set(bearer(s.key)).set('X-Idempotency-Key', key);
    expect(again.headers['idempotency-status']).toBe('cached');
    expect(again.text).toBe(first.text);
    const viaOther = await post(s, key);
    expect(viaOther.headers['idempotency-status']).toBe('cached');
    expect(viaOther.text).toBe(first.text);
    const both = await t.http
      .post(duplicateUrl(s.productId))
      .set(bearer(s.key))
      .set('Idempotency-Key', key)
      .set('X-Idempotency-Key', key);
    expect(both.headers['idempotency-status']).toBe('cached');
    expect(await productCount(s.shopId)).toBe(2);
  });

  test('another credential of the same shop has its own keys', async () => {
    const s = await shopWithProduct();
    const other = { ...s, ...(await t.createKey(s.shopId, ['*'])) };
    const key = randomUUID();
    const a = await post(s, key);
    const b = await t.http.post(duplicateUrl(s.productId)).set(bearer(other.key)).set('Idempotency-Key', key);
    expect(a.headers['idempotency-status']).toBe('created');
    expect(b.headers['idempotency-status']).toBe('created');
    expect(b.status).toBe(201);
    expect(b.body.data.id).not.toBe(a.body.data.id);
    expect(await productCount(s.shopId)).toBe(3);
  });
});

describe('rejections write nothing', () => {
  test('same key, different path: 422 IDEMPOTENCY_CONFLICT', async () => {
    const s = await shopWithProduct();
    const { products } = await t.seed(s.shopId, { products: [{ title: 'Gadget', price: '2.00' }] });
    const key = randomUUID();
    const first = await post(s, key);
    expect(first.status).toBe(201);
    const before = await productCount(s.shopId);
    const res = await post(s, key, products[0]!);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(res.headers['idempotency-status']).toBe('bypassed');
    expect(await productCount(s.shopId)).toBe(before);
    // The original is untouched and still replays.
    const replay = await post(s, key);
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.text).toBe(first.text);
  });

  test('same key, different body: 422 IDEMPOTENCY_CONFLICT (serial claim)', async () => {
    const shopId = await t.createShop({ plan: 'business' });
    const { id: credentialId, key: apiKey } = await t.createKey(shopId, ['*']);
    const { products } = await t.seed(shopId, {
      products: [{ title: 'Keys', price: '1.00', type: 'SERIALS', serials: ['A', 'B', 'C', 'D'] }],
    });
    const url = `/dev/v1/products/${products[0]!}/serials/claim`;
    const available = async () =>
      Number(
        (
          await t.db
            .selectFrom('product_serials')
            .select(sql<string>`count(*)`.as('n'))
            .where('product_id', '=', products[0]!)
            .where('status', '=', 'available')
            .executeTakeFirstOrThrow()
        ).n,
      );
    const key = randomUUID();
    const first = await t.http.post(url).set(bearer(apiKey)).set('Idempotency-Key', key).send({ amount: 1 });
    expect(first.status).toBe(200);
    expect(first.headers['idempotency-status']).toBe('created');
    expect(await available()).toBe(3);

    const conflict = await t.http.post(url).set(bearer(apiKey)).set('Idempotency-Key', key).send({ amount: 2 });
    expect(conflict.status).toBe(422);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(await available()).toBe(3);

    // The same body in another key order, media type or spacing is the same request.
    const same = await t.http
      .post(url)
      .set(bearer(apiKey))
      .set('Idempotency-Key', key)
      .set('Content-Type', 'text/plain')
      .send('{ "amount" : 1 }');
    expect(same.headers['idempotency-status']).toBe('cached');
    expect(same.text).toBe(first.text);
    expect(await available()).toBe(3);
    expect(await keyRows(credentialId)).toBe(1);
  });

  test('both key headers with different values: 422 on the header, nothing written', async () => {
    const s = await shopWithProduct();
    const res = await t.http
      .post(duplicateUrl(s.productId))
      .set(bearer(s.key))
      .set('Idempotency-Key', 'one')
      .set('X-Idempotency-Key', 'two');
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'header.x-idempotency-key' })]);
    expect(res.headers['idempotency-status']).toBe('bypassed');
    expect(await productCount(s.shopId)).toBe(1);
    expect(await keyRows(s.credentialId)).toBe(0);
  });

  test('a key of 129 characters: 422, nothing written; 128 is fine', async () => {
    const s = await shopWithProduct();
    const res = await post(s, 'k'.repeat(129));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.headers['idempotency-status']).toBe('bypassed');
    const alt = await t.http
      .post(duplicateUrl(s.productId))
      .set(bearer(s.key))
      .set('X-Idempotency-Key', 'x'.repeat(129));
    expect(alt.status).toBe(422);
    expect(await productCount(s.shopId)).toBe(1);
    expect(await keyRows(s.credentialId)).toBe(0);
    const ok = await post(s, 'k'.repeat(128));
    expect(ok.status).toBe(201);
    expect(ok.headers['idempotency-status']).toBe('created');
  });

  test('401, 403 and 404-by-route carry the header and store nothing', async () => {
    const s = await shopWithProduct();
    const readOnly = await t.createKey(s.shopId, ['products.read']);
    const key = randomUUID();
    const unauthorized = await t.http.post(duplicateUrl(s.productId)).set('Idempotency-Key', key);
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['idempotency-status']).toBe('bypassed');
    const forbidden = await t.http
      .post(duplicateUrl(s.productId))
      .set(bearer(readOnly.key))
      .set('Idempotency-Key', key);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['idempotency-status']).toBe('bypassed');
    expect(await keyRows(readOnly.id)).toBe(0);
    expect(await productCount(s.shopId)).toBe(1);
    // The key was never claimed: the owner can still use it.
    const ok = await post(s, key);
    expect(ok.headers['idempotency-status']).toBe('created');
  });
});

describe('failures', () => {
  test('a 5xx is not stored: the key is released and a retry runs afresh', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    duplicate = async (ctx) => {
      await realDuplicate(ctx); // writes, then fails: the write must be rolled back
      throw new Error('boom');
    };
    const failed = await post(s, key);
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('INTERNAL_ERROR');
    expect(failed.headers['idempotency-status']).toBe('bypassed');
    expect(await productCount(s.shopId)).toBe(1);
    expect(await keyRows(s.credentialId)).toBe(0);

    duplicate = realDuplicate;
    const retry = await post(s, key);
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotency-status']).toBe('created');
    expect(await productCount(s.shopId)).toBe(2);
  });

  test('a business rejection after a write: rolled back, and the rejection is replayed', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    let calls = 0;
    duplicate = async (ctx) => {
      calls++;
      await realDuplicate(ctx);
      throw new NotFoundError('PRODUCT_NOT_FOUND');
    };
    const first = await post(s, key);
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('PRODUCT_NOT_FOUND');
    expect(first.headers['idempotency-status']).toBe('created');
    expect(await productCount(s.shopId)).toBe(1);

    duplicate = realDuplicate; // even if it would now succeed, the key answers what it answered
    const retry = await post(s, key);
    expect(retry.status).toBe(404);
    expect(retry.headers['idempotency-status']).toBe('cached');
    expect(retry.text).toBe(first.text);
    expect(calls).toBe(1);
    expect(await productCount(s.shopId)).toBe(1);
  });

  test('a request still processing: 409 IDEMPOTENCY_IN_PROGRESS with Retry-After, nothing written', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const scope = { credentialId: s.credentialId, operationId: 'duplicateProduct', key };
    await leftProcessing(s, key, 30_000, 'held');
    const res = await post(s, key);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    expect(res.headers['idempotency-status']).toBe('processing');
    expect(res.headers['retry-after']).toBe('1');
    expect(await productCount(s.shopId)).toBe(1);
    expect((await idempotencyKeyByScope(t.db, scope))?.state).toBe('processing');
  });

  test('a lapsed lease (crashed request) is taken over', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const scope = { credentialId: s.credentialId, operationId: 'duplicateProduct', key };
    await leftProcessing(s, key, 2_000, 'lapsed'); // its owner stopped renewing
    const res = await post(s, key);
    expect(res.status).toBe(201);
    expect(res.headers['idempotency-status']).toBe('created');
    expect(await productCount(s.shopId)).toBe(2);
    const row = await idempotencyKeyByScope(t.db, scope);
    expect(row?.state).toBe('completed');
    expect(row?.locked_at.getTime()).toBe(clock);
    const replay = await post(s, key);
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.text).toBe(res.text);
  });

  test('a live request keeps its key past the old 60 s lock timeout by the clock: its lease is renewed, not timed', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    // The first request hangs inside its handler (holding its transaction) until released.
    duplicate = async (ctx) => {
      entered();
      await gate;
      return realDuplicate(ctx);
    };
    const hung = post(s, key).then((r) => r);
    await inside;
    duplicate = realDuplicate;
    if (t.database.kind === 'postgres') {
      const busy = await post(s, key);
      expect(busy.status).toBe(409);
      expect(busy.headers['idempotency-status']).toBe('processing');
      clock += 61_000;
      // The owner is alive and holds its lease: still 409 (a lapsed lease is test/platform/idempotency-lease.test.ts).
      const still = await post(s, key);
      expect(still.status).toBe(409);
      expect(still.headers['idempotency-status']).toBe('processing');
      expect(await productCount(s.shopId)).toBe(1);
      release();
      const done = await hung;
      expect(done.status).toBe(201);
      expect(done.headers['idempotency-status']).toBe('created');
      expect(await productCount(s.shopId)).toBe(2);
      const replay = await post(s, key);
      expect(replay.headers['idempotency-status']).toBe('cached');
      expect(replay.text).toBe(done.text);
    } else {
      // PGlite has one connection: the hung transaction blocks every other query, so just let it finish.
      release();
      expect((await hung).headers['idempotency-status']).toBe('created');
    }
  });
});

describe('expiry', () => {
  test('after 24 h a key can be reused, and the purge deletes expired rows', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const first = await post(s, key);
    expect(first.headers['idempotency-status']).toBe('created');
    clock += 24 * HOUR - 1000;
    expect((await post(s, key)).headers['idempotency-status']).toBe('cached');
    clock += 2000;
    const again = await post(s, key);
    expect(again.headers['idempotency-status']).toBe('created');
    expect(again.body.data.id).not.toBe(first.body.data.id);
    expect(await productCount(s.shopId)).toBe(3);

    // Purge: a key used now expires 24 h from now; nothing before, everything of it after.
    const other = randomUUID();
    await post(s, other);
    await purgeExpiredIdempotencyKeys(t.db, clock); // other tests' keys may be expired by now; these two are not
    expect(await keyRows(s.credentialId)).toBe(2);
    clock += 25 * HOUR;
    expect(await purgeExpiredIdempotencyKeys(t.db, clock)).toBeGreaterThanOrEqual(2);
    expect(await keyRows(s.credentialId)).toBe(0);
  });
});

describe('concurrency', () => {
  test('20 concurrent identical requests with one key: one product, one created, the rest cached or 409', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(s, key)));
    const created = responses.filter((r) => r.headers['idempotency-status'] === 'created');
    const cached = responses.filter((r) => r.headers['idempotency-status'] === 'cached');
    const processing = responses.filter((r) => r.headers['idempotency-status'] === 'processing');
    expect(created).toHaveLength(1);
    expect(created.length + cached.length + processing.length).toBe(20);
    for (const r of [...created, ...cached]) {
      expect(r.status).toBe(201);
      expect(r.text).toBe(created[0]!.text);
    }
    for (const r of processing) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
      expect(r.headers['retry-after']).toBe('1');
    }
    expect(await productCount(s.shopId)).toBe(2);
    // Once complete, every replay is byte-identical.
    const replays = await Promise.all(Array.from({ length: 5 }, () => post(s, key)));
    for (const r of replays) {
      expect(r.headers['idempotency-status']).toBe('cached');
      expect(r.text).toBe(created[0]!.text);
    }
    expect(await productCount(s.shopId)).toBe(2);
    console.log(
      `[${t.database.kind}] 20 concurrent: created ${created.length}, cached ${cached.length}, processing (409) ${processing.length}`,
    );
  });

  test('10 concurrent requests on a lapsed lease: exactly one takes it over', async () => {
    const s = await shopWithProduct();
    const key = randomUUID();
    await leftProcessing(s, key, 5 * 60_000, 'lapsed');
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(s, key)));
    const byStatus = (v: string) => responses.filter((r) => r.headers['idempotency-status'] === v);
    expect(byStatus('created')).toHaveLength(1);
    expect(byStatus('created').length + byStatus('cached').length + byStatus('processing').length).toBe(10);
    for (const r of byStatus('cached')) expect(r.text).toBe(byStatus('created')[0]!.text);
    expect(await productCount(s.shopId)).toBe(2);
  });
});
