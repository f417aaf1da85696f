// The hosted consent page's forms, outside /dev/v1 (the page itself is GET /dev/v1/oauth/authorize, an operation of
// the contract): POST /oauth/sign-in, POST /oauth/consent (approve or deny), POST /oauth/sign-out. Each answers with
// a redirect or an HTML page (src/auth/consent-pages.ts), never JSON. The rules live in src/auth/consent.ts; this
// router is the pages' HTTP side (forms, rate limit, page guard), so it sits with the other page routers, above http.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/tables';
import type { Services } from '../../http/handler';
import type { UnitOfWork } from '../../platform/unit-of-work';
import { ApiError } from '../../errors';
import type { RateLimiter } from '../../http/rate-limit';
import { guardPages, pageForm, refusalTitle } from '../../http/page-guard';
import { messagePage } from '../../auth/consent-pages';
import { shopInMode } from '../../domain/test-mode';
import {
  authorizationParams,
  authorizePath,
  checkSignInCsrf,
  ConsentRefusal,
  decide,
  ensureConsentKey,
  pageSecurityHeaders,
  sessionCookieName,
  sessionTtlSeconds,
  setCookie,
  signIn,
  signInAgainPage,
  signOut,
  type FormOrigin,
} from '../../auth/consent';

export interface ConsentRouterDeps {
  db: Kysely<Database>;
  unitOfWork: UnitOfWork;
  services: Pick<Services, 'config' | 'logger' | 'clock'>;
  /** The per-IP limit of unauthenticated requests, counted for every form post (sign-in attempts above all). */
  limiter?: Pick<RateLimiter, 'anonymous'>;
}

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(pageSecurityHeaders).type('html').send(html);
}

function seeOther(res: Response, location: string, cookies: string[] = []): void {
  res.status(303).set(pageSecurityHeaders);
  if (cookies.length) res.set('Set-Cookie', cookies);
  res.set('Location', location).end();
}

/** Builds the router; creates the CSRF key first, so every page served afterwards can sign its forms. */
export async function consentRouter(deps: ConsentRouterDeps): Promise<Router> {
  const { db, unitOfWork, services } = deps;
  const consentDeps = { db, unitOfWork, shopInMode };
  await ensureConsentKey(db);
  const router = Router();
  // The request travels in the form (redirect_uri up to 2048 characters, scope 2000, state 512).
  const form = pageForm({ limit: '16kb', parameterLimit: 16 });
  const secure = services.config.ownerCookieSecure;

  const origin = (req: Request, res: Response): FormOrigin => ({
    ip: req.ip?.replace(/^::ffff:/, ''),
    userAgent: req.get('user-agent'),
    requestId: String(res.locals.requestId ?? ''),
    now: services.clock.now(),
  });
  const bodyOf = (req: Request): Record<string, unknown> =>
    typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {};

  const route =
    (fn: (req: Request, res: Response) => Promise<void>): RequestHandler =>
    async (req, res) => {
      try {
        await deps.limiter?.anonymous(req, res);
        await fn(req, res);
      } catch (err) {
        if (err instanceof ConsentRefusal) return sendPage(res, err.status, messagePage(err.title, err.message));
        if (err instanceof ApiError && err.code === 'RATE_LIMITED') {
          res.set('Retry-After', err.headers?.['Retry-After'] ?? '60');
          return sendPage(res, 429, messagePage('Too many requests', 'Wait a minute, then try again.'));
        }
        // Never the form: it holds a password.
        services.logger.error('consent page failed', {
          request_id: res.locals.requestId,
          path: req.path,
          error: (err as Error)?.stack ?? String(err),
        });
        sendPage(res, 500, messagePage('Something went wrong', 'Please try again in a moment.'));
      }
    };

  router.post(
    '/oauth/sign-in',
    form,
    route(async (req, res) => {
      const body = bodyOf(req);
      const cookie = req.headers.cookie;
      await checkSignInCsrf(db, cookie, body.csrf_token);
      const params = authorizationParams(body);
      const email = typeof body.email === 'string' ? body.email : '';
      const password = typeof body.password === 'string' ? body.password : '';
      if (!params) throw new ConsentRefusal(400, 'Request refused', 'This form is incomplete. Go back to the app.');
      if (!email || !password || password.length > 256) {
        const again = await signInAgainPage(db, { params, cookie, error: 'Enter your email and password.', email });
        return sendPage(res, 400, again ?? messagePage('Request refused', 'Go back to the app and start again.'));
      }
      const result = await signIn(consentDeps, { email, password }, origin(req, res));
      if (result.ok) {
        return seeOther(res, authorizePath(params), [
          setCookie(sessionCookieName, result.sessionToken, secure, sessionTtlSeconds),
        ]);
      }
      const [status, error] =
        result.reason === 'too_many_attempts'
          ? [429, 'Too many failed sign-ins. Try again in 15 minutes.']
          : [401, 'Wrong email or password.'];
      if (status === 429) res.set('Retry-After', '900');
      const again = await signInAgainPage(db, { params, cookie, error, email });
      sendPage(res, status, again ?? messagePage('Sign-in refused', error));
    }),
  );

  router.post(
    '/oauth/consent',
    form,
    route(async (req, res) => {
      const { location } = await decide(
        consentDeps,
        { cookie: req.headers.cookie, form: bodyOf(req) },
        origin(req, res),
      );
      // 303 after a form POST (RFC 9700 §4.12): the redirect URI receives a GET, never the form (CSRF token and all).
      res.status(303).set(pageSecurityHeaders).set('Location', location).end();
    }),
  );

  router.post(
    '/oauth/sign-out',
    form,
    route(async (req, res) => {
      const body = bodyOf(req);
      await signOut(consentDeps, { cookie: req.headers.cookie, form: body }, origin(req, res));
      const params = authorizationParams(body);
      const cleared = [setCookie(sessionCookieName, '', secure, 0)];
      if (!params) {
        res.status(200).set(pageSecurityHeaders).set('Set-Cookie', cleared);
        return void res.type('html').send(messagePage('Signed out', 'You are signed out.'));
      }
      seeOther(res, authorizePath(params), cleared);
    }),
  );
  return guardPages(router, {
    params: {},
    answer: (_req, res, refusal) =>
      sendPage(
        res,
        refusal.status,
        messagePage(refusalTitle(refusal.status), 'This form is not valid. Go back to the app.'),
      ),
    logger: services.logger,
  });
}
