// End to end with a standard OAuth client we did not write, `openid-client` (v6, by the author of oauth4webapi),
// against the app listening on a real port: RFC 8414 discovery at the path-inserted well-known location, an
// authorization request built by the library (PKCE S256 and state), the code obtained through POST
// /oauth/authorize with an API key, the code exchange (HTTP Basic, and a public client with `none`), a protected
// resource call (GET /orders), refresh with rotation, and RFC 7009 revocation after which the token is refused.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../helpers/test-app';
import { authorizeRequest, newApp, redirectUri, type App } from '../helpers/oauth-apps';

type Client = typeof import('openid-client');
let oidc: Client;
let t: TestApp;
let server: Server;
let base: string;
let shop: string;
let key: string;

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  probe.close();
  await once(probe, 'close');
  return port;
}

beforeAll(async () => {
  // ESM-only: loaded natively (jest runs with --experimental-vm-modules).
  oidc = await import('openid-client');
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startTestApp({ env: { PUBLIC_URL: base, RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  server = t.app.listen(port, '127.0.0.1');
  await once(server, 'listening');
  shop = await t.createShop({ name: 'Library shop' });
  key = (await t.createKey(shop, ['apps.write', 'orders.read'])).key;
  await t.seed(shop, { products: [{ title: 'Thing', price: '5.00', type: 'SERVICE' }] });
});
afterAll(async () => {
  server?.close();
  if (server) await once(server, 'close');
  await t?.close();
});

/** The library's authorization URL, approved through the API with the key: the redirect the browser would land on. */
async function approveAuthorizationUrl(url: URL): Promise<URL> {
  expect(`${url.origin}${url.pathname}`).toBe(`${base}/dev/v1/oauth/authorize`);
  const p = url.searchParams;
  expect(p.get('code_challenge_method')).toBe('S256');
  // Every parameter the library put in the URL (those it left out stay out).
  const res = await authorizeRequest(t, key, Object.fromEntries(p));
  expect(res.status).toBe(200);
  return new URL(res.body.data.redirect_url);
}

async function flow(app: App, auth: ReturnType<Client['None']>) {
  const config = await oidc.discovery(new URL(`${base}/dev/v1`), app.id, app.secret ?? undefined, auth, {
    algorithm: 'oauth2',
    execute: [oidc.allowInsecureRequests], // the test server speaks plain http on 127.0.0.1
  });
  expect(config.serverMetadata().token_endpoint).toBe(`${base}/dev/v1/oauth/token`);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'orders.read',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const callback = await approveAuthorizationUrl(url);
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  expect(tokens.access_token).toMatch(/^mat_/);
  expect(tokens.refresh_token).toMatch(/^mrt_/);
  expect(tokens.expiresIn()).toBeGreaterThan(3590);
  expect(tokens.scope).toBe('orders.read');

  const orders = await oidc.fetchProtectedResource(
    config,
    tokens.access_token,
    new URL(`${base}/dev/v1/orders`),
    'GET',
  );
  expect(orders.status).toBe(200);
  expect(Array.isArray(((await orders.json()) as { data: unknown[] }).data)).toBe(true);

  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  const again = await oidc.fetchProtectedResource(
    config,
    refreshed.access_token,
    new URL(`${base}/dev/v1/orders`),
    'GET',
  );
  expect(again.status).toBe(200);
  // The rotated refresh token is refused by the library's own error path (invalid_grant)...
  await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  // ...and that reuse revoked the family, the new access token included.
  const afterReuse = await fetch(`${base}/dev/v1/orders`, {
    headers: { Authorization: `Bearer ${refreshed.access_token}` },
  });
  expect(afterReuse.status).toBe(401);
  return config;
}

test('confidential client: discovery, code + PKCE, resource, refresh, reuse detection (client_secret_basic)', async () => {
  const app = await newApp(t, { scopes: 'orders.read' });
  await flow(app, oidc.ClientSecretBasic(app.secret!));
});

test('public client with `none` (PKCE required), then RFC 7009 revocation through the library', async () => {
  const app = await newApp(t, { scopes: 'orders.read', isPublic: true });
  const config = await oidc.discovery(new URL(`${base}/dev/v1`), app.id, undefined, oidc.None(), {
    algorithm: 'oauth2',
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const callback = await approveAuthorizationUrl(
    oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'orders.read',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    }),
  );
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  const url = new URL(`${base}/dev/v1/orders`);
  expect((await oidc.fetchProtectedResource(config, tokens.access_token, url, 'GET')).status).toBe(200);
  await oidc.tokenRevocation(config, tokens.refresh_token!);
  // The library reads the 401's RFC 6750 challenge itself and says why.
  await expect(oidc.fetchProtectedResource(config, tokens.access_token, url, 'GET')).rejects.toMatchObject({
    status: 401,
    cause: [{ scheme: 'bearer', parameters: expect.objectContaining({ error: 'invalid_token' }) }],
  });
  await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
});

test('client_secret_post, and a wrong verifier refused through the library', async () => {
  const app = await newApp(t, { scopes: 'orders.read' });
  const config = await oidc.discovery(
    new URL(`${base}/dev/v1`),
    app.id,
    app.secret!,
    oidc.ClientSecretPost(app.secret!),
    {
      algorithm: 'oauth2',
      execute: [oidc.allowInsecureRequests],
    },
  );
  const verifier = oidc.randomPKCECodeVerifier();
  const callback = await approveAuthorizationUrl(
    oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'orders.read',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }),
  );
  await expect(
    oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: oidc.randomPKCECodeVerifier() }),
  ).rejects.toMatchObject({ error: 'invalid_grant' });
  // The failed exchange burnt the code: the right verifier no longer redeems it; a new authorization does.
  await expect(oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier })).rejects.toMatchObject({
    error: 'invalid_grant',
  });
  const again = await approveAuthorizationUrl(
    oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'orders.read',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }),
  );
  const tokens = await oidc.authorizationCodeGrant(config, again, { pkceCodeVerifier: verifier });
  expect(tokens.access_token).toMatch(/^mat_/);
});
