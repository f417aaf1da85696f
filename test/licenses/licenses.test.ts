// Licenses as resources (issue 11, item 1): POST /licenses (generated or given keys, 404 product, 409 key taken,
// license:created), GET /licenses (cursor, filters by product, status, customer; status EXPIRED as of now), GET,
// PATCH (revoke and re-activate, expiry, note, activation limit, devices: hwid null / hwid / release_devices) and
// DELETE /licenses/{id}; another shop's license is 404 on every {id} route and a rejected request writes nothing.
// How keys are kept: never in clear (a keyed hash and a sealed copy), so the database alone does not reveal them.
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let keyA: string;
let readerA: string;
let keyB: string;
let productA: string;
let otherProductA: string;
let licenseProductA: string;
let productB: string;
let customerA: string;

const NOW = Date.parse('2026-11-22T00:00:00Z');
const generatedKey = /^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){4}$/;

beforeAll(async () => {
  clock = new ManualClock(NOW);
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'Licenses A', scopes: ['licenses.read', 'licenses.write'] },
    b: { name: 'Licenses B' },
  }));
  readerA = (await t.createKey(shopA, ['licenses.read'])).key;
  const a = await t.seed(shopA, {
    products: [
      { title: 'App', price: '10.00' },
      { title: 'Other App', price: '12.00' },
      { title: 'Licensed', price: '20.00', license_activation_limit: 3, license_duration_days: 30 },
    ],
    customers: [{ email: 'ada@example.com' }],
  });
  [productA, otherProductA, licenseProductA] = a.products as [string, string, string];
  customerA = a.customers[0]!;
  productB = (await t.seed(shopB, { products: [{ title: 'App', price: '10.00' }] })).products[0]!;
});
afterAll(() => t.close());

const create = (body: object, key = keyA) => t.http.post('/dev/v1/licenses').set(bearer(key)).send(body);
const get = (id: string, key = keyA) => t.http.get(`/dev/v1/licenses/${id}`).set(bearer(key));
const patch = (id: string, body: object, key = keyA) =>
  t.http.patch(`/dev/v1/licenses/${id}`).set(bearer(key)).send(body);
const remove = (id: string, key = keyA) => t.http.delete(`/dev/v1/licenses/${id}`).set(bearer(key));
const list = (query = '', key = keyA) => t.http.get(`/dev/v1/licenses${query}`).set(bearer(key));

const eventsOf = async (type: string, shopId = shopA) =>
  (
    await t.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', type)
      .where('shop_id', '=', shopId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((e) => JSON.parse(e.data) as Record<string, unknown>);

/** Everything a license request may write. */
const everything = () => rowCounts(t.db, ['licenses', 'license_devices', 'events', 'server_secrets']);
const licenseRow = (id: string) => t.db.selectFrom('licenses').selectAll().where('id', '=', id).executeTakeFirst();
const devicesOf = async (id: string) =>
  (
    await t.db
      .selectFrom('license_devices')
      .select(['hwid', 'slot'])
      .where('license_id', '=', id)
      .orderBy('slot')
      .execute()
  ).map((d) => `${d.slot}:${d.hwid}`);

describe('POST /licenses', () => {
  test('generates a readable random key, ACTIVE, 201, license:created; the key is stored only hashed and sealed', async () => {
    const before = (await eventsOf('license:created')).length;
    const res = await create({ product_id: productA, customer_email: 'Ada@Example.com', note: 'Support' });
    expect(res.status).toBe(201);
    const lic = res.body.data;
    expect(lic.key).toMatch(generatedKey);
    expect(lic).toMatchObject({
      product_id: productA,
      order_id: null,
      customer_id: customerA,
      customer_email: 'ada@example.com',
      status: 'ACTIVE',
      hwid: null,
      activation_limit: 1,
      devices: [],
      expires_at: null,
      note: 'Support',
      last_validated_at: null,
      created_at: NOW / 1000,
      updated_at: NOW / 1000,
    });
    expect(lic.id).toMatch(/^lic_/);
    const events = await eventsOf('license:created');
    expect(events).toHaveLength(before + 1);
    // The event is the license without its key (a secret no event carries): `key_hint` instead.
    const { key: _key, ...withoutKey } = lic;
    expect(events[events.length - 1]).toEqual({ ...withoutKey, key_hint: lic.key.slice(-5) });
    // Neither the key nor any part of it is in the row in clear.
    const row = await licenseRow(lic.id);
    expect(row!.key_hash).toHaveLength(32);
    const text = JSON.stringify({
      ...row,
      key_hash: row!.key_hash.toString('latin1'),
      key_sealed: row!.key_sealed.toString('latin1'),
    });
    expect(text).not.toContain(lic.key);
    expect(text).not.toContain(lic.key.slice(0, 5));
    // Shown again on reads.
    expect((await get(lic.id)).body.data.key).toBe(lic.key);
  });

  test('two generated keys differ; keys are 125 random bits (25 base32 digits)', async () => {
    const keys = new Set<string>();
    for (let i = 0; i < 5; i++) keys.add((await create({ product_id: productA })).body.data.key);
    expect(keys.size).toBe(5);
  });

  test('a given key, an expiry, a device and an activation limit; the product default limit', async () => {
    const res = await create({
      product_id: productA,
      key: 'MY-OWN-key_01',
      expires_at: NOW / 1000 + 3600,
      hwid: 'HW-1',
      activation_limit: 2,
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      key: 'MY-OWN-key_01',
      expires_at: NOW / 1000 + 3600,
      hwid: 'HW-1',
      activation_limit: 2,
      devices: [{ hwid: 'HW-1', registered_at: NOW / 1000, last_validated_at: NOW / 1000 }],
      customer_id: null,
      customer_email: null,
    });
    const byProduct = await create({ product_id: licenseProductA });
    // The license product's terms give the limit; an API-created license without expires_at never expires.
    expect(byProduct.body.data).toMatchObject({ activation_limit: 3, expires_at: null });
  });

  test('a key the shop already has: 409 CONFLICT, nothing written; another shop may have the same key', async () => {
    expect((await create({ product_id: productA, key: 'TAKEN-KEY-1' })).status).toBe(201);
    const before = await everything();
    const res = await create({ product_id: otherProductA, key: 'TAKEN-KEY-1', hwid: 'HW-X' });
    expect([res.status, res.body.error.code]).toEqual([409, 'CONFLICT']);
    expect(await everything()).toEqual(before);
    const inB = await create({ product_id: productB, key: 'TAKEN-KEY-1' }, keyB);
    expect(inB.status).toBe(201);
  });

  test('unknown or another shop’s product: 404 PRODUCT_NOT_FOUND, nothing written', async () => {
    const before = await everything();
    for (const product_id of ['prod_missing', productB]) {
      const res = await create({ product_id });
      expect([res.status, res.body.error.code]).toEqual([404, 'PRODUCT_NOT_FOUND']);
    }
    expect(await everything()).toEqual(before);
  });

  test('bad values: 422 with details, nothing written', async () => {
    const before = await everything();
    const cases: [object, string][] = [
      [{}, 'product_id'],
      [{ product_id: productA, key: 'has space' }, 'key'],
      [{ product_id: productA, key: '' }, 'key'],
      [{ product_id: productA, key: 'ключ' }, 'key'],
      [{ product_id: productA, activation_limit: 0 }, 'activation_limit'],
      [{ product_id: productA, activation_limit: 1001 }, 'activation_limit'],
      [{ product_id: productA, expires_at: -1 }, 'expires_at'],
      [{ product_id: productA, customer_email: 'nope' }, 'customer_email'],
      [{ product_id: productA, hwid: '' }, 'hwid'],
      [{ product_id: productA, extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect({ body, status: res.status, code: res.body.error.code }).toEqual({
        body,
        status: 422,
        code: 'VALIDATION_ERROR',
      });
      expect(JSON.stringify(res.body.error.details)).toContain(field);
    }
    expect(await everything()).toEqual(before);
  });

  test('licenses.read alone may not create: 403, nothing written', async () => {
    const before = await everything();
    const res = await create({ product_id: productA }, readerA);
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await everything()).toEqual(before);
  });
});

describe('GET /licenses/{id}, PATCH, DELETE', () => {
  test('revoke (license:revoked once), re-activate (no event), expiry and note; fields not sent keep their value', async () => {
    const lic = (await create({ product_id: productA, note: 'n1', expires_at: NOW / 1000 + 100 })).body.data;
    const before = (await eventsOf('license:revoked')).length;
    clock.advance(5000);
    const revoked = await patch(lic.id, { status: 'REVOKED' });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({
      status: 'REVOKED',
      note: 'n1',
      expires_at: NOW / 1000 + 100,
      key: lic.key,
    });
    expect(revoked.body.data.updated_at).toBe(NOW / 1000 + 5);
    const { key: _key, ...withoutKey } = revoked.body.data;
    expect((await eventsOf('license:revoked')).slice(before)).toEqual([{ ...withoutKey, key_hint: lic.key.slice(-5) }]);
    // Revoking a revoked license again: no second event.
    await patch(lic.id, { status: 'REVOKED' });
    expect((await eventsOf('license:revoked')).length).toBe(before + 1);
    const back = await patch(lic.id, { status: 'ACTIVE', expires_at: null, note: null });
    expect(back.body.data).toMatchObject({ status: 'ACTIVE', expires_at: null, note: null });
    expect((await eventsOf('license:revoked')).length).toBe(before + 1);
    clock.set(NOW);
  });

  test('EXPIRED is an ACTIVE license past expires_at, as of now (the injectable clock)', async () => {
    const lic = (await create({ product_id: productA, expires_at: NOW / 1000 + 60 })).body.data;
    expect((await get(lic.id)).body.data.status).toBe('ACTIVE');
    clock.set(NOW + 60_000);
    expect((await get(lic.id)).body.data.status).toBe('EXPIRED');
    const renewed = await patch(lic.id, { expires_at: NOW / 1000 + 3600 });
    expect(renewed.body.data.status).toBe('ACTIVE');
    clock.set(NOW);
  });

  test('devices: hwid replaces, hwid null releases all, release_devices releases some, activation_limit bounds them', async () => {
    const lic = (await create({ product_id: productA, activation_limit: 3, hwid: 'D1' })).body.data;
    await t.db.transaction().execute(async (trx) => {
      const now = new Date(NOW);
      await trx
        .insertInto('license_devices')
        .values(
          ['D2', 'D3'].map((hwid, i) => ({
            id: `ldv_test_${lic.id}_${i}`,
            shop_id: shopA,
            license_id: lic.id,
            slot: i + 2,
            hwid,
            registered_at: now,
            last_validated_at: now,
          })),
        )
        .execute();
    });
    expect(await devicesOf(lic.id)).toEqual(['1:D1', '2:D2', '3:D3']);
    const released = await patch(lic.id, { release_devices: ['D2', 'NOT-THERE'] });
    expect(released.status).toBe(200);
    expect(released.body.data.devices.map((d: { hwid: string }) => d.hwid)).toEqual(['D1', 'D3']);
    expect(released.body.data.hwid).toBe('D1');

    // Lowering the limit below the devices that stay: 422, nothing changed.
    const before = await everything();
    const refused = await patch(lic.id, { activation_limit: 1 });
    expect([refused.status, refused.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(refused.body.error.details[0].field).toBe('activation_limit');
    expect(await everything()).toEqual(before);
    expect(await devicesOf(lic.id)).toEqual(['1:D1', '3:D3']);
    expect((await licenseRow(lic.id))!.activation_limit).toBe(3);

    // Down to 2: D3 (slot 3) moves into the free slot 2, keeping its registration time.
    const lowered = await patch(lic.id, { activation_limit: 2 });
    expect(lowered.body.data).toMatchObject({ activation_limit: 2 });
    expect(await devicesOf(lic.id)).toEqual(['1:D1', '2:D3']);
    // Released with the limit in one request.
    const both = await patch(lic.id, { activation_limit: 1, release_devices: ['D1'] });
    expect(both.body.data).toMatchObject({ activation_limit: 1, hwid: 'D3' });
    expect(await devicesOf(lic.id)).toEqual(['1:D3']);

    const replaced = await patch(lic.id, { hwid: 'NEW' });
    expect(replaced.body.data.devices).toEqual([
      { hwid: 'NEW', registered_at: NOW / 1000, last_validated_at: NOW / 1000 },
    ]);
    const cleared = await patch(lic.id, { hwid: null });
    expect(cleared.body.data).toMatchObject({ hwid: null, devices: [] });
    expect(await devicesOf(lic.id)).toEqual([]);
  });

  test('PATCH with nothing, or bad values: 422, nothing changed', async () => {
    const lic = (await create({ product_id: productA, hwid: 'KEEP' })).body.data;
    const before = await everything();
    const row = await licenseRow(lic.id);
    for (const body of [
      {},
      { status: 'EXPIRED' },
      { activation_limit: 0 },
      { hwid: '' },
      { release_devices: ['a', 'a'] },
    ]) {
      const res = await patch(lic.id, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
    }
    expect(await everything()).toEqual(before);
    expect(await licenseRow(lic.id)).toEqual(row);
  });

  test('DELETE removes the license and its devices; again: 404', async () => {
    const lic = (await create({ product_id: productA, hwid: 'GONE' })).body.data;
    const res = await remove(lic.id);
    expect([res.status, res.body]).toEqual([200, { data: {} }]);
    expect(await licenseRow(lic.id)).toBeUndefined();
    expect(await devicesOf(lic.id)).toEqual([]);
    const again = await remove(lic.id);
    expect([again.status, again.body.error.code]).toEqual([404, 'LICENSE_NOT_FOUND']);
    expect((await get(lic.id)).status).toBe(404);
  });

  test('another shop’s license: 404 LICENSE_NOT_FOUND on GET, PATCH and DELETE; nothing changed', async () => {
    const theirs = (await create({ product_id: productB, hwid: 'B-DEV' }, keyB)).body.data;
    const row = await licenseRow(theirs.id);
    const before = await everything();
    for (const res of [
      await get(theirs.id),
      await patch(theirs.id, { status: 'REVOKED', hwid: null }),
      await remove(theirs.id),
      await get('lic_missing'),
      await patch('lic_missing', { note: 'x' }),
      await remove('lic_missing'),
    ]) {
      expect([res.status, res.body.error.code]).toEqual([404, 'LICENSE_NOT_FOUND']);
    }
    expect(await everything()).toEqual(before);
    expect(await licenseRow(theirs.id)).toEqual(row);
    expect(await devicesOf(theirs.id)).toEqual(['1:B-DEV']);
    expect((await get(theirs.id, keyB)).body.data.status).toBe('ACTIVE');
  });
});

describe('GET /licenses', () => {
  let listShop: string;
  let listKey: string;
  let p1: string;
  let p2: string;
  let ada: string;

  beforeAll(async () => {
    listShop = await t.createShop({ name: 'Licenses list' });
    listKey = (await t.createKey(listShop, ['licenses.read', 'licenses.write'])).key;
    const seeded = await t.seed(listShop, {
      products: [
        { title: 'One', price: '1.00' },
        { title: 'Two', price: '2.00' },
      ],
      customers: [{ email: 'ada@example.com' }],
    });
    [p1, p2] = seeded.products as [string, string];
    ada = seeded.customers[0]!;
    // 7 licenses, one per second: 4 of One (1 revoked, 1 expired), 3 of Two (2 for ada).
    const specs = [
      { product_id: p1 },
      { product_id: p1, customer_email: 'ada@example.com' },
      { product_id: p1, expires_at: NOW / 1000 - 10 },
      { product_id: p1, revoke: true },
      { product_id: p2, customer_email: 'ada@example.com' },
      { product_id: p2, customer_email: 'zed@example.com' },
      { product_id: p2 },
    ];
    for (const { revoke, ...body } of specs) {
      clock.advance(1000);
      const id = (await create(body, listKey)).body.data.id;
      if (revoke) await patch(id, { status: 'REVOKED' }, listKey);
    }
    clock.set(NOW);
  });

  const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((l) => l.id);

  test('newest first, walked with a cursor without skipping or repeating', async () => {
    const all = await list('?limit=100', listKey);
    expect(all.status).toBe(200);
    expect(all.body.data).toHaveLength(7);
    expect(all.body.pagination).toEqual({ next_cursor: null, has_more: false });
    const created = all.body.data.map((l: { created_at: number }) => l.created_at);
    expect(created).toEqual([...created].sort((a: number, b: number) => b - a));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof list>> = await list(
        `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        listKey,
      );
      seen.push(...ids(page));
      cursor = page.body.pagination.next_cursor;
    } while (cursor);
    expect(seen).toEqual(ids(all));
  });

  test('filters: product, status (ACTIVE / EXPIRED / REVOKED as of now), customer id and email, combined', async () => {
    const count = async (q: string) => (await list(`?limit=100&${q}`, listKey)).body.data.length;
    expect(await count(`product_id=${p1}`)).toBe(4);
    expect(await count(`product_id=${p2}`)).toBe(3);
    expect(await count('status=REVOKED')).toBe(1);
    expect(await count('status=EXPIRED')).toBe(1);
    expect(await count('status=ACTIVE')).toBe(5);
    expect(await count(`customer_id=${ada}`)).toBe(2);
    expect(await count('customer_email=ADA@example.com')).toBe(2);
    expect(await count('customer_email=zed@example.com')).toBe(1);
    expect(await count(`product_id=${p2}&customer_id=${ada}`)).toBe(1);
    expect(await count(`product_id=${p1}&status=ACTIVE`)).toBe(2);
    const expired = (await list('?status=EXPIRED', listKey)).body.data[0];
    expect(expired.status).toBe('EXPIRED');
    // Later, more of them are expired... none here has another expiry; the revoked one stays REVOKED.
    expect((await list('?status=REVOKED', listKey)).body.data[0].status).toBe('REVOKED');
  });

  test('a cursor is bound to its filters: another filter is 422 on query.cursor', async () => {
    const first = await list(`?limit=1&product_id=${p1}`, listKey);
    const cursor = first.body.pagination.next_cursor as string;
    expect(cursor).toBeTruthy();
    const same = await list(`?limit=1&product_id=${p1}&cursor=${encodeURIComponent(cursor)}`, listKey);
    expect(same.status).toBe(200);
    const other = await list(`?limit=1&product_id=${p2}&cursor=${encodeURIComponent(cursor)}`, listKey);
    expect(other.status).toBe(422);
    expect(other.body.error.details[0].field).toBe('query.cursor');
  });

  test('bad filter values: 422; only the shop’s own licenses are listed', async () => {
    for (const q of ['status=LOST', 'customer_email=nope', 'product_id=a%20b', 'limit=0']) {
      expect((await list(`?${q}`, listKey)).status).toBe(422);
    }
    const mine = new Set(ids(await list('?limit=100', listKey)));
    const fromA = ids(await list('?limit=100', keyA));
    expect(fromA.some((id) => mine.has(id))).toBe(false);
    const empty = await list(`?product_id=${productB}`, listKey);
    expect(empty.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
  });
});

test('the keys are unreadable without the server secret: the sealed copy opens only on its own row', async () => {
  const one = (await create({ product_id: productA })).body.data;
  const two = (await create({ product_id: productA })).body.data;
  expect((await get(one.id)).body.data.key).toBe(one.key);
  // Each row now holds a ciphertext sealed to the other one: it does not open (a server error, never a wrong key).
  await sql`update licenses set key_sealed = (select key_sealed from licenses where id = ${two.id}) where id = ${one.id}`.execute(
    t.db,
  );
  const res = await get(one.id);
  expect(res.status).toBe(500);
  expect(JSON.stringify(res.body)).not.toContain(two.key);
});
