// The hosted OAuth consent page through HTTP, with a cookie jar as a browser keeps one: the page's answers to bad
// requests (400 without redirect for an unknown client or redirect URI; redirects with the RFC 6749 error otherwise),
// sign-in (CSRF, wrong and right passwords, the limit per account and per IP, counted in PostgreSQL, and a race on
// it), the consent page (app, scopes with descriptions), approve and deny (the exact redirect URI, code and state;
// hidden fields re-validated), CSRF on every form (403, nothing written), sign-out, the session trail, and that no
// password, code or token reaches the logs or the audit trail.
import { createHash } from 'node:crypto';
import request from 'supertest';
import type { Response } from 'supertest';
import { scopeDescriptions } from '../../src/auth/scope-descriptions';
import { knownScopes } from '../../src/auth/scopes';
import { createOwner } from '../../src/ops/owner-admin';
import { createApp as createOAuthApp } from '../../src/ops/oauth-admin';
import { AdminError } from '../../src/ops/admin';
import { loadConfig } from '../../src/config';
import { ManualClock } from '../../src/platform/clock';
import { assertMatchesContract } from '../helpers/contract';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-22T10:00:00Z'));
let t: TestApp;
const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

const redirectUri = 'https://app.example.com/oauth/callback';
const password = 'correct horse battery staple';

interface Shop {
  id: string;
  key: string;
  email: string;
  ownerId: string;
}
let shop: Shop;
let otherShop: Shop;
let client: { id: string; secret: string | null };
let publicClient: { id: string };

beforeAll(async () => {
  // TRUST_PROXY: each test signs in from its own X-Forwarded-For address, so the per-IP limit of one does not leak
  // into another.
  t = await startTestApp({
    clock,
    env: { RATE_LIMIT_ANONYMOUS: '100000', RATE_LIMIT_FREE: '100000', TRUST_PROXY: '1' },
  });
  shop = await newShop();
  otherShop = await newShop();
  const app = await createOAuthApp(t.db, {
    name: 'Demo <b>App</b> & "Co"',
    redirectUris: `${redirectUri},https://app.example.com/other`,
    scopes: 'orders.read products.read customers.read',
  });
  client = { id: app.client_id, secret: app.client_secret };
  const pub = await createOAuthApp(t.db, {
    name: 'Public App',
    redirectUris: redirectUri,
    scopes: 'orders.read',
    isPublic: true,
  });
  publicClient = { id: pub.client_id };
});
afterAll(() => t.close());

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Consent ${uid()}` });
  const { key } = await t.createKey(id, ['*']);
  const email = `owner-${uid()}@example.com`;
  const owner = await createOwner(t.operator, { shopId: id, email, password });
  return { id, key, email, ownerId: owner.id };
}

async function newOwner(shopId: string): Promise<string> {
  const email = `owner-${uid()}@example.com`;
  await createOwner(t.operator, { shopId, email, password });
  return email;
}

let ipCounter = 0;
const newIp = () => `198.51.100.${++ipCounter}`;

/** A browser: its cookies (Secure ones too, as on https) and its address. */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(readonly ip = newIp()) {}

  private header(): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { 'X-Forwarded-For': this.ip, 'User-Agent': 'ConsentTest/1.0', ...(cookie ? { Cookie: cookie } : {}) };
  }

  private keep(res: Response): Response {
    const set = res.headers['set-cookie'] as unknown as string[] | undefined;
    for (const line of set ?? []) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  async get(url: string): Promise<Response> {
    const res = await request(t.app).get(url).set(this.header());
    assertMatchesContract('get', url, res);
    return this.keep(res);
  }

  async post(path: string, form: Record<string, string>): Promise<Response> {
    return this.keep(await request(t.app).post(path).set(this.header()).type('form').send(form));
  }
}

function authorizeUrl(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return `/dev/v1/oauth/authorize?${q.toString()}`;
}

const request1 = (over: Record<string, string | undefined> = {}) =>
  authorizeUrl({
    response_type: 'code',
    client_id: client.id,
    redirect_uri: redirectUri,
    scope: 'orders.read products.read',
    state: 'st<&>"ate',
    ...over,
  });

const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The fields of the form with this id (hidden ones and their values). */
function formFields(html: string, id: string): Record<string, string> {
  const start = html.indexOf(`<form method="post" action="`, html.indexOf(`id="${id}"`) - 60);
  const form = html.slice(start, html.indexOf('</form>', start));
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g))
    fields[m[1]!] = unescape(m[2]!);
  return fields;
}

async function signedIn(owner: Shop = shop, browser = new Browser()): Promise<Browser> {
  const page = await browser.get(request1());
  expect(page.status).toBe(200);
  const res = await browser.post('/oauth/sign-in', {
    ...formFields(page.text, 'sign-in'),
    email: owner.email,
    password,
  });
  expect(res.status).toBe(303);
  return browser;
}

async function counts() {
  const count = async (
    table: 'oauth_grants' | 'oauth_codes' | 'owner_sessions' | 'audit_entries' | 'owner_sign_in_failures',
  ) =>
    Number(
      (
        await t.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    grants: await count('oauth_grants'),
    codes: await count('oauth_codes'),
    sessions: await count('owner_sessions'),
    audit: await count('audit_entries'),
    failures: await count('owner_sign_in_failures'),
  };
}

describe('scope descriptions', () => {
  test('every scope the contract names has a description', () => {
    expect(knownScopes.length).toBeGreaterThan(20);
    expect(knownScopes.filter((s) => !Object.hasOwn(scopeDescriptions, s))).toEqual([]);
    expect(Object.keys(scopeDescriptions).filter((s) => s !== '*' && !knownScopes.includes(s))).toEqual([]);
  });
});

describe('GET /oauth/authorize: bad requests', () => {
  test('an unknown client: 400 OAUTH_INVALID_CLIENT, never a redirect', async () => {
    const res = await new Browser().get(request1({ client_id: 'app_unknown' }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('OAUTH_INVALID_CLIENT');
    expect(res.headers.location).toBeUndefined();
  });

  test.each([
    ['an unregistered URI', 'https://evil.example.com/cb'],
    ['a registered one with a trailing slash', `${redirectUri}/`],
    ['a registered one with a query added', `${redirectUri}?x=1`],
    ['a registered one in other case', redirectUri.toUpperCase()],
  ])('%s: 400 OAUTH_INVALID_REDIRECT_URI, never a redirect', async (_name, uri) => {
    const res = await new Browser().get(request1({ redirect_uri: uri }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('OAUTH_INVALID_REDIRECT_URI');
    expect(res.headers.location).toBeUndefined();
  });

  test('an unknown scope redirects to the exact URI with error=invalid_scope and the state', async () => {
    const res = await new Browser().get(request1({ scope: 'orders.read bogus.read' }));
    expect(res.status).toBe(302);
    const to = new URL(res.headers.location!);
    expect(`${to.origin}${to.pathname}`).toBe(redirectUri);
    expect(to.searchParams.get('error')).toBe('invalid_scope');
    expect(to.searchParams.get('state')).toBe('st<&>"ate');
    expect(to.searchParams.get('code')).toBeNull();
    expect(res.text).toBe('');
  });

  test('a scope the app may not request: invalid_scope', async () => {
    const res = await new Browser().get(request1({ scope: 'orders.write' }));
    expect(res.status).toBe(302);
    expect(new URL(res.headers.location!).searchParams.get('error')).toBe('invalid_scope');
  });

  test('a response type other than code: unsupported_response_type', async () => {
    const res = await new Browser().get(request1({ response_type: 'token' }));
    expect(res.status).toBe(302);
    expect(new URL(res.headers.location!).searchParams.get('error')).toBe('unsupported_response_type');
  });

  test('a public client without PKCE, or with plain: invalid_request', async () => {
    for (const extra of [{}, { code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }]) {
      const res = await new Browser().get(request1({ client_id: publicClient.id, scope: 'orders.read', ...extra }));
      expect(res.status).toBe(302);
      const to = new URL(res.headers.location!);
      expect(to.searchParams.get('error')).toBe('invalid_request');
      expect(to.searchParams.get('state')).toBe('st<&>"ate');
    }
  });

  test('a scope of the wrong shape is a 422 (validation), not a redirect', async () => {
    const res = await new Browser().get(request1({ scope: 'ORDERS' }));
    expect(res.status).toBe(422);
    expect(res.headers.location).toBeUndefined();
  });
});

describe('the sign-in page', () => {
  test('without a session: a sign-in form, escaped, with strict headers and a CSRF cookie', async () => {
    const res = await new Browser().get(request1());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Demo &lt;b&gt;App&lt;/b&gt; &amp; &quot;Co&quot;');
    expect(res.text).not.toContain('<b>App</b>');
    expect(res.text).toContain('action="/oauth/sign-in"');
    expect(res.text).not.toMatch(/<script|src=|href="http/i);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    const cookie = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('mdapi_consent_csrf='))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    // PUBLIC_URL is http://api.test: not a development address, so Secure.
    expect(cookie).toMatch(/; Secure/);
    const fields = formFields(res.text, 'sign-in');
    expect(fields).toMatchObject({ client_id: client.id, redirect_uri: redirectUri, state: 'st<&>"ate' });
    expect(fields.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test('cookies are Secure except in development (PUBLIC_URL http on loopback), and OWNER_COOKIE_SECURE decides', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://api.example.com' }).ownerCookieSecure).toBe(true);
    expect(loadConfig({ PUBLIC_URL: 'http://api.example.com' }).ownerCookieSecure).toBe(true);
    expect(loadConfig({ PUBLIC_URL: 'http://localhost:3000' }).ownerCookieSecure).toBe(false);
    expect(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:3000' }).ownerCookieSecure).toBe(false);
    expect(loadConfig({ PUBLIC_URL: 'http://localhost:3000', OWNER_COOKIE_SECURE: 'true' }).ownerCookieSecure).toBe(
      true,
    );
  });
});

describe('sign-in', () => {
  test('without or with a wrong CSRF token, or without the CSRF cookie: 403, nothing written', async () => {
    const browser = new Browser();
    const page = await browser.get(request1());
    const fields = formFields(page.text, 'sign-in');
    const before = await counts();
    const attempts: [Browser, Record<string, string>][] = [
      [browser, { ...fields, csrf_token: '' }],
      [browser, { ...fields, csrf_token: 'A'.repeat(43) }],
      // Another browser's token with this browser's cookie: tokens are bound to their cookie.
      [
        browser,
        { ...fields, csrf_token: formFields((await new Browser().get(request1())).text, 'sign-in').csrf_token! },
      ],
      // The right token without the cookie it is bound to.
      [new Browser(), fields],
    ];
    for (const [who, form] of attempts) {
      const res = await who.post('/oauth/sign-in', { ...form, email: shop.email, password });
      expect(res.status).toBe(403);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(res.text).toContain('Form expired');
    }
    expect(await counts()).toEqual(before);
  });

  test('a wrong password and an unknown email get the same answer; the failures are counted', async () => {
    const browser = new Browser();
    const fields = formFields((await browser.get(request1())).text, 'sign-in');
    const before = await counts();
    const wrong = await browser.post('/oauth/sign-in', { ...fields, email: shop.email, password: 'not the password' });
    const unknown = await browser.post('/oauth/sign-in', { ...fields, email: 'nobody@example.com', password });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.text).toContain('Wrong email or password.');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    // The page is the same but for the email typed back in.
    expect(wrong.text.replace(shop.email, 'X')).toBe(unknown.text.replace('nobody@example.com', 'X'));
    const after = await counts();
    expect(after.failures - before.failures).toBe(2);
    expect(after.sessions).toBe(before.sessions);
    // The known account's failure is in its shop's trail (no session); the unknown email's is in no trail.
    expect(after.audit - before.audit).toBe(1);
    const entry = await t.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('shop_id', '=', shop.id)
      .where('status', '=', 401)
      .orderBy('occurred_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(entry).toMatchObject({
      action: 'oauth.sign_in',
      owner_id: shop.ownerId,
      session_id: null,
      operation_id: null,
      credential_kind: 'owner',
      error_code: 'SIGN_IN_FAILED',
      ip: browser.ip,
    });
  });

  test('the right password: a session (HttpOnly, SameSite=Lax, Secure cookie), back to the page', async () => {
    const browser = new Browser();
    const fields = formFields((await browser.get(request1())).text, 'sign-in');
    const res = await browser.post('/oauth/sign-in', { ...fields, email: `  ${shop.email.toUpperCase()} `, password });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(request1());
    const cookie = (res.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('mdapi_owner_session='),
    )!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; Max-Age=28800/);
    const token = browser.cookies.get('mdapi_owner_session')!;
    const session = await t.db
      .selectFrom('owner_sessions')
      .selectAll()
      .where('shop_id', '=', shop.id)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(session.id).toMatch(/^cs_[0-9a-f]{32}$/);
    expect(session).toMatchObject({ owner_id: shop.ownerId, ip: browser.ip, user_agent: 'ConsentTest/1.0' });
    // Only the token's hash is stored.
    expect(session.token_hash).not.toContain(token);
    expect(session.token_hash).toMatch(/^[0-9a-f]{64}$/);

    const page = await browser.get(request1());
    expect(page.status).toBe(200);
    expect(page.text).toContain(shop.email);
    expect(page.text).toContain('Demo &lt;b&gt;App&lt;/b&gt;');
    for (const scope of ['orders.read', 'products.read']) {
      expect(page.text).toContain(`data-scope="${scope}"`);
      expect(page.text).toContain(scopeDescriptions[scope]!);
    }
    expect(page.text).not.toContain('data-scope="customers.read"');
    // The approval page's forms may lead to the app's redirect URI (browsers apply form-action to the redirect).
    expect(page.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com;");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('id="approve"');
    expect(page.text).toContain('id="deny"');
  });

  test('5 failures for an account within 15 minutes: refused, even with the right password, until the window passes', async () => {
    const email = await newOwner(shop.id);
    const owner = { ...shop, email };
    const tries = async (n: number, pass: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i++) {
        // A new address each time: this is the per-account limit.
        const browser = new Browser();
        const fields = formFields((await browser.get(request1())).text, 'sign-in');
        statuses.push((await browser.post('/oauth/sign-in', { ...fields, email, password: pass })).status);
      }
      return statuses;
    };
    expect(await tries(5, 'wrong password!')).toEqual([401, 401, 401, 401, 401]);
    const before = await counts();
    const limited = await tries(2, password);
    expect(limited).toEqual([429, 429]);
    expect(await counts()).toEqual(before);
    clock.advance(15 * 60_000 + 1000);
    expect((await signedIn(owner)).cookies.has('mdapi_owner_session')).toBe(true);
  });

  test('20 failures from one IP address: refused for every account', async () => {
    const browser = new Browser();
    const fields = formFields((await browser.get(request1())).text, 'sign-in');
    for (let i = 0; i < 20; i++) {
      const res = await browser.post('/oauth/sign-in', {
        ...fields,
        email: `guess${i}@example.com`,
        password: 'guess',
      });
      expect(res.status).toBe(401);
    }
    const res = await browser.post('/oauth/sign-in', { ...fields, email: shop.email, password });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('900');
    expect(res.text).toContain('Too many failed sign-ins');
    expect(browser.cookies.has('mdapi_owner_session')).toBe(false);
    // Another address is not affected.
    expect((await signedIn(shop)).cookies.has('mdapi_owner_session')).toBe(true);
  });

  test('IPv6: failures from many addresses of one /56 count together (no spraying from fresh addresses)', async () => {
    // Each guess from another address of 2001:db8:77:aa00::/56 (the /56 of one customer line).
    for (let i = 0; i < 20; i++) {
      const browser = new Browser(`2001:db8:77:aa${(i % 16).toString(16)}${i % 10}::${i + 1}`);
      const fields = formFields((await browser.get(request1())).text, 'sign-in');
      const res = await browser.post('/oauth/sign-in', {
        ...fields,
        email: `spray${i}@example.com`,
        password: 'guess',
      });
      expect(res.status).toBe(401);
    }
    const next = new Browser('2001:db8:77:aaff::beef');
    const fields = formFields((await next.get(request1())).text, 'sign-in');
    const before = await counts();
    const refused = await next.post('/oauth/sign-in', { ...fields, email: shop.email, password });
    expect(refused.status).toBe(429);
    expect(next.cookies.has('mdapi_owner_session')).toBe(false);
    expect(await counts()).toEqual(before);
    // Another /56 is not affected.
    expect((await signedIn(shop, new Browser('2001:db8:77:ab00::1'))).cookies.has('mdapi_owner_session')).toBe(true);
  });

  pgOnly(
    '10 wrong passwords at once for one account: exactly 5 are checked, the rest refused by the limit',
    async () => {
      const email = await newOwner(shop.id);
      const browsers = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const b = new Browser();
          return { b, fields: formFields((await b.get(request1())).text, 'sign-in') };
        }),
      );
      const results = await Promise.all(
        browsers.map(({ b, fields }) => b.post('/oauth/sign-in', { ...fields, email, password: 'wrong password!' })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
      const failures = await t.db
        .selectFrom('owner_sign_in_failures')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('email', '=', email)
        .executeTakeFirstOrThrow();
      expect(Number(failures.n)).toBe(5);
    },
  );
});

describe('approve and deny', () => {
  test('CSRF missing or wrong on the consent form: 403, nothing written', async () => {
    const browser = await signedIn();
    const page = await browser.get(request1());
    const fields = formFields(page.text, 'approve');
    const other = await signedIn();
    const othersToken = formFields((await other.get(request1())).text, 'approve').csrf_token!;
    const before = await counts();
    for (const csrf_token of ['', 'B'.repeat(43), othersToken]) {
      const res = await browser.post('/oauth/consent', { ...fields, decision: 'approve', csrf_token });
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
    }
    const deny = await browser.post('/oauth/consent', { ...formFields(page.text, 'deny'), csrf_token: '' });
    expect(deny.status).toBe(403);
    const signOut = await browser.post('/oauth/sign-out', { ...formFields(page.text, 'sign-out'), csrf_token: '' });
    expect(signOut.status).toBe(403);
    // Without the session cookie the form's token is worth nothing.
    const stranger = new Browser();
    const res = await stranger.post('/oauth/consent', { ...fields, decision: 'approve' });
    expect(res.status).toBe(401);
    expect(await counts()).toEqual(before);
  });

  test('approve: 303 to the exact registered URI with a code and the state; a grant of the session', async () => {
    const browser = await signedIn();
    const page = await browser.get(request1({ redirect_uri: 'https://app.example.com/other' }));
    const before = await counts();
    const res = await browser.post('/oauth/consent', { ...formFields(page.text, 'approve') });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.location!);
    expect(`${to.origin}${to.pathname}`).toBe('https://app.example.com/other');
    expect([...to.searchParams.keys()].sort()).toEqual(['code', 'state']);
    expect(to.searchParams.get('code')).toMatch(/^mac_[A-Za-z0-9_-]{43}$/);
    expect(to.searchParams.get('state')).toBe('st<&>"ate');
    const after = await counts();
    expect(after.grants - before.grants).toBe(1);
    expect(after.codes - before.codes).toBe(1);
    expect(after.audit - before.audit).toBe(1);
    const grant = await t.db
      .selectFrom('oauth_grants')
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(grant.session_id).toBe((await sessionOf(browser)).id);
    expect(grant).toMatchObject({
      shop_id: shop.id,
      client_id: client.id,
      scopes: ['orders.read', 'products.read'],
      granted_by_kind: 'owner',
      granted_by_id: shop.ownerId,
    });
  });

  test('the code works at the token endpoint (the flow end to end)', async () => {
    const browser = await signedIn();
    const page = await browser.get(request1());
    const res = await browser.post('/oauth/consent', { ...formFields(page.text, 'approve') });
    const code = new URL(res.headers.location!).searchParams.get('code')!;
    const token = await t.http
      .post('/dev/v1/oauth/token')
      .type('form')
      .auth(client.id, client.secret!)
      .send({ grant_type: 'authorization_code', code, redirect_uri: redirectUri });
    expect(token.status).toBe(200);
    expect(token.body.access_token).toMatch(/^mat_/);
    expect(token.body.scope.split(' ').sort()).toEqual(['orders.read', 'products.read']);
    const orders = await t.http.get('/dev/v1/orders').set(bearer(token.body.access_token));
    expect(orders.status).toBe(200);
    const customers = await t.http.get('/dev/v1/customers').set(bearer(token.body.access_token));
    expect(customers.status).toBe(403);
  });

  test('hidden fields are checked again: a widened scope redirects with invalid_scope, a swapped URI is refused', async () => {
    const browser = await signedIn();
    const fields = formFields((await browser.get(request1())).text, 'approve');
    const before = await counts();
    const widened = await browser.post('/oauth/consent', { ...fields, scope: 'orders.read orders.write' });
    expect(widened.status).toBe(303);
    expect(new URL(widened.headers.location!).searchParams.get('error')).toBe('invalid_scope');
    const swapped = await browser.post('/oauth/consent', { ...fields, redirect_uri: 'https://evil.example.com/cb' });
    expect(swapped.status).toBe(400);
    expect(swapped.headers.location).toBeUndefined();
    const noDecision = await browser.post('/oauth/consent', { ...fields, decision: 'maybe' });
    expect(noDecision.status).toBe(400);
    expect(await counts()).toEqual(before);
  });

  test('deny: 303 with error=access_denied and the state; no grant', async () => {
    const browser = await signedIn();
    const page = await browser.get(request1());
    const before = await counts();
    const res = await browser.post('/oauth/consent', formFields(page.text, 'deny'));
    expect(res.status).toBe(303);
    const to = new URL(res.headers.location!);
    expect(`${to.origin}${to.pathname}`).toBe(redirectUri);
    expect(to.searchParams.get('error')).toBe('access_denied');
    expect(to.searchParams.get('state')).toBe('st<&>"ate');
    expect(to.searchParams.get('code')).toBeNull();
    const after = await counts();
    expect(after.grants).toBe(before.grants);
    expect(after.codes).toBe(before.codes);
    expect(after.audit - before.audit).toBe(1);
  });

  test('an app private to another shop: unauthorized_client, nothing granted', async () => {
    const priv = await createOAuthApp(t.db, {
      name: 'Private',
      redirectUris: redirectUri,
      scopes: 'orders.read',
      shopId: otherShop.id,
    });
    const browser = await signedIn();
    const res = await browser.get(request1({ client_id: priv.client_id, scope: 'orders.read' }));
    expect(res.status).toBe(302);
    expect(new URL(res.headers.location!).searchParams.get('error')).toBe('unauthorized_client');
  });

  test('a session ends after 8 hours: the sign-in form again, and its forms are refused', async () => {
    const browser = await signedIn();
    const fields = formFields((await browser.get(request1())).text, 'approve');
    clock.advance(8 * 3600_000 + 1000);
    const page = await browser.get(request1());
    expect(page.text).toContain('action="/oauth/sign-in"');
    const before = await counts();
    expect((await browser.post('/oauth/consent', fields)).status).toBe(401);
    expect(await counts()).toEqual(before);
  });
});

/** The session row of the browser's cookie (found by the token's hash, as the server finds it). */
async function sessionOf(browser: Browser) {
  const hash = createHash('sha256').update(browser.cookies.get('mdapi_owner_session')!).digest('hex');
  return t.db.selectFrom('owner_sessions').selectAll().where('token_hash', '=', hash).executeTakeFirstOrThrow();
}

describe('sign-out and the session trail', () => {
  test('sign-in, approve, deny, sign-out: the trail has them oldest first; another shop gets 404', async () => {
    const browser = new Browser();
    const first = await browser.get(request1());
    clock.advance(1000);
    await browser.post('/oauth/sign-in', { ...formFields(first.text, 'sign-in'), email: shop.email, password });
    const session = await sessionOf(browser);
    const page = await browser.get(request1());
    clock.advance(1000);
    const approved = await browser.post('/oauth/consent', formFields(page.text, 'approve'));
    clock.advance(1000);
    await browser.post('/oauth/consent', formFields(page.text, 'deny'));
    clock.advance(1000);
    const out = await browser.post('/oauth/sign-out', formFields(page.text, 'sign-out'));
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe(request1());
    expect(browser.cookies.has('mdapi_owner_session')).toBe(false);
    // Signed out: the page asks to sign in again, and the old session's forms are refused.
    expect((await browser.get(request1())).text).toContain('action="/oauth/sign-in"');

    const { key: reader } = await t.createKey(shop.id, ['security.read']);
    const trail = await t.http.get(`/dev/v1/security/session-trail/${session.id}`).set(bearer(reader));
    expect(trail.status).toBe(200);
    expect(trail.body.data).toMatchObject({
      session_id: session.id,
      started_at: session.started_at.toISOString(),
      ip: browser.ip,
      user_agent: 'ConsentTest/1.0',
    });
    const entries = trail.body.data.entries as Record<string, unknown>[];
    expect(entries.map((e) => [e.action, e.status, e.resource_type, e.resource_id])).toEqual([
      ['oauth.sign_in', 303, 'owner_session', session.id],
      ['oauth.approve', 303, 'oauth_client', client.id],
      ['oauth.deny', 303, 'oauth_client', client.id],
      ['oauth.sign_out', 303, 'owner_session', session.id],
    ]);
    for (const e of entries) {
      expect(e).toMatchObject({
        actor: { type: 'USER', id: shop.ownerId, name: shop.email },
        operation_id: null,
        session_id: session.id,
        ip: browser.ip,
        user_agent: 'ConsentTest/1.0',
      });
    }
    // The audit trail list shows them too, with their session.
    const list = await t.http.get('/dev/v1/security/audit-trail?limit=100').set(bearer(reader));
    expect(list.status).toBe(200);
    expect((list.body.data as { session_id: string | null }[]).filter((e) => e.session_id === session.id)).toHaveLength(
      4,
    );

    // Nothing secret in the trail or the logs: not the password, the code, the cookie or the CSRF token.
    const code = new URL(approved.headers.location!).searchParams.get('code')!;
    const secrets = [password, code, session.token_hash, formFields(page.text, 'approve').csrf_token!];
    const rows = JSON.stringify(await t.db.selectFrom('audit_entries').selectAll().execute());
    const logs = JSON.stringify(t.logs);
    for (const secret of [...secrets, ...browser.cookies.values()]) {
      expect(rows).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    expect(logs).not.toContain('mac_');

    // Another shop's key, an unknown id, and a key without security.read.
    const elsewhere = await t.http.get(`/dev/v1/security/session-trail/${session.id}`).set(bearer(otherShop.key));
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error.code).toBe('SESSION_NOT_FOUND');
    const unknown = await t.http
      .get('/dev/v1/security/session-trail/cs_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f')
      .set(bearer(reader));
    expect(unknown.status).toBe(404);
    const { key: noScope } = await t.createKey(shop.id, ['orders.read']);
    expect((await t.http.get(`/dev/v1/security/session-trail/${session.id}`).set(bearer(noScope))).status).toBe(403);
  });
});

describe('owner accounts (CLI)', () => {
  test('argon2id hashes; short passwords, bad emails, unknown shops and duplicate emails refused', async () => {
    const email = `cli-${uid()}@example.com`;
    const owner = await createOwner(t.operator, { shopId: shop.id, email: email.toUpperCase(), password });
    expect(owner).toEqual({ id: expect.stringMatching(/^own_/), shop_id: shop.id, email });
    const row = await t.db
      .selectFrom('owner_accounts')
      .selectAll()
      .where('id', '=', owner.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(row.password_hash).not.toContain(password);
    const refused = [
      { shopId: shop.id, email: `x-${uid()}@example.com`, password: 'short' },
      { shopId: shop.id, email: 'not-an-email', password },
      { shopId: 'shop_unknown', email: `y-${uid()}@example.com`, password },
      { shopId: otherShop.id, email, password },
    ];
    const before = await t.db
      .selectFrom('owner_accounts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    for (const input of refused) await expect(createOwner(t.operator, input)).rejects.toBeInstanceOf(AdminError);
    const after = await t.db
      .selectFrom('owner_accounts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toEqual(before.n);
  });
});
