import { authorizationPage } from '../src/auth/consent';
import { accountOf, capabilitiesOf } from '../src/domain/account/account';
import { advanceTestClock as advance, testClockOf } from '../src/domain/test-mode';
import { pageBrandOf } from '../src/domain/store/settings';
import { approveAuthorization } from '../src/domain/account/oauth-approval';
import { oauthServerMetadata } from '../src/domain/account/oauth-metadata';
import { exchangeToken, noStoreHeaders, oauthErrorResult, revokeToken } from '../src/domain/account/oauth-tokens';
import type { OperationHandler } from '../src/http/handler';

export const getAccount: OperationHandler<'getAccount'> = async ({ db, auth }) => ({
  data: await accountOf(db, auth),
});

export const getCapabilities: OperationHandler<'getCapabilities'> = async ({ db, auth }) => ({
  data: await capabilitiesOf(db, auth),
});

// The request's clock is already the shop's (src/http/api.ts); the view adds the offset to real time itself.
export const getTestClock: OperationHandler<'getTestClock'> = async ({ auth, services }) => ({
  data: testClockOf(auth, services.realClock.now()),
});

export const advanceTestClock: OperationHandler<'advanceTestClock'> = async ({ write, auth, body, services }) => ({
  data: await advance(write.trx, auth, body.seconds, services.realClock.now()),
});

// GET /oauth/authorize: the hosted consent page (HTML). Its forms post to src/pages/consent/router.ts.
export const startOAuthAuthorization: OperationHandler<'startOAuthAuthorization'> = async (ctx) =>
  authorizationPage(ctx.db, {
    query: ctx.query as Record<string, unknown>,
    cookie: ctx.headers.cookie,
    secureCookies: ctx.services.config.ownerCookieSecure,
    now: ctx.services.clock.now(),
    brandOf: (shopId) => pageBrandOf(ctx.db, shopId, ctx.services.config.publicUrl),
  });

// The OAuth 2.0 authorization server's API operations: programmatic approval, the token endpoint, token revocation
// (RFC 7009) and the server metadata (RFC 8414). The token and revocation answers are plain OAuth JSON (`raw`).

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

export const approveOAuthAuthorization: OperationHandler<'approveOAuthAuthorization'> = async (ctx) => ({
  data: await approveAuthorization(ctx.write, ctx.auth, ctx.body),
  // The redirect URL holds a code: no cache may keep it (RFC 6749 §5.1's rule for tokens, applied to the code).
  headers: { ...noStoreHeaders },
});

export const exchangeOAuthToken: OperationHandler<'exchangeOAuthToken'> = async ({ db, body, headers, services }) => {
  const result = await exchangeToken(
    db,
    { authorization: header(headers, 'authorization'), clientId: body.client_id, clientSecret: body.client_secret },
    body,
    services.clock.now(),
  );
  return result.ok ? { raw: result.tokens, headers: { ...noStoreHeaders } } : oauthErrorResult(result.error);
};

export const revokeOAuthToken: OperationHandler<'revokeOAuthToken'> = async ({ db, body, headers, services }) => {
  const result = await revokeToken(
    db,
    { authorization: header(headers, 'authorization'), clientId: body.client_id, clientSecret: body.client_secret },
    body,
    services.clock.now(),
  );
  return result.ok ? { raw: {}, headers: { ...noStoreHeaders } } : oauthErrorResult(result.error);
};

export const getOAuthServerMetadata: OperationHandler<'getOAuthServerMetadata'> = async ({ services }) => ({
  raw: oauthServerMetadata(services.config.publicUrl),
});
