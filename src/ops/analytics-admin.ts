// The operator's analytics commands (src/ops/cli.ts `report create`): the API has no operation that creates a report.
import type { Kysely } from 'kysely';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { systemClock } from '../platform/clock';
import { AdminError, operatorWrite } from './admin';
import { analyticsReportView, createReport, type AnalyticsReportView } from '../domain/analytics/reports';

export async function createReportAsOperator(
  db: Kysely<Database>,
  input: { shopId: string; name: string; type: string; format?: string },
): Promise<AnalyticsReportView> {
  if (!(await shopById(db, input.shopId))) throw new AdminError(`No shop with id ${input.shopId}`);
  const row = await operatorWrite(db, input.shopId, 'cli:report create', async (w) => {
    const report = await createReport(w, { name: input.name, type: input.type, format: input.format });
    w.effects.audit({ action: 'analytics_report.created', resourceType: 'analytics_report', resourceId: report.id });
    return report;
  });
  return analyticsReportView(row, { publicUrl: '', now: systemClock.now(), key: undefined });
}
