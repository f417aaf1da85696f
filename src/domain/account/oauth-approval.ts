// POST /oauth/authorize: an API key approves an app for its own shop without the hosted page, and gets the
// redirect URL with the code. A key cannot grant what it does not hold, and an OAuth access token cannot approve
// anything (an app must not mint itself, or another app, new grants). The app is installed in the key's own mode
// (the write's shop is the key's: a test key's is the test twin), so a test key makes a test-mode installation.
import type { AuthContext } from '../../auth/authenticate';
import { checkAuthorizationRequest, issueAuthorizationCode } from '../../auth/oauth-grants';
import { hasScope } from '../../auth/scopes';
import { ApiError, ForbiddenError, ValidationError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';

export interface ApprovalBody {
  response_type: 'code';
  client_id: string;
  redirect_uri: string;
  scope: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: 'S256';
  mode?: 'live' | 'test';
}

/** The shop is the write's (the credential's own); `auth` says which credential approves, with which scopes. */
export async function approveAuthorization(
  w: ShopWrite,
  auth: AuthContext,
  body: ApprovalBody,
): Promise<{ redirect_url: string }> {
  const { trx, shopId, now } = w;
  if (auth.credential.kind !== 'api_key') {
    throw new ForbiddenError('An OAuth access token cannot approve OAuth authorizations; use an API key.');
  }
  const keyMode = auth.shop.livemode ? 'live' : 'test';
  if (body.mode !== undefined && body.mode !== keyMode) {
    throw new ForbiddenError(
      `A ${keyMode} key installs apps in ${keyMode} mode only; use a ${body.mode} key, or the hosted page with mode=${body.mode}.`,
    );
  }
  const request = {
    clientId: body.client_id,
    redirectUri: body.redirect_uri,
    scope: body.scope,
    state: body.state,
    codeChallenge: body.code_challenge,
    codeChallengeMethod: body.code_challenge_method,
  };
  const check = await checkAuthorizationRequest(trx, request);
  if (!check.ok) {
    if (!check.redirect) throw new ApiError(check.code, check.message);
    if (check.error === 'invalid_scope') throw new ApiError('OAUTH_INVALID_SCOPE', check.description);
    throw new ValidationError([{ field: 'code_challenge', message: check.description }]);
  }
  if (!hasScope(auth.credential.scopes, check.scopes)) {
    const missing = check.scopes.filter((s) => !hasScope(auth.credential.scopes, [s]));
    throw new ForbiddenError(`This credential cannot grant scopes it does not hold: ${missing.join(' ')}.`);
  }
  const { redirectUrl } = await issueAuthorizationCode(trx, {
    ...request,
    shopId,
    scopes: check.scopes,
    grantedBy: { kind: 'credential', id: auth.credential.id },
    sessionId: null,
    now,
  });
  return { redirect_url: redirectUrl };
}
