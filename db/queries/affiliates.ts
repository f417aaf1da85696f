// The affiliate program: affiliates (customers columns), their applications, and the commission ledger with the
// sums every affiliate figure is made of.
import { sql, type Transaction } from 'kysely';
import type { AffiliateApplicationRow, AffiliateCommissionRow, Database } from '../tables';
import { applyKeyset, type Keyset } from './keyset';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** What the affiliate program reads of a customer. */
const affiliateColumns = [
  'id',
  'email',
  'is_affiliate',
  'affiliate_code',
  'affiliate_status',
  'affiliate_commission_percent',
  'affiliate_balance',
  'affiliate_lifetime_earnings',
  'affiliate_referred_orders',
  'affiliate_approved_at',
  'wallet_currency',
  'referred_by_customer_id',
] as const;

export interface AffiliateCustomerRow {
  id: string;
  email: string;
  is_affiliate: boolean;
  affiliate_code: string | null;
  affiliate_status: 'ACTIVE' | 'SUSPENDED' | null;
  affiliate_commission_percent: string | null;
  /** Imported (fixtures) unpaid commission; the ledger adds to it. */
  affiliate_balance: string;
  /** Imported lifetime earnings; the ledger adds to it. */
  affiliate_lifetime_earnings: string;
  /** Imported referred orders; the ledger's accruals add to it. */
  affiliate_referred_orders: number;
  affiliate_approved_at: Date | null;
  wallet_currency: string;
  referred_by_customer_id: string | null;
}

export async function affiliateCustomerById(
  db: ReadDb,
  shopId: string,
  customerId: string,
): Promise<AffiliateCustomerRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(affiliateColumns)
    .where('id', '=', customerId)
    .executeTakeFirst();
}

/** The shop's customer with this (lower-cased) email. */
export async function affiliateCustomerByEmail(
  db: ReadDb,
  shopId: string,
  email: string,
): Promise<AffiliateCustomerRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(affiliateColumns)
    .where('email', '=', email)
    .executeTakeFirst();
}

/** The customer, its row locked until the transaction ends (conversions of one affiliate run one at a time). */
export async function affiliateCustomerByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
): Promise<AffiliateCustomerRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('customers')
    .select(affiliateColumns)
    .where('id', '=', customerId)
    .forUpdate()
    .executeTakeFirst();
}

/** The shop's affiliate with this code (exact), whatever its status. */
export async function affiliateByCode(
  db: ReadDb,
  shopId: string,
  code: string,
): Promise<AffiliateCustomerRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(affiliateColumns)
    .where('is_affiliate', '=', true)
    .where('affiliate_code', '=', code)
    .executeTakeFirst();
}

/** Whether any customer of the shop has this affiliate code. */
export async function affiliateCodeTaken(db: ReadDb, shopId: string, code: string): Promise<boolean> {
  const row = await inShop(db, shopId)
    .selectFrom('customers')
    .select('id')
    .where('affiliate_code', '=', code)
    .executeTakeFirst();
  return row !== undefined;
}

export type AffiliatePageRow = AffiliateCustomerRow & { cursor_value: string };

/** One keyset page of the shop's affiliates (`limit + 1` rows). */
export async function affiliatesPage(db: ReadDb, shopId: string, keyset: Keyset): Promise<AffiliatePageRow[]> {
  return applyKeyset(
    inShop(db, shopId).selectFrom('customers').select(affiliateColumns).where('is_affiliate', '=', true),
    keyset,
  ).execute() as Promise<AffiliatePageRow[]>;
}

/** Makes the customer an affiliate. */
export async function makeAffiliate(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
  affiliate: { code: string; commissionPercent: string; now: Date },
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set({
      is_affiliate: true,
      affiliate_code: affiliate.code,
      affiliate_status: 'ACTIVE',
      affiliate_commission_percent: affiliate.commissionPercent,
      affiliate_approved_at: affiliate.now,
      updated_at: affiliate.now,
    })
    .where('id', '=', customerId)
    .execute();
}

/** Customers of the shop referred by each of the given affiliates (created in [from, to) when given). */
export async function referredCustomerCounts(
  db: ReadDb,
  shopId: string,
  affiliateIds: readonly string[],
  period?: { from: Date; to: Date },
): Promise<Map<string, number>> {
  const out = new Map<string, number>(affiliateIds.map((id) => [id, 0]));
  if (affiliateIds.length === 0) return out;
  let q = inShop(db, shopId)
    .selectFrom('customers')
    .select((eb) => ['referred_by_customer_id', eb.fn.countAll<string>().as('n')])
    .where('referred_by_customer_id', 'in', affiliateIds);
  if (period) q = q.where('created_at', '>=', period.from).where('created_at', '<', period.to);
  for (const row of await q.groupBy('referred_by_customer_id').execute()) {
    out.set(row.referred_by_customer_id!, Number(row.n));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Applications
// ---------------------------------------------------------------------------------------------------------------

export async function insertApplication(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'affiliate_applications'>,
): Promise<AffiliateApplicationRow> {
  return inShopForWrite(trx, shopId).insertInto('affiliate_applications', row).returningAll().executeTakeFirstOrThrow();
}

/** The application, locked until the transaction ends (two approvals of one application run one after another). */
export async function applicationByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<AffiliateApplicationRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('affiliate_applications')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** The customer's PENDING application, if any. */
export async function pendingApplicationOf(
  db: ReadDb,
  shopId: string,
  customerId: string,
): Promise<AffiliateApplicationRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('affiliate_applications')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
}

export async function decideApplication(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  status: 'APPROVED' | 'REJECTED',
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('affiliate_applications')
    .set({ status, decided_at: now })
    .where('id', '=', id)
    .execute();
}

// ---------------------------------------------------------------------------------------------------------------
// The commission ledger
// ---------------------------------------------------------------------------------------------------------------

export async function insertCommission(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'affiliate_commissions'>,
): Promise<AffiliateCommissionRow> {
  return inShopForWrite(trx, shopId).insertInto('affiliate_commissions', row).returningAll().executeTakeFirstOrThrow();
}

/** The accrual of an order, and the sum of the reversals written against it so far (a negative decimal or 0). */
export async function commissionOfOrder(
  db: ReadDb,
  shopId: string,
  orderId: string,
): Promise<{ accrual: AffiliateCommissionRow; reversed: string } | undefined> {
  const accrual = await inShop(db, shopId)
    .selectFrom('affiliate_commissions')
    .selectAll()
    .where('order_id', '=', orderId)
    .where('kind', '=', 'ACCRUAL')
    .executeTakeFirst();
  if (!accrual) return undefined;
  const { reversed } = await inShop(db, shopId)
    .selectFrom('affiliate_commissions')
    .select(sql<string>`coalesce(sum(amount), 0)::text`.as('reversed'))
    .where('order_id', '=', orderId)
    .where('kind', '=', 'REVERSAL')
    .executeTakeFirstOrThrow();
  return { accrual, reversed };
}

/** All-time ledger sums of each of the given affiliates. */
export interface LedgerTotals {
  /** Sum of every entry: the change to the unpaid balance. */
  balance: string;
  /** Accruals plus reversals. */
  earned: string;
  /** Accruals (orders that earned commission). */
  orders: number;
  /** Totals of the accrued orders, less the refunds that reversed commission. */
  netRevenue: string;
}

export async function ledgerTotals(
  db: ReadDb,
  shopId: string,
  affiliateIds: readonly string[],
): Promise<Map<string, LedgerTotals>> {
  const out = new Map<string, LedgerTotals>();
  if (affiliateIds.length === 0) return out;
  const rows = await inShop(db, shopId)
    .selectFrom('affiliate_commissions as c')
    .leftJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'c.shop_id').onRef('o.id', '=', 'c.order_id'))
    .leftJoin('refunds as r', (j) => j.onRef('r.shop_id', '=', 'c.shop_id').onRef('r.id', '=', 'c.refund_id'))
    .select([
      'c.affiliate_customer_id',
      sql<string>`coalesce(sum(c.amount), 0)::text`.as('balance'),
      sql<string>`coalesce(sum(c.amount) filter (where c.kind in ('ACCRUAL', 'REVERSAL')), 0)::text`.as('earned'),
      sql<string>`count(*) filter (where c.kind = 'ACCRUAL')::text`.as('orders'),
      sql<string>`(coalesce(sum(o.total) filter (where c.kind = 'ACCRUAL'), 0)
        - coalesce(sum(r.amount) filter (where c.kind = 'REVERSAL'), 0))::text`.as('net_revenue'),
    ])
    .where('c.affiliate_customer_id', 'in', affiliateIds)
    .groupBy('c.affiliate_customer_id')
    .execute();
  for (const r of rows) {
    out.set(r.affiliate_customer_id, {
      balance: r.balance,
      earned: r.earned,
      orders: Number(r.orders),
      netRevenue: r.net_revenue,
    });
  }
  return out;
}

/** One interval's sums of an affiliate's ledger: `bucket` is the interval's start (Unix seconds, UTC). */
export interface LedgerBucket {
  bucket: number;
  orders: number;
  revenue: string;
  refunded: string;
  earned: string;
  reversed: string;
  paid: string;
}

/**
 * The affiliate's ledger entries of [from, to), summed per `interval` (date_trunc in UTC): accrued orders and their
 * totals, refunds and the commission they reversed, conversions.
 */
export async function ledgerBuckets(
  db: ReadDb,
  shopId: string,
  affiliateId: string,
  period: { from: Date; to: Date; interval: 'day' | 'week' | 'month' },
): Promise<LedgerBucket[]> {
  // A literal from the fixed set (not a parameter), so the select and the group by are the same expression.
  const unit = sql.lit(({ day: 'day', week: 'week', month: 'month' } as const)[period.interval]);
  const bucket = sql<string>`extract(epoch from date_trunc(${unit}, c.created_at at time zone 'UTC'))::bigint::text`;
  const rows = await inShop(db, shopId)
    .selectFrom('affiliate_commissions as c')
    .leftJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'c.shop_id').onRef('o.id', '=', 'c.order_id'))
    .leftJoin('refunds as r', (j) => j.onRef('r.shop_id', '=', 'c.shop_id').onRef('r.id', '=', 'c.refund_id'))
    .select([
      bucket.as('bucket'),
      sql<string>`count(*) filter (where c.kind = 'ACCRUAL')::text`.as('orders'),
      sql<string>`coalesce(sum(o.total) filter (where c.kind = 'ACCRUAL'), 0)::text`.as('revenue'),
      sql<string>`coalesce(sum(r.amount) filter (where c.kind = 'REVERSAL'), 0)::text`.as('refunded'),
      sql<string>`coalesce(sum(c.amount) filter (where c.kind = 'ACCRUAL'), 0)::text`.as('earned'),
      sql<string>`coalesce(-sum(c.amount) filter (where c.kind = 'REVERSAL'), 0)::text`.as('reversed'),
      sql<string>`coalesce(-sum(c.amount) filter (where c.kind = 'CONVERSION'), 0)::text`.as('paid'),
    ])
    .where('c.affiliate_customer_id', '=', affiliateId)
    .where('c.created_at', '>=', period.from)
    .where('c.created_at', '<', period.to)
    .groupBy(bucket)
    .execute();
  return rows.map((r) => ({
    bucket: Number(r.bucket),
    orders: Number(r.orders),
    revenue: r.revenue,
    refunded: r.refunded,
    earned: r.earned,
    reversed: r.reversed,
    paid: r.paid,
  }));
}
