// The hosted OAuth consent page's rules (issue 13, items 2 and 6): the owner's sign-in session, CSRF tokens, the
// sign-in limit, approval and denial, and the session trail entries each of them writes.
//
// - Session: a random 32-byte token in an HttpOnly, SameSite=Lax cookie (Secure outside development); the database
//   keeps only its SHA-256 and the session's public id `cs_…`, which is what the trail shows. Sessions last 8 hours.
// - CSRF: every form carries a token. Before sign-in it is HMAC(key, browser cookie) of a random HttpOnly cookie
//   (double submit, signed: a forged cookie cannot be paired with a token without the key); once signed in it is
//   HMAC(key, session token hash), a synchronizer token bound to the session. A POST without the right one is a 403
//   page and writes nothing.
// - Sign-in limit: 5 failures per account and 20 per IP address within 15 minutes, counted in PostgreSQL (so every
//   process sees them) under advisory locks (so concurrent guesses cannot overrun it). Over the limit every attempt
//   is refused without checking the password. The answer never says whether the email exists.
// - The authorization request travels in hidden fields and is checked again on every submit (never trusted).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { insertAuditEntry } from '../../db/queries/audit-entries';
import {
  clearSignInFailuresOfEmail,
  deleteOldSignInFailures,
  endOwnerSession,
  insertOwnerSession,
  insertSignInFailure,
  liveOwnerSessionByTokenHash,
  lockSignInAttempts,
  ownerAccountByEmail,
  signInFailureCounts,
} from '../../db/queries/owner-sessions';
import { existingServerSecret, serverSecret } from '../../db/queries/server-secrets';
import type { ReadDb } from '../../db/queries/shop-scope';
import type { Database, OwnerSessionRow } from '../../db/tables';
import { ApiError } from '../errors';
import { newId } from '../ids';
import type { UnitOfWork } from '../platform/unit-of-work';
import type { PageBrand } from '../views/page-layout';
import { consentPage, signInPage, type AuthorizationParams, authorizationParamNames } from './consent-pages';
import {
  checkAuthorizationRequest,
  errorRedirect,
  issueAuthorizationCode,
  type AuthorizationCheck,
} from './oauth-grants';
import { verifyDecoy, verifyPassword } from './passwords';
import { ipKeyGenerator } from 'express-rate-limit';

export const sessionCookieName = 'mdapi_owner_session';
export const csrfCookieName = 'mdapi_consent_csrf';
export const sessionTtlSeconds = 8 * 3600;
export const signInWindowMs = 15 * 60_000;
export const maxFailuresPerAccount = 5;
export const maxFailuresPerIp = 20;
const consentKeyName = 'oauth-consent';

/** Every consent page: no script runs and nothing loads from elsewhere; nobody may frame it (clickjacking). */
export const pageSecurityHeaders: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/**
 * The approval page's policy: its forms may also lead to the app's registered redirect URI, since browsers apply
 * `form-action` to the redirect that answers a form (Approve and Deny end there).
 */
function consentPagePolicy(redirectUri: string): string {
  const url = new URL(redirectUri);
  const target = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  return pageSecurityHeaders['Content-Security-Policy']!.replace("form-action 'self'", `form-action 'self' ${target}`);
}

// --- cookies and CSRF ---------------------------------------------------------------------------------------------

const tokenShape = /^[A-Za-z0-9_-]{43}$/;

export function parseCookies(header: string | string[] | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  const text = Array.isArray(header) ? header.join('; ') : (header ?? '');
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !Object.hasOwn(cookies, name)) cookies[name] = part.slice(eq + 1).trim();
  }
  return cookies;
}

/** A cookie of ours from the header, when it has the shape of one (43 base64url characters). */
function cookieToken(header: string | string[] | undefined, name: string): string | undefined {
  const value = parseCookies(header)[name];
  return value !== undefined && tokenShape.test(value) ? value : undefined;
}

export function setCookie(name: string, value: string, secure: boolean, maxAgeSeconds?: number): string {
  return [
    `${name}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
    ...(maxAgeSeconds !== undefined ? [`Max-Age=${maxAgeSeconds}`] : []),
  ].join('; ');
}

const randomToken = () => randomBytes(32).toString('base64url');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The key the CSRF tokens are signed with: created once, shared by every process (call at start). */
export async function ensureConsentKey(db: Kysely<Database>): Promise<Buffer> {
  return serverSecret(db, consentKeyName);
}

async function consentKey(db: ReadDb): Promise<Buffer> {
  const key = await existingServerSecret(db, consentKeyName);
  if (!key) throw new Error('the consent page key is missing: the consent router creates it at start');
  return key;
}

function csrfToken(key: Buffer, binding: string): string {
  return createHmac('sha256', key).update(binding).digest('base64url');
}

const browserBinding = (browserToken: string) => `browser:${browserToken}`;
const sessionBinding = (tokenHash: string) => `session:${tokenHash}`;

function sameToken(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

// --- the authorization request ------------------------------------------------------------------------------------

/** The request's parameters from a query or a form: strings only, bounded as the contract bounds them. */
export function authorizationParams(source: Record<string, unknown>): AuthorizationParams | undefined {
  const limits: Record<(typeof authorizationParamNames)[number], number> = {
    response_type: 64,
    client_id: 64,
    redirect_uri: 2048,
    scope: 2000,
    state: 512,
    code_challenge: 128,
    code_challenge_method: 16,
    mode: 4,
  };
  const params: Record<string, string> = {};
  for (const name of authorizationParamNames) {
    const value = source[name];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string' || value.length > limits[name]) return undefined;
    params[name] = value;
  }
  if (!params.response_type || !params.client_id || !params.redirect_uri || !params.scope) return undefined;
  if (params.mode !== undefined && params.mode !== 'live' && params.mode !== 'test') return undefined;
  return params as unknown as AuthorizationParams;
}

/** The page's own address for this request (where sign-in and sign-out send the browser back to). */
export function authorizePath(params: AuthorizationParams): string {
  const query = new URLSearchParams();
  for (const name of authorizationParamNames) if (params[name] !== undefined) query.set(name, params[name]);
  return `/dev/v1/oauth/authorize?${query.toString()}`;
}

type Checked =
  | { kind: 'ok'; check: Extract<AuthorizationCheck, { ok: true }> }
  | { kind: 'reject'; code: 'OAUTH_INVALID_CLIENT' | 'OAUTH_INVALID_REDIRECT_URI'; message: string }
  | { kind: 'redirect'; location: string };

/**
 * RFC 6749 §4.1.2.1: an unknown client or an unregistered redirect URI is answered here (never redirected to);
 * every other error is sent to the (now validated) redirect URI with `error` and `state`.
 */
async function checkRequest(db: ReadDb | Transaction<Database>, params: AuthorizationParams): Promise<Checked> {
  const check = await checkAuthorizationRequest(db, {
    clientId: params.client_id,
    redirectUri: params.redirect_uri,
    scope: params.scope,
    state: params.state,
    codeChallenge: params.code_challenge,
    codeChallengeMethod: params.code_challenge_method,
  });
  if (!check.ok && !check.redirect) return { kind: 'reject', code: check.code, message: check.message };
  const fail = (error: string, description: string): Checked => ({
    kind: 'redirect',
    location: errorRedirect(params.redirect_uri, error, description, params.state),
  });
  if (params.response_type !== 'code') {
    return fail('unsupported_response_type', 'Only response_type=code is supported.');
  }
  if (!check.ok) return fail(check.error, check.description);
  return { kind: 'ok', check };
}

/** An app made private to one shop (`app create --shop`) cannot be installed by another. */
function privateToAnotherShop(check: Extract<AuthorizationCheck, { ok: true }>, shopId: string): boolean {
  return check.client.shopId !== null && check.client.shopId !== shopId;
}

// --- GET /dev/v1/oauth/authorize ----------------------------------------------------------------------------------

/** The consent page's answer: an HTML page or a redirect (the operation's handler returns it as its result). */
export interface AuthorizationPage {
  status: number;
  html: string;
  headers: Record<string, string>;
}

const redirect = (location: string): AuthorizationPage => ({
  status: 302,
  html: '',
  headers: { ...pageSecurityHeaders, Location: location },
});

/**
 * The consent page for an authorization request: 400 (thrown) for an unknown client or redirect URI, a 302 with
 * the error for any other bad request, the sign-in form without a live session, the approval page with one.
 */
export async function authorizationPage(
  db: ReadDb,
  input: {
    query: Record<string, unknown>;
    cookie: string | string[] | undefined;
    secureCookies: boolean;
    now: Date;
    /** How a shop's pages show it (its branding): the approval page names the shop it grants access to. */
    brandOf: (shopId: string) => Promise<PageBrand>;
  },
): Promise<AuthorizationPage> {
  const params = authorizationParams(input.query);
  if (!params) throw new ApiError('OAUTH_INVALID_CLIENT', 'Unknown OAuth client.');
  const checked = await checkRequest(db, params);
  if (checked.kind === 'reject') throw new ApiError(checked.code, checked.message);
  if (checked.kind === 'redirect') return redirect(checked.location);
  const { check } = checked;
  const key = await consentKey(db);
  const sessionToken = cookieToken(input.cookie, sessionCookieName);
  const session = sessionToken ? await liveOwnerSessionByTokenHash(db, sha256(sessionToken), input.now) : undefined;
  if (!session) {
    const existing = cookieToken(input.cookie, csrfCookieName);
    const browserToken = existing ?? randomToken();
    return {
      status: 200,
      html: signInPage({
        clientName: check.client.name,
        params,
        csrfToken: csrfToken(key, browserBinding(browserToken)),
      }),
      headers: {
        ...pageSecurityHeaders,
        ...(existing ? {} : { 'Set-Cookie': setCookie(csrfCookieName, browserToken, input.secureCookies) }),
      },
    };
  }
  if (privateToAnotherShop(check, session.shop_id)) {
    return redirect(
      errorRedirect(params.redirect_uri, 'unauthorized_client', 'This app is private to another shop.', params.state),
    );
  }
  return {
    status: 200,
    html: consentPage({
      clientName: check.client.name,
      shop: await input.brandOf(session.shop_id),
      scopes: check.scopes,
      redirectUri: params.redirect_uri,
      email: session.email,
      params,
      csrfToken: csrfToken(key, sessionBinding(session.token_hash)),
    }),
    headers: { ...pageSecurityHeaders, 'Content-Security-Policy': consentPagePolicy(params.redirect_uri) },
  };
}

// --- the forms ----------------------------------------------------------------------------------------------------

/** A form refused: the page to show (nothing was written). */
export class ConsentRefusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

const staleForm = () =>
  new ConsentRefusal(
    403,
    'Form expired',
    'This form is not valid any more (its security token is missing or wrong). Go back to the app and start again.',
  );

/** Who submitted a form, from where (what the trail records; never the form's contents). */
export interface FormOrigin {
  ip: string | undefined;
  userAgent: string | undefined;
  requestId: string;
  now: Date;
}

export interface ConsentDeps {
  db: Kysely<Database>;
  unitOfWork: UnitOfWork;
  /**
   * The shop of this mode of the owner's shop (`shopInMode`, src/domain/test-mode.ts: the test twin is made
   * on first use), where an approval installs the app; undefined when the shop has no such mode. Given by the pages'
   * router, since the rule lives in the domain, above this layer.
   */
  shopInMode: (
    trx: Transaction<Database>,
    shopId: string,
    mode: 'live' | 'test',
  ) => Promise<{ id: string } | undefined>;
}

type Entry = {
  shopId: string;
  ownerId: string;
  sessionId: string | null;
  action: 'oauth.sign_in' | 'oauth.sign_out' | 'oauth.approve' | 'oauth.deny';
  resourceType: string;
  resourceId: string;
  status: number;
  errorCode?: string;
  path: string;
};

/** One entry of the shop's audit trail for a consent-page action, in the transaction of what it describes. */
async function record(trx: Transaction<Database>, entry: Entry, origin: FormOrigin): Promise<void> {
  await insertAuditEntry(trx, entry.shopId, {
    id: newId('aud'),
    occurred_at: origin.now,
    credential_id: null,
    credential_kind: 'owner',
    owner_id: entry.ownerId,
    session_id: entry.sessionId,
    operation_id: null,
    method: 'POST',
    path: entry.path,
    action: entry.action,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    path_params: '{}',
    status: entry.status,
    error_code: entry.errorCode ?? null,
    ip: origin.ip?.slice(0, 256) ?? null,
    user_agent: origin.userAgent?.slice(0, 512) ?? null,
    request_id: origin.requestId,
  });
}

const writeOrigin = (origin: FormOrigin, what: string) => ({
  shopId: undefined,
  credentialId: undefined,
  operationId: what,
  requestId: origin.requestId,
});

/** POST /oauth/sign-in's CSRF check: the token must be the HMAC of this browser's cookie. */
export async function checkSignInCsrf(
  db: ReadDb,
  cookie: string | string[] | undefined,
  token: unknown,
): Promise<void> {
  const browserToken = cookieToken(cookie, csrfCookieName);
  if (!browserToken || !sameToken(csrfToken(await consentKey(db), browserBinding(browserToken)), token))
    throw staleForm();
}

export type SignInResult =
  | { ok: true; sessionToken: string; sessionId: string }
  | { ok: false; reason: 'wrong_credentials' | 'too_many_attempts' };

/**
 * Signs an owner in: refused without checking the password once the account or the IP is over the limit; a wrong
 * password (or an unknown email, indistinguishably) is counted; a right one starts a session.
 */
export async function signIn(
  deps: ConsentDeps,
  input: { email: string; password: string },
  origin: FormOrigin,
): Promise<SignInResult> {
  const email = input.email.trim().toLowerCase();
  // IPv6 counted per /56 (as the API's own limiter does), so a host cannot spray from a fresh address each time.
  const ip = ipKeyGenerator(origin.ip ?? 'unknown');
  const since = new Date(origin.now.getTime() - signInWindowMs);
  return deps.unitOfWork.run(writeOrigin(origin, 'consent:sign-in'), async (trx) => {
    await lockSignInAttempts(trx, ip, email);
    const failures = await signInFailureCounts(trx, ip, email, since);
    if (failures.email >= maxFailuresPerAccount || failures.ip >= maxFailuresPerIp) {
      return { ok: false, reason: 'too_many_attempts' } as const;
    }
    const account = email.length <= 254 ? await ownerAccountByEmail(trx, email) : undefined;
    const valid =
      account && account.disabled_at === null
        ? await verifyPassword(account.password_hash, input.password)
        : await verifyDecoy(input.password);
    if (!valid || !account) {
      await insertSignInFailure(trx, ip, email.slice(0, 254), origin.now);
      await deleteOldSignInFailures(trx, since);
      if (account) {
        await record(
          trx,
          {
            shopId: account.shop_id,
            ownerId: account.id,
            sessionId: null,
            action: 'oauth.sign_in',
            resourceType: 'owner_account',
            resourceId: account.id,
            status: 401,
            errorCode: 'SIGN_IN_FAILED',
            path: '/oauth/sign-in',
          },
          origin,
        );
      }
      return { ok: false, reason: 'wrong_credentials' } as const;
    }
    await clearSignInFailuresOfEmail(trx, email);
    const sessionToken = randomToken();
    const sessionId = newId('cs');
    await insertOwnerSession(trx, account.shop_id, {
      id: sessionId,
      owner_id: account.id,
      token_hash: sha256(sessionToken),
      ip: origin.ip?.slice(0, 256) ?? null,
      user_agent: origin.userAgent?.slice(0, 512) ?? null,
      started_at: origin.now,
      expires_at: new Date(origin.now.getTime() + sessionTtlSeconds * 1000),
    });
    await record(
      trx,
      {
        shopId: account.shop_id,
        ownerId: account.id,
        sessionId,
        action: 'oauth.sign_in',
        resourceType: 'owner_session',
        resourceId: sessionId,
        status: 303,
        path: '/oauth/sign-in',
      },
      origin,
    );
    return { ok: true, sessionToken, sessionId } as const;
  });
}

/** The live session of the cookie, and the form's token checked against it (403 page otherwise). */
async function sessionOfForm(
  db: ReadDb | Transaction<Database>,
  cookie: string | string[] | undefined,
  token: unknown,
  now: Date,
): Promise<OwnerSessionRow & { email: string }> {
  const sessionToken = cookieToken(cookie, sessionCookieName);
  const session = sessionToken ? await liveOwnerSessionByTokenHash(db, sha256(sessionToken), now) : undefined;
  if (!session) {
    throw new ConsentRefusal(401, 'Signed out', 'Your session has ended. Go back to the app and sign in again.');
  }
  if (!sameToken(csrfToken(await consentKey(db), sessionBinding(session.token_hash)), token)) throw staleForm();
  return session;
}

/** Approve or deny: where the browser goes next (the registered redirect URI with a code, or with an error). */
export async function decide(
  deps: ConsentDeps,
  input: { cookie: string | string[] | undefined; form: Record<string, unknown> },
  origin: FormOrigin,
): Promise<{ location: string }> {
  // Session and CSRF first, outside the transaction: a forged or stale form writes nothing.
  await sessionOfForm(deps.db, input.cookie, input.form.csrf_token, origin.now);
  const params = authorizationParams(input.form);
  const decision = input.form.decision;
  if (!params || (decision !== 'approve' && decision !== 'deny')) {
    throw new ConsentRefusal(400, 'Request refused', 'This form is incomplete. Go back to the app and start again.');
  }
  return deps.unitOfWork.run(writeOrigin(origin, `consent:${decision}`), async (trx) => {
    const session = await sessionOfForm(trx, input.cookie, input.form.csrf_token, origin.now);
    const checked = await checkRequest(trx, params);
    if (checked.kind === 'reject') throw new ConsentRefusal(400, 'Request refused', checked.message);
    if (checked.kind === 'redirect') return { location: checked.location };
    const { check } = checked;
    if (privateToAnotherShop(check, session.shop_id)) {
      return {
        location: errorRedirect(
          params.redirect_uri,
          'unauthorized_client',
          'This app is private to another shop.',
          params.state,
        ),
      };
    }
    const entry = {
      shopId: session.shop_id,
      ownerId: session.owner_id,
      sessionId: session.id,
      resourceType: 'oauth_client',
      resourceId: check.client.id,
      status: 303,
      path: '/oauth/consent',
    };
    if (decision === 'deny') {
      await record(trx, { ...entry, action: 'oauth.deny' }, origin);
      return {
        location: errorRedirect(
          params.redirect_uri,
          'access_denied',
          'The shop owner denied the request.',
          params.state,
        ),
      };
    }
    // The grant, its code and every token it opens belong to the shop of the chosen mode: a test installation is one
    // of the test twin, so its tokens act only there.
    const installShop = await deps.shopInMode(trx, session.shop_id, params.mode ?? 'live');
    if (!installShop) {
      return {
        location: errorRedirect(
          params.redirect_uri,
          'invalid_request',
          `This shop has no ${params.mode ?? 'live'} mode to install the app in.`,
          params.state,
        ),
      };
    }
    const { redirectUrl } = await issueAuthorizationCode(trx, {
      clientId: params.client_id,
      redirectUri: params.redirect_uri,
      scope: params.scope,
      state: params.state,
      codeChallenge: params.code_challenge,
      codeChallengeMethod: params.code_challenge_method,
      shopId: installShop.id,
      scopes: check.scopes,
      grantedBy: { kind: 'owner', id: session.owner_id },
      // The session is a row of the owner's (live) shop, and a grant names one of its own shop: a test-mode grant
      // names none. The approval's entry in the live shop's trail (below) still names the session and the app.
      sessionId: installShop.id === session.shop_id ? session.id : null,
      now: origin.now,
    });
    await record(trx, { ...entry, action: 'oauth.approve' }, origin);
    return { location: redirectUrl };
  });
}

/** Signs out (the session ends; the trail says so) and returns to the page of the same request. */
export async function signOut(
  deps: ConsentDeps,
  input: { cookie: string | string[] | undefined; form: Record<string, unknown> },
  origin: FormOrigin,
): Promise<void> {
  await sessionOfForm(deps.db, input.cookie, input.form.csrf_token, origin.now);
  await deps.unitOfWork.run(writeOrigin(origin, 'consent:sign-out'), async (trx) => {
    const session = await sessionOfForm(trx, input.cookie, input.form.csrf_token, origin.now);
    if (!(await endOwnerSession(trx, session.shop_id, session.id, origin.now))) return;
    await record(
      trx,
      {
        shopId: session.shop_id,
        ownerId: session.owner_id,
        sessionId: session.id,
        action: 'oauth.sign_out',
        resourceType: 'owner_session',
        resourceId: session.id,
        status: 303,
        path: '/oauth/sign-out',
      },
      origin,
    );
  });
}

/** The sign-in page again, with an error (wrong credentials, too many attempts, session ended). */
export async function signInAgainPage(
  db: ReadDb,
  input: { params: AuthorizationParams; cookie: string | string[] | undefined; error: string; email?: string },
): Promise<string | undefined> {
  const checked = await checkRequest(db, input.params);
  if (checked.kind !== 'ok') return undefined;
  const browserToken = cookieToken(input.cookie, csrfCookieName);
  if (!browserToken) return undefined;
  return signInPage({
    clientName: checked.check.client.name,
    params: input.params,
    csrfToken: csrfToken(await consentKey(db), browserBinding(browserToken)),
    error: input.error,
    email: input.email,
  });
}
