// A buyer pays through PayPal in headless Chromium: our hosted checkout, PayPal's (fake) approval page, Pay, and
// back to our invoice page, which shows it paid. The fake's webhooks are held the whole time, so what settles the
// invoice is our return route (it reads the order, which captures it) and nothing else; released afterwards, the
// webhooks change nothing. A screenshot is left in test-artifacts/live-paypal.png.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { createPayPalProvider } from '../../src/integrations/paypal';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { systemClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import { startPayPalFake, type PayPalFake } from '../fakes/paypal/fake';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('live PayPal browser test');
const artifacts = join(__dirname, '..', '..', 'test-artifacts');
const provider = createPayPalProvider({ timeoutMs: 3_000 });
let fake: PayPalFake;
let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  fake = await startPayPalFake({ webhookRetryDelayMs: 20 });
  // The port first: PayPal's return_url names this server's public address.
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({
    gatewayProviders: [provider],
    env: { PUBLIC_URL: base, GATEWAY_BASE_URLS: fake.gatewayBaseUrls },
  });
  server.on('request', t.app);
  chrome = await launchChromium();
  browser = chrome.browser;
});

afterAll(async () => {
  await chrome?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await fake?.close();
  await t?.close();
});

browserTest('a buyer pays an invoice with PayPal, comes back, and the invoice is paid once', async () => {
  const shop = await t.createShop({ name: 'PayPal Shop', mode: 'test' });
  const { key } = await t.createKey(shop, ['*']);
  const credentials = fake.createAccount({ livemode: false, webhookUrl: `${base}/webhooks/gateways/paypal/${shop}` });
  await connectShopGateway(
    t.db,
    t.config,
    systemClock,
    {
      shopId: shop,
      code: 'PAYPAL',
      fields: {
        client_id: credentials.PAYPAL_CLIENT_ID!,
        client_secret: credentials.PAYPAL_CLIENT_SECRET!,
        webhook_id: credentials.PAYPAL_WEBHOOK_ID!,
      },
    },
    [provider],
  );
  const created = await t.http
    .post('/dev/v1/payments')
    .set(bearer(key))
    .send({ title: 'Browser license', value: 12.5, currency: 'USD', email: 'buyer@example.com' });
  expect(created.status).toBe(201);
  const uniqid = created.body.data.uniqid as string;
  fake.holdWebhooks(true);

  const tab = await browser!.newPage();
  await tab.goto(`${base}/invoice/${uniqid}`);
  expect(await tab.textContent('#status')).toBe('PENDING');
  await Promise.all([tab.waitForURL(/\/sandbox\/checkoutnow\?token=/), tab.click('text=/Pay with PAYPAL/i')]);
  expect(await tab.textContent('body')).toContain('12.50 USD');
  const sessionId = new URL(tab.url()).searchParams.get('token')!;
  expect(fake.session(sessionId)).toMatchObject({ state: 'open', amount: '12.50' });

  await Promise.all([tab.waitForURL(`${base}/invoice/${uniqid}`), tab.click('button:text-is("Pay")')]);
  expect(await tab.textContent('#status')).toBe('COMPLETED');
  mkdirSync(artifacts, { recursive: true });
  await tab.screenshot({ path: join(artifacts, 'live-paypal.png'), fullPage: true });
  await tab.close();

  const paidOnce = async () => {
    const order = await t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();
    expect(order.status).toBe('COMPLETED');
    const events = await t.db
      .selectFrom('events')
      .select('id')
      .where('shop_id', '=', shop)
      .where('type', '=', 'order:paid')
      .execute();
    expect(events).toHaveLength(1);
    const attempts = await t.db.selectFrom('payment_attempts').selectAll().where('order_id', '=', order.id).execute();
    expect(attempts.map((a) => [a.session_id, a.status, a.flag])).toEqual([[sessionId, 'PAID', null]]);
  };
  // Settled by the return route alone: no webhook has reached us yet.
  expect(fake.webhooks().every((h) => h.sends.length === 0)).toBe(true);
  expect(fake.session(sessionId)!.state).toBe('paid');
  await paidOnce();

  // The held webhooks arrive and the worker applies them: nothing more happens.
  fake.holdWebhooks(false);
  await fake.settled();
  expect(fake.webhooks().map((h) => [h.type, h.sends.at(-1)])).toEqual([
    ['CHECKOUT.ORDER.APPROVED', 200],
    ['PAYMENT.CAPTURE.COMPLETED', 200],
  ]);
  const worker = await createWorker(t.db, t.config, t.logger, systemClock, [provider]);
  await worker.drain();
  await paidOnce();
  expect(fake.requests.filter((r) => r.path === `/v2/checkout/orders/${sessionId}/capture`)).toHaveLength(1);
  expect(fake.violations).toEqual([]);
});
