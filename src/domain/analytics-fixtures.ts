// The analytics part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): report definitions (name,
// type, default format), NEVER_GENERATED until generated through the API. Written through createReport (the CLI's
// rules); any refusal rolls the whole seed back.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { createReport, REPORT_NAME_MAX, reportFormats, reportTypes } from './analytics-reports';

/** Properties of the fixture schema. */
export const analyticsFixtureSchema = {
  analytics_reports: {
    type: 'array',
    maxItems: 1000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'type'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: REPORT_NAME_MAX, pattern: '\\S' },
        type: { enum: reportTypes },
        format: { enum: reportFormats },
      },
    },
  },
};

export interface AnalyticsReportFixture {
  name: string;
  type: string;
  format?: string;
}

export interface AnalyticsFixtures {
  analytics_reports?: AnalyticsReportFixture[];
}

export async function seedAnalyticsFixtures(
  trx: Transaction<Database>,
  shopId: string,
  f: AnalyticsFixtures,
  now: Date,
): Promise<{ analyticsReports: string[] }> {
  const ids: string[] = [];
  for (const r of f.analytics_reports ?? []) ids.push((await createReport(trx, shopId, r, now)).id);
  return { analyticsReports: ids };
}
