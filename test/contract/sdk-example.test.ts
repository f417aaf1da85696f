// The SDK (sdk/) as its users meet it: the README's example (sdk/examples/order-flow.ts, the same text by
// `npm run sdk:generate -- --check`) runs as a child process under tsx against the real server process, and a webhook
// worker delivers the signed order:completed event to the receiver the example runs on 127.0.0.1; then the database
// must hold exactly what the example printed. The package is also built (tsc -p sdk) and a consumer outside the
// repository compiles and runs against the built sdk/dist, so the package stands on its own.
// On PostgreSQL the worker is a process of its own (`npm run worker`'s entry); on the embedded database only one
// process may open the data directory, so there the server's in-process worker delivers, as `npm start` does.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPGlite, wrapPGlite, type DatabaseHandle } from '../../db/database';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { systemClock } from '../../src/platform/clock';
import { createMerchantClient, credentialLivemode, MerchantApiError } from '../../sdk/src';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { createTestDatabase, snapshotPath, type TestDatabase } from '../helpers/test-database';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const onPostgres = !!process.env.DATABASE_URL;

let dir: string;
let dataDir: string;
let database: TestDatabase | undefined;
let server: ServerProcess | undefined;
let worker: ChildProcess | undefined;
let workerOutput = '';
let baseUrl: string;
let shopId: string;
let apiKey: string;
let testApiKey: string;
let productId: string;
let endpointId: string;
let webhookUrl: string;
let webhookSecret: string;
let building: Promise<void>;

/** The example's receiver listens on 127.0.0.1, which a server on PostgreSQL refuses to call by default. */
const deliverLocally = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };

/** A port nobody listens on now, for the example's receiver (it binds the port itself). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** `npm run worker`'s entry; own process group, as tsx runs the script in a child a kill of tsx alone would orphan. */
function startWorker(databaseUrl: string): ChildProcess {
  const child = spawn(tsx, [join(root, 'src', 'worker', 'main.ts')], {
    cwd: root,
    detached: true,
    env: { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: '', LOG_LEVEL: 'warn', ...deliverLocally },
  });
  child.stdout!.on('data', (d: Buffer) => (workerOutput += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (workerOutput += d.toString()));
  return child;
}

/** SIGTERM, so that the embedded database is closed cleanly before this process opens it. */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function seed(handle: DatabaseHandle): Promise<void> {
  const shop = await admin.createShop(handle.db, { name: 'SDK Shop', plan: 'business', currency: 'EUR' });
  shopId = shop.id;
  apiKey = (await admin.createApiKey(handle.db, { shopId, scopes: ['*'], name: 'sdk example' })).key;
  testApiKey = (await admin.createApiKey(handle.db, { shopId, scopes: ['*'], name: 'sdk test mode', mode: 'test' }))
    .key;
  const row = (await shopById(handle.db, shopId))!;
  const seeded = await handle.db
    .transaction()
    .execute((trx) =>
      seedFixtures(
        trx,
        row,
        { products: [{ title: 'Handbook', slug: 'handbook', price: '12.50', type: 'SERVICE' }] },
        systemClock,
      ),
    );
  productId = seeded.products[0]!;
}

/** The database the server used, opened by this process (on the embedded database: after the server stopped). */
async function openServersDatabase(): Promise<DatabaseHandle> {
  if (database) return { ...database, close: async () => undefined };
  await stop(server?.child);
  return wrapPGlite(await createPGlite({ dataDir }));
}

beforeAll(async () => {
  // The build runs while the database is seeded and the server starts; the first test awaits it.
  building = run(process.execPath, [tsc, '-p', 'sdk'], { cwd: root, timeout: 60_000 }).then(
    () => undefined,
    (err) => {
      throw new Error(`tsc -p sdk failed:\n${err.stdout}${err.stderr}`);
    },
  );
  building.catch(() => undefined); // reported by the test that awaits it
  dir = mkdtempSync(join(tmpdir(), 'mdapi-sdk-'));
  const env: Record<string, string> = { ...deliverLocally, RATE_LIMIT_BUSINESS: '100000' };
  if (onPostgres) {
    database = await createTestDatabase();
    await seed(database);
    Object.assign(env, { DATABASE_URL: database.url!, WEBHOOK_WORKER: 'off' });
    worker = startWorker(database.url!);
  } else {
    // A data directory of its own, made from the migrated snapshot every test file starts from.
    dataDir = join(dir, 'pglite');
    const pg = await createPGlite({ dataDir, loadDataDir: new Blob([readFileSync(snapshotPath())]) });
    const handle = wrapPGlite(pg);
    await seed(handle);
    await handle.close();
    Object.assign(env, { DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir });
  }
  server = await startServerProcess(env);
  baseUrl = `${server.base}/dev/v1`;

  // The endpoint is made through the SDK too, as a merchant's setup script would.
  webhookUrl = `http://127.0.0.1:${await freePort()}/webhooks/merchant`;
  const created = await createMerchantClient({ baseUrl, apiKey }).POST('/webhooks', {
    body: { url: webhookUrl, events: ['*'], description: 'SDK example receiver' },
  });
  if (!created.data) throw new Error(`createWebhook: ${created.response.status} ${JSON.stringify(created.error)}`);
  endpointId = created.data.data.id;
  webhookSecret = created.data.data.secret;
}, 120_000);

afterAll(async () => {
  await building?.catch(() => undefined);
  await stop(worker);
  await stop(server?.child);
  await database?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 30_000);

test('the SDK builds to sdk/dist, and a consumer outside the repository compiles and runs against it', async () => {
  await building;
  const consumer = join(dir, 'consumer');
  mkdirSync(join(consumer, 'node_modules', '@merchant-developer-api'), { recursive: true });
  symlinkSync(join(root, 'sdk'), join(consumer, 'node_modules', '@merchant-developer-api', 'sdk'), 'dir');
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        strict: true,
        // Declarations are not re-checked (@types/node alone costs seconds); the @ts-expect-error below still fails
        // the compile if the package's types ever degrade to `any`.
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
        outDir: 'out',
      },
      files: ['main.ts'],
    }),
  );
  // An ES module importing the CommonJS package by name, typed from its declarations. The signature is made here by
  // hand from the Standard Webhooks rule (HMAC-SHA256 of id.timestamp.body), not by the library that verifies it.
  writeFileSync(
    join(consumer, 'main.ts'),
    `import { createHmac } from 'node:crypto';
import { createMerchantClient, verifyWebhook, WebhookVerificationError } from '@merchant-developer-api/sdk';

const client = createMerchantClient({ baseUrl: process.env.BASE_URL!, apiKey: process.env.API_KEY! });
const me = await client.GET('/me');
const name: string = me.data!.data.name;
const livemode: boolean = client.livemode && (await client.getAccount()).livemode;
export const typedPathsOnly = () =>
  // @ts-expect-error: not a path of the contract
  client.GET('/no/such/path');

const key = Buffer.from('0123456789abcdef0123456789abcdef');
const secret = 'whsec_' + key.toString('base64');
const body = JSON.stringify({ event: 'webhook:test', data: { webhook_id: 'whe_1', message: 'hello' } });
const id = 'evt_consumer';
const timestamp = String(Math.floor(Date.now() / 1000));
const signature = 'v1,' + createHmac('sha256', key).update(id + '.' + timestamp + '.' + body).digest('base64');
const headers = { 'Webhook-Id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
const event = verifyWebhook(body, new Headers(headers), secret);
const message = event.event === 'webhook:test' ? event.data.message : '';
const refused = (payload: string, secretUsed = secret) => {
  try {
    verifyWebhook(payload, headers, secretUsed);
    return 'accepted';
  } catch (err) {
    return err instanceof WebhookVerificationError ? 'rejected' : String(err);
  }
};
console.log(JSON.stringify({
  name,
  livemode,
  message,
  tampered: refused(body.replace('hello', 'hellO')),
  otherSecret: refused(body, 'whsec_' + Buffer.from('another key of thirty-two bytes!').toString('base64')),
}));
`,
  );
  await run(process.execPath, [tsc, '-p', consumer], {
    timeout: 60_000,
  }).catch((err) => {
    throw new Error(`the consumer does not compile against sdk/dist:\n${err.stdout}${err.stderr}`);
  });
  const { stdout } = await run(process.execPath, [join(consumer, 'out', 'main.js')], {
    cwd: consumer,
    env: { ...process.env, BASE_URL: baseUrl, API_KEY: apiKey },
    timeout: 20_000,
  });
  expect(JSON.parse(stdout)).toEqual({
    name: 'SDK Shop',
    livemode: true,
    message: 'hello',
    tampered: 'rejected',
    otherSecret: 'rejected',
  });
}, 90_000);

test("the client says its credential's mode: from the prefix at once, and from the server with getAccount()", async () => {
  expect(testApiKey).toMatch(/^mdk_test_/);
  expect([apiKey, 'mat_abc', 'mdk_test', 'mdk_testx_abc'].map(credentialLivemode)).toEqual([true, true, true, true]);
  expect([testApiKey, 'mat_test_abc', ' mdk_test_abc'].map(credentialLivemode)).toEqual([false, false, false]);
  const live = createMerchantClient({ baseUrl, apiKey });
  const test = createMerchantClient({ baseUrl, apiKey: testApiKey });
  expect([live.livemode, test.livemode]).toEqual([true, false]);
  expect(await live.getAccount()).toMatchObject({ id: shopId, livemode: true, live_account_id: null });
  const testAccount = await test.getAccount();
  expect(testAccount).toMatchObject({ livemode: false, live_account_id: shopId });
  expect(testAccount.id).not.toBe(shopId);
  // The typed calls are the same client's: a test client lists only the test shop's (empty) orders.
  const orders = await test.GET('/orders', { params: { query: { limit: 1 } } });
  expect(orders.data?.data).toEqual([]);
  const revoked = createMerchantClient({ baseUrl, apiKey: `mdk_test_${'x'.repeat(43)}` });
  expect(revoked.livemode).toBe(false);
  const error = await revoked.getAccount().catch((err: unknown) => err);
  expect(error).toBeInstanceOf(MerchantApiError);
  expect(error).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
}, 30_000);

/**
 * Runs the README's example as its users do, and resolves with its exit code and output, whatever they are. With
 * `stopAt`, the run is ended (SIGTERM, exit code null) as soon as its output matches: a receiver waits for good
 * deliveries until its timeout, and a test that saw what it came for need not wait that long.
 */
function runExample(secret: string, stopAt?: RegExp) {
  const child = spawn(tsx, ['sdk/examples/order-flow.ts', '--webhook-url', webhookUrl, '--webhook-secret', secret], {
    cwd: root,
    env: { ...process.env, BASE_URL: baseUrl, API_KEY: apiKey, WEBHOOK_TIMEOUT_SECONDS: '30' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stopAt?.test(stdout)) child.kill('SIGTERM');
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const guard = setTimeout(() => child.kill('SIGKILL'), 50_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr });
    }),
  );
}

let rejectedRunOrder: string | undefined;

test('the example refuses a delivery signed with another secret', async () => {
  const other = `whsec_${Buffer.from('not the secret of this endpoint!').toString('base64')}`;
  // Stopped at a refusal after the completion: the endpoint takes every event, and order:created comes first.
  const example = await runExample(other, /^order completed: [\s\S]*^webhook rejected: /m);
  rejectedRunOrder = /^order completed: (ord_\S+) COMPLETED PAID$/m.exec(example.stdout)?.[1];
  expect(rejectedRunOrder).toBeDefined();
  expect(example.stdout).toMatch(/^webhook rejected: No matching signature found$/m);
  expect(example.stdout).not.toMatch(/webhook verified/);
}, 60_000);

test('the README example creates and completes an order and verifies its order:completed webhook', async () => {
  const started = Date.now();
  const example = await runExample(webhookSecret);
  if (example.code !== 0)
    throw new Error(
      `the example failed (exit ${example.code}):\n${example.stdout}${example.stderr}\nserver and worker:\n${server?.output()}${workerOutput}`,
    );
  const out = example.stdout;
  const orderId = /^order created: (ord_\S+) PENDING 12\.5 EUR$/m.exec(out)?.[1];
  expect(orderId).toBeDefined();
  expect(out).toMatch(new RegExp(`^retry with the same Idempotency-Key: cached, order ${orderId}$`, 'm'));
  expect(out).toMatch(new RegExp(`^order completed: ${orderId} COMPLETED PAID$`, 'm'));
  const eventId = new RegExp(
    `^order:completed webhook verified: order:completed (evt_\\S+) for ${orderId} \\(COMPLETED\\)$`,
    'm',
  ).exec(out)?.[1];
  expect(eventId).toBeDefined();
  expect(out).not.toMatch(/webhook rejected/);
  console.log(`sdk example ran in ${Date.now() - started} ms (${onPostgres ? 'PostgreSQL' : 'embedded'})`);

  const handle = await openServersDatabase();
  try {
    const orders = await handle.db
      .selectFrom('orders')
      .select(['id', 'status', 'payment_status', 'note'])
      .where('shop_id', '=', shopId)
      .execute();
    // One order per run: the retried create was replayed, not run twice.
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect(orders.sort(byId)).toEqual(
      [orderId!, rejectedRunOrder!]
        .map((id) => ({ id, status: 'COMPLETED', payment_status: 'PAID', note: 'Paid by bank transfer' }))
        .sort(byId),
    );
    const items = await handle.db
      .selectFrom('order_items')
      .select(['product_id', 'quantity'])
      .where('order_id', '=', orderId!)
      .execute();
    expect(items).toEqual([{ product_id: productId, quantity: 1 }]);
    const event = await handle.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('id', '=', eventId!)
      .where('shop_id', '=', shopId)
      .executeTakeFirstOrThrow();
    expect(event.type).toBe('order:completed');
    expect(JSON.parse(event.data)).toMatchObject({ id: orderId, status: 'COMPLETED' });
    // The worker records the 2xx after the receiver answered: wait for it (bounded).
    let delivery: { status: string } | undefined;
    for (let i = 0; i < 50 && delivery?.status !== 'SUCCEEDED'; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      delivery = await handle.db
        .selectFrom('webhook_deliveries')
        .select('status')
        .where('event_id', '=', eventId!)
        .where('endpoint_id', '=', endpointId)
        .executeTakeFirst();
    }
    expect(delivery?.status).toBe('SUCCEEDED');
  } finally {
    await handle.close();
  }
}, 90_000);
