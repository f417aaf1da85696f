// Analytics reports: the report definitions, their generations (the worker's queue: claimed with FOR UPDATE SKIP
// LOCKED and a lease), and the figures a generation computes, aggregated in SQL from the shop's orders, refunds and
// customers over a period [from, to). Sums are numeric (exact); amounts come back as numeric text, per currency.
import { sql, type Kysely, type Transaction } from 'kysely';
import type {
  AnalyticsReportGenerationRow,
  AnalyticsReportRow,
  AnalyticsReportStatus,
  AnalyticsReportFormat,
  Database,
} from '../tables';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

// ---------------------------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------------------------

export type AnalyticsReportPageRow = PageRow<'analytics_reports'>;

/** One keyset page of the shop's reports (oldest first by default, see src/domain/analytics/reports.ts). */
export const analyticsReportsPage = pageOf('analytics_reports');

export const analyticsReportById = byIdOf('analytics_reports');

/** The report row, locked until the transaction ends (two generate requests of one report run one after another). */
export async function analyticsReportByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<AnalyticsReportRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('analytics_reports')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function insertAnalyticsReport(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'analytics_reports'>,
): Promise<AnalyticsReportRow> {
  return inShopForWrite(trx, shopId).insertInto('analytics_reports', row).returningAll().executeTakeFirstOrThrow();
}

export interface AnalyticsReportChanges {
  status?: AnalyticsReportStatus;
  format?: AnalyticsReportFormat;
  period_from?: Date;
  period_to?: Date;
  generation_id?: string;
  generated_at?: Date | null;
  failure_reason?: string | null;
  content?: string | null;
}

export async function updateAnalyticsReport(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  changes: AnalyticsReportChanges,
  now: Date,
): Promise<AnalyticsReportRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('analytics_reports')
    .set({ ...changes, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

// ---------------------------------------------------------------------------------------------------------------
// Generations (the queue)
// ---------------------------------------------------------------------------------------------------------------

export async function insertAnalyticsGeneration(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'analytics_report_generations'>,
): Promise<AnalyticsReportGenerationRow> {
  return inShopForWrite(trx, shopId)
    .insertInto('analytics_report_generations', row)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function analyticsGenerationsOfReport(
  db: ReadDb,
  shopId: string,
  reportId: string,
): Promise<AnalyticsReportGenerationRow[]> {
  return inShop(db, shopId)
    .selectFrom('analytics_report_generations')
    .selectAll()
    .where('report_id', '=', reportId)
    .orderBy('requested_at')
    .orderBy('id')
    .execute();
}

/**
 * Claims up to `limit` queued generations whose lease is free or has run out (a worker that died holding one loses
 * it), across shops: each gets a new lease token and one more attempt. SKIP LOCKED: concurrent claimers take
 * disjoint rows, so no generation is computed twice at once.
 */
export async function claimDueGenerations(
  db: Kysely<Database>,
  now: Date,
  leaseUntil: Date,
  token: string,
  limit: number,
): Promise<AnalyticsReportGenerationRow[]> {
  // unscopedByDesign: the report worker serves every shop; each row names its shop, and its work stays there.
  return db
    .with(
      (cte) => cte('due').materialized(),
      (q) =>
        q
          .selectFrom('analytics_report_generations')
          .select('id')
          .where('status', '=', 'QUEUED')
          .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
          .orderBy('requested_at')
          .orderBy('id')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
    )
    .updateTable('analytics_report_generations')
    .set((eb) => ({ lease_until: leaseUntil, lease_token: token, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .where('status', '=', 'QUEUED')
    .returningAll()
    .execute();
}

/**
 * Settles a claimed generation (DONE or FAILED) if this worker still holds its lease; false when another worker
 * has taken it over since (then that worker's outcome counts, and this one's is dropped).
 */
export async function settleAnalyticsGeneration(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  token: string,
  outcome: { status: 'DONE' | 'FAILED'; error: string | null },
  now: Date,
): Promise<boolean> {
  const row = await inShopForWrite(trx, shopId)
    .updateTable('analytics_report_generations')
    .set({ status: outcome.status, error: outcome.error, finished_at: now, lease_until: null })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .where('status', '=', 'QUEUED')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Figures (read in one REPEATABLE READ snapshot by the worker)
// ---------------------------------------------------------------------------------------------------------------

export interface Period {
  from: Date;
  to: Date;
}

const count = sql<string>`count(*)::text`;

/** Completed orders per currency: completed (paid) in the period, whatever happened to them afterwards. */
export async function completedOrderTotalsByCurrency(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('orders')
    .select(['currency', count.as('orders'), sql<string>`sum(total)::text`.as('gross')])
    .where('completed_at', '>=', p.from)
    .where('completed_at', '<', p.to)
    .groupBy('currency')
    .orderBy('currency')
    .execute();
}

/** Refunds made in the period (of orders completed whenever), per currency of their order. */
export async function refundTotalsByCurrency(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('refunds as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .select(['o.currency', count.as('refunds'), sql<string>`sum(r.amount)::text`.as('refunded')])
    .where('r.created_at', '>=', p.from)
    .where('r.created_at', '<', p.to)
    .groupBy('o.currency')
    .orderBy('o.currency')
    .execute();
}

/** Orders created in the period and still waiting for payment, per currency. */
export async function pendingOrderTotalsByCurrency(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('orders')
    .select(['currency', count.as('orders'), sql<string>`sum(total)::text`.as('amount')])
    .where('status', '=', 'PENDING')
    .where('created_at', '>=', p.from)
    .where('created_at', '<', p.to)
    .groupBy('currency')
    .orderBy('currency')
    .execute();
}

/** Line items of the orders completed in the period, per product, variant and currency. */
export async function productTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('order_items as i')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'i.shop_id').onRef('o.id', '=', 'i.order_id'))
    .select([
      'i.product_id',
      'i.product_title',
      'i.variant_title',
      'o.currency',
      sql<string>`count(distinct o.id)::text`.as('orders'),
      sql<string>`sum(i.quantity)::text`.as('quantity'),
      sql<string>`sum(i.total)::text`.as('revenue'),
    ])
    .where('o.completed_at', '>=', p.from)
    .where('o.completed_at', '<', p.to)
    .groupBy(['i.product_id', 'i.product_title', 'i.variant_title', 'o.currency'])
    .orderBy('i.product_title')
    .orderBy('i.variant_title')
    .orderBy('o.currency')
    .orderBy('i.product_id')
    .execute();
}

/** Completed orders in the period per buyer (customer) and currency. */
export async function customerOrderTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('orders')
    .select(['customer_id', 'currency', count.as('orders'), sql<string>`sum(total)::text`.as('spent')])
    .where('customer_id', 'is not', null)
    .where('completed_at', '>=', p.from)
    .where('completed_at', '<', p.to)
    .groupBy(['customer_id', 'currency'])
    .execute();
}

/** Refunds made in the period per buyer (customer) and currency of the refunded order. */
export async function customerRefundTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('refunds as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .select(['o.customer_id', 'o.currency', sql<string>`sum(r.amount)::text`.as('refunded')])
    .where('o.customer_id', 'is not', null)
    .where('r.created_at', '>=', p.from)
    .where('r.created_at', '<', p.to)
    .groupBy(['o.customer_id', 'o.currency'])
    .execute();
}

/** The customers created in the period, and those with the given ids (buyers active in it). */
export async function reportCustomers(db: ReadDb, shopId: string, p: Period, activeIds: readonly string[]) {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(['id', 'email', 'name', 'created_at'])
    .where((eb) => {
      const created = eb.and([eb('created_at', '>=', p.from), eb('created_at', '<', p.to)]);
      return activeIds.length === 0 ? created : eb.or([created, eb('id', 'in', activeIds)]);
    })
    .orderBy('email')
    .orderBy('id')
    .execute();
}

/** Completed orders in the period per gateway (empty: paid without one, e.g. from the wallet) and currency. */
export async function gatewayOrderTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('orders')
    .select([
      sql<string>`coalesce(gateway, '')`.as('gateway'),
      'currency',
      count.as('orders'),
      sql<string>`sum(total)::text`.as('gross'),
    ])
    .where('completed_at', '>=', p.from)
    .where('completed_at', '<', p.to)
    .groupBy([sql`coalesce(gateway, '')`, 'currency'])
    .execute();
}

/** Refunds made in the period per gateway and currency of the refunded order. */
export async function gatewayRefundTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('refunds as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .select([
      sql<string>`coalesce(o.gateway, '')`.as('gateway'),
      'o.currency',
      sql<string>`sum(r.amount)::text`.as('refunded'),
    ])
    .where('r.created_at', '>=', p.from)
    .where('r.created_at', '<', p.to)
    .groupBy([sql`coalesce(o.gateway, '')`, 'o.currency'])
    .execute();
}

/** Referred orders completed in the period per affiliate and currency. */
export async function affiliateOrderTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('orders')
    .select(['affiliate_customer_id', 'currency', count.as('orders'), sql<string>`sum(total)::text`.as('revenue')])
    .where('affiliate_customer_id', 'is not', null)
    .where('completed_at', '>=', p.from)
    .where('completed_at', '<', p.to)
    .groupBy(['affiliate_customer_id', 'currency'])
    .execute();
}

/** Refunds made in the period of referred orders, per affiliate and currency. */
export async function affiliateRefundTotals(db: ReadDb, shopId: string, p: Period) {
  return inShop(db, shopId)
    .selectFrom('refunds as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .select(['o.affiliate_customer_id', 'o.currency', sql<string>`sum(r.amount)::text`.as('refunded')])
    .where('o.affiliate_customer_id', 'is not', null)
    .where('r.created_at', '>=', p.from)
    .where('r.created_at', '<', p.to)
    .groupBy(['o.affiliate_customer_id', 'o.currency'])
    .execute();
}

/** Code and email of the given affiliates (customers). */
export async function affiliatesByIds(db: ReadDb, shopId: string, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(['id', 'email', 'affiliate_code'])
    .where('id', 'in', ids)
    .execute();
}
