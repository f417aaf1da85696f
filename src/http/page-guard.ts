// The hosted pages outside /dev/v1 (checkout, payment links, the sandbox gateway, theme previews) take ids in their
// paths and forms from anyone on the internet. What cannot name anything is answered here, in the page's own look,
// before a handler runs and so before any SQL:
//   - a path whose %-escapes do not decode (the router's URIError): 400;
//   - a path parameter that cannot be an id of its kind (not a UUID where the column is uuid, NUL, overlong): 404,
//     the very answer a well-formed id that names nothing gets, so the two cannot be told apart;
//   - a form the body parser refused (too large, another charset) or holding a NUL (PostgreSQL text cannot): its 4xx.
// These are the client's mistakes: logged at info level, never as errors, never a 500.
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Logger } from '../logger';

export class PageRequestRefused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    /** The path parameter that cannot be an id, for a 404. */
    readonly param?: string,
  ) {
    super(reason);
    this.name = 'PageRequestRefused';
  }
}

/** router 2 throws a URIError (status 400) while matching a route whose path parameter does not decode. */
export function isUndecodablePath(err: unknown): boolean {
  return err instanceof URIError && (err as URIError & { status?: unknown }).status === 400;
}

function refusalOf(err: unknown): PageRequestRefused | undefined {
  if (err instanceof PageRequestRefused) return err;
  if (isUndecodablePath(err)) return new PageRequestRefused(400, 'the path is not validly percent-encoded');
  // body-parser's http-errors: a 4xx it chose to expose (entity.too.large, charset.unsupported, ...).
  const e = err as { status?: unknown; expose?: unknown; type?: unknown } | null;
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose === true)
    return new PageRequestRefused(e.status, typeof e.type === 'string' ? e.type : 'the request body was refused');
  return undefined;
}

export interface PageGuard {
  /** The shape of every id each named path parameter can hold; any other value names nothing. */
  params: Readonly<Record<string, RegExp>>;
  /** Answers in the router's own look: `refusal.status` 404 the same page as a missing id, else a short page. */
  answer(req: Request, res: Response, refusal: PageRequestRefused): void;
  logger: Logger;
}

/**
 * Installs the guard on a router of pages: a param check per named parameter, and (at the end of its stack, so call
 * it once every route is added) the error handler that answers what the router itself raised while matching.
 */
export function guardPages(router: Router, guard: PageGuard): Router {
  for (const [name, shape] of Object.entries(guard.params)) {
    router.param(name, (_req, _res, next, value: unknown) => {
      next(
        typeof value === 'string' && shape.test(value)
          ? undefined
          : new PageRequestRefused(404, 'the path parameter cannot be an id', name),
      );
    });
  }
  router.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    const refusal = refusalOf(err);
    if (!refusal || res.headersSent) return next(err);
    // Never the path: an invoice's address is what grants access to it.
    guard.logger.info('page request refused', {
      request_id: res.locals.requestId,
      method: req.method,
      status: refusal.status,
      reason: refusal.reason,
      param: refusal.param ?? null,
    });
    guard.answer(req, res, refusal);
  });
  return router;
}

/** A short title for a refused request's page. */
export function refusalTitle(status: number): string {
  if (status === 404) return 'Not found';
  return status === 413 ? 'Request too large' : status === 415 ? 'Unsupported form' : 'Bad request';
}

function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (value && typeof value === 'object')
    return Object.entries(value).some(([k, v]) => k.includes('\u0000') || holdsNul(v));
  return false;
}

/** A page's urlencoded form parser: the parser's own refusals, and a NUL anywhere in the form, are 4xx pages. */
export function pageForm(options: { limit: string; parameterLimit: number }): RequestHandler {
  const parse = express.urlencoded({ extended: false, ...options });
  return (req, res, next) => {
    parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      next(holdsNul(req.body) ? new PageRequestRefused(400, 'a form field holds a NUL character') : undefined);
    });
  };
}
