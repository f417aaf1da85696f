// Shared set-up of the OAuth test files (not a test file itself): apps, codes through POST /oauth/authorize, PKCE
// pairs and token requests in the shapes standard clients send.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createApp as createOAuthApp } from '../../src/ops/oauth-admin';
import { s256 } from '../../src/auth/oauth-grants';
import { bearer, type TestApp } from './test-app';

export const redirectUri = 'https://app.example.com/oauth/callback';

export interface App {
  id: string;
  secret: string | null;
}

export async function newApp(
  t: TestApp,
  input: { scopes?: string; isPublic?: boolean; shopId?: string; redirectUris?: string; name?: string } = {},
): Promise<App> {
  const app = await createOAuthApp(t.db, {
    name: input.name ?? 'Test App',
    redirectUris: input.redirectUris ?? `${redirectUri},https://app.example.com/other`,
    scopes: input.scopes ?? 'orders.read orders.write products.read customers.read',
    isPublic: input.isPublic,
    shopId: input.shopId,
  });
  return { id: app.client_id, secret: app.client_secret };
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: s256(verifier) };
}

export function authorizeRequest(t: TestApp, key: string, body: Record<string, unknown>) {
  return t.http
    .post('/dev/v1/oauth/authorize')
    .set(bearer(key))
    .send({ response_type: 'code', ...body });
}

/** Approves through the API and returns the code from the redirect URL. */
export async function codeFor(
  t: TestApp,
  key: string,
  app: App,
  input: { scope?: string; challenge?: string; redirect?: string; state?: string } = {},
): Promise<string> {
  const res = await authorizeRequest(t, key, {
    client_id: app.id,
    redirect_uri: input.redirect ?? redirectUri,
    scope: input.scope ?? 'orders.read',
    state: input.state ?? 'st',
    ...(input.challenge ? { code_challenge: input.challenge, code_challenge_method: 'S256' } : {}),
  });
  if (res.status !== 200) throw new Error(`approve: ${res.status} ${JSON.stringify(res.body)}`);
  return new URL(res.body.data.redirect_url as string).searchParams.get('code')!;
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** POST /oauth/token as a form (what standard clients send), authenticating with HTTP Basic unless told otherwise. */
export function tokenRequest(
  t: TestApp,
  app: App | undefined,
  params: Record<string, string>,
  how: 'basic' | 'post' | 'none' | 'json' = 'basic',
) {
  let req = t.http.post('/dev/v1/oauth/token');
  const body = { ...params };
  if (app && how === 'basic') req = req.set('Authorization', basic(app.id, app.secret ?? ''));
  if (app && (how === 'post' || how === 'json')) Object.assign(body, { client_id: app.id, client_secret: app.secret });
  if (app && how === 'none') Object.assign(body, { client_id: app.id });
  if (how === 'json') return req.send(body);
  return req.type('form').send(new URLSearchParams(body).toString());
}

export async function exchange(t: TestApp, app: App, code: string, extra: Record<string, string> = {}) {
  const res = await tokenRequest(t, app, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    ...extra,
  });
  if (res.status !== 200) throw new Error(`exchange: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { access_token: string; refresh_token: string; scope: string; expires_in: number };
}

/** What OAuth state a refused request must leave as it was. */
export async function oauthState(t: TestApp) {
  const r = await sql<{ state: string }>`select concat_ws('|',
      (select count(*) from credentials), (select count(*) from credentials where revoked_at is not null),
      (select count(*) from oauth_grants), (select count(*) from oauth_grants where revoked_at is not null),
      (select count(*) from oauth_codes), (select count(*) from oauth_codes where used_at is not null),
      (select count(*) from oauth_refresh_tokens), (select count(*) from oauth_refresh_tokens where used_at is not null),
      (select count(*) from oauth_refresh_tokens where revoked_at is not null)) as state`.execute(t.db);
  return r.rows[0]!.state;
}
