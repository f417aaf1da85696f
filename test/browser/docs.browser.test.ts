// The docs as a reader uses them, in headless Chromium: /docs (Scalar's API reference), /docs/errors, the published
// contract and the site icon. No page may make a request to another host (each is answered "blocked" and fails the
// test; a request the page's Content-Security-Policy stops before it is sent is caught as a violation), each HTML page
// has no serious or critical axe-core finding, and "try it" in the reference calls this server and shows its answer.
// Screenshots go to test-artifacts/screenshots/ (UPDATE_SCREENSHOTS=1: to docs/screenshots/, the README's). Skipped
// when /usr/bin/chromium is missing, like the other browser suites.
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('docs browser test');

const root = join(__dirname, '..', '..');
// Ids and ports differ on every run, so a plain run leaves the README's copies untouched (as the hosted pages' test).
const screenshots = join(root, process.env.UPDATE_SCREENSHOTS === '1' ? 'docs' : 'test-artifacts', 'screenshots');
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;
/** Every request of any page that went to another origin than this server's (each one was aborted). */
const outside: string[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({ env: { PUBLIC_URL: base } });
  server.on('request', t.app);
  chrome = await launchChromium();
  browser = chrome.browser;
  await browser.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.origin === base || url.protocol === 'data:' || url.protocol === 'blob:') return route.continue();
    outside.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  // What the Content-Security-Policy refuses never becomes a request: the page reports it as a violation instead.
  await browser.addInitScript(`window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`);
}, 60_000);

afterAll(async () => {
  await chrome?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  }
  await t?.close();
});

afterEach(() => {
  expect(outside).toEqual([]);
});

async function newTab(): Promise<Page> {
  const tab = await browser!.newPage();
  await tab.setViewportSize({ width: 1200, height: 800 });
  return tab;
}

async function cspViolations(tab: Page): Promise<string[]> {
  return tab.evaluate<string[]>('window.cspViolations');
}

interface AxeFinding {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core's serious and critical findings on the page as it is now. Evaluated, not added as a <script>: the page's
 * Content-Security-Policy allows no inline script, and the test must not loosen it. (Page code is given as strings
 * throughout: the project compiles without the DOM's types.)
 */
async function seriousAxeFindings(tab: Page): Promise<{ id: string; help: string; targets: string[] }[]> {
  await tab.evaluate(axeSource);
  const violations = await tab.evaluate<AxeFinding[]>(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
  );
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }));
}

async function screenshot(tab: Page, name: string): Promise<void> {
  mkdirSync(screenshots, { recursive: true });
  await tab.screenshot({ path: join(screenshots, name) });
}

browserTest(
  '/docs renders the reference from our own copy of Scalar, and "try it" calls this server',
  async () => {
    const shopId = await t.createShop({ name: 'Docs Shop', mode: 'test' });
    const { key } = await t.createKey(shopId, ['*']);
    const tab = await newTab();
    const response = await tab.goto(`${base}/docs`);
    expect(response?.status()).toBe(200);

    // The operations list: every tag's group in the sidebar, and the first operation rendered.
    for (const tag of ['account', 'orders', 'payments', 'catalog', 'webhooks'])
      await tab
        .getByRole('button', { name: `Open Group - ${tag}` })
        .or(tab.getByRole('button', { name: `Close Group - ${tag}` }))
        .waitFor();
    await tab.getByText('Get the account of the authenticated credential').first().waitFor();
    expect(await seriousAxeFindings(tab)).toEqual([]);
    await screenshot(tab, 'docs-reference.png');

    // Try it: the key in the reference's authentication, then GET /me sent from the page to this server.
    await tab.getByPlaceholder('Token').first().fill(key);
    const apiCall = tab.waitForResponse((r) => r.url() === `${base}/dev/v1/me`);
    await tab.getByText('Get the account of the authenticated credential').first().click();
    await tab
      .locator('button')
      .filter({ hasText: /^\s*Test Request\s*\(get \/me\)\s*$/ })
      .click();
    await tab
      .getByRole('button', { name: /^Send get request to/ })
      .first()
      .click();
    const answered = await apiCall;
    expect(answered.status()).toBe(200);
    expect(answered.request().headers().authorization).toBe(`Bearer ${key}`);
    await tab.getByText('200 OK').first().waitFor();
    await tab.getByText('"Docs Shop"').first().waitFor();
    await screenshot(tab, 'docs-try-it.png');

    // A library inside Scalar probes whether eval is allowed (the policy says no) and works without it: that is
    // not a request. Any other refusal would be one.
    expect((await cspViolations(tab)).filter((v) => v !== 'script-src eval')).toEqual([]);
    await tab.close();
  },
  60_000,
);

/**
 * Where the texts of the Authentication panel's header ("Authentication", "Required", the scheme selector) overlap each
 * other or are cut by a box that hides its overflow: a list of what is wrong, empty when nothing is.
 */
const authHeaderProblems = `(() => {
  const indicator = document.querySelector('[data-testid="auth-indicator"]');
  const row = indicator.closest('button').parentElement;
  const texts = [];
  const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const box = range.getBoundingClientRect();
    if (box.width > 0) texts.push({ text: node.textContent.trim(), box, node });
  }
  const problems = [];
  for (const [i, a] of texts.entries()) {
    for (const b of texts.slice(i + 1)) {
      const x = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
      const y = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
      if (x > 0.5 && y > 0.5) problems.push('"' + a.text + '" overlaps "' + b.text + '"');
    }
    for (let box = a.node.parentElement; box && box !== row.parentElement; box = box.parentElement) {
      if (getComputedStyle(box).overflowX === 'visible') continue;
      const clip = box.getBoundingClientRect();
      if (a.box.left < clip.left - 0.5 || a.box.right > clip.right + 0.5)
        problems.push('"' + a.text + '" is cut by its ' + box.tagName.toLowerCase());
    }
  }
  return { texts: texts.map((t) => t.text), problems };
})()`;

browserTest("/docs at 1280 px: the Authentication panel's header texts neither overlap nor are cut", async () => {
  const tab = await browser!.newPage();
  await tab.setViewportSize({ width: 1280, height: 800 });
  await tab.goto(`${base}/docs`);
  await tab.locator('[data-testid="auth-indicator"]').first().waitFor();
  const { texts, problems } = await tab.evaluate<{ texts: string[]; problems: string[] }>(authHeaderProblems);
  expect(texts).toEqual(expect.arrayContaining(['Authentication', 'Required', 'Selected Auth Type: bearerAuth']));
  expect(problems).toEqual([]);
  await screenshot(tab, 'docs-reference-1280.png');
  await tab.close();
});

browserTest('/docs/errors renders each code with its Markdown as HTML, no backtick left', async () => {
  const tab = await newTab();
  const response = await tab.goto(`${base}/docs/errors`);
  expect(response?.status()).toBe(200);
  const doc = tab.locator('#VALIDATION_ERROR + dd');
  expect(await doc.locator('code').first().textContent()).toBe('details');
  expect(await tab.locator('main').innerText()).not.toContain('`');
  expect(await seriousAxeFindings(tab)).toEqual([]);
  await screenshot(tab, 'docs-errors.png');
  expect(await cspViolations(tab)).toEqual([]);
  await tab.close();
});

browserTest('/openapi.json opens in the browser from this server alone', async () => {
  const tab = await newTab();
  const json = await tab.goto(`${base}/openapi.json`);
  expect(json?.status()).toBe(200);
  expect(JSON.parse(await json!.text()).info.title).toBe('Merchant Developer API');
  await tab.close();
});

browserTest('/favicon.ico and /favicon.svg are icons the browser can show', async () => {
  // Loaded as images by a page of this server (Chromium does not open an icon as a page of its own: it aborts).
  const tab = await newTab();
  await tab.goto(`${base}/docs/errors`);
  // While requests are routed (the outside-host guard above), Playwright's Chromium fails every request for
  // /favicon.ico, whoever makes it (a plain Chromium loads it as an image). So the server's bytes are fetched here
  // and decoded by a blank page (the docs' policy allows no data: fetch).
  const served = await t.http.get('/favicon.ico').buffer(true);
  expect([served.status, served.headers['content-type']]).toEqual([200, 'image/x-icon']);
  const blank = await newTab();
  const ico = await blank.evaluate(`fetch('data:image/x-icon;base64,${(served.body as Buffer).toString('base64')}')
    .then((r) => r.blob()).then(createImageBitmap).then((b) => [b.width, b.height])`);
  expect(ico).toEqual([32, 32]);
  await blank.close();
  const svg = await tab.evaluate(`new Promise((done) => { const img = new Image(); img.onload = () =>
    done(img.naturalWidth); img.onerror = () => done(0); img.src = '/favicon.svg'; })`);
  expect(svg).toBe(32);
  await tab.close();
});
