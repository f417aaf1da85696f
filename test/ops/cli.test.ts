// The admin CLI end to end, as an operator runs it (`npm run -s cli -- … --json`): shop and key round trip, seed
// with a bad file, demo and orders, webhooks, gateways. The commands run in-process (runCli, test/helpers/cli.ts)
// on this file's database, which the app then serves; the last tests run the real program (`tsx src/ops/cli-main.ts`) to
// prove its entry: argv, stdin, stdout/stderr, exit codes, and the embedded database's lock.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { createApp } from '../../src/app';
import { openEmbedded, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { botTokenContext } from '../../src/domain/store/bot-notifications';
import { loadSecretBox } from '../../src/platform/secret-box';
import { inProcessCli, processCli, type Cli } from '../helpers/cli';
import { contractClient, bearer, memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { systemClock } from '../../src/platform/clock';

let dir: string;
let database: TestDatabase;
let cli: Cli;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-cli-'));
  database = await createTestDatabase();
  cli = inProcessCli(database);
});
afterAll(async () => {
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The app on the CLI's database. */
async function withApp(fn: (http: ReturnType<typeof contractClient>) => Promise<void>): Promise<void> {
  const app = await createApp({
    clock: systemClock,
    db: database.db,
    config: loadConfig({ PUBLIC_URL: 'http://api.test' }),
    logger: memoryLogger().logger,
  });
  await fn(contractClient(app));
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

test('help: --help, -h and help print the usage on stdout (exit 0); help <command> and <command> --help print its', async () => {
  const human = cli.with({ json: false });
  for (const argv of [['--help'], ['-h'], ['help']]) {
    const res = await human(...argv);
    expect([argv, res.code, res.stderr]).toEqual([argv, 0, '']);
    expect(res.stdout).toMatch(/^Usage: npm run -s cli -- <command> \[options\] \[--json\]\n/);
    for (const command of ['shop create', 'key list', 'emails list', 'app list', 'clock advance', 'demo'])
      expect(res.stdout).toContain(`\n  ${command}`);
  }
  for (const argv of [
    ['help', 'key', 'list'],
    ['key', 'list', '--help'],
    ['key', 'list', '-h'],
    ['key', 'list', '--shop', 'shop_x', '--help'],
  ]) {
    const res = await human(...argv);
    expect([argv, res.code, res.stderr]).toEqual([argv, 0, '']);
    expect(res.stdout).toMatch(/^Usage: npm run -s cli -- key list --shop SHOP_ID \[--mode live\|test\] \[--json\]\n/);
    expect(res.stdout).not.toContain('shop create');
  }
  // With --json, the usage is the one document; and help answers even when the configuration would not load.
  const json = await cli.with({ env: { PORT: 'none' } })('help', 'demo');
  expect([json.code, json.json.usage]).toEqual([
    0,
    expect.stringMatching(/^Usage: npm run -s cli -- demo \[--json\]\n/),
  ]);
});

test('a command line it cannot run: exit 2; an unknown command says so in one line and points to help', async () => {
  const human = cli.with({ json: false });
  const hint = 'Run "npm run -s cli -- help" to list the commands, "npm run -s cli -- help <command>" for one.\n';
  for (const argv of [['frobnicate'], ['help', 'frobnicate'], ['frobnicate', '--help']]) {
    const res = await human(...argv);
    expect([argv, res.code, res.stdout, res.stderr]).toEqual([argv, 2, '', `Unknown command "frobnicate".\n${hint}`]);
  }
  // Within a command: why, then that command's usage (not all of them).
  const unknownOption = await human('key', 'list', '--shop', 'shop_x', '--bogus');
  expect([unknownOption.code, unknownOption.stdout]).toEqual([2, '']);
  expect(unknownOption.stderr).toMatch(/^Unknown option --bogus\n\nUsage: npm run -s cli -- key list --shop SHOP_ID /);
  expect(unknownOption.stderr).not.toContain('shop create');
  const missing = await human('key', 'list');
  expect([missing.code, missing.stderr]).toEqual([
    2,
    expect.stringMatching(/^--shop is required\n\nUsage: npm run -s cli -- key list /),
  ]);
  const json = await cli('key', 'list', '--bogus');
  expect([json.code, json.json]).toEqual([2, { error: { message: 'Unknown option --bogus' } }]);
});

test('key list: the keys of both modes, each with its mode, state and times; --mode lists one; a read makes no test twin', async () => {
  const shop = (await cli('shop', 'create', '--name', 'Keys')).json.id as string;
  const twins = () => database.db.selectFrom('shops').select('id').where('live_shop_id', '=', shop).execute();
  const live = await cli('key', 'create', '--shop', shop, '--scopes', 'orders.read', '--name', 'ci-live');
  expect((await cli('key', 'list', '--shop', shop, '--mode', 'test')).json).toEqual([]);
  expect(await twins()).toEqual([]);
  const testKey = await cli('key', 'create', '--shop', shop, '--mode', 'test', '--scopes', '*', '--name', 'ci-test');
  await withApp(async (http) => {
    expect((await http.get('/dev/v1/me').set(bearer(testKey.json.key))).status).toBe(200);
  });
  expect((await cli('key', 'revoke', '--id', live.json.id)).code).toBe(0);
  // The use is recorded after the answer (src/auth/authenticate.ts): wait for it.
  let list = await cli('key', 'list', '--shop', shop);
  for (let i = 0; i < 50 && !list.json[1]?.last_used_at; i++) {
    await new Promise((r) => setTimeout(r, 100));
    list = await cli('key', 'list', '--shop', shop);
  }
  const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(list.json).toEqual([
    {
      id: live.json.id,
      shop_id: shop,
      mode: 'live',
      state: 'revoked',
      name: 'ci-live',
      kind: 'api_key',
      prefix: live.json.key.slice(0, 8),
      scopes: ['orders.read'],
      created_at: iso,
      last_used_at: null,
      revoked_at: iso,
    },
    {
      id: testKey.json.id,
      shop_id: testKey.json.shop_id,
      mode: 'test',
      state: 'active',
      name: 'ci-test',
      kind: 'api_key',
      prefix: testKey.json.key.slice(0, 13),
      scopes: ['*'],
      created_at: iso,
      last_used_at: iso,
      revoked_at: null,
    },
  ]);
  expect((await cli('key', 'list', '--shop', shop, '--mode', 'test')).json).toEqual([list.json[1]]);
  expect((await cli('key', 'list', '--shop', shop, '--mode', 'live')).json).toEqual([list.json[0]]);
  // The table says the same, a column each.
  const text = await cli.with({ json: false })('key', 'list', '--shop', shop);
  const [header, ...rows] = text.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split(/\s+/));
  expect(header).toEqual([
    'id',
    'mode',
    'state',
    'kind',
    'name',
    'prefix',
    'created_at',
    'last_used_at',
    'revoked_at',
    'scopes',
  ]);
  const [l, t] = list.json;
  expect(rows).toEqual([
    [l.id, 'live', 'revoked', 'api_key', 'ci-live', `${l.prefix}…`, l.created_at, '-', l.revoked_at, 'orders.read'],
    [t.id, 'test', 'active', 'api_key', 'ci-test', `${t.prefix}…`, t.created_at, t.last_used_at, '-', '*'],
  ]);
});

test('messages say what was wrong in the words of the command line; listings name their columns as --json does', async () => {
  const shop = (await cli('shop', 'create', '--name', 'Words')).json.id as string;
  const key = await cli('key', 'create', '--shop', shop, '--scopes', 'orders.read');
  expect((await cli('key', 'revoke', '--id', key.json.id)).code).toBe(0);
  // "live" is a mode: a revoked test key is not "no live key".
  const again = await cli('key', 'revoke', '--id', key.json.id);
  expect([again.code, again.json.error.message]).toEqual([
    1,
    `No active key with id ${key.json.id} (unknown, or already revoked)`,
  ]);
  const rate = await cli('tax', 'set', '--shop', shop, '--rate', 'abc');
  expect([rate.code, rate.json.error.message]).toEqual([1, expect.stringMatching(/^--rate must be a percentage/)]);
  expect((await cli('tax', 'set', '--shop', shop, '--rate', '7.5')).json).toEqual({
    shop_id: shop,
    rate: '7.5',
    inclusive: false,
  });
  const human = cli.with({ json: false });
  expect((await human('app', 'grants', '--shop', shop)).stdout).toBe('(no grants)\n');
  const app = await cli('app', 'create', '--name', 'Words', '--redirect-uris', 'https://a.example/cb', '--scopes', '*');
  const apps = (await human('app', 'list')).stdout.trimEnd().split('\n');
  expect(apps[0]!.split(/\s+/)).toEqual(['client_id', 'name', 'type', 'revoked_at', 'scopes']);
  expect(apps.find((l) => l.startsWith(app.json.client_id))!.split(/\s+/)).toEqual([
    app.json.client_id,
    'Words',
    'confidential',
    '-',
    '*',
  ]);
});

test('demo prints a live and a test full-access key that work and a pending test order; order create and complete walk a purchase', async () => {
  const demo = await cli('demo');
  expect(demo.code).toBe(0);
  expect(demo.json.test_checkout_url).toMatch(/\/invoice\/[0-9a-f-]{36}$/);
  expect(demo.json.live_key).toMatch(/^mdk_(?!test_)[A-Za-z0-9_-]{43}$/);
  expect(demo.json.test_key).toMatch(/^mdk_test_[A-Za-z0-9_-]{43}$/);
  let gameKey = '';
  await withApp(async (http) => {
    // The live demo shop: full access, no SANDBOX (a live shop never offers it), no order.
    const liveCaps = await http.get('/dev/v1/me/capabilities').set(bearer(demo.json.live_key));
    expect(liveCaps.body.data).toMatchObject({ full_access: true, livemode: true });
    expect(liveCaps.body.data.enabledPaymentMethods).not.toContain('SANDBOX');
    const liveOrders = await http.get('/dev/v1/orders').set(bearer(demo.json.live_key));
    expect(liveOrders.body.data).toEqual([]);
    const liveProducts = await http.get('/dev/v1/products').set(bearer(demo.json.live_key));
    expect(liveProducts.body.data).toHaveLength(demo.json.products.length);
    // Its test twin: the same products, SANDBOX, and the pending sample order.
    const caps = await http.get('/dev/v1/me/capabilities').set(bearer(demo.json.test_key));
    expect(caps.body.data).toMatchObject({ full_access: true, livemode: false });
    expect(caps.body.data.enabledPaymentMethods).toEqual(['SANDBOX']);
    const products = await http.get('/dev/v1/products').set(bearer(demo.json.test_key));
    expect(products.body.data.map((p: { title: string }) => p.title).sort()).toEqual(
      liveProducts.body.data.map((p: { title: string }) => p.title).sort(),
    );
    const pending = await http.get('/dev/v1/orders').set(bearer(demo.json.test_key));
    expect(pending.body.data.map((o: { id: string; status: string }) => [o.id, o.status])).toEqual([
      [demo.json.test_order_id, 'PENDING'],
    ]);
    gameKey = pending.body.data[0].items[0].product_id;
  });
  // The human output labels each key and says the sample order is in test mode.
  const human = await cli.with({ json: false })('demo');
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(/Live key \(live mode; a live shop never offers the SANDBOX gateway\): mdk_(?!test_)/);
  expect(human.stdout).toMatch(
    /Test key \(use this to walk the README: create an order, pay on the sandbox page, receive the webhook\): mdk_test_/,
  );
  expect(human.stdout).toMatch(/Pending order in TEST mode, to pay on the SANDBOX page: \S+\/invoice\//);
  // The walk runs in test mode, where the demo's products and order are: --shop names the live shop, --mode test.
  const shop = demo.json.shop_id;
  const test = ['--mode', 'test'];
  const refused = await cli(
    'order',
    'create',
    '--shop',
    shop,
    ...test,
    '--email',
    'a@example.com',
    '--items',
    `${gameKey}:999`,
  );
  expect(refused.code).toBe(1);
  expect(refused.json.error.message).toMatch(/serials? of Game Key left/);
  const bad = await cli('order', 'create', '--shop', shop, ...test, '--email', 'a@example.com', '--items', 'x:y:z');
  expect([bad.code, bad.json.error.message]).toEqual([1, expect.stringMatching(/--items/)]);
  const created = await cli(
    'order',
    'create',
    '--shop',
    shop,
    ...test,
    '--email',
    'cli@example.com',
    '--items',
    `${gameKey}:2`,
  );
  expect(created.code).toBe(0);
  expect(created.json).toMatchObject({ status: 'PENDING', total: 29.98, customer_email: 'cli@example.com' });
  const done = await cli('order', 'complete', '--shop', shop, ...test, '--id', created.json.id);
  expect(done.code).toBe(0);
  expect(done.json.status).toBe('COMPLETED');
  expect(done.json.items[0].delivered_items.codes).toHaveLength(2);
  const again = await cli('order', 'complete', '--shop', shop, ...test, '--id', created.json.id);
  expect([again.code, again.json.error.message]).toEqual([1, expect.stringMatching(/COMPLETED/)]);
  const mail = await cli('emails', 'list', '--shop', shop, ...test);
  expect(mail.json.map((m: { template: string }) => m.template).sort()).toEqual(['delivery', 'receipt']);
  // Without --mode the shop's mails of both modes, each saying its mode: the walk's test-mode mails show.
  const both = await cli('emails', 'list', '--shop', shop);
  expect(both.json).toEqual(mail.json);
  expect(both.json.map((m: { mode: string; template: string }) => [m.mode, m.template]).sort()).toEqual([
    ['test', 'delivery'],
    ['test', 'receipt'],
  ]);
  expect((await cli('emails', 'list', '--shop', shop, '--mode', 'live')).json).toEqual([]);
  const ids = mail.json.map((m: { id: string }) => m.id);
  const everyTest = await cli('emails', 'list', '--mode', 'test');
  expect(everyTest.json.filter((m: { id: string }) => ids.includes(m.id))).toEqual(mail.json);
  expect(everyTest.json.every((m: { mode: string }) => m.mode === 'test')).toBe(true);
  const everyLive = await cli('emails', 'list', '--mode', 'live');
  expect(everyLive.json.filter((m: { id: string }) => ids.includes(m.id))).toEqual([]);
  const table = await cli.with({ json: false })('emails', 'list', '--shop', shop);
  const lines = table.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^id\s+shop\s+mode\s+to\s+template\s+subject\s+status\s+created_at$/);
  expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 4))).toEqual(
    mail.json.map((m: { id: string; shop_id: string; to: string }) => [m.id, m.shop_id, 'test', m.to]),
  );
});

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
  // A live shop never offers SANDBOX: refused, nothing written. Its test twin (--mode test) has it.
  const refused = await cli('gateway', 'set', '--shop', id, '--code', 'SANDBOX', '--kind', 'SESSION');
  expect([refused.code, refused.json.error.message]).toEqual([
    1,
    "The SANDBOX gateway exists only in test mode: use the shop's test mode (--mode test).",
  ]);
  const list = await cli('gateway', 'list', '--shop', id);
  expect(list.json.map((g: { code: string }) => g.code)).toEqual(['CRYPTO']);
  const off = await cli(
    'gateway',
    'set',
    '--shop',
    id,
    '--mode',
    'test',
    '--code',
    'SANDBOX',
    '--kind',
    'SESSION',
    '--inactive',
  );
  expect(off.json.active).toBe(false);
  const testList = await cli('gateway', 'list', '--shop', id, '--mode', 'test');
  expect(testList.json).toEqual([{ code: 'SANDBOX', kind: 'SESSION', active: false, coins: [] }]);

  const tax = await cli('tax', 'set', '--shop', id, '--rate', '20', '--inclusive');
  expect(tax.json).toEqual({ shop_id: id, rate: '20', inclusive: true });
  const coupon = await cli('coupon', 'create', '--shop', id, '--code', 'SAVE5', '--type', 'FIXED', '--value', '5');
  expect(coupon.code).toBe(0);
  expect(coupon.json).toMatchObject({ code: 'save5', type: 'FIXED', value: '5', currency: 'USD' });

  const key = await cli('key', 'create', '--shop', id, '--scopes', 'orders.read');
  await withApp(async (http) => {
    const caps = await http.get('/dev/v1/me/capabilities').set(bearer(key.json.key));
    expect(caps.body.data.enabledPaymentMethods).toEqual(['CRYPTO']);
    const testKey = await cli('key', 'create', '--shop', id, '--mode', 'test', '--scopes', 'orders.read');
    const testCaps = await http.get('/dev/v1/me/capabilities').set(bearer(testKey.json.key));
    expect(testCaps.body.data.enabledPaymentMethods).toEqual([]); // its SANDBOX is switched off
  });
}); // the refusals are covered by test/payments/gateways.test.ts

// The program itself, as child processes: each costs seconds (tsx, then the database opened and migrated), more on
// a loaded machine, so these few get minutes. Each opens the database itself: on PostgreSQL this file's, embedded a
// data directory of its own (this file's in-memory database is out of another process's reach).
describe('the program (tsx src/ops/cli-main.ts)', () => {
  const minutes = 240_000;
  const dataDir = () => join(dir, 'pglite');
  const program = () =>
    processCli(
      process.env.DATABASE_URL
        ? { ...process.env, DATABASE_URL: database.url, BOT_TOKEN: '' }
        : { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir(), BOT_TOKEN: '' },
    );

  (process.env.DATABASE_URL ? test.skip : test)(
    'the embedded database refuses a second process instead of corrupting it',
    async () => {
      const holder: DatabaseHandle = await openEmbedded(dataDir());
      try {
        await migrateToLatest(holder.db);
        const res = await program()('shop', 'create', '--name', 'Blocked');
        expect(res.code).toBe(1);
        expect(res.json.error.message).toMatch(/in use by process \d+/);
      } finally {
        await holder.close();
      }
      const after = await program()('shop', 'create', '--name', 'After');
      expect([after.code, after.json.id]).toEqual([0, expect.stringMatching(/^shop_/)]);
    },
    minutes,
  );

  test(
    'help: the usage on stdout, exit code 0; an unknown command: exit code 2, why and a hint on stderr, nothing on stdout',
    async () => {
      const help = await program().with({ json: false })('--help');
      expect([help.code, help.stderr]).toEqual([0, '']);
      expect(help.stdout).toMatch(/^Usage: npm run -s cli -- <command>/);
      const res = await program().with({ json: false })('frobnicate');
      expect(res.code).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/^Unknown command "frobnicate"\.\nRun "npm run -s cli -- help" to list the commands/);
    },
    minutes,
  );

  /** fn on the database the program opens (the embedded one only while no child process runs). */
  async function onProgramDatabase<T>(fn: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
    if (process.env.DATABASE_URL) return fn(database);
    const handle = await openEmbedded(dataDir());
    try {
      await migrateToLatest(handle.db);
      return await fn(handle);
    } finally {
      await handle.close();
    }
  }

  test(
    'one JSON document on stdout, and a secret read from stdin (never printed)',
    async () => {
      const token = '7123456791:AAHr9xF5sU7zV3jP1qB4tE6gH8iK0lM2nY5';
      const shop = await onProgramDatabase(
        async (handle) => (await inProcessCli(handle)('shop', 'create', '--name', 'Piped')).json.id as string,
      );
      const bot = await program().with({ stdin: `${token}\n` })(
        'bot',
        'create',
        '--shop',
        shop,
        '--username',
        'piped_alerts_bot',
        '--token-stdin',
      );
      expect(bot.code).toBe(0);
      expect(bot.stdout).toBe(`${JSON.stringify(bot.json)}\n`);
      expect(bot.json).toMatchObject({ username: 'piped_alerts_bot', has_token: true });
      expect(bot.stdout + bot.stderr).not.toContain(token);
      // What arrived on stdin is the token, whole: it opens from the bot's row.
      const stored = await onProgramDatabase(async ({ db }) => {
        const row = await db
          .selectFrom('messaging_bots')
          .select('token_sealed')
          .where('id', '=', bot.json.id)
          .executeTakeFirstOrThrow();
        const box = await loadSecretBox(db, undefined);
        return box.open(Buffer.from(row.token_sealed!), botTokenContext(shop, bot.json.id));
      });
      expect(stored).toBe(token);
    },
    minutes,
  );
});
