// The OAuth 2.0 authorization server's API operations: programmatic approval, the token endpoint, token revocation
// (RFC 7009) and the server metadata (RFC 8414). The token and revocation answers are plain OAuth JSON (`raw`).
import type { OperationHandler } from '../src/http/handler';
import { approveAuthorization } from '../src/domain/account/oauth-approval';
import { exchangeToken, noStoreHeaders, oauthErrorResult, revokeToken } from '../src/domain/account/oauth-tokens';
import { oauthServerMetadata } from '../src/domain/account/oauth-metadata';

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

export const approveOAuthAuthorization: OperationHandler<'approveOAuthAuthorization'> = async (ctx) => ({
  data: await approveAuthorization(ctx.db, ctx.auth, ctx.body, ctx.services.clock.now()),
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
