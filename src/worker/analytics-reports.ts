// The analytics report job: claims queued generations (FOR UPDATE SKIP LOCKED, a lease and a token, across shops),
// computes each report's table from the shop's orders, refunds and customers in one REPEATABLE READ snapshot
// (src/domain/analytics/figures.ts), and settles it in one transaction with the report: READY with the output and
// generated_at, or FAILED with a reason. A generation is settled only by the worker that still holds its lease, so
// two workers never both write one; a worker that dies mid-way loses the lease and another computes it again. A
// generation whose computation keeps failing, or whose workers keep dying, is FAILED at its MAX_ATTEMPTS-th claim,
// so no report stays GENERATING forever.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import * as analytics from '../../db/queries/analytics';
import { serverSecret } from '../../db/queries/server-secrets';
import type { AnalyticsReportGenerationRow, Database } from '../../db/tables';
import { render, reportTable } from '../domain/analytics/figures';
import { DOWNLOAD_SECRET } from '../domain/analytics/reports';
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';
import type { Job } from './worker';

export interface AnalyticsReportJobOptions {
  clock: Clock;
  logger: Logger;
  /** How long a claim holds a generation (default 5 minutes). */
  leaseMs?: number;
  batchSize?: number;
  /** The most rows a report may have (default 100,000): more FAILs the generation, asking for a shorter period. */
  maxRows?: number;
  /** Claims after which a generation that never finished is FAILED (default 3). */
  maxAttempts?: number;
}

export const DEFAULT_MAX_REPORT_ROWS = 100_000;
export const DEFAULT_MAX_ATTEMPTS = 3;

export function analyticsReportJob(db: Kysely<Database>, options: AnalyticsReportJobOptions): Job {
  const leaseMs = options.leaseMs ?? 300_000;
  const maxRows = options.maxRows ?? DEFAULT_MAX_REPORT_ROWS;
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;

  async function settle(
    g: AnalyticsReportGenerationRow,
    token: string,
    outcome: { content: string } | { failure: string },
  ): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      const now = options.clock.now();
      const failed = 'failure' in outcome;
      const mine = await analytics.settleAnalyticsGeneration(
        trx,
        g.shop_id,
        g.id,
        token,
        { status: failed ? 'FAILED' : 'DONE', error: failed ? outcome.failure : null },
        now,
      );
      if (!mine) return false;
      const report = await analytics.analyticsReportByIdForUpdate(trx, g.shop_id, g.report_id);
      if (!report || report.generation_id !== g.id) return true;
      await analytics.updateAnalyticsReport(
        trx,
        g.shop_id,
        g.report_id,
        failed
          ? { status: 'FAILED', failure_reason: outcome.failure, content: null, generated_at: null }
          : { status: 'READY', failure_reason: null, content: outcome.content, generated_at: now },
        now,
      );
      return true;
    });
  }

  async function run(g: AnalyticsReportGenerationRow, token: string): Promise<void> {
    const log = { shop_id: g.shop_id, report_id: g.report_id, generation_id: g.id, attempt: g.attempts };
    if (g.attempts > maxAttempts) {
      await settle(g, token, {
        failure: `Gave up after ${maxAttempts} attempts: the workers computing the report stopped before finishing. Generate it again.`,
      });
      options.logger.warn('analytics report failed', { ...log, reason: 'attempts exhausted' });
      return;
    }
    try {
      const period = { from: g.period_from, to: g.period_to };
      const table = await db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute((trx) => reportTable(trx, g.shop_id, g.type, period));
      if (table.rows.length > maxRows) {
        await settle(g, token, {
          failure: `The report has ${table.rows.length} rows, more than the ${maxRows} a report may hold. Generate it for a shorter period.`,
        });
        options.logger.info('analytics report failed', { ...log, reason: 'too many rows', rows: table.rows.length });
        return;
      }
      const report = await analytics.analyticsReportById(db, g.shop_id, g.report_id);
      const content = render(g.format, table, {
        reportId: g.report_id,
        name: report?.name ?? '',
        type: g.type,
        period,
        generatedAt: options.clock.now(),
      });
      // The key download links are signed with exists before the first READY report can show one.
      await serverSecret(db, DOWNLOAD_SECRET);
      if (await settle(g, token, { content }))
        options.logger.info('analytics report ready', { ...log, rows: table.rows.length });
    } catch (err) {
      options.logger.error('analytics report computation failed', { ...log, error: (err as Error)?.message });
      // Retried when the lease runs out, unless this was the last attempt.
      if (g.attempts >= maxAttempts)
        await settle(g, token, {
          failure: 'The report could not be computed (an internal error, logged). Generate it again.',
        });
    }
  }

  return {
    name: 'analytics-reports',
    runOnce: async () => {
      const now = options.clock.now();
      const token = randomUUID();
      const claimed = await analytics.claimDueGenerations(
        db,
        now,
        new Date(now.getTime() + leaseMs),
        token,
        options.batchSize ?? 10,
      );
      for (const g of claimed) await run(g, token);
      return claimed.length;
    },
  };
}
