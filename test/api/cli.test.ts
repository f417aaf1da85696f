// The admin CLI end to end, as an operator runs it (`npm run -s cli -- … --json`), against the same kind of
// database the suite runs on: shop and key round trip, seed with a bad file, and the embedded database's lock.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config';
import { createApp } from '../../src/app';
import { openEmbedded, openPostgres, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { contractClient, bearer, memoryLogger } from '../helpers/test-app';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

// Every command is a process of its own (tsx, then the database opened and migrated): seconds each, more on a
// loaded machine, so the tests get minutes rather than jest's default.
jest.setTimeout(240_000);

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

let dir: string;
let pgDatabase: TestDatabase | undefined;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-cli-'));
  if (process.env.DATABASE_URL) {
    pgDatabase = await createTestDatabase();
    await pgDatabase.db.destroy(); // the CLI and the app below open their own connections
    env = { ...process.env, DATABASE_URL: pgDatabase.url };
  } else {
    env = { ...process.env, DATABASE_URL: '', DATA_DIR: join(dir, 'pglite') };
  }
});
afterAll(async () => {
  if (pgDatabase?.url) {
    const name = new URL(pgDatabase.url).pathname.slice(1);
    await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
  rmSync(dir, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; json: any; stderr: string }> {
  try {
    const { stdout, stderr } = await run(tsx, [join(root, 'src', 'cli.ts'), ...args, '--json'], { env, cwd: root });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, json: e.stdout ? JSON.parse(e.stdout) : undefined, stderr: e.stderr };
  }
}

async function openDb(): Promise<DatabaseHandle> {
  const handle = env.DATABASE_URL ? openPostgres(env.DATABASE_URL) : await openEmbedded(env.DATA_DIR!);
  await migrateToLatest(handle.db);
  return handle;
}

/** Starts the app on the CLI's database, runs fn, and closes it again (the embedded database has one owner). */
async function withApp(fn: (http: ReturnType<typeof contractClient>) => Promise<void>): Promise<void> {
  const handle = await openDb();
  try {
    const app = await createApp({
      db: handle.db,
      config: loadConfig({ PUBLIC_URL: 'http://api.test' }),
      logger: memoryLogger().logger,
    });
    await fn(contractClient(app));
  } finally {
    await handle.close();
  }
}

test('shop create, key create, the key works, key list, key revoke, the key stops working', async () => {
  const shop = await cli('shop', 'create', '--name', 'CLI Shop', '--plan', 'pro', '--currency', 'eur');
  expect(shop.code).toBe(0);
  expect(shop.json.id).toMatch(/^shop_/);
  const key = await cli(
    'key',
    'create',
    '--shop',
    shop.json.id,
    '--scopes',
    'products.read orders.read',
    '--name',
    'ci',
  );
  expect(key.code).toBe(0);
  expect(key.json.key).toMatch(/^mdk_[A-Za-z0-9_-]{43}$/);

  await withApp(async (http) => {
    const me = await http.get('/dev/v1/me').set(bearer(key.json.key));
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: shop.json.id, name: 'CLI Shop', currency: 'EUR' });
  });

  const list = await cli('key', 'list', '--shop', shop.json.id);
  expect(list.json).toEqual([
    expect.objectContaining({ id: key.json.id, scopes: ['products.read', 'orders.read'], revoked_at: null }),
  ]);
  expect(JSON.stringify(list.json)).not.toContain(key.json.key); // shown once, never again

  expect((await cli('key', 'revoke', '--id', key.json.id)).code).toBe(0);
  await withApp(async (http) => {
    expect((await http.get('/dev/v1/me').set(bearer(key.json.key))).status).toBe(401);
  });

  const suspended = await cli('shop', 'suspend', '--id', shop.json.id);
  expect(suspended.json).toEqual({ id: shop.json.id, status: 'suspended' });
});

test('seed: a valid file creates products; an invalid one is refused with a clear error and writes nothing', async () => {
  const shop = await cli('shop', 'create', '--name', 'Seeded');
  const good = join(dir, 'good.json');
  writeFileSync(
    good,
    JSON.stringify({
      products: [
        { title: 'A', price: '1.50', variants: [{ title: 'V', price: '2.00' }] },
        { title: 'B', price: '3' },
      ],
    }),
  );
  const seeded = await cli('seed', '--shop', shop.json.id, '--file', good);
  expect(seeded.code).toBe(0);
  expect(seeded.json.products).toHaveLength(2);
  expect(seeded.json.variants).toHaveLength(1);

  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ products: [{ title: 'C', price: 'ten' }, { title: 'D' }] }));
  const refused = await cli('seed', '--shop', shop.json.id, '--file', bad);
  expect(refused.code).toBe(1);
  expect(refused.json.error.message).toMatch(/not valid[\s\S]*\/products\/0\/price[\s\S]*\/products\/1/);

  const key = await cli('key', 'create', '--shop', shop.json.id, '--scopes', 'products.read');
  await withApp(async (http) => {
    const res = await http.get('/dev/v1/products').set(bearer(key.json.key));
    expect(res.body.data.map((p: { title: string }) => p.title).sort()).toEqual(['A', 'B']);
  });
});

test('usage errors are clear and touch nothing', async () => {
  const unknownScope = await cli('key', 'create', '--shop', 'shop_x', '--scopes', 'products.delete');
  expect(unknownScope.code).toBe(1);
  expect(unknownScope.json.error.message).toMatch(/scope/);
  const noCommand = await cli('frobnicate');
  expect(noCommand.code).toBe(2);
  expect(noCommand.json.error.message).toMatch(/Unknown command/);
  const noShop = await cli('key', 'create', '--shop', 'shop_missing', '--scopes', '*');
  expect(noShop.json.error.message).toMatch(/No shop/);
});

test('demo prints a full-access key that works and a pending order; order create and complete walk a purchase', async () => {
  const demo = await cli('demo');
  expect(demo.code).toBe(0);
  expect(demo.json.checkout_url).toMatch(/\/invoice\/[0-9a-f-]{36}$/);
  let gameKey = '';
  await withApp(async (http) => {
    const caps = await http.get('/dev/v1/me/capabilities').set(bearer(demo.json.key));
    expect(caps.body.data.full_access).toBe(true);
    expect(caps.body.data.enabledPaymentMethods).toEqual(['SANDBOX']);
    const pending = await http.get('/dev/v1/orders').set(bearer(demo.json.key));
    expect(pending.body.data.map((o: { id: string; status: string }) => [o.id, o.status])).toEqual([
      [demo.json.order_id, 'PENDING'],
    ]);
    gameKey = pending.body.data[0].items[0].product_id;
  });
  const shop = demo.json.shop_id;
  const refused = await cli('order', 'create', '--shop', shop, '--email', 'a@example.com', '--items', `${gameKey}:999`);
  expect(refused.code).toBe(1);
  expect(refused.json.error.message).toMatch(/serials? of Game Key left/);
  const bad = await cli('order', 'create', '--shop', shop, '--email', 'a@example.com', '--items', 'x:y:z');
  expect([bad.code, bad.json.error.message]).toEqual([1, expect.stringMatching(/--items/)]);
  const created = await cli('order', 'create', '--shop', shop, '--email', 'cli@example.com', '--items', `${gameKey}:2`);
  expect(created.code).toBe(0);
  expect(created.json).toMatchObject({ status: 'PENDING', total: 29.98, customer_email: 'cli@example.com' });
  const done = await cli('order', 'complete', '--shop', shop, '--id', created.json.id);
  expect(done.code).toBe(0);
  expect(done.json.status).toBe('COMPLETED');
  expect(done.json.items[0].delivered_items.codes).toHaveLength(2);
  const again = await cli('order', 'complete', '--shop', shop, '--id', created.json.id);
  expect([again.code, again.json.error.message]).toEqual([1, expect.stringMatching(/COMPLETED/)]);
  const mail = await cli('emails', 'list', '--shop', shop);
  expect(mail.json.map((m: { template: string }) => m.template).sort()).toEqual(['delivery', 'receipt']);
}, 240_000);

(process.env.DATABASE_URL ? test.skip : test)(
  'the embedded database refuses a second process instead of corrupting it',
  async () => {
    const holder = await openDb();
    try {
      const res = await cli('shop', 'create', '--name', 'Blocked');
      expect(res.code).toBe(1);
      expect(res.json.error.message).toMatch(/in use by process \d+/);
    } finally {
      await holder.close();
    }
    expect((await cli('shop', 'create', '--name', 'After')).code).toBe(0);
  },
);

test('webhook create prints the secret once; the endpoint is listed without it; seed takes webhooks too', async () => {
  const shop = await cli('shop', 'create', '--name', 'Hooks');
  const created = await cli(
    'webhook',
    'create',
    '--shop',
    shop.json.id,
    '--url',
    'https://hooks.example.com/in',
    '--events',
    'order:paid,order:created',
  );
  expect(created.code).toBe(0);
  expect(created.json).toMatchObject({ url: 'https://hooks.example.com/in', events: ['order:paid', 'order:created'] });
  expect(created.json.secret).toMatch(/^whsec_/);

  const bad = await cli('webhook', 'create', '--shop', shop.json.id, '--url', 'ftp://x', '--events', 'order:paid');
  expect(bad.code).toBe(1);
  expect(bad.json.error.message).toMatch(/--url/);
  const unknownEvent = await cli(
    'webhook',
    'create',
    '--shop',
    shop.json.id,
    '--url',
    'https://x.example',
    '--events',
    'nope',
  );
  expect(unknownEvent.code).toBe(1);

  const file = join(dir, 'hooks.json');
  writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'https://hooks.example.com/seeded', events: ['*'] }] }));
  const seeded = await cli('seed', '--shop', shop.json.id, '--file', file);
  expect(seeded.code).toBe(0);
  expect(seeded.json.webhooks).toEqual([expect.objectContaining({ url: 'https://hooks.example.com/seeded' })]);
  expect(seeded.json.webhooks[0].secret).toMatch(/^whsec_/);

  const key = await cli('key', 'create', '--shop', shop.json.id, '--scopes', 'webhooks.read');
  await withApp(async (http) => {
    const res = await http.get('/dev/v1/webhooks').set(bearer(key.json.key));
    expect(res.body.data.map((w: { url: string }) => w.url).sort()).toEqual([
      'https://hooks.example.com/in',
      'https://hooks.example.com/seeded',
    ]);
    expect(JSON.stringify(res.body)).not.toContain(created.json.secret);
  });
});

test('gateway set and list, tax set, coupon create; the gateways show in capabilities', async () => {
  const shop = await cli('shop', 'create', '--name', 'Gateways');
  const id = shop.json.id as string;
  const crypto = await cli(
    'gateway',
    'set',
    '--shop',
    id,
    '--code',
    'CRYPTO',
    '--kind',
    'CRYPTO',
    '--coins',
    'BTC,ETH',
  );
  expect(crypto.code).toBe(0);
  expect(crypto.json).toEqual({ code: 'CRYPTO', kind: 'CRYPTO', active: true, coins: ['BTC', 'ETH'] });
  const off = await cli('gateway', 'set', '--shop', id, '--code', 'SANDBOX', '--kind', 'SESSION', '--inactive');
  expect(off.json.active).toBe(false);
  const list = await cli('gateway', 'list', '--shop', id);
  expect(list.json.map((g: { code: string }) => g.code)).toEqual(['CRYPTO', 'SANDBOX']);

  const tax = await cli('tax', 'set', '--shop', id, '--rate', '20', '--inclusive');
  expect(tax.json).toEqual({ shop_id: id, rate: '20', inclusive: true });
  const coupon = await cli('coupon', 'create', '--shop', id, '--code', 'SAVE5', '--type', 'FIXED', '--value', '5');
  expect(coupon.code).toBe(0);
  expect(coupon.json).toMatchObject({ code: 'save5', type: 'FIXED', value: '5', currency: 'USD' });

  const key = await cli('key', 'create', '--shop', id, '--scopes', 'orders.read');
  await withApp(async (http) => {
    const caps = await http.get('/dev/v1/me/capabilities').set(bearer(key.json.key));
    expect(caps.body.data.enabledPaymentMethods).toEqual(['CRYPTO']);
  });
}, 180_000); // seven CLI processes; the refusals are covered by test/api/gateways.test.ts
