// The OAuth authorization-code flow as a shop owner and a third-party app live it, in headless Chromium: the app
// (here `openid-client`, a standard client we did not write) sends the browser to the consent page with PKCE and a
// state; the owner signs in, sees the app and each scope it asks for, and approves; the browser lands on the app's
// own redirect URI (a small local HTTP server) with `code` and `state`; the library exchanges the code at POST
// /oauth/token and the token reads GET /orders. Then a denial lands there with error=access_denied. Screenshots of
// the consent page are left in test-artifacts/oauth-consent.png.
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import type { BrowserContext } from 'playwright-core';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { scopeDescriptions } from '../../src/auth/scope-descriptions';
import { createApp as createOAuthApp } from '../../src/ops/oauth-admin';
import { createOwner } from '../../src/ops/owner-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('OAuth consent browser test');

type Client = typeof import('openid-client');
const artifacts = join(__dirname, '..', '..', 'test-artifacts');
const ownerEmail = 'owner@browser.example.com';
const ownerPassword = 'a long browser password';

let oidc: Client;
let t: TestApp;
let api: Server;
let callbackServer: Server;
let base: string;
let redirectUri: string;
let chrome: Chromium | undefined;
let browser: BrowserContext | undefined;
const landed: string[] = [];
let shopId: string;
let apiKey: string;

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  if (!haveChromium) return;
  oidc = await import('openid-client');
  // The app's redirect URI: records where the browser lands and shows a page.
  callbackServer = createServer((req, res) => {
    landed.push(req.url ?? '');
    res
      .writeHead(200, { 'Content-Type': 'text/html' })
      .end('<!doctype html><title>Back at the app</title><h1>Back</h1>');
  });
  redirectUri = `http://127.0.0.1:${await listen(callbackServer)}/callback`;
  // The port first: the API's issuer and endpoints in its metadata name this address.
  api = createServer();
  base = `http://127.0.0.1:${await listen(api)}`;
  t = await startTestApp({ env: { PUBLIC_URL: base, RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  api.on('request', t.app);
  shopId = await t.createShop({ name: 'Browser Shop' });
  apiKey = (await t.createKey(shopId, ['*'])).key;
  await createOwner(t.operator, { shopId, email: ownerEmail, password: ownerPassword });
  chrome = await launchChromium();
  browser = chrome.browser;
});

afterAll(async () => {
  await chrome?.close();
  for (const server of [api, callbackServer]) {
    if (!server) continue;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await t?.close();
});

async function clientConfig() {
  const app = await createOAuthApp(t.db, {
    name: 'Browser Test App',
    redirectUris: redirectUri,
    scopes: 'orders.read products.read',
  });
  const config = await oidc.discovery(
    new URL(`${base}/dev/v1`),
    app.client_id,
    app.client_secret!,
    oidc.ClientSecretBasic(app.client_secret!),
    // The test server speaks plain http on 127.0.0.1.
    { algorithm: 'oauth2', execute: [oidc.allowInsecureRequests] },
  );
  return { app, config };
}

browserTest(
  'sign in, see the scopes, approve, land on the app with code and state; the library exchanges the code',
  async () => {
    const [product] = (await t.seed(shopId, { products: [{ title: 'Thing', price: '5.00', type: 'SERVICE' }] }))
      .products;
    const made = await request(t.app)
      .post('/dev/v1/orders')
      .set(bearer(apiKey))
      .send({
        email: 'buyer@example.com',
        title: 'Browser OAuth order',
        items: [{ product_id: product, quantity: 1 }],
      });
    expect(made.status).toBe(201);
    const orderId: string = made.body.data.id;

    const { app, config } = await clientConfig();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'orders.read products.read',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    expect(`${url.origin}${url.pathname}`).toBe(`${base}/dev/v1/oauth/authorize`);

    const tab = await browser!.newPage();
    await tab.goto(url.href);
    expect(await tab.textContent('#app-name')).toBe('Browser Test App');
    await tab.fill('#email', ownerEmail);
    await tab.fill('#password', 'not the password');
    await Promise.all([tab.waitForLoadState(), tab.click('#sign-in button[type=submit]')]);
    expect(await tab.textContent('#error')).toBe('Wrong email or password.');
    await tab.fill('#password', ownerPassword);
    await Promise.all([tab.waitForURL(/\/dev\/v1\/oauth\/authorize\?/), tab.click('#sign-in button[type=submit]')]);

    // The consent page: the app, who is signed in, and each scope with its description.
    expect(await tab.textContent('#owner-email')).toBe(ownerEmail);
    const scopes = await tab.$$eval('#scopes li', (items) =>
      items.map((li) => ({ scope: li.getAttribute('data-scope'), text: li.textContent })),
    );
    expect(scopes).toEqual([
      { scope: 'orders.read', text: `orders.read: ${scopeDescriptions['orders.read']}` },
      { scope: 'products.read', text: `products.read: ${scopeDescriptions['products.read']}` },
    ]);
    mkdirSync(artifacts, { recursive: true });
    await tab.screenshot({ path: join(artifacts, 'oauth-consent.png'), fullPage: true });

    await Promise.all([tab.waitForURL((u) => u.href.startsWith(redirectUri)), tab.click('#approve button')]);
    expect(await tab.textContent('h1')).toBe('Back');
    const callback = new URL(tab.url());
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    expect(callback.searchParams.get('code')).toMatch(/^mac_/);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(landed).toContain(`${callback.pathname}${callback.search}`);

    // The library checks the state, sends the PKCE verifier and authenticates the client with HTTP Basic.
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.access_token).toMatch(/^mat_/);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope?.split(' ').sort()).toEqual(['orders.read', 'products.read']);

    const orders = await oidc.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${base}/dev/v1/orders`),
      'GET',
    );
    expect(orders.status).toBe(200);
    const body = (await orders.json()) as { data: { id: string }[] };
    expect(body.data.map((o) => o.id)).toContain(orderId);
    // Beyond its scopes: refused.
    const customers = await request(t.app).get('/dev/v1/customers').set(bearer(tokens.access_token));
    expect(customers.status).toBe(403);

    // The code is single use: the library's second exchange is refused.
    await expect(
      oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }),
    ).rejects.toThrow();

    // The grant remembers the consent page's session.
    const grant = await t.db
      .selectFrom('oauth_grants')
      .select(['session_id', 'client_id'])
      .where('client_id', '=', app.client_id)
      .executeTakeFirstOrThrow();
    expect(grant.session_id).toMatch(/^cs_/);
    await tab.close();
  },
);

browserTest('a signed-in owner denies: the app gets error=access_denied and its state', async () => {
  const { config } = await clientConfig();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'orders.read',
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
    state,
  });
  const tab = await browser!.newPage();
  await tab.goto(url.href);
  // Still signed in from the first test (the session cookie): straight to the approval page.
  expect(await tab.textContent('#owner-email')).toBe(ownerEmail);
  await Promise.all([tab.waitForURL((u) => u.href.startsWith(redirectUri)), tab.click('#deny button')]);
  const callback = new URL(tab.url());
  expect(callback.searchParams.get('error')).toBe('access_denied');
  expect(callback.searchParams.get('state')).toBe(state);
  expect(callback.searchParams.get('code')).toBeNull();
  await tab.close();
});
