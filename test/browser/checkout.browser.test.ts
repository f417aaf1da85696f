// The hosted checkout as a buyer uses it, in headless Chromium: open the invoice of an order made through the API,
// pay with SANDBOX on the gateway's page, and come back to the invoice showing the delivered serial. A screenshot of
// that page is left in test-artifacts/checkout.png; and the same through a payment link (payment-link.png). SANDBOX
// exists only in test mode: both shops are test shops (the test twin has the gateway from its start). A link to a
// product with a variant field asks for its option, and the paid order records the one chosen (payment-link-options.png).
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import type { BrowserContext } from 'playwright-core';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('checkout browser test');

const artifacts = join(__dirname, '..', '..', 'test-artifacts');
let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  // The port first: the sandbox's redirects name this server's public address.
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({ env: { PUBLIC_URL: base } });
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
  await t?.close();
});

browserTest('a buyer pays an invoice with SANDBOX and sees the serial', async () => {
  const shopId = await t.createShop({ name: 'Serial Shop', mode: 'test' });
  const { key } = await t.createKey(shopId, ['*']);
  const productId = (
    await t.seed(shopId, {
      products: [{ title: 'Game key', type: 'SERIALS', price: '4.99', serials: ['GAME-KEY-0001', 'GAME-KEY-0002'] }],
    })
  ).products[0]!;
  const created = await request(t.app)
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', title: 'Browser order', items: [{ product_id: productId, quantity: 1 }] });
  expect(created.status).toBe(201);
  const uniqid: string = created.body.data.uniqid;

  const tab = await browser!.newPage();
  await tab.goto(`${base}/invoice/${uniqid}`);
  expect(await tab.textContent('h1')).toBe('Browser order');
  expect(await tab.textContent('#status')).toBe('PENDING');

  await Promise.all([tab.waitForURL(/\/sandbox\/checkout\/sbx_/), tab.click('text=Pay with SANDBOX')]);
  expect(await tab.textContent('#amount')).toBe('4.99 USD');

  await Promise.all([tab.waitForURL(`${base}/invoice/${uniqid}`), tab.click('button:text-is("Pay")')]);
  expect(await tab.textContent('#status')).toBe('COMPLETED');
  expect(await tab.textContent('.codes')).toContain('GAME-KEY-0001');

  mkdirSync(artifacts, { recursive: true });
  await tab.screenshot({ path: join(artifacts, 'checkout.png'), fullPage: true });
  await tab.close();
});

browserTest('a buyer opens a payment link, gives an email, pays and sees the serial', async () => {
  const shopId = await t.createShop({ name: 'Link Shop', mode: 'test' });
  const { key } = await t.createKey(shopId, ['*']);
  const productId = (
    await t.seed(shopId, {
      products: [{ title: 'Game key', type: 'SERIALS', price: '7.00', serials: ['LINK-KEY-0001'] }],
    })
  ).products[0]!;
  const link = await request(t.app)
    .post('/dev/v1/payment-links')
    .set(bearer(key))
    .send({ title: 'Launch offer', product_id: productId, max_uses: 1 });
  expect(link.status).toBe(201);

  const tab = await browser!.newPage();
  await tab.goto(link.body.data.url);
  expect(await tab.textContent('h1')).toBe('Launch offer');
  await tab.fill('input[name="email"]', 'linkbuyer@example.com');
  await Promise.all([tab.waitForURL(/\/invoice\/[0-9a-f-]{36}$/), tab.click('text=Continue to payment')]);
  expect(await tab.textContent('#total')).toBe('7.00 USD');

  await Promise.all([tab.waitForURL(/\/sandbox\/checkout\/sbx_/), tab.click('text=Pay with SANDBOX')]);
  await Promise.all([tab.waitForURL(/\/invoice\//), tab.click('button:text-is("Pay")')]);
  expect(await tab.textContent('#status')).toBe('COMPLETED');
  expect(await tab.textContent('.codes')).toContain('LINK-KEY-0001');
  mkdirSync(artifacts, { recursive: true });
  await tab.screenshot({ path: join(artifacts, 'payment-link.png'), fullPage: true });

  // Its one use is taken: the link now says so.
  await tab.goto(link.body.data.url);
  expect(await tab.textContent('#unavailable')).toContain('used as many times');
  await tab.close();
});

browserTest(
  'a payment link to a product with a variant field asks for the option, and the order records it',
  async () => {
    const shopId = await t.createShop({ name: 'Shirt Shop', mode: 'test' });
    const { key } = await t.createKey(shopId, ['*']);
    const productId = (
      await t.seed(shopId, {
        products: [{ title: 'Tour shirt', type: 'SERIALS', price: '20.00', serials: ['SHIRT-0001'] }],
      })
    ).products[0]!;
    const field = await t.http
      .post(`/dev/v1/products/${productId}/variants/fields`)
      .set(bearer(key))
      .send({ name: 'Size', options: [{ value: 'M' }, { value: 'XL', price_adjustment: 2.5 }] });
    expect(field.status).toBe(201);
    const link = await t.http
      .post('/dev/v1/payment-links')
      .set(bearer(key))
      .send({ title: 'Tour shirt', product_id: productId });
    expect(link.status).toBe(201);

    const tab = await browser!.newPage();
    await tab.goto(link.body.data.url);
    // The choice is named by its label, and priced.
    const size = tab.getByLabel('Size');
    expect(await size.count()).toBe(1);
    expect(await tab.locator('#choice-0 option').allTextContents()).toEqual([
      'Choose…',
      'M',
      'XL (+2.50 USD per unit)',
    ]);
    expect(await tab.textContent('#price')).toBe('20.00 USD');
    await size.selectOption('XL');
    await tab.fill('input[name="email"]', 'shirtbuyer@example.com');
    await Promise.all([tab.waitForURL(/\/invoice\/[0-9a-f-]{36}$/), tab.click('text=Continue to payment')]);
    const uniqid = tab.url().split('/').pop()!;
    expect(await tab.textContent('#total')).toBe('22.50 USD');
    expect(await tab.textContent('.options')).toBe('Size: XL');

    await Promise.all([tab.waitForURL(/\/sandbox\/checkout\/sbx_/), tab.click('text=Pay with SANDBOX')]);
    await Promise.all([tab.waitForURL(`${base}/invoice/${uniqid}`), tab.click('button:text-is("Pay")')]);
    expect(await tab.textContent('#status')).toBe('COMPLETED');
    expect(await tab.textContent('.codes')).toContain('SHIRT-0001');
    mkdirSync(artifacts, { recursive: true });
    await tab.screenshot({ path: join(artifacts, 'payment-link-options.png'), fullPage: true });
    await tab.close();

    const order = await t.db
      .selectFrom('orders')
      .select(['id', 'status', 'total'])
      .where('uniqid', '=', uniqid)
      .executeTakeFirstOrThrow();
    expect(order.status).toBe('COMPLETED');
    const item = await t.db
      .selectFrom('order_items')
      .select(['variant_options', 'unit_price'])
      .where('order_id', '=', order.id)
      .executeTakeFirstOrThrow();
    expect(item.variant_options).toEqual([expect.objectContaining({ name: 'Size', value: 'XL' })]);
    expect(Number(item.unit_price)).toBe(22.5);
  },
);
