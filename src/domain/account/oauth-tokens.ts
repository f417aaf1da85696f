// The OAuth 2.0 token endpoint (RFC 6749 §4.1.3, §6), token revocation (RFC 7009) and client authentication
// (§2.3.1: HTTP Basic or the body; public clients send client_id only and must use PKCE).
//
// A grant (one approval) is the root of a token family: the code it issued, the access tokens `mat_…` (rows of
// `credentials`, 1 hour) and the refresh tokens `mrt_…` (30 days, rotated on every use). A code used twice, or a
// refresh token used after it was rotated, revokes the whole family (RFC 9700 §2.2.2, §4.14.2); a failed exchange
// of a live code (wrong PKCE verifier, redirect URI or client) burns it, so a later right one fails too. Codes and
// refresh tokens are locked while they are used, so of two uses at once the second waits for the first to commit and
// then sees it used: the same code exchanged twice at once yields exactly one token pair, then the family is revoked
// as a replay (and a wrong and a right exchange at once never both succeed); the same refresh token used twice at
// once yields exactly one new pair, then the family is revoked as a reuse.
import { timingSafeEqual } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Database, OAuthClientRow } from '../../../db/tables';
import type { ReadDb } from '../../../db/queries/shop-scope';
import {
  accessTokenByHash,
  clientById,
  codeByHashForUpdate,
  insertAccessToken,
  insertRefreshToken,
  markCodeUsed,
  markRefreshTokenUsed,
  refreshTokenByHashForUpdate,
  revokeAccessToken,
  revokeGrantFamily,
} from '../../../db/queries/oauth';
import { shopById } from '../../../db/queries/shops';
import { generateCredential } from '../../auth/credentials';
import { newId } from '../../ids';
import type { ShopWrite } from '../../platform/unit-of-work';
import {
  accessTokenTtlSeconds,
  codeVerifierPattern,
  generateOAuthSecret,
  hashOAuthSecret,
  refreshTokenTtlSeconds,
  s256,
  splitScopes,
} from '../../auth/oauth-grants';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

/** An OAuth 2.0 error answer (RFC 6749 §5.2): plain `{ error, error_description }`, not the envelope. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  /** invalid_client is 401 with a Basic challenge (§5.2); every other error is 400. */
  get status(): number {
    return this.error === 'invalid_client' ? 401 : 400;
  }
}

/** Token responses and errors must not be cached (RFC 6749 §5.1). */
export const noStoreHeaders = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

export const basicChallenge = 'Basic realm="oauth", charset="UTF-8"';

export function oauthErrorResult(err: OAuthError) {
  return {
    status: err.status,
    raw: { error: err.error, error_description: err.description },
    headers: {
      ...noStoreHeaders,
      ...(err.error === 'invalid_client' ? { 'WWW-Authenticate': basicChallenge } : {}),
    },
  };
}

export interface ClientCredentials {
  authorization: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
}

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded before they are put in the Basic header. */
function formDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new OAuthError('invalid_client', 'The Basic credentials are not validly form-urlencoded.');
  }
}

function sameSecret(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashOAuthSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Authenticates the client: HTTP Basic (client_secret_basic), client_id + client_secret in the body
 * (client_secret_post), or client_id alone for a public client (none). Using two methods at once is
 * invalid_request (§2.3); anything else that fails is invalid_client.
 */
export async function authenticateClient(db: ReadDb, input: ClientCredentials): Promise<OAuthClientRow> {
  let id = input.clientId;
  let secret = input.clientSecret;
  if (input.authorization !== undefined) {
    const basic = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(input.authorization);
    if (!basic) throw new OAuthError('invalid_client', 'The Authorization header is not valid HTTP Basic.');
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) throw new OAuthError('invalid_client', 'The Basic credentials are not client_id:client_secret.');
    if (input.clientSecret !== undefined) {
      throw new OAuthError('invalid_request', 'Use one client authentication method: HTTP Basic or the body.');
    }
    const basicId = formDecode(decoded.slice(0, colon));
    if (input.clientId !== undefined && input.clientId !== basicId) {
      throw new OAuthError('invalid_request', 'client_id in the body differs from the HTTP Basic one.');
    }
    id = basicId;
    secret = formDecode(decoded.slice(colon + 1));
  }
  if (id === undefined || id === '') throw new OAuthError('invalid_client', 'Client authentication is missing.');
  const client = await clientById(db, id);
  if (!client || client.revoked_at !== null) throw new OAuthError('invalid_client', 'Client authentication failed.');
  if (client.is_public) {
    if (secret !== undefined && secret !== '') {
      throw new OAuthError('invalid_client', 'A public client has no secret.');
    }
    return client;
  }
  if (secret === undefined || secret === '' || client.secret_hash === null || !sameSecret(secret, client.secret_hash)) {
    throw new OAuthError('invalid_client', 'Client authentication failed.');
  }
  return client;
}

export interface TokenRequest {
  grant_type?: string;
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  refresh_token?: string;
  scope?: string;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new OAuthError('invalid_request', `${name} is required.`);
  return value;
}

/**
 * The token endpoint. Every refusal is an OAuthError; those that change something (a replayed code or a reused
 * refresh token revokes its family; any other refusal of a live code burns it) write that first, in this
 * transaction, and the caller answers the error after committing it (the handler returns the error as its result,
 * so the unit of work commits).
 */
export async function exchangeToken(
  trx: Transaction<Database>,
  credentials: ClientCredentials,
  body: TokenRequest,
  now: Date,
): Promise<{ ok: true; tokens: TokenResponse } | { ok: false; error: OAuthError }> {
  const grantType = body.grant_type;
  if (grantType === undefined || grantType === '') return fail('invalid_request', 'grant_type is required.');
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    return fail('unsupported_grant_type', 'Supported grant types: authorization_code, refresh_token.');
  }
  try {
    const client = await authenticateClient(trx, credentials);
    if (grantType === 'authorization_code') return { ok: true, tokens: await redeemCode(trx, client, body, now) };
    return { ok: true, tokens: await rotateRefreshToken(trx, client, body, now) };
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, error: err };
    throw err;
  }
}

function fail(error: OAuthErrorCode, description: string) {
  return { ok: false as const, error: new OAuthError(error, description) };
}

async function redeemCode(
  trx: Transaction<Database>,
  client: OAuthClientRow,
  body: TokenRequest,
  now: Date,
): Promise<TokenResponse> {
  const codeText = required(body.code, 'code');
  const invalid = (why: string) => new OAuthError('invalid_grant', why);
  const code = await codeByHashForUpdate(trx, hashOAuthSecret(codeText));
  if (!code) throw invalid('The authorization code is unknown, used or expired.');
  // First, before anything about the request is judged: a code presented again, by whichever client, with whatever
  // verifier, is a replay (or a retry of a code an earlier failed exchange burned). RFC 6749 §4.1.2: deny it and
  // revoke everything it issued.
  if (code.used_at !== null) {
    await revokeGrantFamily(trx, code.shop_id, code.grant_id, 'code_replayed', now);
    throw invalid(
      'The authorization code was already used or burned by a failed exchange; any token it issued is revoked.',
    );
  }
  if (code.grant_revoked_at !== null) throw invalid('The authorization was revoked.');
  if (code.expires_at.getTime() <= now.getTime()) throw invalid('The authorization code is unknown, used or expired.');
  const refusal = exchangeRefusal(code, client, body);
  if (refusal) {
    // Burnt, as RFC 9700 recommends: a code that failed once (a wrong PKCE verifier above all) may be in an attacker's
    // hands, and a code that survived failures could be tried again until a guess succeeds. exchangeToken returns
    // the error as a result, so the unit of work commits the burn and the handler answers the error after it.
    await markCodeUsed(trx, code.shop_id, code.id, now);
    throw new OAuthError(refusal.error, `${refusal.why} The code can no longer be used; start a new authorization.`);
  }
  await markCodeUsed(trx, code.shop_id, code.id, now);
  return issueTokens({ trx, shopId: code.shop_id, now }, code.grant_id, code.grant_scopes, code.grant_scopes);
}

/** Why this client may not redeem this (live, unused) code with these parameters, or undefined when it may. */
function exchangeRefusal(
  code: { client_id: string; redirect_uri: string; code_challenge: string | null },
  client: OAuthClientRow,
  body: TokenRequest,
): { error: OAuthErrorCode; why: string } | undefined {
  // Another client holding the code means it leaked on its way to its own app: burnt like any other failure.
  if (code.client_id !== client.id) {
    return { error: 'invalid_grant', why: 'The authorization code was issued to another client.' };
  }
  if (body.redirect_uri === undefined || body.redirect_uri === '') {
    return { error: 'invalid_request', why: 'redirect_uri is required.' };
  }
  if (code.redirect_uri !== body.redirect_uri) {
    return { error: 'invalid_grant', why: 'redirect_uri differs from the one of the authorization request.' };
  }
  const verifier = body.code_verifier;
  if (code.code_challenge !== null) {
    if (verifier === undefined || verifier === '') {
      return { error: 'invalid_grant', why: 'code_verifier is required (PKCE).' };
    }
    if (!codeVerifierPattern.test(verifier) || s256(verifier) !== code.code_challenge) {
      return { error: 'invalid_grant', why: 'The code_verifier does not match the code_challenge (PKCE).' };
    }
  } else if (verifier !== undefined) {
    // A verifier for a code issued without a challenge: a PKCE downgrade (RFC 9700 §2.1.1).
    return {
      error: 'invalid_grant',
      why: 'The authorization request had no code_challenge, so no code_verifier is expected.',
    };
  }
  return undefined;
}

async function rotateRefreshToken(
  trx: Transaction<Database>,
  client: OAuthClientRow,
  body: TokenRequest,
  now: Date,
): Promise<TokenResponse> {
  const presented = required(body.refresh_token, 'refresh_token');
  const invalid = (why: string) => new OAuthError('invalid_grant', why);
  const token = await refreshTokenByHashForUpdate(trx, hashOAuthSecret(presented));
  if (!token || token.client_id !== client.id) throw invalid('The refresh token is unknown, revoked or expired.');
  if (token.revoked_at !== null || token.grant_revoked_at !== null) {
    throw invalid('The refresh token is unknown, revoked or expired.');
  }
  if (token.used_at !== null) {
    // Reuse of a rotated token: someone holds a copy. Both copies die with the family.
    await revokeGrantFamily(trx, token.shop_id, token.grant_id, 'refresh_token_reused', now);
    throw invalid('The refresh token was already used; its whole token family is revoked.');
  }
  if (token.expires_at.getTime() <= now.getTime()) throw invalid('The refresh token is unknown, revoked or expired.');
  let accessScopes = token.scopes;
  if (body.scope !== undefined) {
    const asked = splitScopes(body.scope);
    const wider = asked.filter((s) => !token.scopes.includes(s));
    if (asked.length === 0 || wider.length > 0) {
      throw new OAuthError(
        'invalid_scope',
        wider.length > 0 ? `Not granted originally: ${wider.join(' ')}.` : 'scope must name at least one scope.',
      );
    }
    accessScopes = asked;
  }
  await markRefreshTokenUsed(trx, token.shop_id, token.id, now);
  // The new refresh token keeps the original scopes (§6); only the access token is narrowed.
  return issueTokens({ trx, shopId: token.shop_id, now }, token.grant_id, accessScopes, token.scopes);
}

/**
 * What issuing tokens needs of a shop write: its transaction, the shop and the instant. The token endpoint acts for
 * a client, not a shop: the shop is known only once the code or refresh token is found (its row names it), and the
 * endpoint has no clock or effects of a shop to give; a ShopWrite, where one exists, is one of these.
 */
type GrantWrite = Pick<ShopWrite, 'trx' | 'shopId' | 'now'>;

async function issueTokens(
  w: GrantWrite,
  grantId: string,
  accessScopes: string[],
  refreshScopes: string[],
): Promise<TokenResponse> {
  const { trx, shopId, now } = w;
  // A grant of a test twin (a test-mode installation) issues test tokens, `mat_test_…` and `mrt_test_…`: the app can
  // tell its mode from the token, as from a test key. The shop, not the token's name, decides what they reach.
  const shop = await shopById(trx, shopId);
  const mode = shop && !shop.livemode ? 'test' : 'live';
  const access = generateCredential('oauth_access_token', mode);
  await insertAccessToken(trx, shopId, {
    id: newId('oat'),
    name: null,
    token_hash: access.hash,
    display_prefix: access.displayPrefix,
    scopes: accessScopes,
    grant_id: grantId,
    created_at: now,
    expires_at: new Date(now.getTime() + accessTokenTtlSeconds * 1000),
  });
  const refresh = generateOAuthSecret('mrt', mode);
  await insertRefreshToken(trx, shopId, {
    id: newId('ort'),
    grant_id: grantId,
    token_hash: refresh.hash,
    scopes: refreshScopes,
    expires_at: new Date(now.getTime() + refreshTokenTtlSeconds * 1000),
    created_at: now,
  });
  return {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: accessTokenTtlSeconds,
    refresh_token: refresh.token,
    scope: accessScopes.join(' '),
  };
}

/**
 * RFC 7009: revokes an access token (that token only) or a refresh token (its whole family). A token that is
 * unknown, already revoked, malformed or another client's is answered the same (200, nothing done), so the endpoint
 * tells nobody which tokens exist.
 */
export async function revokeToken(
  trx: Transaction<Database>,
  credentials: ClientCredentials,
  body: { token?: string; token_type_hint?: string },
  now: Date,
): Promise<{ ok: true } | { ok: false; error: OAuthError }> {
  try {
    const client = await authenticateClient(trx, credentials);
    const token = required(body.token, 'token');
    const hash = hashOAuthSecret(token);
    if (token.startsWith('mrt_')) {
      const row = await refreshTokenByHashForUpdate(trx, hash);
      if (row && row.client_id === client.id) {
        await revokeGrantFamily(trx, row.shop_id, row.grant_id, 'revoked_by_client', now);
      }
    } else if (token.startsWith('mat_')) {
      const row = await accessTokenByHash(trx, hash);
      if (row && row.client_id === client.id) await revokeAccessToken(trx, row.shop_id, row.id, now);
    }
    return { ok: true };
  } catch (err) {
    if (err instanceof OAuthError) return { ok: false, error: err };
    throw err;
  }
}
