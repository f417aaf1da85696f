// The private theme preview pages (`/theme-preview/<token>`), outside the /dev/v1 API: the URL a preview session
// returns (POST /themes/{id}/control/preview). The token in the URL is the only credential; its SHA-256 finds the
// session. A running session (not stopped, before `expires_at` by the injectable clock) renders its revision;
// a session stopped (DELETE) or expired answers 410 Gone; a token that never was a session answers 404. Neither says
// anything about the theme. Nothing is cached, indexed, framed or sent on as a referrer.
import { Router, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { previewByTokenHash, storefrontProducts } from '../../../db/queries/themes';
import type { Database } from '../../../db/tables';
import { previewTokenHash } from '../../domain/themes/themes';
import type { Services } from '../../http/handler';
import { guardPages, refusalTitle } from '../../http/page-guard';
import { previewGonePage, renderThemePage } from './render';

const securityHeaders = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Robots-Tag': 'noindex, nofollow',
};

const tokenShape = /^[A-Za-z0-9_-]{43}$/;

function send(res: Response, status: number, html: string): void {
  res.status(status).set(securityHeaders).type('html').send(html);
}

export function themePreviewRouter(deps: {
  db: Kysely<Database>;
  services: Pick<Services, 'clock' | 'logger'>;
}): Router {
  const { db, services } = deps;
  const router = Router();
  const notFound = (res: Response) =>
    send(res, 404, previewGonePage('Preview not found', 'There is no theme preview at this address.'));

  router.get('/theme-preview/:token', async (req: Request, res: Response) => {
    res.locals.route = '/theme-preview/:token';
    try {
      const token = String(req.params.token ?? '');
      const target = await previewByTokenHash(db, previewTokenHash(token));
      if (!target) return notFound(res);
      const { session, theme } = target;
      if (session.stopped_at !== null || session.expires_at.getTime() <= services.clock.now().getTime())
        return send(
          res,
          410,
          previewGonePage('Preview ended', 'This theme preview has been stopped or has expired. Start a new one.'),
        );
      const sections = Array.isArray(target.document.sections)
        ? (target.document.sections as { type?: unknown }[])
        : [];
      const wantsProducts = sections.some((s) => s?.type === 'product_grid');
      const products = wantsProducts ? await storefrontProducts(db, theme.shop_id, 48) : [];
      send(
        res,
        200,
        renderThemePage({
          shopName: target.shopName,
          livemode: target.livemode,
          themeName: theme.name,
          base: theme.base,
          revision: session.revision,
          settings: theme.settings,
          document: target.document,
          products,
          expiresAt: session.expires_at,
        }),
      );
    } catch (err) {
      services.logger.error('theme preview failed', {
        request_id: String(res.locals.requestId ?? ''),
        error: (err as Error)?.stack ?? String(err),
      });
      send(res, 500, previewGonePage('Something went wrong', 'The preview could not be rendered. Try again.'));
    }
  });
  // A token of another shape never was a session: the same 404 as one that is not, without hashing or a look-up.
  return guardPages(router, {
    params: { token: tokenShape },
    answer: (_req, res, refusal) =>
      refusal.status === 404
        ? notFound(res)
        : send(
            res,
            refusal.status,
            previewGonePage(refusalTitle(refusal.status), 'This preview address is not valid.'),
          ),
    logger: services.logger,
  });
}
