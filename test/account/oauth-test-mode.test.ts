// OAuth installations in one mode (issue 26): `GET /oauth/authorize?mode=test` says TEST MODE on its pages and
// installs the app in the shop's test twin, so the code, the access tokens (`mat_test_…`) and the refresh tokens
// (`mrt_test_…`) act only on test data; a live installation never sees test data; a refresh keeps the mode; an app
// private to a shop installs in either of its modes; the programmatic approval installs in the key's own mode, and
// refuses the other one writing nothing.
import request from 'supertest';
import type { Response } from 'supertest';
import { looksLikeCredential } from '../../src/auth/credentials';
import { hashOAuthSecret } from '../../src/auth/oauth-grants';
import { shopForMode } from '../../src/ops/admin';
import { createOwner } from '../../src/ops/owner-admin';
import { ManualClock } from '../../src/platform/clock';
import { assertMatchesContract } from '../helpers/contract';
import {
  authorizeRequest,
  exchange,
  newApp,
  oauthState,
  redirectUri,
  tokenRequest,
  type App,
} from '../helpers/oauth-apps';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-12-01T10:00:00Z'));
let t: TestApp;
const password = 'correct horse battery staple';
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

let liveShop: string;
let testShop: string;
let liveKey: string;
let testKey: string;
let ownerEmail: string;
let app: App;
let liveOrder: string;
let testOrder: string;

beforeAll(async () => {
  t = await startTestApp({
    clock,
    env: { RATE_LIMIT_ANONYMOUS: '100000', RATE_LIMIT_FREE: '100000', TRUST_PROXY: '1' },
  });
  liveShop = await t.createShop({ name: 'Mode shop' });
  testShop = (await shopForMode(t.db, liveShop, 'test')).id;
  liveKey = (await t.createKey(liveShop, ['*'])).key;
  testKey = (await t.createKey(testShop, ['*'])).key;
  expect(testKey).toMatch(/^mdk_test_/);
  ownerEmail = `owner-${uid()}@example.com`;
  await createOwner(t.operator, { shopId: liveShop, email: ownerEmail, password });
  app = await newApp(t, { name: 'Mode App' });
  liveOrder = await order(liveShop, liveKey);
  testOrder = await order(testShop, testKey);
});
afterAll(() => t.close());

async function order(shopId: string, key: string): Promise<string> {
  const product = (await t.seed(shopId, { products: [{ title: 'P', price: '10.00' } as never] })).products[0]!;
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: product, quantity: 1 }] });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

let ipCounter = 0;

/** A browser: its cookies and its own address (so the per-IP sign-in limit of one test never reaches another). */
class Browser {
  readonly cookies = new Map<string, string>();
  readonly ip = `203.0.113.${++ipCounter}`;

  private header(): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { 'X-Forwarded-For': this.ip, ...(cookie ? { Cookie: cookie } : {}) };
  }

  private keep(res: Response): Response {
    for (const line of (res.headers['set-cookie'] as unknown as string[] | undefined) ?? []) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      if (pair!.slice(eq + 1) === '' || /max-age=0/i.test(line)) this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
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

function authorizeUrl(over: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  const params = {
    response_type: 'code',
    client_id: app.id,
    redirect_uri: redirectUri,
    scope: 'orders.read orders.write',
    ...over,
  };
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return `/dev/v1/oauth/authorize?${q.toString()}`;
}

/** The hidden fields of the form with this id. */
function formFields(html: string, id: string): Record<string, string> {
  const start = html.indexOf(`<form method="post" action="`, html.indexOf(`id="${id}"`) - 60);
  const form = html.slice(start, html.indexOf('</form>', start));
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!;
  return fields;
}

/** Signs the owner in on the page of this request and returns the browser and the approval page. */
async function consentPageOf(url: string): Promise<{ browser: Browser; page: Response }> {
  const browser = new Browser();
  const signIn = await browser.get(url);
  expect(signIn.status).toBe(200);
  const res = await browser.post('/oauth/sign-in', {
    ...formFields(signIn.text, 'sign-in'),
    email: ownerEmail,
    password,
  });
  expect(res.status).toBe(303);
  const page = await browser.get(url);
  expect(page.status).toBe(200);
  return { browser, page };
}

/** Installs the app through the hosted page (in the mode the request names) and exchanges the code. */
async function install(mode: string | undefined, target: App = app) {
  const { browser, page } = await consentPageOf(authorizeUrl({ client_id: target.id, mode }));
  const res = await browser.post('/oauth/consent', formFields(page.text, 'approve'));
  expect(res.status).toBe(303);
  const code = new URL(res.headers.location!).searchParams.get('code');
  expect(code).toMatch(/^mac_/);
  return { code: code!, tokens: await exchange(t, target, code!) };
}

const me = (token: string) => t.http.get('/dev/v1/me').set(bearer(token));

/**
 * The token sees its own mode's order and not the other's: the list holds only its own, and completing the other
 * mode's order is a 404 that changes nothing.
 */
async function seesOnly(token: string, own: string, other: string): Promise<void> {
  const list = await t.http.get('/dev/v1/orders').query({ limit: 100 }).set(bearer(token));
  expect(list.status).toBe(200);
  const ids = (list.body.data as { id: string }[]).map((o) => o.id);
  expect(ids).toContain(own);
  expect(ids).not.toContain(other);
  const before = await t.db.selectFrom('orders').selectAll().where('id', '=', other).executeTakeFirstOrThrow();
  const refused = await t.http.post(`/dev/v1/orders/${other}/complete`).set(bearer(token)).send({});
  expect(refused.status).toBe(404);
  expect(refused.body.error.code).toMatch(/NOT_FOUND$/);
  expect(await t.db.selectFrom('orders').selectAll().where('id', '=', other).executeTakeFirstOrThrow()).toEqual(before);
}

async function grantOfCode(code: string) {
  const row = await t.db
    .selectFrom('oauth_codes')
    .select(['shop_id', 'grant_id'])
    .where('code_hash', '=', hashOAuthSecret(code))
    .executeTakeFirstOrThrow();
  return t.db.selectFrom('oauth_grants').selectAll().where('id', '=', row.grant_id).executeTakeFirstOrThrow();
}

describe('the consent page says the mode', () => {
  test('mode=test: TEST MODE on the sign-in and the approval page, carried in every form', async () => {
    const signIn = await new Browser().get(authorizeUrl({ mode: 'test' }));
    expect(signIn.text).toContain('Install in TEST MODE:</strong> the app sees only test data');
    expect(formFields(signIn.text, 'sign-in').mode).toBe('test');
    const { page } = await consentPageOf(authorizeUrl({ mode: 'test' }));
    expect(page.text).toMatch(
      /id="mode" data-mode="test"><strong>Install in TEST MODE:<\/strong> the app sees only test data/,
    );
    expect(page.text).not.toContain('LIVE MODE');
    for (const form of ['approve', 'deny', 'sign-out']) expect(formFields(page.text, form).mode).toBe('test');
  });

  test.each([
    ['no mode', undefined],
    ['mode=live', 'live'],
  ])('%s: LIVE MODE, never TEST MODE', async (_name, mode) => {
    const { page } = await consentPageOf(authorizeUrl({ mode }));
    expect(page.text).toContain('id="mode" data-mode="live"><strong>Install in LIVE MODE:</strong>');
    expect(page.text).not.toContain('TEST MODE');
  });

  test('another mode is a 422 (the contract), not a page', async () => {
    const res = await new Browser().get(authorizeUrl({ mode: 'sandbox' }));
    expect(res.status).toBe(422);
    expect(res.headers.location).toBeUndefined();
  });

  test('a form whose mode was changed to another value: 400 page, nothing written', async () => {
    const { browser, page } = await consentPageOf(authorizeUrl({ mode: 'test' }));
    const before = await oauthState(t);
    const twins = await t.db.selectFrom('shops').select('id').execute();
    const res = await browser.post('/oauth/consent', { ...formFields(page.text, 'approve'), mode: 'TEST' });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(await oauthState(t)).toBe(before);
    expect(await t.db.selectFrom('shops').select('id').execute()).toEqual(twins);
  });
});

describe('a test-mode installation', () => {
  test("is a grant of the test twin; its tokens say test and act only on the test shop's data", async () => {
    const { code, tokens } = await install('test');
    // The owner's session is a row of the live shop: the test grant names none, the live trail names the approval.
    expect(await grantOfCode(code)).toMatchObject({ shop_id: testShop, client_id: app.id, session_id: null });
    const approval = await t.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('action', '=', 'oauth.approve')
      .orderBy('occurred_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(approval).toMatchObject({ shop_id: liveShop, resource_id: app.id });
    expect(approval.session_id).toMatch(/^cs_/);
    expect(tokens.access_token).toMatch(/^mat_test_[A-Za-z0-9_-]{43}$/);
    expect(tokens.refresh_token).toMatch(/^mrt_test_[A-Za-z0-9_-]{43}$/);
    expect(looksLikeCredential(tokens.access_token)).toBe(true);
    const account = await me(tokens.access_token);
    expect(account.status).toBe(200);
    expect(account.body.data).toMatchObject({ id: testShop, livemode: false, live_account_id: liveShop });
    await seesOnly(tokens.access_token, testOrder, liveOrder);
  });

  test('the first test installation makes the test twin when the shop had none yet', async () => {
    const fresh = await t.createShop({ name: `Fresh ${uid()}` });
    const email = `owner-${uid()}@example.com`;
    await createOwner(t.operator, { shopId: fresh, email, password });
    expect(await t.db.selectFrom('shops').select('id').where('live_shop_id', '=', fresh).execute()).toEqual([]);
    const browser = new Browser();
    const signIn = await browser.get(authorizeUrl({ mode: 'test' }));
    await browser.post('/oauth/sign-in', { ...formFields(signIn.text, 'sign-in'), email, password });
    const page = await browser.get(authorizeUrl({ mode: 'test' }));
    const res = await browser.post('/oauth/consent', formFields(page.text, 'approve'));
    const code = new URL(res.headers.location!).searchParams.get('code')!;
    const twin = await t.db.selectFrom('shops').selectAll().where('live_shop_id', '=', fresh).executeTakeFirstOrThrow();
    expect(twin.livemode).toBe(false);
    expect((await grantOfCode(code)).shop_id).toBe(twin.id);
    const tokens = await exchange(t, app, code);
    expect((await me(tokens.access_token)).body.data).toMatchObject({ id: twin.id, livemode: false });
  });

  test('a refresh keeps the mode: test tokens again, still blind to live data', async () => {
    const { tokens } = await install('test');
    const res = await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(res.status).toBe(200);
    expect(res.body.access_token).toMatch(/^mat_test_/);
    expect(res.body.refresh_token).toMatch(/^mrt_test_/);
    expect((await me(res.body.access_token)).body.data.livemode).toBe(false);
    await seesOnly(res.body.access_token, testOrder, liveOrder);
  });

  test('a test access token is revoked like any other (RFC 7009)', async () => {
    const { tokens } = await install('test');
    const revoked = await t.http
      .post('/dev/v1/oauth/revoke')
      .set('Authorization', `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`)
      .type('form')
      .send(new URLSearchParams({ token: tokens.access_token }).toString());
    expect(revoked.status).toBe(200);
    expect((await me(tokens.access_token)).status).toBe(401);
  });
});

describe('a live installation', () => {
  test.each([
    ['no mode', undefined],
    ['mode=live', 'live'],
  ])('%s: a grant of the live shop whose tokens never see test data', async (_name, mode) => {
    const { code, tokens } = await install(mode);
    expect(await grantOfCode(code)).toMatchObject({ shop_id: liveShop, session_id: expect.stringMatching(/^cs_/) });
    expect(tokens.access_token).toMatch(/^mat_(?!test_)[A-Za-z0-9_-]{43}$/);
    expect(tokens.refresh_token).toMatch(/^mrt_(?!test_)/);
    expect((await me(tokens.access_token)).body.data).toMatchObject({ id: liveShop, livemode: true });
    await seesOnly(tokens.access_token, liveOrder, testOrder);
  });
});

describe('an app private to the shop', () => {
  test.each([
    ['its live id', 'live'],
    ['its test twin (--mode test)', 'test'],
  ])('made with %s: installs in both modes of the shop', async (_name, madeIn) => {
    const privateApp = await newApp(t, { shopId: madeIn === 'live' ? liveShop : testShop, name: 'Private' });
    const row = await t.db
      .selectFrom('oauth_clients')
      .select('owner_shop_id')
      .where('id', '=', privateApp.id)
      .executeTakeFirstOrThrow();
    expect(row.owner_shop_id).toBe(liveShop);
    const test = await install('test', privateApp);
    expect((await me(test.tokens.access_token)).body.data.livemode).toBe(false);
    const live = await install('live', privateApp);
    expect((await me(live.tokens.access_token)).body.data.livemode).toBe(true);
    const byTestKey = await authorizeRequest(t, testKey, {
      client_id: privateApp.id,
      redirect_uri: redirectUri,
      scope: 'orders.read orders.write',
    });
    expect(byTestKey.status).toBe(200);
  });

  test("another shop's private app: unauthorized_client in test mode too, nothing written", async () => {
    const other = await t.createShop({ name: `Other ${uid()}` });
    const foreign = await newApp(t, { shopId: other, name: 'Foreign' });
    const { browser } = await consentPageOf(authorizeUrl({ mode: 'test' }));
    const res = await browser.get(authorizeUrl({ client_id: foreign.id, mode: 'test' }));
    expect(res.status).toBe(302);
    expect(new URL(res.headers.location!).searchParams.get('error')).toBe('unauthorized_client');
    const before = await oauthState(t);
    const refused = await authorizeRequest(t, testKey, {
      client_id: foreign.id,
      redirect_uri: redirectUri,
      scope: 'orders.read orders.write',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('OAUTH_INVALID_CLIENT');
    expect(await oauthState(t)).toBe(before);
  });
});

describe('POST /oauth/authorize installs in the key’s own mode', () => {
  test.each([
    ['a test key', () => testKey, undefined, /^mat_test_/, false],
    ['a test key naming its mode', () => testKey, 'test', /^mat_test_/, false],
    ['a live key', () => liveKey, undefined, /^mat_(?!test_)/, true],
    ['a live key naming its mode', () => liveKey, 'live', /^mat_(?!test_)/, true],
  ])('%s', async (_name, key, mode, shape, livemode) => {
    const res = await authorizeRequest(t, key(), {
      client_id: app.id,
      redirect_uri: redirectUri,
      scope: 'orders.read orders.write',
      ...(mode ? { mode } : {}),
    });
    expect(res.status).toBe(200);
    const code = new URL(res.body.data.redirect_url).searchParams.get('code')!;
    expect((await grantOfCode(code)).shop_id).toBe(livemode ? liveShop : testShop);
    const tokens = await exchange(t, app, code);
    expect(tokens.access_token).toMatch(shape);
    expect((await me(tokens.access_token)).body.data.livemode).toBe(livemode);
    await seesOnly(tokens.access_token, livemode ? liveOrder : testOrder, livemode ? testOrder : liveOrder);
  });

  test.each([
    ['a live key asking for test mode', () => liveKey, 'test'],
    ['a test key asking for live mode', () => testKey, 'live'],
  ])('%s: 403 FORBIDDEN, nothing written', async (_name, key, mode) => {
    const before = await oauthState(t);
    const res = await authorizeRequest(t, key(), {
      client_id: app.id,
      redirect_uri: redirectUri,
      scope: 'orders.read orders.write',
      mode,
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(await oauthState(t)).toBe(before);
  });
});
