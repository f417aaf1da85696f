// Every hosted page as it looks (issue 28): the payment link (also one asking for a variant and an option, and its
// refusal of a missing choice), the invoice before and after paying, the sandbox
// gateway before and after (with its dispute form), a missing invoice, the OAuth sign-in and approval pages, and a
// theme preview running and ended. On each, in headless Chromium:
//   - no request leaves the server's own host (the shop's logo is on another host, and must not be fetched);
//   - axe-core finds no serious or critical violation;
//   - at 375 px wide nothing scrolls sideways (document.documentElement.scrollWidth <= 375);
// and a screenshot goes to test-artifacts/screenshots/, or with UPDATE_SCREENSHOTS=1 to docs/screenshots/ (the ones
// README's checkout and consent sections show: ids differ on every run, so a plain run leaves the docs untouched).
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { createApp as createOAuthApp } from '../../src/ops/oauth-admin';
import { createOwner } from '../../src/ops/owner-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { startThemePreview } from '../helpers/theme-preview';

const browserTest = chromiumTest('hosted pages look browser test');

const screenshots = join(
  __dirname,
  '..',
  '..',
  process.env.UPDATE_SCREENSHOTS === '1' ? 'docs' : 'test-artifacts',
  'screenshots',
);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const desktop = { width: 900, height: 900 };
const phone = { width: 375, height: 740 };

let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({ env: { PUBLIC_URL: base, RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
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

/** A tab that records every request going anywhere but this server. */
async function openTab(): Promise<{ tab: Page; outside: string[] }> {
  const tab = await browser!.newPage();
  await tab.setViewportSize(desktop);
  const outside: string[] = [];
  tab.on('request', (r) => {
    const url = new URL(r.url());
    if (url.origin !== base && url.protocol !== 'data:') outside.push(r.url());
  });
  return { tab, outside };
}

/** How wide the document is (evaluated as text: this file is compiled without the DOM's types). */
const scrollWidth = (tab: Page) => tab.evaluate('document.documentElement.scrollWidth') as Promise<number>;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown }[];
}

/** axe-core's serious and critical findings on the page as it is now (evaluated past the page's own CSP). */
async function seriousViolations(tab: Page): Promise<string[]> {
  await tab.evaluate(axeSource);
  const violations = await tab.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** The checks every page must pass, then its screenshot(s). */
async function checkPage(tab: Page, outside: string[], name: string, options: { phoneShot?: boolean } = {}) {
  expect(outside).toEqual([]);
  expect(await seriousViolations(tab)).toEqual([]);
  mkdirSync(screenshots, { recursive: true });
  await tab.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  await tab.setViewportSize(phone);
  expect(await scrollWidth(tab)).toBeLessThanOrEqual(phone.width);
  expect(await seriousViolations(tab)).toEqual([]);
  if (options.phoneShot) await tab.screenshot({ path: join(screenshots, `${name}-phone.png`), fullPage: true });
  await tab.setViewportSize(desktop);
  expect(outside).toEqual([]);
}

async function brandShop(key: string, name: string) {
  const res = await request(t.app).put('/dev/v1/store/branding').set(bearer(key)).send({
    name,
    // On another host: the pages show the shop's initial instead, and the browser never asks that host.
    logo_url: 'https://cdn.example.com/northwind/logo.png',
    favicon_url: null,
    primary_color: '#0B6E4F',
    accent_color: '#F2A541',
    support_email: 'help@northwind.example',
  });
  expect(res.status).toBe(200);
}

browserTest('the checks can fail: axe reports an unlabelled field, the width check a page too wide', async () => {
  const tab = await browser!.newPage();
  await tab.setContent(
    '<html lang="en"><title>x</title><main><input type="text"><div style="width:600px">wide</div></main></html>',
  );
  expect((await seriousViolations(tab)).join('\n')).toContain('label');
  await tab.setViewportSize(phone);
  expect(await scrollWidth(tab)).toBeGreaterThan(phone.width);
  await tab.close();
});

browserTest('the checkout pages, before and after paying, in the shop branding', async () => {
  const shopId = await t.createShop({ name: 'Northwind Games Ltd', mode: 'test' });
  const { key } = await t.createKey(shopId, ['*']);
  await brandShop(key, 'Northwind Games');
  const productId = (
    await t.seed(shopId, {
      products: [{ title: 'Starfall: Deluxe Edition', type: 'SERIALS', price: '24.99', serials: ['NWG-7H2K-Q9XA'] }],
    })
  ).products[0]!;
  const link = await request(t.app)
    .post('/dev/v1/payment-links')
    .set(bearer(key))
    .send({ title: 'Starfall launch offer', product_id: productId });
  expect(link.status).toBe(201);

  const { tab, outside } = await openTab();
  await tab.goto(link.body.data.url);
  expect(await tab.textContent('#shop-name')).toBe('Northwind Games');
  expect(await tab.locator('#brand img').count()).toBe(0);
  // The email field is named by its label, as a screen reader announces it.
  expect(await tab.getByLabel('Your email (receipt and delivery)').count()).toBe(1);
  await checkPage(tab, outside, 'payment-link');

  await tab.fill('#email', 'buyer@example.com');
  await Promise.all([tab.waitForURL(/\/invoice\/[0-9a-f-]{36}$/), tab.click('text=Continue to payment')]);
  const uniqid = tab.url().split('/').pop()!;
  // The link's title heads the invoice; below it a short reference, and the uniqid itself in small type.
  expect(await tab.textContent('h1')).toBe('Starfall launch offer');
  expect(await tab.textContent('.order-id')).toContain(`Order ${uniqid.slice(0, 8).toUpperCase()}`);
  expect(await tab.textContent('#uniqid')).toBe(uniqid);
  expect(await tab.textContent('#payment-status')).toContain('Awaiting payment');
  // The buttons are the shop's colour, not the browser's grey.
  expect(await tab.evaluate("getComputedStyle(document.querySelector('button')).backgroundColor")).toBe(
    'rgb(11, 110, 79)',
  );
  await checkPage(tab, outside, 'checkout', { phoneShot: true });

  await Promise.all([tab.waitForURL(/\/sandbox\/checkout\/sbx_/), tab.click('text=Pay with SANDBOX')]);
  await checkPage(tab, outside, 'sandbox-gateway');
  const sandboxUrl = tab.url();

  await Promise.all([tab.waitForURL(`${base}/invoice/${uniqid}`), tab.click('button:text-is("Pay")')]);
  expect(await tab.textContent('#status')).toBe('COMPLETED');
  const notice = tab.locator('#payment-status');
  expect(await notice.isVisible()).toBe(true);
  expect(await notice.textContent()).toContain('Payment received');
  expect(await notice.getAttribute('role')).toBe('status');
  expect(await tab.textContent('.codes')).toContain('NWG-7H2K-Q9XA');
  await checkPage(tab, outside, 'checkout-paid', { phoneShot: true });

  // The paid session's page: the gateway's dispute form, its select labelled.
  await tab.goto(sandboxUrl);
  expect(await tab.getByLabel('Reason').count()).toBe(1);
  await checkPage(tab, outside, 'sandbox-dispute');

  const missing = await tab.goto(`${base}/invoice/00000000-0000-4000-8000-000000000000`);
  expect(missing?.status()).toBe(404);
  await checkPage(tab, outside, 'invoice-not-found');
  await tab.close();
});

browserTest(
  'a payment link that asks for a variant and an option, taxed, and its refusal of a missing choice',
  async () => {
    const shopId = await t.createShop({ name: 'Northwind Games Ltd', mode: 'test' });
    const { key } = await t.createKey(shopId, ['*']);
    await brandShop(key, 'Northwind Games');
    const seeded = await t.seed(shopId, {
      products: [
        {
          title: 'Starfall: Collector’s Box',
          price: '59.00',
          variants: [
            { title: 'Standard', price: '59.00' },
            { title: 'Signed by the team', price: '89.00' },
          ],
        },
      ],
      tax: { rate: '20' },
    });
    const productId = seeded.products[0]!;
    const field = await t.http
      .post(`/dev/v1/products/${productId}/variants/fields`)
      .set(bearer(key))
      .send({ name: 'Platform', options: [{ value: 'PC' }, { value: 'Console', price_adjustment: 5 }] });
    expect(field.status).toBe(201);
    const link = await t.http
      .post('/dev/v1/payment-links')
      .set(bearer(key))
      .send({ title: 'Starfall collector’s box', product_id: productId });
    expect(link.status).toBe(201);

    const { tab, outside } = await openTab();
    await tab.goto(link.body.data.url);
    expect(await tab.getByLabel('Variant').count()).toBe(1);
    expect(await tab.getByLabel('Platform').count()).toBe(1);
    // The cheapest choice with the shop's 20% on top: 59.00 + 11.80.
    expect(await tab.textContent('#price')).toBe('70.80 USD');
    expect(await tab.textContent('#tax')).toBe('59.00 USD + 11.80 USD tax (20%)');
    await checkPage(tab, outside, 'payment-link-choices', { phoneShot: true });

    // What a browser that ignores `required` sends: the page again, saying what is missing, the email kept.
    await tab.evaluate("document.querySelectorAll('[required]').forEach((el) => el.removeAttribute('required'))");
    await tab.fill('#email', 'buyer@example.com');
    await Promise.all([tab.waitForLoadState('load'), tab.click('text=Continue to payment')]);
    // The order checks the variant before the options (POST /orders does): one refusal at a time.
    expect(await tab.textContent('#problems')).toContain('Variant: choose one of the variants listed.');
    expect(await tab.inputValue('#email')).toBe('buyer@example.com');
    await checkPage(tab, outside, 'payment-link-refused');
    await tab.evaluate("document.querySelectorAll('[required]').forEach((el) => el.removeAttribute('required'))");
    await tab.selectOption('#variant', { label: 'Signed by the team (89.00 USD per unit before tax)' });
    await Promise.all([tab.waitForLoadState('load'), tab.click('text=Continue to payment')]);
    expect(await tab.textContent('#problems')).toContain('Platform is required: choose one of PC, Console');
    // The variant chosen is kept.
    expect(await tab.inputValue('#variant')).toBe(seeded.variants[1]);
    await tab.close();
  },
);

browserTest('the consent pages name the app and the shop it gets access to', async () => {
  const shopId = await t.createShop({ name: 'Northwind Games Ltd' });
  const { key } = await t.createKey(shopId, ['*']);
  await brandShop(key, 'Northwind Games');
  const email = 'owner@northwind.example';
  const password = 'a long owner password';
  await createOwner(t.operator, { shopId, email, password });
  const redirectUri = 'https://app.example.com/callback';
  const app = await createOAuthApp(t.db, { name: 'Ledger Sync', redirectUris: redirectUri, scopes: 'orders.read' });
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: app.client_id,
    redirect_uri: redirectUri,
    scope: 'orders.read',
    state: 'state-1234',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });

  const { tab, outside } = await openTab();
  await tab.goto(`${base}/dev/v1/oauth/authorize?${query}`);
  expect(await tab.textContent('#app-name')).toBe('Ledger Sync');
  await checkPage(tab, outside, 'consent-sign-in');

  await tab.fill('#email', email);
  await tab.fill('#password', password);
  await Promise.all([tab.waitForURL(/\/dev\/v1\/oauth\/authorize\?/), tab.click('#sign-in button[type=submit]')]);
  expect(await tab.textContent('h1')).toBe('Ledger Sync wants access to Northwind Games');
  expect(await tab.textContent('#grant-shop')).toBe('Northwind Games');
  expect(await tab.textContent('#approve button')).toBe('Approve access to Northwind Games');
  await checkPage(tab, outside, 'consent');
  await tab.close();
});

browserTest('a theme preview, running and ended', async () => {
  const {
    key,
    themeId: id,
    session: preview,
    api,
  } = await startThemePreview(t, 'Northwind Games Ltd', [
    { type: 'hero', title: 'Spring collection', subtitle: 'Fresh arrivals every week' },
    { type: 'testimonials', items: [{ quote: 'Lovely shop', author: 'Ada' }] },
  ]);

  const { tab, outside } = await openTab();
  await tab.goto(preview.url);
  await checkPage(tab, outside, 'theme-preview');
  const stopped = await api.delete(`/dev/v1/themes/${id}/control/preview/${preview.id}`).set(bearer(key));
  expect(stopped.status).toBe(200);
  expect((await tab.goto(preview.url))?.status()).toBe(410);
  await checkPage(tab, outside, 'theme-preview-ended');
  await tab.close();
});
