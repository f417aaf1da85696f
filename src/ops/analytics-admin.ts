// The operator's analytics commands (src/ops/cli.ts `report create`): the API has no operation that creates a report.
import type { Operator } from './operator';
import { shopById } from '../../db/queries/shops';
import { AdminError, operatorWrite } from './admin';
import { analyticsReportView, createReport, type AnalyticsReportView } from '../domain/analytics/reports';

export async function createReportAsOperator(
  op: Operator,
  input: { shopId: string; name: string; type: string; format?: string },
): Promise<AnalyticsReportView> {
  const { db } = op;
  if (!(await shopById(db, input.shopId))) throw new AdminError(`No shop with id ${input.shopId}`);
  const row = await operatorWrite(op, input.shopId, 'cli:report create', async (w) => {
    const report = await createReport(w, { name: input.name, type: input.type, format: input.format });
    w.effects.audit({ action: 'analytics_report.created', resourceType: 'analytics_report', resourceId: report.id });
    return report;
  });
  return analyticsReportView(row, { publicUrl: '', now: op.clock.now(), key: undefined });
}
