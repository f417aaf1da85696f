// POST /oauth/token, POST /oauth/revoke and OAuth access tokens at work. Every RFC 6749 §5.2 error of the token
// endpoint (invalid_request, invalid_client with its Basic challenge, invalid_grant, unsupported_grant_type,
// invalid_scope), PKCE, a replayed code, refresh rotation and reuse detection, scope limits, expiry, revocation
// (RFC 7009, the app's grant through the CLI) effective on the very next request, `/me/capabilities` naming the
// app; each refusal checked for what it did not change; no code, token or secret in the logs or the audit trail;
// the races of a code or a refresh token used twice at once on real PostgreSQL.
import { sql } from 'kysely';
import { hashOAuthSecret } from '../../src/auth/oauth-grants';
import { revokeApp, uninstallApp } from '../../src/ops/oauth-admin';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import {
  basic,
  codeFor,
  exchange,
  newApp,
  oauthState,
  pkce,
  redirectUri,
  tokenRequest,
  type App,
} from '../helpers/oauth-apps';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;
let shop: string;
let key: string;
let app: App;
/** Every secret string the tests saw: none may appear in a log line or an audit entry. */
const secrets = new Set<string>();
const seen = <T extends Record<string, unknown>>(body: T): T => {
  for (const k of ['access_token', 'refresh_token']) if (typeof body[k] === 'string') secrets.add(body[k] as string);
  return body;
};

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shop = await t.createShop({ name: 'Token shop' });
  key = (await t.createKey(shop, ['*'])).key;
  app = await newApp(t);
  secrets.add(app.secret!);
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
/** The secret with another last character (never the same one). */
const wrongLast = (secret: string) => `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;

async function code(a: App = app, input: Parameters<typeof codeFor>[3] = {}): Promise<string> {
  const c = await codeFor(t, key, a, input);
  secrets.add(c);
  return c;
}
async function tokens(a: App = app, scope = 'orders.read products.read') {
  return seen(await exchange(t, a, await code(a, { scope })));
}
const api = (path: string, token: string) => t.http.get(`/dev/v1${path}`).set(bearer(token));

function expectOAuthError(
  res: { status: number; body: unknown; headers: Record<string, string> },
  status: number,
  error: string,
) {
  expect({ status: res.status, error: (res.body as { error: string }).error }).toEqual({ status, error });
  expect(typeof (res.body as { error_description: unknown }).error_description).toBe('string');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['pragma']).toBe('no-cache');
  if (error === 'invalid_client') expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
}

describe('authorization_code', () => {
  test('a form with HTTP Basic: plain OAuth JSON, not cached, a mat_ token carrying the approved scopes for 1 hour', async () => {
    const c = await code(app, { scope: 'orders.read products.read' });
    const res = await tokenRequest(t, app, { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri });
    expect(res.status).toBe(200);
    seen(res.body);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['pragma']).toBe('no-cache');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^mat_[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^mrt_[A-Za-z0-9_-]{43}$/),
      scope: 'orders.read products.read',
    });
    const row = await t.db
      .selectFrom('credentials')
      .selectAll()
      .where('token_hash', '=', hashOAuthSecret(res.body.access_token))
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ shop_id: shop, kind: 'oauth_access_token', scopes: ['orders.read', 'products.read'] });
    expect(row.expires_at!.getTime()).toBe(clock.now().getTime() + 3600_000);
    expect((await api('/orders', res.body.access_token)).status).toBe(200);
  });

  test('client_secret_post in JSON works too, and a Basic id/secret is form-decoded (RFC 6749 §2.3.1)', async () => {
    const c = await code();
    const res = await tokenRequest(
      t,
      app,
      { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri },
      'json',
    );
    expect(res.status).toBe(200);
    seen(res.body);
    // The same client, its id and secret percent-encoded (a no-op for these characters, but "+" must stay "+").
    const c2 = await code();
    const raw = Buffer.from(`${app.id}:${app.secret}`).toString('base64');
    const res2 = await t.http
      .post('/dev/v1/oauth/token')
      .set('Authorization', `Basic ${raw}`)
      .type('form')
      .send(`grant_type=authorization_code&code=${c2}&redirect_uri=${encodeURIComponent(redirectUri)}`);
    expect(res2.status).toBe(200);
    seen(res2.body);
  });

  test('unknown parameters are ignored (RFC 6749 §3.2)', async () => {
    const res = await tokenRequest(t, app, {
      grant_type: 'authorization_code',
      code: await code(),
      redirect_uri: redirectUri,
      resource: 'https://api.example.com',
    });
    expect(res.status).toBe(200);
    seen(res.body);
  });
});

describe('token endpoint errors write nothing', () => {
  let c: string;
  beforeAll(async () => {
    c = await code();
  });
  const good = () => ({ grant_type: 'authorization_code', code: c, redirect_uri: redirectUri });

  const refused = async (
    send: () => Promise<{ status: number; body: unknown; headers: Record<string, string> }>,
    status: number,
    error: string,
  ) => {
    const before = await oauthState(t);
    const res = await send();
    expectOAuthError(res, status, error);
    expect(await oauthState(t)).toBe(before);
    return res;
  };

  test('invalid_request: missing code, missing redirect_uri, missing grant_type, empty code', async () => {
    await refused(
      () => tokenRequest(t, app, { grant_type: 'authorization_code', redirect_uri: redirectUri }),
      400,
      'invalid_request',
    );
    // A missing redirect_uri names a live code: refused too, and it burns that code (test/account/oauth-code-burn.test.ts).
    expectOAuthError(
      await tokenRequest(t, app, { grant_type: 'authorization_code', code: await code() }),
      400,
      'invalid_request',
    );
    await refused(() => tokenRequest(t, app, { code: c, redirect_uri: redirectUri }), 400, 'invalid_request');
    await refused(() => tokenRequest(t, app, { ...good(), code: '' }), 400, 'invalid_request');
    await refused(() => tokenRequest(t, app, { grant_type: 'refresh_token' }), 400, 'invalid_request');
  });

  test('invalid_request: a parameter sent twice', async () => {
    const res = await refused(
      () =>
        t.http
          .post('/dev/v1/oauth/token')
          .set('Authorization', basic(app.id, app.secret!))
          .type('form')
          .send(`grant_type=authorization_code&code=${c}&code=${c}&redirect_uri=${encodeURIComponent(redirectUri)}`),
      400,
      'invalid_request',
    );
    expect((res.body as { error_description: string }).error_description).toMatch(/code is sent more than once/);
  });

  test('invalid_request: two client authentication methods at once', async () => {
    await refused(
      () =>
        t.http
          .post('/dev/v1/oauth/token')
          .set('Authorization', basic(app.id, app.secret!))
          .type('form')
          .send(new URLSearchParams({ ...good(), client_secret: app.secret! }).toString()),
      400,
      'invalid_request',
    );
  });

  test('invalid_client: wrong secret, unknown client, malformed Basic, no authentication, a confidential client without its secret', async () => {
    await refused(() => tokenRequest(t, { id: app.id, secret: 'mcs_wrong' }, good()), 401, 'invalid_client');
    await refused(
      // Another last character: a fixed 'A' is the secret itself for one secret in 16 (base64url's last of 32 bytes).
      () => tokenRequest(t, { id: app.id, secret: wrongLast(app.secret!) }, good(), 'post'),
      401,
      'invalid_client',
    );
    await refused(() => tokenRequest(t, { id: 'app_unknown', secret: app.secret }, good()), 401, 'invalid_client');
    await refused(
      () =>
        t.http
          .post('/dev/v1/oauth/token')
          .set('Authorization', 'Basic !!not-base64!!')
          .type('form')
          .send(new URLSearchParams(good()).toString()),
      401,
      'invalid_client',
    );
    await refused(
      () =>
        t.http
          .post('/dev/v1/oauth/token')
          .set('Authorization', `Basic ${Buffer.from('no-colon-here').toString('base64')}`)
          .type('form')
          .send(new URLSearchParams(good()).toString()),
      401,
      'invalid_client',
    );
    await refused(() => tokenRequest(t, undefined, good()), 401, 'invalid_client');
    await refused(() => tokenRequest(t, app, good(), 'none'), 401, 'invalid_client');
  });

  test('invalid_grant: unknown code, another redirect URI, another client', async () => {
    await refused(
      () => tokenRequest(t, app, { ...good(), code: 'mac_unknownunknownunknownunknownunknownunknow' }),
      400,
      'invalid_grant',
    );
    await refused(() => tokenRequest(t, app, { ...good(), code: 'not-even-a-code' }), 400, 'invalid_grant');
    // These two name a live code, which they burn (test/account/oauth-code-burn.test.ts): each gets a code of its own.
    expectOAuthError(
      await tokenRequest(t, app, { ...good(), code: await code(), redirect_uri: 'https://app.example.com/other' }),
      400,
      'invalid_grant',
    );
    const otherApp = await newApp(t);
    secrets.add(otherApp.secret!);
    expectOAuthError(await tokenRequest(t, otherApp, { ...good(), code: await code() }), 400, 'invalid_grant');
  });

  test('unsupported_grant_type', async () => {
    await refused(() => tokenRequest(t, app, { ...good(), grant_type: 'password' }), 400, 'unsupported_grant_type');
    await refused(() => tokenRequest(t, app, { grant_type: 'client_credentials' }), 400, 'unsupported_grant_type');
  });

  test('after all those refusals the code still works once (none of them consumed it)', async () => {
    const res = await tokenRequest(t, app, good());
    expect(res.status).toBe(200);
    seen(res.body);
  });

  test('invalid_grant: an expired code (10 minutes, by the injectable clock)', async () => {
    const old = await code();
    clock.advance(600_000);
    try {
      await refused(() => tokenRequest(t, app, { ...good(), code: old }), 400, 'invalid_grant');
    } finally {
      clock.advance(-600_000);
    }
    // One millisecond short of its expiry it still works.
    const fresh = await code();
    clock.advance(599_999);
    try {
      const res = await tokenRequest(t, app, { ...good(), code: fresh });
      expect(res.status).toBe(200);
      seen(res.body);
    } finally {
      clock.advance(-599_999);
    }
  });

  test('media types other than form, JSON, multipart and text: 415 envelope', async () => {
    const before = await oauthState(t);
    const res = await t.http.post('/dev/v1/oauth/token').set('Content-Type', 'application/xml').send('<x/>');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(await oauthState(t)).toBe(before);
  });

  test('a form body is refused (415) by an operation that does not declare it', async () => {
    const res = await t.http.post('/dev/v1/orders').set(bearer(key)).type('form').send('email=a%40b.c');
    expect(res.status).toBe(415);
  });
});

describe('a replayed code', () => {
  test('answers invalid_grant and revokes every token the code issued', async () => {
    const c = await code();
    const first = seen(
      (await tokenRequest(t, app, { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri })).body,
    );
    expect((await api('/orders', first.access_token)).status).toBe(200);
    const again = await tokenRequest(t, app, { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri });
    expectOAuthError(again, 400, 'invalid_grant');
    expect(again.body.error_description).toMatch(/already used/);
    expect((await api('/orders', first.access_token)).status).toBe(401);
    const refresh = await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expectOAuthError(refresh, 400, 'invalid_grant');
    const grant = await t.db
      .selectFrom('credentials as c')
      .innerJoin('oauth_grants as g', 'g.id', 'c.grant_id')
      .select(['g.revoked_reason'])
      .where('c.token_hash', '=', hashOAuthSecret(first.access_token))
      .executeTakeFirstOrThrow();
    expect(grant.revoked_reason).toBe('code_replayed');
  });
});

describe('PKCE', () => {
  test('a public client: client_id only, the right verifier; wrong or missing verifier is invalid_grant', async () => {
    const pub = await newApp(t, { isPublic: true });
    const { verifier, challenge } = pkce();
    // Each failure burns its code (test/account/oauth-code-burn.test.ts), so each gets a code of its own.
    for (const wrong of [
      {} as Record<string, string>,
      { code_verifier: pkce().verifier },
      { code_verifier: 'short' },
    ]) {
      const params = {
        grant_type: 'authorization_code',
        code: await code(pub, { challenge }),
        redirect_uri: redirectUri,
      };
      const before = await oauthState(t);
      const res = await tokenRequest(t, pub, { ...params, ...wrong }, 'none');
      expectOAuthError(res, 400, 'invalid_grant');
      expect(res.body.error_description).toMatch(/code_verifier/);
      expect(await oauthState(t)).not.toBe(before); // the burn, and nothing else: no token was issued
      expect(
        await t.db
          .selectFrom('oauth_codes')
          .select('used_at')
          .where('code_hash', '=', hashOAuthSecret(params.code))
          .executeTakeFirstOrThrow(),
      ).toEqual({ used_at: clock.now() });
    }
    const c = await code(pub, { challenge });
    const base = { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri };
    // A public client presenting a secret is not a public client.
    expectOAuthError(
      await tokenRequest(t, { id: pub.id, secret: 'mcs_x' }, { ...base, code_verifier: verifier }, 'post'),
      401,
      'invalid_client',
    );
    const res = await tokenRequest(t, pub, { ...base, code_verifier: verifier }, 'none');
    expect(res.status).toBe(200);
    seen(res.body);
    // Refreshing as a public client: client_id only.
    const r = await tokenRequest(
      t,
      pub,
      { grant_type: 'refresh_token', refresh_token: res.body.refresh_token },
      'none',
    );
    expect(r.status).toBe(200);
    seen(r.body);
  });

  test('honoured for a confidential client; a verifier for a code issued without a challenge is refused', async () => {
    const { verifier, challenge } = pkce();
    const c = await code(app, { challenge });
    const base = { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri };
    expectOAuthError(await tokenRequest(t, app, base), 400, 'invalid_grant');
    const fresh = { ...base, code: await code(app, { challenge }) };
    expect((await tokenRequest(t, app, { ...fresh, code_verifier: verifier })).status).toBe(200);
    const plain = await code();
    expectOAuthError(
      await tokenRequest(t, app, {
        grant_type: 'authorization_code',
        code: plain,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
      400,
      'invalid_grant',
    );
  });
});

describe('refresh tokens', () => {
  test('rotate on use: a new pair, the old refresh token stops working', async () => {
    const first = await tokens();
    const res = await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const second = seen(res.body);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.scope).toBe('orders.read products.read');
    expect((await api('/orders', second.access_token)).status).toBe(200);
    // The first access token lives on until it expires (rotation is of the refresh token).
    expect((await api('/orders', first.access_token)).status).toBe(200);
  });

  test('reuse of a rotated refresh token revokes the whole family (every access and refresh token)', async () => {
    const first = await tokens();
    const second = seen(
      (await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token })).body,
    );
    const reuse = await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expectOAuthError(reuse, 400, 'invalid_grant');
    expect(reuse.body.error_description).toMatch(/family is revoked/);
    expect((await api('/orders', first.access_token)).status).toBe(401);
    expect((await api('/orders', second.access_token)).status).toBe(401);
    expectOAuthError(
      await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: second.refresh_token }),
      400,
      'invalid_grant',
    );
  });

  test('narrowing the scope on refresh is allowed; widening is invalid_scope and writes nothing', async () => {
    const first = await tokens();
    const before = await oauthState(t);
    const wide = await tokenRequest(t, app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      scope: 'orders.read orders.write',
    });
    expectOAuthError(wide, 400, 'invalid_scope');
    expect(await oauthState(t)).toBe(before);
    const narrow = await tokenRequest(t, app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      scope: 'orders.read',
    });
    expect(narrow.status).toBe(200);
    seen(narrow.body);
    expect(narrow.body.scope).toBe('orders.read');
    expect((await api('/products', narrow.body.access_token)).status).toBe(403);
    // The new refresh token keeps the original grant: the next refresh may ask for products.read again.
    const back = await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: narrow.body.refresh_token });
    expect(back.status).toBe(200);
    seen(back.body);
    expect(back.body.scope).toBe('orders.read products.read');
  });

  test("another client's refresh token, an unknown one, an expired one: invalid_grant, nothing changed", async () => {
    const first = await tokens();
    const other = await newApp(t);
    for (const [a, token] of [
      [other, first.refresh_token],
      [app, 'mrt_unknownunknownunknownunknownunknownunknow'],
    ] as const) {
      const before = await oauthState(t);
      expectOAuthError(
        await tokenRequest(t, a, { grant_type: 'refresh_token', refresh_token: token }),
        400,
        'invalid_grant',
      );
      expect(await oauthState(t)).toBe(before);
    }
    clock.advance(30 * 24 * 3600_000);
    try {
      const before = await oauthState(t);
      expectOAuthError(
        await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token }),
        400,
        'invalid_grant',
      );
      expect(await oauthState(t)).toBe(before);
    } finally {
      clock.advance(-30 * 24 * 3600_000);
    }
    expect(
      (await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token })).status,
    ).toBe(200);
  });
});

describe('access tokens at work', () => {
  test('the same scope rules as API keys across operations', async () => {
    const tk = await tokens(app, 'orders.read customers.read');
    expect((await api('/orders', tk.access_token)).status).toBe(200);
    expect((await api('/customers', tk.access_token)).status).toBe(200);
    expect((await api('/me', tk.access_token)).status).toBe(200);
    const products = await api('/products', tk.access_token);
    expect(products.status).toBe(403);
    expect(products.body.error.code).toBe('FORBIDDEN');
    const write = await t.http.post('/dev/v1/orders').set(bearer(tk.access_token)).send({ email: 'a@b.c', items: [] });
    expect(write.status).toBe(403);
    expect(write.body.error.message).toContain('orders.write');
  });

  test('GET /me/capabilities names the issuing app; an API key has no client', async () => {
    const tk = await tokens(app, 'orders.read');
    const res = await api('/me/capabilities', tk.access_token);
    expect(res.status).toBe(200);
    expect(res.body.data.scopes).toEqual(['orders.read']);
    expect(res.body.data.credential).toMatchObject({
      kind: 'oauth_access_token',
      client: { id: app.id, name: 'Test App' },
    });
    const keyCaps = await api('/me/capabilities', key);
    expect(keyCaps.body.data.credential.client).toBeNull();
  });

  test('expires after 1 hour (401), by the injectable clock and by a stored expiry in the past', async () => {
    const tk = await tokens();
    clock.advance(3600_000 - 1);
    try {
      expect((await api('/orders', tk.access_token)).status).toBe(200);
      clock.advance(1);
      const res = await api('/orders', tk.access_token);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    } finally {
      clock.advance(-3600_000);
    }
    expect((await api('/orders', tk.access_token)).status).toBe(200);
    await t.db
      .updateTable('credentials')
      .set({ expires_at: new Date(clock.now().getTime() - 1000) })
      .where('token_hash', '=', hashOAuthSecret(tk.access_token))
      .execute();
    expect((await api('/orders', tk.access_token)).status).toBe(401);
  });

  test('uninstalling the app from the shop (CLI) takes effect on the very next request', async () => {
    const a = await newApp(t);
    const tk = seen(await exchange(t, a, await code(a)));
    expect((await api('/orders', tk.access_token)).status).toBe(200);
    const out = await uninstallApp(t.operator, { shopId: shop, clientId: a.id });
    expect(out.grants_revoked).toBe(1);
    expect((await api('/orders', tk.access_token)).status).toBe(401);
    expectOAuthError(
      await tokenRequest(t, a, { grant_type: 'refresh_token', refresh_token: tk.refresh_token }),
      400,
      'invalid_grant',
    );
  });

  test('revoking the app (CLI): its tokens and its client authentication stop working', async () => {
    const a = await newApp(t);
    const tk = seen(await exchange(t, a, await code(a)));
    await revokeApp(t.operator, a.id);
    expect((await api('/orders', tk.access_token)).status).toBe(401);
    expectOAuthError(
      await tokenRequest(t, a, { grant_type: 'refresh_token', refresh_token: tk.refresh_token }),
      401,
      'invalid_client',
    );
  });
});

describe('revocation (RFC 7009)', () => {
  const revoke = (a: App | undefined, params: Record<string, string>, how: 'basic' | 'post' | 'json' = 'basic') => {
    let req = t.http.post('/dev/v1/oauth/revoke');
    const body = { ...params };
    if (a && how === 'basic') req = req.set('Authorization', basic(a.id, a.secret ?? ''));
    if (a && how !== 'basic') Object.assign(body, { client_id: a.id, client_secret: a.secret });
    return how === 'json' ? req.send(body) : req.type('form').send(new URLSearchParams(body).toString());
  };

  test('an access token: that token only, effective on the next request', async () => {
    const first = await tokens();
    const second = seen(
      (await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: first.refresh_token })).body,
    );
    const res = await revoke(app, { token: second.access_token, token_type_hint: 'access_token' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(res.headers['cache-control']).toBe('no-store');
    expect((await api('/orders', second.access_token)).status).toBe(401);
    expect((await api('/orders', first.access_token)).status).toBe(200);
  });

  test('a refresh token: its whole family (JSON body, client_secret_post)', async () => {
    const tk = await tokens();
    const res = await revoke(app, { token: tk.refresh_token }, 'json');
    expect(res.status).toBe(200);
    expect((await api('/orders', tk.access_token)).status).toBe(401);
    expectOAuthError(
      await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: tk.refresh_token }),
      400,
      'invalid_grant',
    );
  });

  test("unknown, malformed or another client's token: 200 and nothing revoked", async () => {
    const tk = await tokens();
    const other = await newApp(t);
    for (const [a, token] of [
      [app, 'mat_unknownunknownunknownunknownunknownunknow'],
      [app, 'whatever'],
      [other, tk.access_token],
      [other, tk.refresh_token],
    ] as const) {
      const before = await oauthState(t);
      const res = await revoke(a, { token });
      expect(res.status).toBe(200);
      expect(await oauthState(t)).toBe(before);
    }
    expect((await api('/orders', tk.access_token)).status).toBe(200);
  });

  test('errors: no token (invalid_request), bad client (invalid_client with Basic challenge)', async () => {
    const tk = await tokens();
    const before = await oauthState(t);
    expectOAuthError(await revoke(app, {}), 400, 'invalid_request');
    expectOAuthError(
      await revoke({ id: app.id, secret: 'mcs_wrong' }, { token: tk.access_token }),
      401,
      'invalid_client',
    );
    expectOAuthError(await revoke(undefined, { token: tk.access_token }), 401, 'invalid_client');
    expect(await oauthState(t)).toBe(before);
    expect((await api('/orders', tk.access_token)).status).toBe(200);
  });
});

describe('no secret in logs or the audit trail', () => {
  test('no code, token or client secret appears in any log line or audit entry', async () => {
    expect(secrets.size).toBeGreaterThan(20);
    const logText = JSON.stringify(t.logs);
    const audit = await sql<{ text: string }>`select to_jsonb(a)::text as text from audit_entries a`.execute(t.db);
    const auditText = audit.rows.map((r) => r.text).join('\n');
    expect(audit.rows.length).toBeGreaterThan(0);
    const leaked = [...secrets].filter((s) => logText.includes(s) || auditText.includes(s));
    expect(leaked).toEqual([]);
    // Not even their hashes' neighbours: no column of the audit trail holds a prefix-and-body token shape.
    expect(auditText).not.toMatch(/(mat|mrt|mac|mcs)_[A-Za-z0-9_-]{43}/);
  });
});

describe('races on real PostgreSQL', () => {
  pgOnly(
    'the same code exchanged twice at once: exactly one token pair, then the family is revoked as a replay',
    async () => {
      const c = await code();
      const params = { grant_type: 'authorization_code', code: c, redirect_uri: redirectUri };
      const results = await Promise.all([tokenRequest(t, app, params), tokenRequest(t, app, params)]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 400]);
      const winner = results.find((r) => r.status === 200)!.body;
      seen(winner);
      expect(results.find((r) => r.status === 400)!.body.error).toBe('invalid_grant');
      const row = await t.db
        .selectFrom('oauth_codes')
        .select(['shop_id', 'grant_id'])
        .where('code_hash', '=', hashOAuthSecret(c))
        .executeTakeFirstOrThrow();
      const issued = await t.db.selectFrom('credentials').select('id').where('grant_id', '=', row.grant_id).execute();
      expect(issued).toHaveLength(1);
      expect((await api('/orders', winner.access_token)).status).toBe(401);
    },
  );

  pgOnly(
    'the same refresh token used twice at once: exactly one new pair, then the family is revoked as a reuse',
    async () => {
      const first = await tokens();
      const params = { grant_type: 'refresh_token', refresh_token: first.refresh_token };
      const results = await Promise.all([tokenRequest(t, app, params), tokenRequest(t, app, params)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
      const winner = seen(results.find((r) => r.status === 200)!.body);
      const grant = await t.db
        .selectFrom('oauth_refresh_tokens')
        .select(['grant_id'])
        .where('token_hash', '=', hashOAuthSecret(first.refresh_token))
        .executeTakeFirstOrThrow();
      const refreshRows = await t.db
        .selectFrom('oauth_refresh_tokens')
        .select('id')
        .where('grant_id', '=', grant.grant_id)
        .execute();
      expect(refreshRows).toHaveLength(2); // the original and exactly one rotation
      const accessRows = await t.db
        .selectFrom('credentials')
        .select('id')
        .where('grant_id', '=', grant.grant_id)
        .execute();
      expect(accessRows).toHaveLength(2);
      expect((await api('/orders', winner.access_token)).status).toBe(401);
    },
  );
});
