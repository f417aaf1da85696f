// The operator actions behind the CLI (src/ops/admin.ts), called directly on a test database: what each one
// accepts, refuses and writes. test/ops/cli.test.ts checks the command line around them (arguments, --json, exit
// codes) in child processes.
import { sql } from 'kysely';
import { liveCredentialWithShopByHash } from '../../db/queries/credentials';
import { shopById } from '../../db/queries/shops';
import { hashCredential } from '../../src/auth/credentials';
import { knownScopes } from '../../src/auth/scopes';
import * as admin from '../../src/ops/admin';
import { FixtureError } from '../../src/ops/fixtures/fixtures';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import type { Operator } from '../../src/ops/operator';
import { loadConfig } from '../../src/config';
import { systemClock } from '../../src/platform/clock';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());
const db = () => database.db;
// The command line's operator: this file's database, the environment's configuration, the wall clock.
const operator = (): Operator => ({ db: database.db, config: loadConfig(), clock: systemClock });

describe('createShop', () => {
  test('defaults: the free plan and USD; the name trimmed; a shop_ id', async () => {
    const shop = await admin.createShop(db(), { name: '  Corner Shop  ' });
    expect(shop).toMatchObject({ name: 'Corner Shop', plan: 'free', currency: 'USD', status: 'active' });
    expect(shop.id).toMatch(/^shop_/);
    expect(await shopById(db(), shop.id)).toMatchObject({ name: 'Corner Shop', plan: 'free', currency: 'USD' });
  });

  test('takes a plan and a currency in any case', async () => {
    const shop = await admin.createShop(db(), { name: 'B', plan: 'business', currency: 'eur' });
    expect(shop).toMatchObject({ plan: 'business', currency: 'EUR' });
  });

  test.each([
    ['an unknown plan', { name: 'x', plan: 'gold' }, '--plan must be one of free, pro, business'],
    ['a currency of two letters', { name: 'x', currency: 'US' }, '--currency must be a three-letter ISO 4217 code'],
    ['a currency with a letter before', { name: 'x', currency: 'XUSD' }, '--currency'],
    ['a currency with a letter after', { name: 'x', currency: 'USDX' }, '--currency'],
    ['a currency with a digit', { name: 'x', currency: 'US1' }, '--currency'],
    ['an empty name', { name: '' }, '--name must not be empty'],
    ['a name of spaces', { name: '   ' }, '--name must not be empty'],
  ])('refuses %s, and writes nothing', async (_case, input, message) => {
    const before = await shopTotal();
    await expect(admin.createShop(db(), input)).rejects.toThrow(new admin.AdminError(message).message);
    await expect(admin.createShop(db(), input)).rejects.toBeInstanceOf(admin.AdminError);
    expect(await shopTotal()).toBe(before);
  });
});

async function shopTotal(): Promise<number> {
  return Number((await sql<{ n: string }>`select count(*)::text as n from shops`.execute(db())).rows[0]!.n);
}

describe('setShopStatus', () => {
  test('suspends and reactivates a shop', async () => {
    const shop = await admin.createShop(db(), { name: 'S' });
    expect((await admin.setShopStatus(db(), shop.id, 'suspended')).status).toBe('suspended');
    expect((await shopById(db(), shop.id))?.status).toBe('suspended');
    expect((await admin.setShopStatus(db(), shop.id, 'active')).status).toBe('active');
  });

  test('an unknown shop: AdminError naming the id', async () => {
    await expect(admin.setShopStatus(db(), 'shop_nope', 'suspended')).rejects.toThrow(
      new admin.AdminError('No shop with id shop_nope'),
    );
  });
});

describe('parseScopes', () => {
  test('splits on spaces and commas, drops repeats and empties, keeps order', () => {
    expect(admin.parseScopes('orders.read products.write')).toEqual(['orders.read', 'products.write']);
    expect(admin.parseScopes(' orders.read,,products.write  orders.read ')).toEqual(['orders.read', 'products.write']);
    expect(admin.parseScopes('orders.read\tproducts.read')).toEqual(['orders.read', 'products.read']);
    expect(admin.parseScopes('*')).toEqual(['*']);
  });

  test('every known scope is accepted', () => {
    expect(admin.parseScopes(knownScopes.join(' '))).toEqual([...knownScopes]);
  });

  test.each([
    ['', '--scopes must name at least one scope (or "*")'],
    [' , ', '--scopes must name at least one scope (or "*")'],
    ['orders', '"orders" is not a scope: use resource.read, resource.write or *'],
    ['orders.delete', '"orders.delete" is not a scope'],
    ['Orders.read', '"Orders.read" is not a scope'],
    ['**', '"**" is not a scope'],
    ['gadgets.read', 'Unknown scope "gadgets.read". Known scopes: '],
    ['orders.read gadgets.write', 'Unknown scope "gadgets.write"'],
  ])('refuses %j', (text, message) => {
    expect(() => admin.parseScopes(text)).toThrow(admin.AdminError);
    expect(() => admin.parseScopes(text)).toThrow(message);
  });

  test('an unknown scope lists the known ones', () => {
    expect(() => admin.parseScopes('gadgets.read')).toThrow(`Known scopes: ${knownScopes.join(' ')}`);
  });
});

describe('API keys', () => {
  test('createApiKey returns the key once; only its hash is stored, and it authenticates', async () => {
    const shop = await admin.createShop(db(), { name: 'K' });
    const created = await admin.createApiKey(db(), { shopId: shop.id, scopes: ['orders.read'], name: 'ci' });
    expect(created).toEqual({
      id: expect.stringMatching(/^key_/),
      key: created.key,
      scopes: ['orders.read'],
      name: 'ci',
      mode: 'live',
      shop_id: shop.id,
    });
    expect(created.key).toMatch(/^mdk_[A-Za-z0-9_-]{43}$/);
    const row = await db().selectFrom('credentials').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      shop_id: shop.id,
      kind: 'api_key',
      name: 'ci',
      token_hash: hashCredential(created.key),
      display_prefix: created.key.slice(0, 8),
      revoked_at: null,
    });
    expect(JSON.stringify(row)).not.toContain(created.key);
    expect(await liveCredentialWithShopByHash(db(), hashCredential(created.key), new Date())).toMatchObject({
      credential: { id: created.id, scopes: ['orders.read'] },
      shop: { id: shop.id },
    });
    const unnamed = await admin.createApiKey(db(), { shopId: shop.id, scopes: ['*'] });
    expect(unnamed.name).toBeNull();
  });

  test('createApiKey for an unknown shop: AdminError, nothing written', async () => {
    const before = await db().selectFrom('credentials').select('id').execute();
    await expect(admin.createApiKey(db(), { shopId: 'shop_nope', scopes: ['*'] })).rejects.toThrow(
      new admin.AdminError('No shop with id shop_nope'),
    );
    expect(await db().selectFrom('credentials').select('id').execute()).toEqual(before);
  });

  test('listApiKeys: every key of the shop, oldest first, with its mode and state, never the key itself', async () => {
    const shop = await admin.createShop(db(), { name: 'L' });
    const first = await admin.createApiKey(db(), { shopId: shop.id, scopes: ['orders.read'], name: 'one' });
    const second = await admin.createApiKey(db(), { shopId: shop.id, scopes: ['*'] });
    await sql`update credentials set last_used_at = '2026-03-01T10:00:00.000Z' where id = ${second.id}`.execute(db());
    const revoked = await admin.revokeApiKey(db(), first.id);
    const listed = await admin.listApiKeys(db(), shop.id, { now: new Date() });
    expect(listed.map((k) => k.id)).toEqual([first.id, second.id]);
    expect(listed[0]).toEqual({
      id: first.id,
      shop_id: shop.id,
      mode: 'live',
      state: 'revoked',
      name: 'one',
      kind: 'api_key',
      prefix: first.key.slice(0, 8),
      scopes: ['orders.read'],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      last_used_at: null,
      revoked_at: revoked.revoked_at,
    });
    expect(listed[1]).toMatchObject({
      mode: 'live',
      state: 'active',
      name: null,
      scopes: ['*'],
      last_used_at: '2026-03-01T10:00:00.000Z',
      revoked_at: null,
    });
    expect(JSON.stringify(listed)).not.toContain(first.key);
    const other = await admin.createShop(db(), { name: 'Other' });
    expect(await admin.listApiKeys(db(), other.id, { now: new Date() })).toEqual([]);
    await expect(admin.listApiKeys(db(), 'shop_nope', { now: new Date() })).rejects.toThrow(
      new admin.AdminError('No shop with id shop_nope'),
    );
  });

  test('revokeApiKey: revoked at once and for good; an unknown or already revoked key is an AdminError', async () => {
    const shop = await admin.createShop(db(), { name: 'R' });
    const { id, key } = await admin.createApiKey(db(), { shopId: shop.id, scopes: ['*'] });
    const revoked = await admin.revokeApiKey(db(), id);
    expect(revoked.id).toBe(id);
    expect(Date.now() - Date.parse(revoked.revoked_at!)).toBeLessThan(60_000);
    expect(await liveCredentialWithShopByHash(db(), hashCredential(key), new Date())).toBeUndefined();
    await expect(admin.revokeApiKey(db(), id)).rejects.toThrow(
      new admin.AdminError(`No active key with id ${id} (unknown, or already revoked)`),
    );
    await expect(admin.revokeApiKey(db(), 'key_nope')).rejects.toThrow(admin.AdminError);
  });
});

describe('seedShop', () => {
  test('validates the file, then writes it for the shop and returns the ids', async () => {
    const shop = await admin.createShop(db(), { name: 'Seeded' });
    const created = await admin.seedShop(operator(), shop.id, {
      products: [{ title: 'Keys', type: 'SERIALS', price: '1.00', serials: ['A', 'B'] }],
      customers: [{ email: 'ada@example.com' }],
    });
    expect(created.products).toHaveLength(1);
    expect(created.serials).toBe(2);
    expect(created.customers).toHaveLength(1);
    const product = await db()
      .selectFrom('products')
      .selectAll()
      .where('id', '=', created.products[0]!)
      .executeTakeFirstOrThrow();
    expect(product).toMatchObject({ shop_id: shop.id, title: 'Keys', stock: 2 });
  });

  test('a bad file is a FixtureError and an unknown shop an AdminError; nothing is written either way', async () => {
    const before = await shopTotal();
    const products = () => db().selectFrom('products').select('id').execute();
    const productsBefore = await products();
    await expect(admin.seedShop(operator(), 'shop_nope', { products: [{ title: 'X', price: '1' }] })).rejects.toThrow(
      new admin.AdminError('No shop with id shop_nope'),
    );
    const shop = await admin.createShop(db(), { name: 'Bad file' });
    await expect(admin.seedShop(operator(), shop.id, { products: [{ title: 'X' }] })).rejects.toBeInstanceOf(
      FixtureError,
    );
    expect(await products()).toEqual(productsBefore);
    expect(await shopTotal()).toBe(before + 1);
  });
});

describe('createDemo', () => {
  test('a live business shop in USD with the demo products and a live full-access key that authenticates', async () => {
    const demo = await admin.createDemo(operator());
    expect(await shopById(db(), demo.shop_id)).toMatchObject({
      name: 'Demo Shop',
      plan: 'business',
      currency: 'USD',
      livemode: true,
    });
    expect(demo.products).toHaveLength(admin.demoFixtures.products!.length);
    const titles = await db().selectFrom('products').select('title').where('shop_id', '=', demo.shop_id).execute();
    expect(titles.map((p) => p.title).sort()).toEqual(admin.demoFixtures.products!.map((p) => p.title).sort());
    expect(demo.live_key).toMatch(/^mdk_(?!test_)[A-Za-z0-9_-]{43}$/);
    const auth = await liveCredentialWithShopByHash(db(), hashCredential(demo.live_key), new Date());
    expect(auth).toMatchObject({
      credential: { id: demo.live_key_id, scopes: ['*'] },
      shop: { id: demo.shop_id, livemode: true },
    });
    const keys = await admin.listApiKeys(db(), demo.shop_id, { mode: 'live', now: new Date() });
    expect(keys.map((k) => k.name)).toEqual(['demo']);
    // The live demo shop offers no SANDBOX and holds no order: the sample order is in test mode.
    const gateways = await admin.listGateways(db(), demo.shop_id);
    expect(gateways.map((g) => g.code)).not.toContain('SANDBOX');
    const liveOrders = await db().selectFrom('orders').select('id').where('shop_id', '=', demo.shop_id).execute();
    expect(liveOrders).toEqual([]);
  });

  test('its test twin has the same products, a test full-access key and the SANDBOX gateway', async () => {
    const demo = await admin.createDemo(operator());
    const twin = await shopById(db(), demo.test_shop_id);
    expect(twin).toMatchObject({ livemode: false, live_shop_id: demo.shop_id, plan: 'business', currency: 'USD' });
    expect(demo.test_products).toHaveLength(admin.demoFixtures.products!.length);
    const titles = await db().selectFrom('products').select('title').where('shop_id', '=', demo.test_shop_id).execute();
    expect(titles.map((p) => p.title).sort()).toEqual(admin.demoFixtures.products!.map((p) => p.title).sort());
    expect(demo.test_key).toMatch(/^mdk_test_[A-Za-z0-9_-]{43}$/);
    const auth = await liveCredentialWithShopByHash(db(), hashCredential(demo.test_key), new Date());
    expect(auth).toMatchObject({
      credential: { id: demo.test_key_id, scopes: ['*'] },
      shop: { id: demo.test_shop_id, livemode: false },
    });
    const gateways = await admin.listGateways(db(), demo.test_shop_id);
    expect(gateways.filter((g) => g.active).map((g) => g.code)).toContain('SANDBOX');
  });

  test('the demo order is a test-mode order announced as any order is: order:created in the outbox', async () => {
    const demo = await admin.createDemo(operator());
    const events = await db()
      .selectFrom('events')
      .select(['type', 'data', 'livemode'])
      .where('shop_id', '=', demo.test_shop_id)
      .where('type', '=', 'order:created')
      .execute();
    expect(events.map((e) => [(JSON.parse(e.data) as { id: string }).id, e.livemode])).toEqual([
      [demo.test_order_id, false],
    ]);
    expect(demo.test_checkout_url).toMatch(/\/invoice\/[0-9a-f-]{36}$/);
  });
});
