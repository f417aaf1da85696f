// A failed exchange burns the authorization code (issue 24, point 7): a wrong or missing PKCE verifier, a verifier
// for a code issued without a challenge, a missing or different redirect_uri, another client's exchange — each
// answers its OAuth error, commits the burn, and the next exchange with the right inputs is invalid_grant, issuing
// nothing. What does not burn: a failed client authentication, an expired code. A code that was already used and is
// presented again, with a wrong verifier or by another client, revokes every token it issued. The races (a wrong and
// a right exchange at once, two right ones at once) run on real PostgreSQL.
import { hashOAuthSecret } from '../../src/auth/oauth-grants';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { codeFor, newApp, pkce, redirectUri, tokenRequest, type App } from '../helpers/oauth-apps';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;
let shop: string;
let key: string;
let app: App;
let other: App;
let pub: App;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shop = await t.createShop({ name: 'Burn shop' });
  key = (await t.createKey(shop, ['*'])).key;
  app = await newApp(t);
  other = await newApp(t, { name: 'Other App' });
  pub = await newApp(t, { isPublic: true, name: 'Public App' });
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

/** The code's row and what its grant issued: the state a refusal is checked against. */
async function codeState(code: string) {
  const row = await t.db
    .selectFrom('oauth_codes as c')
    .innerJoin('oauth_grants as g', (j) => j.onRef('g.shop_id', '=', 'c.shop_id').onRef('g.id', '=', 'c.grant_id'))
    .select(['c.grant_id', 'c.used_at', 'g.revoked_at', 'g.revoked_reason'])
    .where('c.code_hash', '=', hashOAuthSecret(code))
    .executeTakeFirstOrThrow();
  const access = await t.db
    .selectFrom('credentials')
    .select(['id', 'revoked_at'])
    .where('grant_id', '=', row.grant_id)
    .execute();
  const refresh = await t.db
    .selectFrom('oauth_refresh_tokens')
    .select(['id', 'revoked_at'])
    .where('grant_id', '=', row.grant_id)
    .execute();
  return {
    burnt: row.used_at !== null,
    grantRevoked: row.revoked_reason,
    issued: access.length + refresh.length,
    live: [...access, ...refresh].filter((r) => r.revoked_at === null).length,
  };
}

const exchangeParams = (code: string, extra: Record<string, string> = {}) => ({
  grant_type: 'authorization_code',
  code,
  redirect_uri: redirectUri,
  ...extra,
});

type Res = { status: number; body: { error?: string; error_description?: string; access_token?: string } };

function expectOAuthError(res: Res, error: string) {
  expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error });
}

describe('a failed exchange of a live code burns it', () => {
  // [name, the client that sends the failed exchange, how it authenticates, the PKCE challenge's owner or none,
  //  the failed request's parameters given the code and the right verifier, its error]
  const cases: [
    string,
    () => App,
    'basic' | 'none',
    boolean,
    (c: string, v: string) => Record<string, string>,
    string,
  ][] = [
    [
      'a wrong code_verifier',
      () => app,
      'basic',
      true,
      (c) => exchangeParams(c, { code_verifier: pkce().verifier }),
      'invalid_grant',
    ],
    [
      'a malformed code_verifier',
      () => app,
      'basic',
      true,
      (c) => exchangeParams(c, { code_verifier: 'short' }),
      'invalid_grant',
    ],
    [
      'no code_verifier though a challenge was set',
      () => app,
      'basic',
      true,
      (c) => exchangeParams(c),
      'invalid_grant',
    ],
    [
      'a code_verifier for a code issued without a challenge (a downgrade)',
      () => app,
      'basic',
      false,
      (c) => exchangeParams(c, { code_verifier: pkce().verifier }),
      'invalid_grant',
    ],
    [
      'another redirect_uri',
      () => app,
      'basic',
      true,
      (c, v) => exchangeParams(c, { code_verifier: v, redirect_uri: 'https://app.example.com/other' }),
      'invalid_grant',
    ],
    [
      'no redirect_uri',
      () => app,
      'basic',
      true,
      (c, v) => ({ grant_type: 'authorization_code', code: c, code_verifier: v }),
      'invalid_request',
    ],
    [
      'another (authenticated) client',
      () => other,
      'basic',
      true,
      (c, v) => exchangeParams(c, { code_verifier: v }),
      'invalid_grant',
    ],
    [
      'a wrong code_verifier from a public client',
      () => pub,
      'none',
      true,
      (c) => exchangeParams(c, { code_verifier: pkce().verifier }),
      'invalid_grant',
    ],
  ];

  test.each(cases)(
    '%s: the error, then the right exchange is invalid_grant and nothing is issued',
    async (_name, sender, how, withChallenge, failed, error) => {
      const owner = sender() === pub ? pub : app;
      const { verifier, challenge } = pkce();
      const code = await codeFor(t, key, owner, withChallenge ? { challenge } : {});
      expect(await codeState(code)).toEqual({ burnt: false, grantRevoked: null, issued: 0, live: 0 });

      const first = await tokenRequest(t, sender(), failed(code, verifier), how);
      expectOAuthError(first, error);
      expect(first.body.error_description).toMatch(/can no longer be used/);
      // The burn committed although the exchange answered an error; nothing was issued.
      expect(await codeState(code)).toEqual({ burnt: true, grantRevoked: null, issued: 0, live: 0 });

      const right = await tokenRequest(
        t,
        owner,
        exchangeParams(code, withChallenge ? { code_verifier: verifier } : {}),
        owner === pub ? 'none' : 'basic',
      );
      expectOAuthError(right, 'invalid_grant');
      expect(right.body.error_description).toMatch(/already used or burned/);
      expect(right.body.access_token).toBeUndefined();
      expect(await codeState(code)).toEqual({ burnt: true, grantRevoked: 'code_replayed', issued: 0, live: 0 });
    },
  );
});

describe('what does not burn a code', () => {
  test('a failed client authentication (the code is never looked at): the right exchange then works', async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(t, key, app, { challenge });
    const wrongSecret = await tokenRequest(
      t,
      { id: app.id, secret: 'mcs_wrong' },
      exchangeParams(code, { code_verifier: 'x' }),
    );
    expect({ status: wrongSecret.status, error: wrongSecret.body.error }).toEqual({
      status: 401,
      error: 'invalid_client',
    });
    expect(await codeState(code)).toEqual({ burnt: false, grantRevoked: null, issued: 0, live: 0 });
    const right = await tokenRequest(t, app, exchangeParams(code, { code_verifier: verifier }));
    expect(right.status).toBe(200);
    expect(await codeState(code)).toEqual({ burnt: true, grantRevoked: null, issued: 2, live: 2 });
  });

  test('an expired code is refused and left as it was', async () => {
    const code = await codeFor(t, key, app);
    clock.advance(600_000);
    try {
      expectOAuthError(await tokenRequest(t, app, exchangeParams(code)), 'invalid_grant');
    } finally {
      clock.advance(-600_000);
    }
    expect(await codeState(code)).toEqual({ burnt: false, grantRevoked: null, issued: 0, live: 0 });
  });
});

describe('a used code presented again revokes what it issued, whatever else is wrong', () => {
  test.each([
    [
      'with a wrong code_verifier',
      () => app,
      (v: string) => ({ code_verifier: `${v.slice(0, -1)}${v.endsWith('A') ? 'B' : 'A'}` }),
    ],
    ['with no code_verifier', () => app, () => ({})],
    ['by another client', () => other, (v: string) => ({ code_verifier: v })],
  ])('%s', async (_name, sender, extra) => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(t, key, app, { challenge });
    const first = await tokenRequest(t, app, exchangeParams(code, { code_verifier: verifier }));
    expect(first.status).toBe(200);
    const tokens = first.body as { access_token: string; refresh_token: string };
    expect((await t.http.get('/dev/v1/orders').set(bearer(tokens.access_token))).status).toBe(200);

    const again = await tokenRequest(t, sender(), exchangeParams(code, extra(verifier)));
    expectOAuthError(again, 'invalid_grant');
    expect(await codeState(code)).toEqual({ burnt: true, grantRevoked: 'code_replayed', issued: 2, live: 0 });
    expect((await t.http.get('/dev/v1/orders').set(bearer(tokens.access_token))).status).toBe(401);
    expectOAuthError(
      await tokenRequest(t, app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
      'invalid_grant',
    );
  });
});

describe('races on real PostgreSQL', () => {
  pgOnly('a wrong and a right exchange at once never both succeed, and no token stays live', async () => {
    for (let round = 0; round < 8; round++) {
      const { verifier, challenge } = pkce();
      const code = await codeFor(t, key, app, { challenge });
      const right = exchangeParams(code, { code_verifier: verifier });
      const wrong = exchangeParams(code, { code_verifier: pkce().verifier });
      const pair = round % 2 === 0 ? [right, wrong] : [wrong, right];
      const results = await Promise.all(pair.map((p) => tokenRequest(t, app, p)));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(1);
      expect(statuses.every((s) => s === 200 || s === 400)).toBe(true);
      const state = await codeState(code);
      // Right first: its pair is issued, then the wrong one finds the code used and revokes it. Wrong first: the
      // code is burnt and the right one gets nothing. Either way no token of this code is live.
      expect(state.burnt).toBe(true);
      expect(state.live).toBe(0);
      expect(state.issued).toBe(statuses.includes(200) ? 2 : 0);
    }
  });

  pgOnly('two right exchanges at once: exactly one gets tokens', async () => {
    for (let round = 0; round < 4; round++) {
      const { verifier, challenge } = pkce();
      const code = await codeFor(t, key, app, { challenge });
      const params = exchangeParams(code, { code_verifier: verifier });
      const results = await Promise.all([tokenRequest(t, app, params), tokenRequest(t, app, params)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
      expect(results.find((r) => r.status === 400)!.body.error).toBe('invalid_grant');
      // Exactly one pair was issued (the replay then revoked it, as a second use of a code must).
      expect(await codeState(code)).toEqual({ burnt: true, grantRevoked: 'code_replayed', issued: 2, live: 0 });
    }
  });
});
