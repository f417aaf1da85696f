// Test mode as a buyer meets it, in headless Chromium (issue 26). A live shop's checkout offers no SANDBOX, and the
// sandbox addresses pay nothing there (404/400 pages, nothing written). A test shop's checkout shows the TEST MODE
// banner and is paid through SANDBOX by the same pipeline as any payment: the serial is delivered, the receipt is
// queued marked [TEST MODE], and `order:paid` reaches the test shop's endpoint with livemode false, and nothing
// reaches the live shop's endpoint on the same receiver. Screenshot: test-artifacts/test-mode-checkout.png.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { newId } from '../../src/ids';
import { systemClock } from '../../src/platform/clock';
import { loadSecretBox } from '../../src/platform/secret-box';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { countWhere } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('test mode browser test');

const artifacts = join(__dirname, '..', '..', 'test-artifacts');
let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;

/** A webhook receiver on 127.0.0.1: every request, by path (`/live` and `/test` are two endpoints). */
let receiver: Server;
let receiverUrl: string;
const received: { path: string; body: string }[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({ env: { PUBLIC_URL: base } });
  server.on('request', t.app);
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  chrome = await launchChromium();
  browser = chrome.browser;
});

afterAll(async () => {
  await chrome?.close();
  for (const s of [server, receiver]) {
    if (!s) continue;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  await t?.close();
});

const api = () => t.http;

async function shopWithSerials(mode: 'live' | 'test', name: string, serials: string[]) {
  const shopId = await t.createShop({ name, mode });
  const { key } = await t.createKey(shopId, ['*']);
  const productId = (
    await t.seed(shopId, { products: [{ title: 'Game key', type: 'SERIALS', price: '4.99', serials }] })
  ).products[0]!;
  return { shopId, key, productId };
}

async function createOrder(key: string, productId: string, email: string): Promise<{ id: string; uniqid: string }> {
  const created = await api()
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email, items: [{ product_id: productId, quantity: 1 }] });
  expect(created.status).toBe(201);
  return { id: created.body.data.id as string, uniqid: created.body.data.uniqid as string };
}

/** What a shop has written that a payment would write: attempts, events, mail, and the order's status. */
async function shopState(shopId: string, orderId: string) {
  const order = await t.db
    .selectFrom('orders')
    .select(['status', 'gateway'])
    .where('shop_id', '=', shopId)
    .where('id', '=', orderId)
    .executeTakeFirstOrThrow();
  const attempts = await t.db
    .selectFrom('payment_attempts')
    .select(['id', 'status'])
    .where('shop_id', '=', shopId)
    .orderBy('id')
    .execute();
  return {
    order,
    attempts,
    events: await countWhere(t.db, 'events', 'shop_id', shopId),
    mail: await countWhere(t.db, 'outbound_emails', 'shop_id', shopId),
    serialsSold: await t.db
      .selectFrom('order_items')
      .select('delivery_status')
      .where('shop_id', '=', shopId)
      .where('order_id', '=', orderId)
      .execute(),
  };
}

/** The browser submits a form of its own to `action` (as a forged page would), and lands on the answer. */
async function submitForm(tab: Page, action: string, fields: Record<string, string>) {
  await tab.goto('about:blank');
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
    .join('');
  await tab.setContent(`<form method="post" action="${action}">${inputs}<button id="go">go</button></form>`);
  const [response] = await Promise.all([tab.waitForNavigation(), tab.click('#go')]);
  return { status: response!.status(), h1: await tab.textContent('h1') };
}

async function drainWebhooks(): Promise<number> {
  const job = webhookDeliveryJob(t.db, {
    clock: systemClock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, undefined),
    allowPrivateTargets: true,
    timeoutMs: 2000,
  });
  let total = 0;
  for (let n = await job.runOnce(); n > 0; n = await job.runOnce()) total += n;
  return total;
}

browserTest('a live checkout offers no SANDBOX, and the sandbox addresses pay nothing there', async () => {
  const live = await shopWithSerials('live', 'Live Shop', ['LIVE-KEY-0001']);
  const order = await createOrder(live.key, live.productId, 'livebuyer@example.com');
  const tab = await browser!.newPage();
  await tab.goto(`${base}/invoice/${order.uniqid}`);
  expect(await tab.textContent('#status')).toBe('PENDING');
  expect(await tab.locator('#test-mode-banner').count()).toBe(0);
  expect(await tab.textContent('body')).not.toContain('SANDBOX');
  expect(await tab.locator('button[name="gateway"][value="SANDBOX"]').count()).toBe(0);
  expect(await tab.textContent('body')).not.toContain('TEST MODE');

  // A session of this live order as one started before SANDBOX became test-only would be.
  const legacySession = `sbx_${'a'.repeat(32)}`;
  await t.db
    .insertInto('payment_attempts')
    .values({
      id: newId('pay'),
      shop_id: live.shopId,
      order_id: order.id,
      gateway: 'SANDBOX',
      session_id: legacySession,
      status: 'PENDING',
      amount: '4.99',
      created_at: new Date(),
    })
    .execute();
  const before = await shopState(live.shopId, order.id);
  expect(before.order.status).toBe('PENDING');

  const refused = [
    [`${base}/invoice/${order.uniqid}/pay`, { gateway: 'SANDBOX' }, 400, 'Payment method not available'],
    [`${base}/invoice/${order.uniqid}/pay`, { gateway: 'sandbox' }, 400, 'Payment method not available'],
    [`${base}/sandbox/checkout/${legacySession}/pay`, {}, 404, 'Session not found'],
    [`${base}/sandbox/checkout/${legacySession}/fail`, {}, 404, 'Session not found'],
    [`${base}/sandbox/checkout/${legacySession}/dispute`, { reason: 'FRAUD' }, 404, 'Session not found'],
    [`${base}/sandbox/checkout/sbx_${'b'.repeat(32)}/pay`, {}, 404, 'Session not found'],
  ] as const;
  for (const [action, fields, status, title] of refused) {
    expect({ action, ...(await submitForm(tab, action, fields)) }).toEqual({ action, status, h1: title });
  }
  const page = await tab.goto(`${base}/sandbox/checkout/${legacySession}`);
  expect(page!.status()).toBe(404);

  // Nothing changed: still PENDING, the one old attempt still PENDING, no new attempt, no event, no mail.
  expect(await shopState(live.shopId, order.id)).toEqual(before);
  await tab.goto(`${base}/invoice/${order.uniqid}`);
  expect(await tab.textContent('#status')).toBe('PENDING');
  expect(await tab.textContent('body')).not.toContain('LIVE-KEY-0001');
  await tab.close();
});

browserTest('a test checkout shows the banner and is paid through SANDBOX by the whole pipeline', async () => {
  const test = await shopWithSerials('test', 'Twin Shop', ['TEST-KEY-0001', 'TEST-KEY-0002']);
  const shop = await t.db
    .selectFrom('shops')
    .select(['livemode', 'live_shop_id'])
    .where('id', '=', test.shopId)
    .executeTakeFirstOrThrow();
  expect(shop.livemode).toBe(false);
  const liveShopId = shop.live_shop_id!;
  const liveKey = (await t.createKey(liveShopId, ['*'])).key;
  expect(test.key.startsWith('mdk_test_')).toBe(true);
  expect(liveKey.startsWith('mdk_test_')).toBe(false);

  for (const [key, path] of [
    [test.key, '/test'],
    [liveKey, '/live'],
  ] as const) {
    const res = await api()
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiverUrl}${path}`, events: ['*'] });
    expect(res.status).toBe(201);
  }
  const liveEventsBefore = await countWhere(t.db, 'events', 'shop_id', liveShopId);

  const order = await createOrder(test.key, test.productId, 'twinbuyer@example.com');
  const tab = await browser!.newPage();
  await tab.goto(`${base}/invoice/${order.uniqid}`);
  const banner = tab.locator('#test-mode-banner');
  expect(await banner.isVisible()).toBe(true);
  expect(await banner.getAttribute('role')).toBe('status');
  expect(await banner.textContent()).toContain('TEST MODE — no real money moves');
  expect(await tab.textContent('#status')).toBe('PENDING');

  await Promise.all([tab.waitForURL(/\/sandbox\/checkout\/sbx_/), tab.click('text=Pay with SANDBOX')]);
  expect(await tab.locator('#test-mode-banner').isVisible()).toBe(true);
  expect(await tab.textContent('#amount')).toBe('4.99 USD');
  await Promise.all([tab.waitForURL(`${base}/invoice/${order.uniqid}`), tab.click('button:text-is("Pay")')]);
  expect(await tab.textContent('#status')).toBe('COMPLETED');
  expect(await tab.textContent('.codes')).toContain('TEST-KEY-0001');
  expect(await tab.locator('#test-mode-banner').isVisible()).toBe(true);
  mkdirSync(artifacts, { recursive: true });
  await tab.screenshot({ path: join(artifacts, 'test-mode-checkout.png'), fullPage: true });
  await tab.close();

  // The receipt, queued for the buyer, says it is a test.
  const mails = await t.db
    .selectFrom('outbound_emails')
    .select(['template', 'subject', 'text', 'to_address'])
    .where('shop_id', '=', test.shopId)
    .execute();
  const receipt = mails.find((m) => m.template === 'receipt');
  expect(receipt).toMatchObject({ to_address: 'twinbuyer@example.com' });
  expect(receipt!.subject.startsWith('[TEST MODE] ')).toBe(true);
  expect(receipt!.text.startsWith('TEST MODE')).toBe(true);
  expect(mails.every((m) => m.subject.startsWith('[TEST MODE] '))).toBe(true);

  // Webhooks: order:paid to the test endpoint, livemode false; the live endpoint gets nothing.
  expect(await drainWebhooks()).toBeGreaterThan(0);
  const toTest = received.filter((r) => r.path === '/test').map((r) => JSON.parse(r.body));
  const paid = toTest.find((b) => b.event === 'order:paid');
  expect(paid).toMatchObject({ event: 'order:paid', livemode: false, data: { uniqid: order.uniqid } });
  expect(toTest.every((b) => b.livemode === false)).toBe(true);
  expect(received.filter((r) => r.path !== '/test')).toEqual([]);
  expect(await countWhere(t.db, 'events', 'shop_id', liveShopId)).toBe(liveEventsBefore);
  const liveOrders = await countWhere(t.db, 'orders', 'shop_id', liveShopId);
  expect(liveOrders).toBe(0);
});
