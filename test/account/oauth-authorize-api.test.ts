// POST /oauth/authorize with a bearer API key: the redirect URL (code + state, the exact registered URI, its own
// query kept), the stored code (hash only, 10 minutes, PKCE), the refusals in the order the contract gives them
// (400 OAUTH_INVALID_CLIENT / OAUTH_INVALID_REDIRECT_URI / OAUTH_INVALID_SCOPE, 403 for scopes the key does not
// hold and for any OAuth access token, 422 for PKCE misuse), each writing nothing; apps private to a shop; the
// authorization-server metadata (RFC 8414) at both of its locations.
import { sql } from 'kysely';
import { hashOAuthSecret } from '../../src/auth/oauth-grants';
import { ManualClock } from '../../src/platform/clock';
import { createApp as createOAuthApp, listApps } from '../../src/ops/oauth-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import {
  authorizeRequest,
  codeFor,
  exchange,
  newApp,
  oauthState,
  pkce,
  redirectUri,
  type App,
} from '../helpers/oauth-apps';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;
let shop: string;
let key: string;
let app: App;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shop = await t.createShop({ name: 'Authorizing shop' });
  key = (await t.createKey(shop, ['apps.write', 'orders.read', 'orders.write', 'products.read'])).key;
  app = await newApp(t);
});
afterAll(() => t.close());

const approve = (body: Record<string, unknown>, k = key) => authorizeRequest(t, k, body);

describe('approval', () => {
  test('returns the registered redirect URI with code and state; the code is stored hashed for the shop', async () => {
    const { challenge } = pkce();
    const res = await approve({
      client_id: app.id,
      redirect_uri: redirectUri,
      scope: 'orders.read products.read',
      state: 'xyz 123&=',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const url = new URL(res.body.data.redirect_url);
    expect(`${url.origin}${url.pathname}`).toBe(redirectUri);
    expect(url.searchParams.get('state')).toBe('xyz 123&=');
    const code = url.searchParams.get('code')!;
    expect(code).toMatch(/^mac_[A-Za-z0-9_-]{43}$/);
    const row = await t.db
      .selectFrom('oauth_codes')
      .selectAll()
      .where('code_hash', '=', hashOAuthSecret(code))
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ shop_id: shop, client_id: app.id, code_challenge: challenge, used_at: null });
    expect(row.expires_at.getTime() - clock.now().getTime()).toBe(600_000);
    const texts = await sql<{ text: string }>`select to_jsonb(c)::text as text from oauth_codes c`.execute(t.db);
    expect(texts.rows.some((r) => r.text.includes(code))).toBe(false);
    const grant = await t.db
      .selectFrom('oauth_grants')
      .selectAll()
      .where('id', '=', row.grant_id)
      .executeTakeFirstOrThrow();
    expect(grant).toMatchObject({
      shop_id: shop,
      scopes: ['orders.read', 'products.read'],
      granted_by_kind: 'credential',
    });
  });

  test("a redirect URI's own query is kept; state is left out when not sent", async () => {
    const withQuery = await newApp(t, { redirectUris: 'https://app.example.com/cb?tenant=7' });
    const res = await approve({
      client_id: withQuery.id,
      redirect_uri: 'https://app.example.com/cb?tenant=7',
      scope: 'orders.read',
    });
    expect(res.status).toBe(200);
    const url = new URL(res.body.data.redirect_url);
    expect(url.searchParams.get('tenant')).toBe('7');
    expect(url.searchParams.has('state')).toBe(false);
    expect(url.searchParams.get('code')).toMatch(/^mac_/);
  });

  test('a full-access key may grant anything the app may request, "*" included', async () => {
    const star = (await t.createKey(shop, ['*'])).key;
    const wide = await newApp(t, { scopes: '*' });
    const res = await approve({ client_id: wide.id, redirect_uri: redirectUri, scope: '*' }, star);
    expect(res.status).toBe(200);
  });
});

test('an Idempotency-Key is bypassed: the response holds a code, which is never stored in clear text', async () => {
  const body = { response_type: 'code', client_id: app.id, redirect_uri: redirectUri, scope: 'orders.read' };
  const send = () =>
    t.http.post('/dev/v1/oauth/authorize').set(bearer(key)).set('Idempotency-Key', 'approve-1').send(body);
  const a = await send();
  const b = await send();
  expect([a.status, b.status]).toEqual([200, 200]);
  expect(a.headers['idempotency-status']).toBe('bypassed');
  expect(a.body.data.redirect_url).not.toBe(b.body.data.redirect_url);
  const stored = await sql<{
    n: string;
  }>`select count(*)::text as n from idempotency_keys where key = 'approve-1'`.execute(t.db);
  expect(stored.rows[0]!.n).toBe('0');
});

describe('apps registered through the CLI', () => {
  test.each([
    ['http outside loopback', { redirectUris: 'http://app.example.com/cb' }, /https/],
    ['a fragment', { redirectUris: 'https://app.example.com/cb#x' }, /fragment/],
    ['not absolute', { redirectUris: '/cb' }, /absolute/],
    ['javascript:', { redirectUris: 'javascript:alert(1)' }, /forbidden scheme/],
    ['an unknown scope', { scopes: 'spaceships.read' }, /Unknown scope/],
    ['an unknown shop', { shopId: 'shop_nope' }, /No shop/],
  ])('refuses %s, writing nothing', async (_name, input, message) => {
    const before = await t.db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    await expect(
      createOAuthApp(t.db, {
        name: 'Bad',
        redirectUris: 'https://app.example.com/cb',
        scopes: 'orders.read',
        ...input,
      }),
    ).rejects.toThrow(message);
    const after = await t.db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  test('a confidential app: its secret mcs_ is shown once and stored only as a hash; a public app has none', async () => {
    const created = await createOAuthApp(t.db, {
      name: 'Loopback',
      redirectUris: 'http://127.0.0.1:8765/cb,com.example.app:/cb',
      scopes: 'orders.read',
    });
    expect(created.client_secret).toMatch(/^mcs_[A-Za-z0-9_-]{43}$/);
    const row = await t.db
      .selectFrom('oauth_clients')
      .selectAll()
      .where('id', '=', created.client_id)
      .executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(hashOAuthSecret(created.client_secret!));
    expect(JSON.stringify(row)).not.toContain(created.client_secret);
    expect((await listApps(t.db)).find((a) => a.client_id === created.client_id)).not.toHaveProperty('client_secret');
    const pub = await createOAuthApp(t.db, {
      name: 'SPA',
      redirectUris: redirectUri,
      scopes: 'orders.read',
      isPublic: true,
    });
    expect(pub.client_secret).toBeNull();
  });
});

describe('refusals write nothing', () => {
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['unknown client', { client_id: 'app_nope', scope: 'orders.read' }, 400, 'OAUTH_INVALID_CLIENT'],
    [
      'unregistered redirect URI',
      { redirect_uri: 'https://evil.example.com/cb', scope: 'orders.read' },
      400,
      'OAUTH_INVALID_REDIRECT_URI',
    ],
    [
      'redirect URI differing by a trailing slash',
      { redirect_uri: `${redirectUri}/`, scope: 'orders.read' },
      400,
      'OAUTH_INVALID_REDIRECT_URI',
    ],
    ['unknown scope', { scope: 'orders.read spaceships.read' }, 400, 'OAUTH_INVALID_SCOPE'],
    ['a scope the app may not request', { scope: 'webhooks.read' }, 400, 'OAUTH_INVALID_SCOPE'],
    ['a scope the key does not hold', { scope: 'customers.read' }, 403, 'FORBIDDEN'],
    ['"*" with a key that is not full access', { scope: '*' }, 400, 'OAUTH_INVALID_SCOPE'],
    [
      'PKCE method plain',
      { scope: 'orders.read', code_challenge: pkce().challenge, code_challenge_method: 'plain' },
      422,
      'VALIDATION_ERROR',
    ],
    [
      'PKCE challenge without method',
      { scope: 'orders.read', code_challenge: pkce().challenge },
      400,
      'OAUTH_INVALID_SCOPE',
    ],
    [
      'PKCE challenge malformed',
      { scope: 'orders.read', code_challenge: 'short', code_challenge_method: 'S256' },
      422,
      'VALIDATION_ERROR',
    ],
  ];
  test.each(cases)('%s', async (_name, body, status, code) => {
    const before = await oauthState(t);
    const res = await approve({ client_id: app.id, redirect_uri: redirectUri, ...body });
    // The challenge without a method is refused by the service (plain is implied and not supported): 422.
    if (_name === 'PKCE challenge without method') {
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'code_challenge' })]);
    } else {
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(code);
    }
    expect(await oauthState(t)).toBe(before);
  });

  test('a public client must send a PKCE challenge (422 on code_challenge)', async () => {
    const pub = await newApp(t, { isPublic: true });
    const before = await oauthState(t);
    const res = await approve({ client_id: pub.id, redirect_uri: redirectUri, scope: 'orders.read' });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0].field).toBe('code_challenge');
    expect(await oauthState(t)).toBe(before);
    const ok = await approve({
      client_id: pub.id,
      redirect_uri: redirectUri,
      scope: 'orders.read',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    });
    expect(ok.status).toBe(200);
  });

  test('a key without apps.write: 403', async () => {
    const noApps = (await t.createKey(shop, ['orders.read'])).key;
    const before = await oauthState(t);
    const res = await approve({ client_id: app.id, redirect_uri: redirectUri, scope: 'orders.read' }, noApps);
    expect(res.status).toBe(403);
    expect(await oauthState(t)).toBe(before);
  });

  test('an OAuth access token cannot mint new grants, even holding apps.write', async () => {
    const wide = await newApp(t, { scopes: 'apps.write orders.read' });
    const appsKey = (await t.createKey(shop, ['apps.write', 'orders.read'])).key;
    const code = await codeFor(t, appsKey, wide, { scope: 'apps.write orders.read' });
    const tokens = await exchange(t, wide, code);
    expect(tokens.scope).toBe('apps.write orders.read');
    const before = await oauthState(t);
    const res = await approve(
      { client_id: wide.id, redirect_uri: redirectUri, scope: 'orders.read' },
      tokens.access_token,
    );
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(res.body.error.message).toMatch(/access token/);
    expect(await oauthState(t)).toBe(before);
  });

  test('a revoked app: OAUTH_INVALID_CLIENT', async () => {
    const gone = await newApp(t);
    await t.db.updateTable('oauth_clients').set({ revoked_at: new Date() }).where('id', '=', gone.id).execute();
    const res = await approve({ client_id: gone.id, redirect_uri: redirectUri, scope: 'orders.read' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('OAUTH_INVALID_CLIENT');
  });

  test('an app private to another shop cannot be installed here; its own shop can', async () => {
    const other = await t.createShop({ name: 'Owner of the app' });
    const priv = await newApp(t, { shopId: other });
    const before = await oauthState(t);
    const res = await approve({ client_id: priv.id, redirect_uri: redirectUri, scope: 'orders.read' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('OAUTH_INVALID_CLIENT');
    expect(await oauthState(t)).toBe(before);
    const ownKey = (await t.createKey(other, ['apps.write', 'orders.read'])).key;
    expect(
      (await approve({ client_id: priv.id, redirect_uri: redirectUri, scope: 'orders.read' }, ownKey)).status,
    ).toBe(200);
  });
});

describe('authorization-server metadata (RFC 8414)', () => {
  test('under /dev/v1 and at the path-inserted well-known location, the same document', async () => {
    const a = await t.http.get('/dev/v1/.well-known/oauth-authorization-server');
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      issuer: 'http://api.test/dev/v1',
      authorization_endpoint: 'http://api.test/dev/v1/oauth/authorize',
      token_endpoint: 'http://api.test/dev/v1/oauth/token',
      revocation_endpoint: 'http://api.test/dev/v1/oauth/revoke',
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    });
    expect(a.body.scopes_supported).toEqual(expect.arrayContaining(['*', 'orders.read', 'apps.write']));
    const b = await t.http.get('/.well-known/oauth-authorization-server/dev/v1');
    expect(b.status).toBe(200);
    expect(b.body).toEqual(a.body);
  });
});
