// Metrics (issue 28), by scraping: the endpoint is started as the server starts it (its own port, a token), a small
// load runs through the app (orders, an idempotent replay, errors, a 429 of the rate limiter, webhook deliveries to a
// local receiver), and every series the issue names is present in the scrape and moved. The endpoint refuses
// scrapes without the token, and the API's port does not serve it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { sql } from 'kysely';
import { loadConfig, ConfigError } from '../../src/config';
import { createHttpServer } from '../../src/http/client-error';
import { startMetricsEndpoint, type MetricsEndpoint } from '../../src/http/metrics-endpoint';
import { watchDatabase } from '../../src/platform/metrics';
import { activeTracer } from '../../src/platform/tracing';
import { loadSecretBox } from '../../src/platform/secret-box';
import { systemClock } from '../../src/platform/clock';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import type { Job } from '../../src/worker/worker';
import { exchange } from '../helpers/raw-http';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const token = 'scrape-token-0123456789';
let t: TestApp;
let endpoint: MetricsEndpoint;
let receiver: Server;
let receiverUrl: string;
let job: Job;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '15' } });
  watchDatabase(t.database);
  endpoint = (await startMetricsEndpoint({ port: 0, host: '127.0.0.1', token }, t.logger))!;
  receiver = createServer((req, res) => {
    req.resume();
    // One endpoint answers 500, so the failed outcome moves too.
    req.on('end', () => res.writeHead(req.url === '/fail' ? 500 : 204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  job = webhookDeliveryJob(t.db, {
    clock: systemClock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, undefined),
    allowPrivateTargets: true,
  });
});

afterAll(async () => {
  await endpoint?.close();
  receiver.close();
  await t.close();
});

/** The scrape as series (`name{labels}`) -> value. */
async function scrape(): Promise<Map<string, number>> {
  const res = await request(`http://127.0.0.1:${endpoint.port}`).get('/metrics').set(bearer(token));
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  const series = new Map<string, number>();
  for (const line of res.text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

const value = (m: Map<string, number>, series: string) => m.get(series) ?? 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('under a small load every series is present and moves', async () => {
  const shop = await t.createShop({ name: 'Metrics', plan: 'pro' });
  const key = (await t.createKey(shop, ['*'])).key;
  const product = (await t.seed(shop, { products: [{ title: 'P', price: '10.00' } as never] })).products[0]!;
  for (const path of ['/ok', '/fail']) {
    const e = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiverUrl}${path}`, events: ['order:created'] });
    expect(e.status).toBe(201);
  }
  const before = await scrape();

  // Orders (each queues two webhook deliveries), one of them replayed by its Idempotency-Key.
  const order = () =>
    t.http
      .post('/dev/v1/orders')
      .set(bearer(key))
      .send({ email: 'm@example.com', items: [{ product_id: product, quantity: 1 }] });
  for (let i = 0; i < 5; i++) expect((await order()).status).toBe(201);
  const first = await order().set('Idempotency-Key', 'metrics-1');
  const replay = await order().set('Idempotency-Key', 'metrics-1');
  expect([first.headers['idempotency-status'], replay.headers['idempotency-status']]).toEqual(['created', 'cached']);
  // Reads, an error code (NOT_FOUND) and a validation error.
  for (let i = 0; i < 20; i++) expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
  const missing = await t.http.post('/dev/v1/orders/ord_missing/complete').set(bearer(key)).send({});
  expect(missing.status).toBe(404);
  expect((await t.http.post('/dev/v1/orders').set(bearer(key)).send({})).status).toBe(422);
  // A free shop (15 requests a minute here) runs into its rate limit.
  const free = await t.createShop({ name: 'Free', plan: 'free' });
  const freeKey = (await t.createKey(free, ['*'])).key;
  let refused = 0;
  for (let i = 0; i < 20 && refused === 0; i++) {
    if ((await t.http.get('/dev/v1/me').set(bearer(freeKey))).status === 429) refused++;
  }
  expect(refused).toBe(1);

  // The queues hold the deliveries: depth and age up (the read is cached for up to 2 s).
  await sleep(2100);
  const queued = await scrape();
  expect(value(queued, 'mdapi_queue_depth{queue="webhook_deliveries"}')).toBe(12);
  expect(value(queued, 'mdapi_queue_oldest_item_age_seconds{queue="webhook_deliveries"}')).toBeGreaterThan(0);
  expect(value(queued, 'mdapi_outbox_lag_seconds')).toBeGreaterThan(0);
  for (const queue of ['mail', 'dynamic_deliveries', 'bot_notifications', 'email_marketing_syncs']) {
    expect(queued.has(`mdapi_queue_depth{queue="${queue}"}`)).toBe(true);
    expect(queued.has(`mdapi_queue_oldest_item_age_seconds{queue="${queue}"}`)).toBe(true);
  }

  while ((await job.runOnce()) > 0);
  await sleep(2100);
  const after = await scrape();
  const moved = (series: string, by?: number) => {
    const delta = value(after, series) - value(before, series);
    if (by === undefined) expect({ series, moved: delta > 0 }).toEqual({ series, moved: true });
    else expect({ series, delta }).toEqual({ series, delta: by });
  };

  moved('mdapi_http_requests_total{operation="createOrder",status_class="2xx"}', 7);
  moved('mdapi_http_requests_total{operation="createOrder",status_class="4xx"}', 1);
  moved('mdapi_http_requests_total{operation="completeOrder",status_class="4xx"}', 1);
  moved('mdapi_http_requests_total{operation="getAccount",status_class="2xx"}');
  moved('mdapi_http_requests_total{operation="getAccount",status_class="4xx"}', 1);
  moved('mdapi_http_request_duration_seconds_count{operation="createOrder",status_class="2xx"}', 7);
  moved('mdapi_http_request_duration_seconds_sum{operation="createOrder",status_class="2xx"}');
  moved('mdapi_http_request_duration_seconds_bucket{le="+Inf",operation="getAccount",status_class="2xx"}');
  moved(`mdapi_http_errors_total{code="${missing.body.error.code}"}`, 1);
  moved('mdapi_http_errors_total{code="VALIDATION_ERROR"}', 1);
  moved('mdapi_http_errors_total{code="RATE_LIMITED"}', 1);
  moved('mdapi_rate_limit_refusals_total{limiter="shop"}', 1);
  moved('mdapi_idempotency_outcomes_total{outcome="created"}', 1);
  moved('mdapi_idempotency_outcomes_total{outcome="cached"}', 1);
  moved('mdapi_idempotency_outcomes_total{outcome="bypassed"}');
  moved('mdapi_webhook_attempts_total{outcome="delivered"}', 6);
  moved('mdapi_webhook_attempts_total{outcome="http_error"}', 6);
  moved('mdapi_webhook_attempt_duration_seconds_count{result="delivered"}', 6);
  moved('mdapi_webhook_attempt_duration_seconds_count{result="failed"}', 6);
  moved('mdapi_process_cpu_user_seconds_total');
  expect(after.has('mdapi_process_resident_memory_bytes')).toBe(true);
  expect(after.has('mdapi_nodejs_eventloop_lag_seconds')).toBe(true);

  // Delivered ones left the queue; the failed ones wait for their retry, so the depth went down by half.
  expect(value(after, 'mdapi_queue_depth{queue="webhook_deliveries"}')).toBe(6);
  await t.db.updateTable('webhook_deliveries').set({ status: 'FAILED', next_attempt_at: null }).execute();
  await sleep(2100);
  const drained = await scrape();
  expect(value(drained, 'mdapi_queue_depth{queue="webhook_deliveries"}')).toBe(0);
  expect(value(drained, 'mdapi_outbox_lag_seconds')).toBe(0);
});

test("requests Node's HTTP parser refuses are counted, under a bounded operation label", async () => {
  // A server built as the real one is (src/server.ts): the refusals happen below express, on the socket.
  const server = createHttpServer(t.app, t.config, t.logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    const before = await scrape();
    // A raw 0xFF byte in the path (400), and a header over the 16 KiB limit (431).
    const badPath = Buffer.concat([
      Buffer.from('GET /dev/v1/me'),
      Buffer.from([0xff]),
      Buffer.from(' HTTP/1.1\r\n\r\n'),
    ]);
    const hugeHeader = `GET /dev/v1/me HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`;
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await exchange(port, badPath));
    for (let i = 0; i < 2; i++) answers.push(await exchange(port, hugeHeader));
    expect(answers.map((a) => [a.status, (a.body as { error: { code: string } }).error.code])).toEqual([
      ...Array(3).fill([400, 'BAD_REQUEST']),
      ...Array(2).fill([431, 'REQUEST_HEADER_FIELDS_TOO_LARGE']),
    ]);
    const after = await scrape();
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta('mdapi_http_requests_total{operation="parser_error",status_class="4xx"}')).toBe(5);
    expect(delta('mdapi_http_errors_total{code="BAD_REQUEST"}')).toBe(3);
    expect(delta('mdapi_http_errors_total{code="REQUEST_HEADER_FIELDS_TOO_LARGE"}')).toBe(2);
    // Nothing else moved: no operation of the API saw them, and no other status class.
    const requestSeries = (m: Map<string, number>) =>
      [...m].filter(([k]) => k.startsWith('mdapi_http_requests_total{'));
    const movedSeries = requestSeries(after)
      .filter(([k, v]) => v !== value(before, k))
      .map(([k]) => k);
    expect(movedSeries).toEqual(['mdapi_http_requests_total{operation="parser_error",status_class="4xx"}']);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the pool series report the connections in use and the queries waiting for one', async () => {
  const idle = await scrape();
  if (!t.database.pool) {
    // The embedded database has one connection, always open; it has no pool to wait for.
    expect(value(idle, 'mdapi_db_pool_connections{state="open"}')).toBe(1);
    expect(idle.has('mdapi_db_pool_connections{state="in_use"}')).toBe(false);
    expect(idle.get('mdapi_db_pool_waiting_requests')).toBe(0);
    return;
  }
  const max = t.database.pool.options.max;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let started = 0;
  // Every connection held in a transaction, and one query more waiting for a connection.
  const held = Array.from({ length: max + 1 }, () =>
    t.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      started++;
      await gate;
    }),
  );
  while (started < max) await sleep(10);
  const busy = await scrape();
  release();
  await Promise.all(held);
  const calm = await scrape();
  expect(value(busy, 'mdapi_db_pool_connections{state="in_use"}')).toBe(max);
  expect(value(busy, 'mdapi_db_pool_waiting_requests')).toBe(1);
  expect(value(calm, 'mdapi_db_pool_connections{state="in_use"}')).toBe(0);
  expect(value(calm, 'mdapi_db_pool_connections{state="idle"}')).toBeGreaterThan(0);
  expect(value(calm, 'mdapi_db_pool_waiting_requests')).toBe(0);
});

test('the endpoint wants its token, and the API port does not serve metrics', async () => {
  const metrics = request(`http://127.0.0.1:${endpoint.port}`);
  const none = await metrics.get('/metrics');
  expect(none.status).toBe(401);
  expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
  expect(none.text).not.toContain('mdapi_');
  expect((await metrics.get('/metrics').set(bearer(`${token}x`))).status).toBe(401);
  expect((await metrics.get('/metrics').set('Authorization', token)).status).toBe(401);
  expect((await metrics.get('/other').set(bearer(token))).status).toBe(404);
  const api = await request(t.app).get('/metrics').set(bearer(token));
  expect(api.status).toBe(404);
  expect(api.text).not.toContain('mdapi_');
});

test('configuration: off unless METRICS_PORT is set; off the loopback only with a token', () => {
  expect(loadConfig({}).metrics).toBeUndefined();
  expect(loadConfig({ METRICS_PORT: '9464' }).metrics).toEqual({ port: 9464, host: '127.0.0.1', token: undefined });
  expect(() => loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toThrow(ConfigError);
  expect(() => loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: 'short' })).toThrow(ConfigError);
  expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: token }).metrics).toEqual({
    port: 9464,
    host: '0.0.0.0',
    token,
  });
});

test('tracing is off unless configured: no tracer, and events store no traceparent', async () => {
  expect(loadConfig({}).otlpEndpoint).toBeUndefined();
  expect(activeTracer()).toBeUndefined();
  const stored = await t.db.selectFrom('events').select('traceparent').execute();
  expect(stored.length).toBeGreaterThan(0);
  expect(stored.every((e) => e.traceparent === null)).toBe(true);
});
