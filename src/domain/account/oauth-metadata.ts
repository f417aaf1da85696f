// Authorization server metadata (RFC 8414), from the server's public URL: what standard OAuth client libraries read
// to find the endpoints. The issuer is `<public URL>/dev/v1`; RFC 8414 §3 puts its document at
// `/.well-known/oauth-authorization-server/dev/v1` (served by src/app.ts) and the API also serves it at
// `/dev/v1/.well-known/oauth-authorization-server`.
import { knownScopes } from '../../auth/scopes';

export const oauthMetadataPathInsertion = '/.well-known/oauth-authorization-server/dev/v1';

export function oauthIssuer(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/dev/v1`;
}

export function oauthServerMetadata(publicUrl: string) {
  const issuer = oauthIssuer(publicUrl);
  const clientAuth = ['client_secret_basic', 'client_secret_post', 'none'];
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: clientAuth,
    revocation_endpoint_auth_methods_supported: clientAuth,
    scopes_supported: ['*', ...knownScopes],
    service_documentation: `${publicUrl.replace(/\/+$/, '')}/docs`,
  };
}
