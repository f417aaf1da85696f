// A theme preview as a merchant opens it, in headless Chromium: save a draft through the API, start a preview, open
// its private URL and see the draft's content; stop the session and see it gone. Skipped when /usr/bin/chromium is
// missing (apt-get install -y chromium), like test/browser/checkout.browser.test.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext } from 'playwright-core';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { startThemePreview } from '../helpers/theme-preview';

const browserTest = chromiumTest('theme preview browser test');

let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  // The port first: the preview URL names this server's public address.
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

browserTest('the preview URL shows the draft in a browser, and nothing once stopped', async () => {
  const {
    key,
    themeId: id,
    session: preview,
    api,
  } = await startThemePreview(t, 'Preview Shop', [
    { type: 'hero', title: 'Spring collection <em>now</em>', subtitle: 'Fresh arrivals' },
    { type: 'testimonials', items: [{ quote: 'Lovely shop', author: 'Ada' }] },
  ]);
  const url: string = preview.url;
  expect(url.startsWith(`${base}/theme-preview/`)).toBe(true);

  const requested: string[] = [];
  const tab = await browser!.newPage();
  tab.on('request', (r) => requested.push(r.url()));
  const response = await tab.goto(url);
  expect(response?.status()).toBe(200);
  // The markup in the title is text, not an element.
  expect(await tab.textContent('h1')).toBe('Spring collection <em>now</em>');
  expect(await tab.locator('h1 em').count()).toBe(0);
  expect(await tab.textContent('blockquote')).toContain('Lovely shop');
  expect(await tab.textContent('.preview-bar')).toContain('revision 2');
  // The page loaded nothing but itself.
  expect(requested.filter((u) => !u.endsWith('/favicon.ico'))).toEqual([url]);

  const stopped = await api.delete(`/dev/v1/themes/${id}/control/preview/${preview.id}`).set(bearer(key));
  expect(stopped.status).toBe(200);
  const after = await tab.goto(url);
  expect(after?.status()).toBe(410);
  expect(await tab.textContent('body')).not.toContain('Spring collection');
  expect(await tab.textContent('h1')).toBe('Preview ended');
  await tab.close();
});
