// The analytics report operations: thin wrappers over src/domain/analytics/reports.ts.
import type { ReadDb } from '../db/queries/shop-scope';
import { analyticsReportCursorList, generateReport } from '../src/domain/analytics/reports';
import type { OperationHandler } from '../src/http/handler';
import { listPage } from '../src/platform/cursor-list';

// Not listHandler: the views sign download links with the public URL and the clock from the services.
export const listAnalyticsReports: OperationHandler<'listAnalyticsReports'> = async ({
  db,
  auth,
  query,
  services,
}) => ({
  page: await listPage(analyticsReportCursorList, db as ReadDb, services.cursors, auth.shop.id, query, {
    publicUrl: services.config.publicUrl,
    clock: services.clock,
  }),
});

export const generateAnalyticsReport: OperationHandler<'generateAnalyticsReport'> = async ({
  write,
  params,
  body,
  services,
}) => ({
  status: 202,
  data: await generateReport(write, params.id, body, { publicUrl: services.config.publicUrl }),
});
