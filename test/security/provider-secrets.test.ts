// The provider secrets scan (issue 37): every provider secret is written through `gateway connect` (the real CLI
// program reading them on stdin, and connectShopGateway itself), then each provider's whole flow runs with logs at
// debug and tracing on: a payment opened, paid at the provider's fake, its webhooks received and applied, a refund
// the provider fails (502), a refund made, a webhook with a bad signature refused. Then everything the run left is
// searched for the secrets, in the forms a leak takes (test/helpers/secret-scan.ts): every log line of any level,
// every span (names, attributes, events, status), every row of every table (events, audit entries, webhook
// deliveries, outbound mail, idempotency records, the sealed connections), every response the API sent to anyone,
// every webhook delivered to the merchant, the CLI's output and the errors connect raised. PayPal's client id and
// webhook id are not searched: the product shows them on purpose (a connection's `settings`), as it does BTCPay's
// store id and server address. The scan is proven able to find: planted values are reported where they were planted.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format } from 'node:util';
import type { Express } from 'express';
import request from 'supertest';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { createBtcpayProvider } from '../../src/integrations/btcpay';
import type { ProviderCode } from '../../src/integrations/gateway-provider';
import { createPayPalProvider } from '../../src/integrations/paypal';
import { createStripeProvider } from '../../src/integrations/stripe';
import { shopForMode } from '../../src/ops/admin';
import { openCliChannel, type CliChannel } from '../../src/ops/cli-channel';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { ManualClock } from '../../src/platform/clock';
import { startTracing, type Tracing } from '../../src/platform/tracing';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { createBtcpayFake, type BtcpayFake } from '../fakes/btcpay';
import { startPayPalFake, type PayPalFake } from '../fakes/paypal/fake';
import type { ProviderFake } from '../fakes/provider-fake';
import { startStripeFake, type StripeFake } from '../fakes/stripe';
import { processCli, type CliResult } from '../helpers/cli';
import { rowCounts } from '../helpers/db-snapshot';
import { recordedApp, type RecordedResponse } from '../helpers/recorded-app';
import { databaseHaystacks, findSecrets, type Haystack } from '../helpers/secret-scan';
import { bearer, contractClient, startTestApp, type Agent, type TestApp } from '../helpers/test-app';

type Code = Extract<ProviderCode, 'STRIPE' | 'PAYPAL' | 'BTCPAY'>;
const codes: Code[] = ['STRIPE', 'PAYPAL', 'BTCPAY'];

/** The credentials each provider's connect takes that are secret (environment names, as the fakes return them). */
const secretFields: Record<Code, string[]> = {
  STRIPE: ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'],
  PAYPAL: ['PAYPAL_CLIENT_SECRET'],
  BTCPAY: ['BTCPAY_API_KEY', 'BTCPAY_WEBHOOK_SECRET'],
};

// Real time: the fakes sign webhooks on real time and our verification holds them to it.
const clock = new ManualClock(new Date());
const providers = [
  createStripeProvider({ timeoutMs: 3000 }),
  createPayPalProvider({ timeoutMs: 3000 }),
  createBtcpayProvider({ timeoutMs: 3000 }),
];
const exporter = new InMemorySpanExporter();

let tracing: Tracing;
let stripe: StripeFake;
let paypal: PayPalFake;
let btcpay: BtcpayFake;
let t: TestApp;
let app: Express;
let http: Agent;
let server: Server;
let origin: string;
let worker: Worker;
let receiver: Server;
let dir: string;
let channel: CliChannel | undefined;
let gatewayBaseUrls: string;

/** What the run left outside the database and the logs, gathered as it happens. */
const responses: RecordedResponse[] = [];
const delivered: Haystack[] = [];
const outputs: Haystack[] = [];
/** Every secret given to connect, by a name that says whose and which (refused ones too). */
const secrets: Record<string, string> = {};

interface Shop {
  code: Code;
  live: string;
  test: string;
  key: string;
  credentials: Record<string, string>;
  webhookUrl: string;
}
const shops = {} as Record<Code, Shop>;

/** What anything printed through the console (a stray console.log in src/ would print a secret to stdout). */
const consoleMethods = ['log', 'info', 'debug', 'warn', 'error'] as const;

const fakeOf = (code: Code): ProviderFake => ({ STRIPE: stripe, PAYPAL: paypal, BTCPAY: btcpay })[code];

/** A shop's fields for connectShopGateway, by field name, from the fake's environment-named credentials. */
function fieldsOf(code: Code, c: Record<string, string>): Record<string, string> {
  if (code === 'STRIPE') return { secret_key: c.STRIPE_SECRET_KEY!, webhook_secret: c.STRIPE_WEBHOOK_SECRET! };
  if (code === 'PAYPAL') {
    return { client_id: c.PAYPAL_CLIENT_ID!, client_secret: c.PAYPAL_CLIENT_SECRET!, webhook_id: c.PAYPAL_WEBHOOK_ID! };
  }
  return {
    url: c.BTCPAY_URL!,
    api_key: c.BTCPAY_API_KEY!,
    store_id: c.BTCPAY_STORE_ID!,
    webhook_secret: c.BTCPAY_WEBHOOK_SECRET!,
  };
}

function remember(code: Code, label: string, credentials: Record<string, string>): void {
  for (const field of secretFields[code]) secrets[`${label} ${field}`] = credentials[field]!;
}

/** The admin CLI as an operator runs it, on this file's database (embedded: through the channel this file serves). */
function program() {
  const env = { ...process.env, PUBLIC_URL: origin, GATEWAY_BASE_URLS: gatewayBaseUrls, BOT_TOKEN: '' };
  return processCli(
    t.database.url
      ? { ...env, DATABASE_URL: t.database.url }
      : { ...env, DATABASE_URL: '', DATA_DIR: join(dir, 'pglite') },
  );
}

/** The worker and the fakes until neither has anything under way (a PayPal capture's webhook follows a read). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await worker.drain();
    await Promise.all([paypal.settled(), btcpay.idle()]);
  }
  await worker.drain();
}

const orderOf = (uniqid: string) =>
  t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();

beforeAll(async () => {
  // Before the app and its database: both are built traced only while tracing is on.
  tracing = startTracing({ processor: new SimpleSpanProcessor({ exporter }) });
  [stripe, paypal, btcpay] = await Promise.all([
    startStripeFake({ webhookRetryDelayMs: 20 }),
    startPayPalFake({ webhookRetryDelayMs: 20 }),
    createBtcpayFake(),
  ]);
  gatewayBaseUrls = `STRIPE=${stripe.baseUrl},${paypal.gatewayBaseUrls}`;
  for (const method of consoleMethods) jest.spyOn(console, method);
  // The port first: PUBLIC_URL is this server's address, where connect requires PayPal's webhook to post.
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({
    clock,
    gatewayProviders: providers,
    env: {
      PUBLIC_URL: origin,
      GATEWAY_BASE_URLS: gatewayBaseUrls,
      LOG_LEVEL: 'debug',
      // The merchant's webhook receiver below is on localhost.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    },
  });
  app = recordedApp(t.app, responses);
  http = contractClient(app);
  server.on('request', app);
  worker = await createWorker(t.db, t.config, t.logger, clock, providers);

  receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      delivered.push({ where: `merchant webhook ${req.url}`, text: JSON.stringify({ headers: req.headers, body }) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hooksUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

  dir = mkdtempSync(join(tmpdir(), 'mdapi-secrets-'));
  if (!t.database.url) {
    // The embedded database is this process's: the CLI program hands its command to us, as to a running server.
    const dataDir = join(dir, 'pglite');
    writeFileSync(`${dataDir}.lock`, String(process.pid));
    channel = await openCliChannel(t.database, dataDir, t.logger);
  }

  for (const code of codes) {
    const live = await t.createShop({ name: `${code} secrets` });
    const test = (await shopForMode(t.db, live, 'test')).id;
    const key = (await t.createKey(test, ['*'])).key;
    const endpoint = await http
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: hooksUrl, events: ['order:paid', 'order:refunded'] });
    expect(endpoint.status).toBe(201);
    const webhookUrl = `${origin}/webhooks/gateways/${code.toLowerCase()}/${test}`;
    const credentials = fakeOf(code).createAccount({ livemode: false, webhookUrl });
    remember(code, code, credentials);
    shops[code] = { code, live, test, key, credentials, webhookUrl };
  }

  // The operator's way: `gateway connect <provider> --secrets-stdin`, the secrets piped in, one program per
  // provider (at once: each costs seconds to start).
  const runs = await Promise.all(
    codes.map((code) =>
      program().with({ stdin: JSON.stringify(shops[code].credentials) })(
        'gateway',
        'connect',
        code.toLowerCase(),
        '--shop',
        shops[code].live,
        '--mode',
        'test',
        '--secrets-stdin',
      ),
    ),
  );
  runs.forEach((run: CliResult, i) => {
    const code = codes[i]!;
    outputs.push({ where: `gateway connect ${code} (program) stdout`, text: run.stdout });
    outputs.push({ where: `gateway connect ${code} (program) stderr`, text: run.stderr });
    expect([run.code, run.json]).toEqual([
      0,
      expect.objectContaining({ gateway: code, mode: 'test', webhook_url: expect.stringContaining(shops[code].test) }),
    ]);
  });
}, 180_000);

afterAll(async () => {
  jest.restoreAllMocks();
  await channel?.close();
  await Promise.all([stripe?.close(), paypal?.close(), btcpay?.close()]);
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  await t?.close();
  await tracing?.shutdown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await Promise.all([paypal.settled(), btcpay.idle()]);
  for (const code of codes) expect(fakeOf(code).violations).toEqual([]);
});

describe.each(codes)('%s', (code) => {
  test('connect again in process, and with credentials the provider refuses: the errors name no secret', async () => {
    const s = shops[code];
    const again = await connectShopGateway(
      t.db,
      t.config,
      clock,
      { shopId: s.test, code, fields: fieldsOf(code, s.credentials) },
      providers,
    );
    expect(again).toMatchObject({ gateway: code, mode: 'test' });
    outputs.push({ where: `connectShopGateway ${code}`, text: JSON.stringify(again) });

    // Another account's secrets with one of them changed: the provider refuses them, and says so.
    const other = fakeOf(code).createAccount({ livemode: false });
    const wrong = {
      ...other,
      [secretFields[code][0]!]: `${other[secretFields[code][0]!]!.slice(0, -8)}${'x'.repeat(8)}`,
    };
    remember(code, `${code} refused`, wrong);
    const before = await rowCounts(t.db);
    const refused = await connectShopGateway(
      t.db,
      t.config,
      clock,
      { shopId: s.test, code, fields: fieldsOf(code, wrong) },
      providers,
    ).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused?.message).toMatch(/refused these credentials/);
    expect(await rowCounts(t.db)).toEqual(before);
    outputs.push({ where: `connectShopGateway ${code} refused`, text: `${refused!.message}\n${refused!.stack}` });
  });

  test('a payment paid at the provider, a refund it fails (502), a refund made, a webhook with a bad signature', async () => {
    const s = shops[code];
    const fake = fakeOf(code);
    const opened = await http
      .post('/dev/v1/payments')
      .set(bearer(s.key))
      .send({ title: 'Pro License', value: 12.5, currency: 'USD', email: 'buyer@example.com', gateway: code });
    expect(opened.status).toBe(201);
    const { uniqid, session_id: sessionId } = opened.body.data as { uniqid: string; session_id: string };

    await fake.pay(sessionId);
    await settle();
    const order = await orderOf(uniqid);
    expect(order.status).toBe('COMPLETED');
    const hooks = fake.webhooks().filter((w) => w.url === s.webhookUrl);
    expect(hooks.length).toBeGreaterThan(0);
    expect(hooks.every((h) => h.sends.includes(200))).toBe(true);

    // A webhook signed with another secret: refused, nothing written.
    const before = await rowCounts(t.db);
    expect(await fake.resend(hooks.at(-1)!.eventId, { tamper: 'bad-signature' })).toBe(400);
    expect(await rowCounts(t.db)).toEqual(before);

    const refund = (idem: string) =>
      http.post(`/dev/v1/orders/${order.id}/refund`).set(bearer(s.key)).set('Idempotency-Key', idem).send({});
    // stripe-node repeats a refund (idempotent) once: both tries fail.
    fake.failNext('server-error', code === 'STRIPE' ? 2 : 1);
    const down = await refund(`${code}-down`);
    expect([down.status, down.body.error?.code]).toEqual([502, 'GATEWAY_UNAVAILABLE']);
    expect(await rowCounts(t.db)).toEqual(before);
    const made = await refund(`${code}-made`);
    expect(made.status).toBe(200);
    await settle();
    expect((await orderOf(uniqid)).status).toBe('REFUNDED');
    expect(fake.refunds()).toHaveLength(1);
    const read = await http.get(`/dev/v1/payments/${uniqid}`).set(bearer(s.key));
    expect(read.status).toBe(200);
  });
});

test('a product order paid through the hosted checkout form (Stripe): completed, its receipt mailed', async () => {
  const s = shops.STRIPE;
  const product = (await t.seed(s.test, { products: [{ title: 'Game', price: '9.99' } as never] })).products[0]!;
  const created = await http
    .post('/dev/v1/orders')
    .set(bearer(s.key))
    .send({ email: 'buyer@example.com', items: [{ product_id: product, quantity: 1 }] });
  expect(created.status).toBe(201);
  const uniqid = created.body.data.uniqid as string;
  const form = await request(app).post(`/invoice/${uniqid}/pay`).type('form').send({ gateway: 'STRIPE' });
  expect(form.status).toBe(303);
  const order = await orderOf(uniqid);
  const attempt = await t.db
    .selectFrom('payment_attempts')
    .select('session_id')
    .where('order_id', '=', order.id)
    .executeTakeFirstOrThrow();
  await stripe.pay(attempt.session_id!);
  await settle();
  expect((await orderOf(uniqid)).status).toBe('COMPLETED');
  const mails = await t.db.selectFrom('outbound_emails').select('subject').where('shop_id', '=', s.test).execute();
  expect(mails.length).toBeGreaterThan(0);
});

/** Every place the run could have put a secret, each named. */
async function everything(): Promise<{ haystacks: Haystack[]; rows: Record<string, number> }> {
  const logs = t.logs.map((line, i) => ({
    where: `log line ${i} (${String(line.level)}: ${String(line.message)})`,
    text: JSON.stringify(line),
  }));
  const spans = exporter.getFinishedSpans().map((span: ReadableSpan) => ({
    where: `span ${span.name}`,
    text: JSON.stringify({
      name: span.name,
      attributes: span.attributes,
      events: span.events.map((e) => ({ name: e.name, attributes: e.attributes })),
      links: span.links.map((l) => l.attributes),
      status: span.status,
      resource: span.resource.attributes,
    }),
  }));
  const answered = responses.map((r) => ({
    where: `response ${r.method} ${r.url} ${r.status}`,
    text: JSON.stringify({ headers: r.headers, body: r.body }),
  }));
  const printed = consoleMethods.map((method) => ({
    where: `console.${method}`,
    text: jest
      .mocked(console[method])
      .mock.calls.map((args) => format(...args))
      .join('\n'),
  }));
  const database = await databaseHaystacks(t.db);
  return {
    haystacks: [...logs, ...spans, ...answered, ...delivered, ...outputs, ...printed, ...database.haystacks],
    rows: database.rows,
  };
}

test('no provider secret in any log line, span, table, response, merchant webhook or CLI output', async () => {
  for (const token of paypal.accessTokens()) secrets[`PAYPAL access token ${token.slice(0, 9)}`] = token;
  const { haystacks, rows } = await everything();
  // Not vacuous: every kind of place was filled by the flows above.
  expect(paypal.accessTokens().length).toBeGreaterThan(0);
  expect(Object.keys(secrets).length).toBe(10 + paypal.accessTokens().length);
  expect(t.logs.length).toBeGreaterThan(50);
  expect(t.logs.some((l) => l.level === 'error' || l.level === 'warn')).toBe(true);
  const spanNames = new Set(exporter.getFinishedSpans().map((s) => s.name));
  expect([...spanNames]).toEqual(expect.arrayContaining(['createPayment', 'refundOrder']));
  expect(responses.filter((r) => r.url.startsWith('/webhooks/gateways/')).map((r) => r.status)).toContain(400);
  expect(responses.map((r) => r.status)).toEqual(expect.arrayContaining([200, 201, 400, 502]));
  expect(delivered.length).toBeGreaterThanOrEqual(6); // order:paid and order:refunded of each shop
  expect(rows).toMatchObject({ gateway_connections: 3 });
  for (const table of ['events', 'audit_entries', 'webhook_deliveries', 'outbound_emails', 'gateway_events']) {
    expect([table, rows[table]]).toEqual([table, expect.any(Number)]);
    expect(rows[table]).toBeGreaterThan(0);
  }

  expect(findSecrets(secrets, haystacks)).toEqual([]);

  // The stored credentials are sealed: a row per shop, none holding its own secrets' bytes.
  const sealed = await t.db.selectFrom('gateway_connections').select(['shop_id', 'sealed_credentials']).execute();
  for (const s of Object.values(shops)) {
    const row = sealed.find((r) => r.shop_id === s.test)!;
    expect(row.sealed_credentials.length).toBeGreaterThan(0);
    for (const field of secretFields[s.code]) {
      expect(Buffer.from(row.sealed_credentials).includes(s.credentials[field]!)).toBe(false);
    }
  }
});

test('the scan finds what is planted: verbatim in a response, a log line, a span and a row; base64; a part', async () => {
  const marker = `planted_${randomBytes(24).toString('base64url')}`;
  const encoded = `planted_${randomBytes(24).toString('base64url')}`;
  const cut = `planted_${randomBytes(24).toString('base64url')}`;
  const s = shops.STRIPE;
  // The request id is echoed in the response, written in the log lines and the span; the title is stored.
  const res = await http
    .post('/dev/v1/payments')
    .set(bearer(s.key))
    .set('X-Request-Id', marker)
    .send({ title: marker, value: 3, currency: 'USD' });
  expect(res.status).toBe(201);
  t.logger.debug('planted', {
    auth: `Basic ${Buffer.from(`id:${encoded}`).toString('base64')}`,
    note: cut.slice(0, 26),
  });
  const { haystacks } = await everything();
  const found = findSecrets({ marker, encoded, cut }, haystacks);
  const kinds = (name: string) =>
    new Set(found.filter((f) => f.startsWith(`${name} `)).map((f) => f.split(' in ')[1]!.split(' ')[0]));
  expect([...kinds('marker')]).toEqual(expect.arrayContaining(['response', 'log', 'span', 'table']));
  expect(found).toContainEqual(
    expect.stringMatching(/^encoded \(base64 \(offset \d\)\) in log line \d+ \(debug: planted\)$/),
  );
  expect(found).toContainEqual(expect.stringMatching(/^cut \(part \[\d+, \d+\)\) in log line \d+ \(debug: planted\)$/));
  // And nothing where it was not: the merchant's webhooks and the CLI's output never saw these.
  expect(found.filter((f) => / in (merchant webhook|gateway connect|connectShopGateway)/.test(f))).toEqual([]);
});
