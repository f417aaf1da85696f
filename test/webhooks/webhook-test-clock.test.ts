// Webhooks of a test shop whose test clock was advanced (issue 36): the delivery is signed on real time, so receivers
// verifying with Standard Webhooks (our SDK's verifyWebhook and the `standardwebhooks` package) accept it, while the
// event's own times follow the shop's clock; with the clock as far as it goes (its bound, ten years ahead; before it,
// 800 advances took it past year 9999, where no outcome could be recorded and deliveries were re-sent forever) every
// event is delivered and recorded exactly once; and a delivery whose outcome cannot be recorded (PostgreSQL refuses
// the write: a trigger) is sent at most MAX_ATTEMPTS times, then given up, never again; and a lease is held on real
// time, so a clock advanced while an attempt is in flight does not let a second worker send it again.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { sql } from 'kysely';
import { verifyWebhook } from '../../sdk/src';
import { maxClockOffsetSeconds } from '../../src/domain/test-mode';
import { clockAhead, ManualClock } from '../../src/platform/clock';
import { loadSecretBox } from '../../src/platform/secret-box';
import { createWorker } from '../../src/worker';
import { MAX_ATTEMPTS, webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import type { Worker } from '../../src/worker/worker';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const DAY = 86_400;

interface Hit {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on 127.0.0.1 that keeps every request (duplicates included) and answers 200. */
class Receiver {
  readonly hits: Hit[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

// Real time, as receivers judge it: standardwebhooks refuses a timestamp more than 5 minutes away from its own clock.
const clock = new ManualClock(Date.now());
let t: TestApp;
let worker: Worker;
let receiver: Receiver;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  worker = await createWorker(t.db, t.config, t.logger, clock);
  receiver = new Receiver();
});
afterAll(async () => {
  await receiver.stop();
  await t.close();
});

/** A test shop with a `*` key, a product and an endpoint for `order:created` at the receiver. */
async function testShopWithEndpoint(url: string) {
  const shop = await t.createShop({ mode: 'test', name: 'Clocked Hooks' });
  const key = (await t.createKey(shop, ['*'])).key;
  const product = (await t.seed(shop, { products: [{ title: 'Widget', price: '5.00' }] })).products[0]!;
  const endpoint = await t.http
    .post('/dev/v1/webhooks')
    .set(bearer(key))
    .send({ url, events: ['order:created'] });
  expect(endpoint.status).toBe(201);
  return { shop, key, product, secret: endpoint.body.data.secret as string };
}

async function createOrder(key: string, productId: string): Promise<{ id: string; created_at: number }> {
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'ada@example.com', items: [{ product_id: productId, quantity: 1 }] });
  expect(res.status).toBe(201);
  return res.body.data;
}

const advance = (key: string, seconds: number) =>
  t.http.post('/dev/v1/me/test-clock/advance').set(bearer(key)).send({ seconds });

const shopRow = (id: string) => t.db.selectFrom('shops').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const deliveriesOf = (shop: string) =>
  t.db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'status', 'attempts', 'pending_attempt_id', 'lease_token'])
    .where('shop_id', '=', shop)
    .orderBy('event_id')
    .execute();
const attemptsOf = (shop: string) =>
  t.db.selectFrom('webhook_attempts').select(['event_id', 'status']).where('shop_id', '=', shop).execute();

/** Drains the worker, then lets the real clock pass every lease (60 s) and drains again, `rounds` times. */
async function drainPastLeases(rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await worker.drain();
    clock.advance(61_000);
  }
  await worker.drain();
}

test('advanced 35 days: the delivery verifies with verifyWebhook and standardwebhooks; the event keeps the shop time', async () => {
  const url = await receiver.start();
  const { key, product, secret } = await testShopWithEndpoint(url);
  expect((await advance(key, 35 * DAY)).status).toBe(200);
  const shopNow = Math.floor(clock.now().getTime() / 1000) + 35 * DAY;

  const order = await createOrder(key, product);
  expect(order.created_at).toBe(shopNow);
  await worker.drain();
  expect(receiver.hits).toHaveLength(1);
  const [hit] = receiver.hits;

  // Signed on real time: within the receivers' 5 minutes of Date.now(), not 35 days ahead.
  const timestamp = Number(hit!.headers['webhook-timestamp']);
  expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(300);
  const headers = {
    'webhook-id': String(hit!.headers['webhook-id']),
    'webhook-timestamp': String(hit!.headers['webhook-timestamp']),
    'webhook-signature': String(hit!.headers['webhook-signature']),
  };
  const bySdk = verifyWebhook(hit!.body, hit!.headers, secret);
  const byStandard = new Webhook(secret).verify(hit!.body, headers) as typeof bySdk;
  expect(byStandard).toEqual(bySdk);
  // The event itself is the shop's business: its order's time is the test clock's.
  expect(bySdk).toMatchObject({ event: 'order:created', livemode: false, data: { id: order.id, created_at: shopNow } });
});

test('the clock as far as it goes: every event delivered exactly once, signed on real time, recorded', async () => {
  clock.set(Date.now());
  const receiver2 = new Receiver();
  const { shop, key, product, secret } = await testShopWithEndpoint(await receiver2.start());
  try {
    // Ten years at a time until refused (before the bound, 800 of them reached year 10000).
    let advances = 0;
    let refused: Awaited<ReturnType<typeof advance>> | undefined;
    while (advances < 800) {
      const res = await advance(key, maxClockOffsetSeconds);
      if (res.status !== 200) {
        refused = res;
        break;
      }
      advances++;
    }
    expect(advances).toBe(1);
    expect(refused!.status).toBe(400);
    expect(refused!.body.error.code).toBe('TEST_CLOCK_LIMIT');
    const shopNow = Math.floor(clock.now().getTime() / 1000) + maxClockOffsetSeconds;

    const orders = [await createOrder(key, product), await createOrder(key, product), await createOrder(key, product)];
    await drainPastLeases(3);

    // One request per event, each verified, each event's time the shop's (ten years ahead).
    expect(receiver2.hits).toHaveLength(orders.length);
    const seen = receiver2.hits.map((hit) => {
      const event = verifyWebhook(hit.body, hit.headers, secret) as { data: { id: string; created_at: number } };
      expect(event.data.created_at).toBe(shopNow);
      return event.data.id;
    });
    expect(seen.sort()).toEqual(orders.map((o) => o.id).sort());
    const ids = receiver2.hits.map((h) => String(h.headers['webhook-id']));
    expect(new Set(ids).size).toBe(orders.length);
    // Recorded: every delivery SUCCEEDED after one attempt, nothing queued or held, every log entry SUCCEEDED.
    const deliveries = await deliveriesOf(shop);
    expect(deliveries).toHaveLength(orders.length);
    for (const d of deliveries) {
      expect(d).toMatchObject({ status: 'SUCCEEDED', attempts: 1, pending_attempt_id: null, lease_token: null });
    }
    expect((await attemptsOf(shop)).map((a) => a.status)).toEqual(orders.map(() => 'SUCCEEDED'));
  } finally {
    await receiver2.stop();
  }
});

test('an outcome that cannot be recorded: sent at most MAX_ATTEMPTS times, then FAILED, never sent again', async () => {
  clock.set(Date.now());
  const receiver3 = new Receiver();
  const { shop, key, product } = await testShopWithEndpoint(await receiver3.start());
  // PostgreSQL refuses to record this shop's delivered outcomes, as it refused a timestamp past year 9999.
  await sql`create function refuse_recording() returns trigger language plpgsql as $$
    begin raise exception 'recording refused (test fault)'; end $$`.execute(t.db);
  await sql`create trigger refuse_recording before update on webhook_attempts for each row
    when (new.status = 'SUCCEEDED' and new.shop_id = ${sql.lit(shop)}) execute function refuse_recording()`.execute(
    t.db,
  );
  try {
    const order = await createOrder(key, product);
    await drainPastLeases(MAX_ATTEMPTS + 4);

    // Sent once per claim, every claim counted: MAX_ATTEMPTS sends of the same webhook-id, then given up.
    expect(receiver3.hits).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(receiver3.hits.map((h) => JSON.parse(h.body).data.id))).toEqual(new Set([order.id]));
    expect(new Set(receiver3.hits.map((h) => h.headers['webhook-id'])).size).toBe(1);
    expect(await deliveriesOf(shop)).toEqual([
      expect.objectContaining({
        status: 'FAILED',
        attempts: MAX_ATTEMPTS,
        pending_attempt_id: null,
        lease_token: null,
      }),
    ]);
    expect((await attemptsOf(shop)).map((a) => a.status)).toEqual(['FAILED']);
    // Nothing more, however long the worker runs.
    await drainPastLeases(2);
    expect(receiver3.hits).toHaveLength(MAX_ATTEMPTS);
  } finally {
    await sql`drop trigger refuse_recording on webhook_attempts`.execute(t.db);
    await sql`drop function refuse_recording()`.execute(t.db);
    await receiver3.stop();
  }
});

test('a clock advanced while an attempt is in flight does not end its lease: no second worker sends it again', async () => {
  clock.set(Date.now());
  // The first request hangs until released; any later one is answered at once.
  const hits: string[] = [];
  let release: (() => void) | undefined;
  const server = createServer((req, res) => {
    req.resume();
    hits.push(String(req.headers['webhook-id']));
    if (hits.length === 1) release = () => res.writeHead(200).end('ok');
    else res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { shop, key, product } = await testShopWithEndpoint(
    `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
  );
  try {
    expect((await advance(key, DAY)).status).toBe(200);
    await createOrder(key, product);
    const secrets = await loadSecretBox(t.db, undefined);
    const job = () =>
      webhookDeliveryJob(t.db, { clock, logger: t.logger, secrets, allowPrivateTargets: true, timeoutMs: 30_000 });
    const shopScope = async () => ({
      shopId: shop,
      clock: clockAhead(clock, Number((await shopRow(shop)).clock_offset_ms)),
    });

    const first = job();
    const inFlight = first.runOnce(await shopScope());
    while (!release) await new Promise((r) => setTimeout(r, 20));
    // A day later on the shop's clock, a second worker's pass over the shop: the lease, held on real time, still holds.
    expect((await advance(key, DAY)).status).toBe(200);
    expect(await job().runOnce(await shopScope())).toBe(0);
    expect(hits).toHaveLength(1);

    release();
    expect(await inFlight).toBe(1);
    expect(hits).toHaveLength(1);
    expect(await deliveriesOf(shop)).toEqual([expect.objectContaining({ status: 'SUCCEEDED', attempts: 1 })]);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
