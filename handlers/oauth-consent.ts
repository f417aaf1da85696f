// GET /oauth/authorize: the hosted consent page (HTML). Its forms post to src/auth/consent-router.ts.
import { authorizationPage } from '../src/auth/consent';
import type { OperationHandler } from '../src/http/handler';

export const startOAuthAuthorization: OperationHandler<'startOAuthAuthorization'> = async (ctx) =>
  authorizationPage(ctx.db, {
    query: ctx.query as Record<string, unknown>,
    cookie: ctx.headers.cookie,
    secureCookies: ctx.services.config.ownerCookieSecure,
    now: ctx.services.clock.now(),
  });
