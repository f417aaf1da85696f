// Webhooks of a test shop whose test clock was advanced (issue 36): the delivery is signed on real time, so receivers
// verifying with Standard Webhooks (our SDK's verifyWebhook and the `standardwebhooks` package) accept it, while the
// event's own times follow the shop's clock; with the clock at its bound (ten years ahead) every event is delivered
// and recorded exactly once.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '../../sdk/src';
import { ManualClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
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
