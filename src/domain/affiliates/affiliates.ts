// The affiliate program: applications and their approval, the affiliate list, an affiliate's performance over a
// period, and converting unpaid commission into wallet balance.
//
// Every figure is computed from the commission ledger (affiliate_commissions: one entry per attributed order that
// completed, per refund of one, per conversion; written by src/domain/affiliates/commissions.ts and below) joined
// to the orders and refunds it names, plus what a fixture imported into the customer's affiliate columns (which
// nothing changes afterwards). So the list, the performance and `GET /customers/{id}?include_affiliate=true` can
// never disagree, and no stored copy can drift.
import { randomInt } from 'node:crypto';
import Decimal from 'decimal.js';
import type { Kysely } from 'kysely';
import * as affiliates from '../../../db/queries/affiliates';
import type { AffiliateCustomerRow } from '../../../db/queries/affiliates';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { shopById } from '../../../db/queries/shops';
import type { Database } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { Clock } from '../../platform/clock';
import type { CursorList } from '../../platform/cursor-list';
import { decimalString, parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import {
  affiliateCustomerView,
  affiliatePerformanceView,
  type AffiliateCustomerView,
  type AffiliateFigures,
  type PeriodFigures,
} from '../../views/affiliate';
import { postWalletMovement } from '../customers/wallets';
import { workerWrite } from '../effects';

/** Commission percent of an application that names none (also the fixtures' default). */
export const defaultCommissionPercent = '10';

// ---------------------------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------------------------

/** The all-time figures of each given affiliate (two queries, whatever their number). */
export async function affiliateFigures(
  db: ReadDb,
  shopId: string,
  rows: readonly AffiliateCustomerRow[],
): Promise<Map<string, AffiliateFigures>> {
  const ids = rows.map((r) => r.id);
  const [ledger, referred] = await Promise.all([
    affiliates.ledgerTotals(db, shopId, ids),
    affiliates.referredCustomerCounts(db, shopId, ids),
  ]);
  const out = new Map<string, AffiliateFigures>();
  for (const row of rows) {
    const l = ledger.get(row.id);
    out.set(row.id, {
      balance: new Decimal(row.affiliate_balance).plus(l?.balance ?? 0).toFixed(),
      lifetimeEarnings: new Decimal(row.affiliate_lifetime_earnings).plus(l?.earned ?? 0).toFixed(),
      referredOrders: row.affiliate_referred_orders + (l?.orders ?? 0),
      referredRevenue: l?.netRevenue ?? '0',
      referredCustomers: referred.get(row.id) ?? 0,
    });
  }
  return out;
}

/** The figures of one customer (an affiliate or not). */
export async function figuresOf(db: ReadDb, shopId: string, row: AffiliateCustomerRow): Promise<AffiliateFigures> {
  return (await affiliateFigures(db, shopId, [row])).get(row.id)!;
}

/** The summary `GET /customers/{id}?include_affiliate=true` shows: the same figures as the affiliate list. */
export async function affiliateFiguresOfCustomer(
  db: ReadDb,
  shopId: string,
  customerId: string,
): Promise<AffiliateFigures | undefined> {
  const row = await affiliates.affiliateCustomerById(db, shopId, customerId);
  return row ? figuresOf(db, shopId, row) : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// GET /affiliates/customers
// ---------------------------------------------------------------------------------------------------------------

export const affiliateList: CursorList<affiliates.AffiliatePageRow, AffiliateCustomerView> = {
  spec: {
    name: 'affiliates',
    filters: {},
    sorts: { approved_at: { column: 'affiliate_approved_at', cast: 'timestamptz' } },
    defaultSort: '-approved_at',
  },
  page: affiliates.affiliatesPage,
  view: async (rows, { db, shopId }) => {
    const figures = await affiliateFigures(db, shopId, rows);
    return rows.map((row) => affiliateCustomerView(row, figures.get(row.id)!));
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Applications
// ---------------------------------------------------------------------------------------------------------------

export interface ApplicationInput {
  customerId: string;
  /** The code asked for; none: generated on approval. */
  code?: string;
  /** Decimal text, 0 to 100 with up to 2 decimals (default 10). */
  commissionPercent?: string;
  note?: string;
  /** PENDING (default) or REJECTED (fixtures: a decided application). */
  status?: 'PENDING' | 'REJECTED';
}

const codePattern = /^[A-Za-z0-9_-]{1,64}$/;
const percentPattern = /^(100(\.0{1,2})?|[0-9]{1,2}(\.[0-9]{1,2})?)$/;

/**
 * An application of one of the shop's customers (made by the shop's operators: the CLI, fixtures). Refused (422)
 * for a customer who is already an affiliate or already has a pending application, and for a malformed code,
 * percent or note.
 */
export async function createAffiliateApplication(w: ShopWrite, input: ApplicationInput) {
  const { trx, shopId, now } = w;
  const problems: { field: string; message: string }[] = [];
  if (input.code !== undefined && !codePattern.test(input.code))
    problems.push({ field: 'code', message: 'must be 1 to 64 letters, digits, _ or -' });
  if (input.commissionPercent !== undefined && !percentPattern.test(input.commissionPercent))
    problems.push({ field: 'commission_percent', message: 'must be a percent from 0 to 100 with up to 2 decimals' });
  if (input.note !== undefined && input.note.length > 2000)
    problems.push({ field: 'note', message: 'must be at most 2000 characters' });
  if (problems.length > 0)
    throw new ValidationError(problems, problems.map((p) => `${p.field} ${p.message}`).join('; '));
  const customer = await affiliates.affiliateCustomerByIdForUpdate(trx, shopId, input.customerId);
  if (!customer) throw new NotFoundError('CUSTOMER_NOT_FOUND', `The shop has no customer ${input.customerId}.`);
  const status = input.status ?? 'PENDING';
  if (status === 'PENDING') {
    if (customer.is_affiliate)
      throw new ValidationError(
        [{ field: 'customer', message: 'is already an affiliate' }],
        'The customer is already an affiliate.',
      );
    if (await affiliates.pendingApplicationOf(trx, shopId, customer.id))
      throw new ValidationError(
        [{ field: 'customer', message: 'already has a pending application' }],
        'The customer already has a pending application.',
      );
  }
  return affiliates.insertApplication(trx, shopId, {
    id: newId('aapp'),
    customer_id: customer.id,
    status,
    requested_code: input.code ?? null,
    commission_percent: input.commissionPercent ?? defaultCommissionPercent,
    note: input.note ?? null,
    created_at: now,
    decided_at: status === 'PENDING' ? null : now,
  });
}

/**
 * `cli affiliate apply`: an application of the shop's customer with this email, in a transaction of its own (a write
 * of the shop at the clock's time, its effects written through the default sinks).
 */
export async function applyAsOperator(
  db: Kysely<Database>,
  input: { shopId: string; email: string; code?: string; commissionPercent?: string; note?: string },
  clock: Clock,
) {
  if (!(await shopById(db, input.shopId))) throw new NotFoundError('NOT_FOUND', `No shop with id ${input.shopId}`);
  const customer = await affiliates.affiliateCustomerByEmail(db, input.shopId, input.email.toLowerCase());
  if (!customer)
    throw new NotFoundError('CUSTOMER_NOT_FOUND', `The shop has no customer ${input.email.toLowerCase()}.`);
  const row = await db.transaction().execute((trx) =>
    workerWrite(trx, input.shopId, 'cli:affiliate apply', clock, (w) =>
      createAffiliateApplication(w, {
        customerId: customer.id,
        code: input.code,
        commissionPercent: input.commissionPercent,
        note: input.note,
      }),
    ),
  );
  return {
    id: row.id,
    customer_id: row.customer_id,
    email: customer.email,
    status: row.status,
    requested_code: row.requested_code,
    commission_percent: new Decimal(row.commission_percent).toFixed(),
    note: row.note,
    created_at: row.created_at.toISOString(),
  };
}

/** A code for an applicant who asked for none (or whose code was taken): the email's first letters and 4 random. */
async function generatedCode(db: ReadDb, shopId: string, email: string): Promise<string> {
  const stem =
    (email.split('@')[0] ?? '')
      .replace(/[^A-Za-z0-9]/g, '')
      .toUpperCase()
      .slice(0, 8) || 'AFF';
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  for (let attempt = 0; attempt < 20; attempt++) {
    let suffix = '';
    for (let i = 0; i < 4; i++) suffix += alphabet[randomInt(alphabet.length)];
    const code = `${stem}${suffix}`;
    if (!(await affiliates.affiliateCodeTaken(db, shopId, code))) return code;
  }
  throw new Error(`no free affiliate code for ${stem} after 20 attempts`);
}

/**
 * POST /affiliates/applications/{id}/approve: the applicant becomes an ACTIVE affiliate (the requested code when
 * still free, else a generated one; the application's percent), the application APPROVED, `affiliate:approved`
 * emitted. The application row is locked first, so two approvals of one application never both succeed.
 */
export async function approveAffiliateApplication(w: ShopWrite, applicationId: string): Promise<AffiliateCustomerView> {
  const { trx, shopId, effects, now } = w;
  const application = await affiliates.applicationByIdForUpdate(trx, shopId, applicationId);
  if (!application) throw new NotFoundError('AFFILIATE_APPLICATION_NOT_FOUND');
  if (application.status !== 'PENDING')
    throw new ApiError(
      'AFFILIATE_APPLICATION_NOT_PENDING',
      `The application is ${application.status}; only a PENDING application can be approved.`,
    );
  const customer = await affiliates.affiliateCustomerByIdForUpdate(trx, shopId, application.customer_id);
  if (!customer) throw new Error(`application ${application.id}: customer ${application.customer_id} vanished`);
  // createAffiliateApplication refuses an affiliate's application, and one customer has one pending at most.
  if (customer.is_affiliate) throw new Error(`application ${application.id}: the customer is already an affiliate`);
  const requested = application.requested_code;
  const code =
    requested !== null && !(await affiliates.affiliateCodeTaken(trx, shopId, requested))
      ? requested
      : await generatedCode(trx, shopId, customer.email);
  await affiliates.makeAffiliate(trx, shopId, customer.id, {
    code,
    commissionPercent: application.commission_percent,
    now,
  });
  await affiliates.decideApplication(trx, shopId, application.id, 'APPROVED', now);
  const row = await affiliates.affiliateCustomerById(trx, shopId, customer.id);
  const view = affiliateCustomerView(row!, await figuresOf(trx, shopId, row!));
  effects.emit('affiliate:approved', view);
  effects.audit({
    action: 'affiliate.approved',
    resourceType: 'affiliate_application',
    resourceId: application.id,
    detail: { customer_id: customer.id, code },
  });
  return view;
}

// ---------------------------------------------------------------------------------------------------------------
// GET /affiliates/customers/{customerId}/performance
// ---------------------------------------------------------------------------------------------------------------

export type Interval = 'day' | 'week' | 'month';

const dayMs = 86_400_000;
/** The most intervals one answer holds. */
export const maxPeriods = 400;

/** The start (UTC) of the interval holding `ms`. */
function truncate(ms: number, interval: Interval): number {
  const d = new Date(ms);
  const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
  if (interval === 'day') return Date.UTC(y, m, day);
  if (interval === 'month') return Date.UTC(y, m, 1);
  return Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7)); // ISO week: from Monday
}

function nextStart(start: number, interval: Interval): number {
  const d = new Date(start);
  if (interval === 'day') return start + dayMs;
  if (interval === 'week') return start + 7 * dayMs;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** [from, to) cut at the interval's boundaries; each piece keyed by its interval's start (Unix seconds). */
function cut(from: number, to: number, interval: Interval): { from: number; to: number; key: number }[] {
  const out: { from: number; to: number; key: number }[] = [];
  let at = from;
  while (at < to) {
    const start = truncate(at, interval);
    const end = Math.min(nextStart(start, interval), to);
    out.push({ from: at, to: end, key: start / 1000 });
    if (out.length > maxPeriods)
      throw new ValidationError([
        {
          field: 'query.interval',
          message: `makes more than ${maxPeriods} periods of [from, to): choose a longer interval or a shorter period`,
        },
      ]);
    at = end;
  }
  return out;
}

const zero = (): PeriodFigures => ({ orders: 0, revenue: '0', refunded: '0', earned: '0', reversed: '0', paid: '0' });

function add(a: PeriodFigures, b: PeriodFigures): PeriodFigures {
  const sum = (x: string, y: string) => new Decimal(x).plus(y).toFixed();
  return {
    orders: a.orders + b.orders,
    revenue: sum(a.revenue, b.revenue),
    refunded: sum(a.refunded, b.refunded),
    earned: sum(a.earned, b.earned),
    reversed: sum(a.reversed, b.reversed),
    paid: sum(a.paid, b.paid),
  };
}

export async function affiliatePerformance(
  db: ReadDb,
  shopId: string,
  customerId: string,
  query: { from?: number; to?: number; interval?: Interval },
  clock: Clock,
) {
  const row = await affiliates.affiliateCustomerById(db, shopId, customerId);
  if (!row?.is_affiliate) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  const interval = query.interval ?? 'day';
  const toMs = query.to !== undefined ? query.to * 1000 : Math.floor(clock.now().getTime() / 1000) * 1000;
  // The default start never goes before the epoch: periods are Unix seconds >= 0 in the contract (`to` may be 0).
  const fromMs = query.from !== undefined ? query.from * 1000 : Math.max(0, toMs - 30 * dayMs);
  if (fromMs >= toMs)
    throw new ValidationError([{ field: 'query.from', message: 'must be before `to` (the period is [from, to))' }]);
  const pieces = cut(fromMs, toMs, interval);
  const period = { from: new Date(fromMs), to: new Date(toMs) };
  const [buckets, referred, figures] = await Promise.all([
    affiliates.ledgerBuckets(db, shopId, row.id, { ...period, interval }),
    affiliates.referredCustomerCounts(db, shopId, [row.id], period),
    figuresOf(db, shopId, row),
  ]);
  const byKey = new Map(buckets.map((b) => [b.bucket, b]));
  const periods = pieces.map((p) => {
    const b = byKey.get(p.key);
    return { from: new Date(p.from), to: new Date(p.to), figures: b ?? zero() };
  });
  const totals = periods.reduce((acc, p) => add(acc, p.figures), zero());
  return affiliatePerformanceView({
    customerId: row.id,
    currency: row.wallet_currency,
    ...period,
    interval,
    referredCustomers: referred.get(row.id) ?? 0,
    totals,
    balance: figures.balance,
    periods,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// POST /customers/{id}/affiliate/convert-to-balance
// ---------------------------------------------------------------------------------------------------------------

/**
 * Moves `amount` of the affiliate's unpaid commission into its wallet: an AFFILIATE_COMMISSION wallet credit
 * (src/domain/customers/wallets.ts) and a CONVERSION ledger entry. The customer row is locked before the unpaid balance is
 * read, so concurrent conversions of one affiliate run one after another and each sees what the one before took:
 * commission is never converted twice.
 */
export async function convertAffiliateBalance(
  w: ShopWrite,
  customerId: string,
  input: { amount: number },
): Promise<Record<string, never>> {
  const { trx, shopId, effects, now } = w;
  const row = await affiliates.affiliateCustomerByIdForUpdate(trx, shopId, customerId);
  if (!row) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  if (!row.is_affiliate)
    throw new ApiError('NOT_AN_AFFILIATE', 'The customer is not an affiliate: it has no commission.');
  const currency = row.wallet_currency;
  const amount = parseAmount(input.amount, 'amount', { currency, exclusiveMin: true });
  const unpaid = new Decimal((await figuresOf(trx, shopId, row)).balance);
  if (new Decimal(amount).gt(unpaid))
    throw new ApiError(
      'INSUFFICIENT_FUNDS',
      `The affiliate's unpaid commission is ${decimalString(unpaid, currency)} ${currency}; ${decimalString(amount, currency)} ${currency} cannot be converted. Nothing changed.`,
    );
  const transaction = await postWalletMovement(w, customerId, {
    amount,
    type: 'AFFILIATE_COMMISSION',
    description: 'Affiliate commission converted to balance',
  });
  await affiliates.insertCommission(trx, shopId, {
    id: newId('acm'),
    affiliate_customer_id: row.id,
    kind: 'CONVERSION',
    amount: new Decimal(amount).negated().toFixed(),
    currency,
    wallet_transaction_id: transaction.transaction_id,
    created_at: now,
  });
  effects.audit({
    action: 'affiliate.balance_converted',
    resourceType: 'customer',
    resourceId: row.id,
    detail: { amount, currency, wallet_transaction_id: transaction.transaction_id },
  });
  return {};
}
