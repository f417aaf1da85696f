// OAuth 2.0 authorization requests and codes: the part both approval paths share, the hosted consent page
// (GET /oauth/authorize) and the API (POST /oauth/authorize). Codes `mac_…` are single use, live 10 minutes and are
// stored only as SHA-256 hashes; each approval is a grant, the root of one token family (src/domain/account/oauth-tokens.ts).
import { createHash, randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import type { ReadDb } from '../../db/queries/shop-scope';
import { clientById, insertCode, insertGrant } from '../../db/queries/oauth';
import { shopById } from '../../db/queries/shops';
import type { CredentialMode } from './credentials';
import { ApiError } from '../errors';
import { newId } from '../ids';
import { knownScopes } from './scopes';

export const authorizationCodeTtlSeconds = 600;
export const accessTokenTtlSeconds = 3600;
export const refreshTokenTtlSeconds = 30 * 24 * 3600;

export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  /** Space-separated scopes. */
  scope: string;
  state?: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
}

export type AuthorizationCheck =
  | { ok: true; client: { id: string; name: string; shopId: string | null }; scopes: string[] }
  | { ok: false; redirect: false; code: 'OAUTH_INVALID_CLIENT' | 'OAUTH_INVALID_REDIRECT_URI'; message: string }
  | {
      ok: false;
      redirect: true;
      error: 'invalid_request' | 'invalid_scope' | 'unsupported_response_type';
      description: string;
    };

/** The secret strings of OAuth, each `prefix_` + base64url of 32 random bytes (43 characters). */
export type OAuthSecretPrefix = 'mac' | 'mat' | 'mrt' | 'mcs';

/**
 * A secret; one of a test-mode installation (its refresh tokens) says so after its prefix (`mrt_test_…`), as test
 * credentials do (src/auth/credentials.ts), and a live one never starts so.
 */
export function generateOAuthSecret(
  prefix: OAuthSecretPrefix,
  mode: CredentialMode = 'live',
): { token: string; hash: string; displayPrefix: string } {
  let secret = randomBytes(32).toString('base64url');
  while (mode === 'live' && secret.startsWith('test_')) secret = randomBytes(32).toString('base64url');
  const token = mode === 'test' ? `${prefix}_test_${secret}` : `${prefix}_${secret}`;
  return { token, hash: hashOAuthSecret(token), displayPrefix: token.slice(0, mode === 'test' ? 13 : 8) };
}

export function hashOAuthSecret(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** RFC 7636 §4.2: S256 of a verifier is BASE64URL(SHA256(ASCII(verifier))), 43 characters. */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** RFC 7636 §4.1: 43-128 characters of [A-Z a-z 0-9 - . _ ~]. */
export const codeVerifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;
const s256ChallengePattern = /^[A-Za-z0-9_-]{43}$/;

/** Space-separated scopes, de-duplicated, in the order given. */
export function splitScopes(scope: string): string[] {
  return [...new Set(scope.split(' ').filter(Boolean))];
}

/**
 * Validates the client, the exact redirect URI, the scopes (known, allowed for the client) and the PKCE parameters
 * (S256 only; required for public clients). The first two failures must never redirect (RFC 6749 §4.1.2.1); the
 * others redirect to the (now validated) redirect URI with the error.
 */
export async function checkAuthorizationRequest(
  db: ReadDb | Transaction<Database>,
  req: AuthorizationRequest,
): Promise<AuthorizationCheck> {
  const client = await clientById(db, req.clientId);
  if (!client || client.revoked_at !== null) {
    return { ok: false, redirect: false, code: 'OAUTH_INVALID_CLIENT', message: 'Unknown OAuth client.' };
  }
  // Exact string comparison (RFC 9700 §2.1): no prefix, pattern or normalisation.
  if (!client.redirect_uris.includes(req.redirectUri)) {
    return {
      ok: false,
      redirect: false,
      code: 'OAUTH_INVALID_REDIRECT_URI',
      message: 'The redirect_uri is not registered for this client.',
    };
  }
  const scopes = splitScopes(req.scope);
  if (scopes.length === 0) {
    return { ok: false, redirect: true, error: 'invalid_scope', description: 'No scope was requested.' };
  }
  const unknown = scopes.filter((s) => s !== '*' && !knownScopes.includes(s));
  if (unknown.length > 0) {
    return { ok: false, redirect: true, error: 'invalid_scope', description: `Unknown scope: ${unknown.join(' ')}.` };
  }
  const notAllowed = scopes.filter((s) => !client.scopes.includes(s) && !client.scopes.includes('*'));
  if (notAllowed.length > 0) {
    return {
      ok: false,
      redirect: true,
      error: 'invalid_scope',
      description: `The client may not request: ${notAllowed.join(' ')}.`,
    };
  }
  if (req.codeChallengeMethod !== undefined && req.codeChallenge === undefined) {
    return {
      ok: false,
      redirect: true,
      error: 'invalid_request',
      description: 'code_challenge_method was sent without code_challenge.',
    };
  }
  if (req.codeChallenge !== undefined) {
    // An absent method means `plain` (RFC 7636 §4.3), which is not supported (RFC 9700 §2.1.1).
    if (req.codeChallengeMethod !== 'S256') {
      return {
        ok: false,
        redirect: true,
        error: 'invalid_request',
        description: 'Only code_challenge_method=S256 is supported.',
      };
    }
    if (!s256ChallengePattern.test(req.codeChallenge)) {
      return {
        ok: false,
        redirect: true,
        error: 'invalid_request',
        description: 'code_challenge must be the 43-character base64url S256 of the code verifier.',
      };
    }
  } else if (client.is_public) {
    return {
      ok: false,
      redirect: true,
      error: 'invalid_request',
      description: 'A public client must use PKCE (code_challenge with code_challenge_method=S256).',
    };
  }
  return { ok: true, client: { id: client.id, name: client.name, shopId: client.owner_shop_id }, scopes };
}

/** The app is private to another shop (created with `--shop`): it cannot be installed here. */
export class OAuthClientUnavailableError extends ApiError {
  constructor() {
    super('OAUTH_INVALID_CLIENT', 'This app is private to another shop.');
  }
}

/**
 * Issues a single-use code `mac_…` (10 minutes, only its hash stored) for `shopId` granting `scopes`, as a new grant
 * (the root of the token family the code will open), and returns the redirect URL (redirect_uri + code + state).
 * The request is checked again here, so a caller cannot issue a code for an unchecked request; `scopes` must be
 * among the requested ones (the approver may narrow them). `sessionId`: the consent page's session (null for the
 * API).
 */
export async function issueAuthorizationCode(
  trx: Transaction<Database>,
  input: AuthorizationRequest & {
    shopId: string;
    scopes: string[];
    grantedBy: { kind: 'owner' | 'credential'; id: string };
    sessionId: string | null;
    now: Date;
  },
): Promise<{ redirectUrl: string }> {
  const check = await checkAuthorizationRequest(trx, input);
  if (!check.ok) {
    throw check.redirect
      ? new ApiError('OAUTH_INVALID_SCOPE', check.description)
      : new ApiError(check.code, check.message);
  }
  if (check.client.shopId !== null) {
    // An app private to a shop may be installed in either of its modes: the live shop or its test twin.
    const shop = await shopById(trx, input.shopId);
    const liveShopId = shop && !shop.livemode ? shop.live_shop_id : input.shopId;
    if (check.client.shopId !== input.shopId && check.client.shopId !== liveShopId) {
      throw new OAuthClientUnavailableError();
    }
  }
  const scopes = [...new Set(input.scopes)];
  if (scopes.length === 0 || scopes.some((s) => !check.scopes.includes(s))) {
    throw new ApiError('OAUTH_INVALID_SCOPE', 'The granted scopes must be among the requested ones.');
  }
  const grantId = newId('ogr');
  await insertGrant(trx, input.shopId, {
    id: grantId,
    client_id: check.client.id,
    scopes,
    granted_by_kind: input.grantedBy.kind,
    granted_by_id: input.grantedBy.id,
    session_id: input.sessionId,
    created_at: input.now,
  });
  const code = generateOAuthSecret('mac');
  await insertCode(trx, input.shopId, {
    id: newId('ocd'),
    grant_id: grantId,
    code_hash: code.hash,
    client_id: check.client.id,
    redirect_uri: input.redirectUri,
    code_challenge: input.codeChallenge ?? null,
    code_challenge_method: input.codeChallenge !== undefined ? 'S256' : null,
    expires_at: new Date(input.now.getTime() + authorizationCodeTtlSeconds * 1000),
    created_at: input.now,
  });
  return { redirectUrl: withQuery(input.redirectUri, { code: code.token, state: input.state }) };
}

/** RFC 6749 §4.1.2.1 error redirect URL (error, error_description, state). */
export function errorRedirect(redirectUri: string, error: string, description: string, state?: string): string {
  return withQuery(redirectUri, { error, error_description: description, state });
}

/** The URI with the parameters added to its query (its own query kept, RFC 6749 §3.1.2). */
function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.append(name, value);
  return url.toString();
}
