// Serves a READY report's output at its signed download link (outside /dev/v1: the link is the credential, so a
// browser or a spreadsheet can open it without an API key). See src/domain/analytics/reports.ts for the link.
//   signature missing, malformed or not the server's (tampered): 403 FORBIDDEN
//   past `expires`, or the report was generated again since (another generation): 410 DOWNLOAD_LINK_EXPIRED
//   the report does not exist in that shop, or is not READY: 404 REPORT_NOT_FOUND
// The body is the stored output: `text/csv` (or `application/json`) with `Content-Disposition: attachment`.
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { analyticsReportById } from '../../../db/queries/analytics';
import type { Database } from '../../../db/tables';
import { contentTypeOf } from '../../domain/analytics/figures';
import { downloadKey, downloadSignatureValid } from '../../domain/analytics/reports';
import { ApiError, NotFoundError } from '../../errors';
import type { Clock } from '../../platform/clock';

export interface DownloadRouterDeps {
  db: Kysely<Database>;
  clock: Clock;
}

const idPattern = /^[A-Za-z0-9_-]{1,64}$/;

export function analyticsDownloadRouter({ db, clock }: DownloadRouterDeps): Router {
  const router = Router();
  router.get('/analytics-reports/:id/download', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const reportId = String(req.params.id);
      const { shop, generation, expires, signature } = req.query as Record<string, unknown>;
      if (
        !idPattern.test(reportId) ||
        typeof shop !== 'string' ||
        !idPattern.test(shop) ||
        typeof generation !== 'string' ||
        !idPattern.test(generation) ||
        typeof expires !== 'string' ||
        !/^[0-9]{1,12}$/.test(expires) ||
        typeof signature !== 'string'
      )
        throw new ApiError('FORBIDDEN', 'The download link is malformed.');
      const key = await downloadKey(db);
      const claim = { shopId: shop, reportId, generationId: generation, expires: Number(expires) };
      if (!key || !downloadSignatureValid(key, claim, signature))
        throw new ApiError('FORBIDDEN', 'The download link is not valid.');
      if (claim.expires * 1000 <= clock.now().getTime())
        throw new ApiError(
          'DOWNLOAD_LINK_EXPIRED',
          'The download link has expired; get a fresh one from GET /dev/v1/analytics/reports.',
        );
      const report = await analyticsReportById(db, shop, reportId);
      if (!report || report.status === 'NEVER_GENERATED') throw new NotFoundError('REPORT_NOT_FOUND');
      if (report.generation_id !== generation)
        throw new ApiError(
          'DOWNLOAD_LINK_EXPIRED',
          'The report was generated again since this link was issued; get a fresh link from GET /dev/v1/analytics/reports.',
        );
      if (
        report.status !== 'READY' ||
        report.content === null ||
        report.period_from === null ||
        report.period_to === null
      )
        throw new NotFoundError('REPORT_NOT_FOUND', 'The report has no output to download.');
      const day = (d: Date) => d.toISOString().slice(0, 10);
      const filename = `${report.id}-${report.type.toLowerCase()}-${day(report.period_from)}-${day(report.period_to)}.${report.format.toLowerCase()}`;
      res
        .status(200)
        .set({
          'Content-Type': contentTypeOf(report.format),
          'Content-Disposition': `attachment; filename="${filename}"`,
          'Cache-Control': 'private, no-store',
          'X-Content-Type-Options': 'nosniff',
        })
        .send(report.content);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
