// What a report generation computes: a table (columns, rows) per report type, from the shop's orders, refunds and
// customers in the period [from, to) (db/queries/analytics.ts aggregates in SQL; amounts are exact numeric text,
// one row per currency, never summed across currencies), and its rendering as CSV or JSON.
//
// Figures (every type; "completed" = the order's completed_at lies in the period, whatever happened to it since;
// refunds count in the period they were made, in the currency of their order; net = gross - refunded):
//   SALES      currency, completed_orders, gross_revenue, refund_count, refunded_amount, net_revenue, pending_orders,
//              pending_amount (orders created in the period still PENDING)
//   PRODUCTS   product_id, product_title, variant_title, currency, orders, quantity, revenue (line totals)
//   CUSTOMERS  customer_id, email, name, customer_created_at, new_in_period, currency, completed_orders, spent,
//              refunded_amount: one row per buyer and currency; a customer created in the period who bought nothing
//              has one row with an empty currency and zeros
//   GATEWAYS   gateway (empty: none, e.g. wallet-paid), currency, completed_orders, gross_revenue, refunded_amount,
//              net_revenue
//   AFFILIATES affiliate_customer_id, affiliate_code, affiliate_email, currency, referred_orders, referred_revenue,
//              refunded_amount
// CSV: RFC 4180 (CRLF, fields with `,` `"` CR LF quoted, quotes doubled); a text cell starting with `=`, `+`, `-`,
// `@`, tab or CR is prefixed with `'` so a spreadsheet never runs it as a formula (buyer names and emails are
// buyer-controlled). Amount cells are numbers we computed and are left as they are.
import Decimal from 'decimal.js';
import * as q from '../../../db/queries/analytics';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { AnalyticsReportFormat, AnalyticsReportType } from '../../../db/tables';
import { decimalString } from '../../platform/money';

export type Cell = { text: string } | { number: string };

export interface ReportTable {
  columns: string[];
  rows: Cell[][];
}

const text = (value: string | null | undefined): Cell => ({ text: value ?? '' });
const num = (value: string | number): Cell => ({ number: String(value) });
const money = (value: string | Decimal | undefined, currency: string): Cell => ({
  number: currency === '' ? '0' : decimalString(value ?? '0', currency),
});

const key = (...parts: (string | null)[]) => JSON.stringify(parts);

async function sales(db: ReadDb, shopId: string, p: q.Period): Promise<ReportTable> {
  const [orders, refunds, pending] = await Promise.all([
    q.completedOrderTotalsByCurrency(db, shopId, p),
    q.refundTotalsByCurrency(db, shopId, p),
    q.pendingOrderTotalsByCurrency(db, shopId, p),
  ]);
  const currencies = [...new Set([...orders, ...refunds, ...pending].map((r) => r.currency))].sort();
  return {
    columns: [
      'currency',
      'completed_orders',
      'gross_revenue',
      'refund_count',
      'refunded_amount',
      'net_revenue',
      'pending_orders',
      'pending_amount',
    ],
    rows: currencies.map((c) => {
      const o = orders.find((r) => r.currency === c);
      const r = refunds.find((x) => x.currency === c);
      const w = pending.find((x) => x.currency === c);
      const gross = new Decimal(o?.gross ?? 0);
      const refunded = new Decimal(r?.refunded ?? 0);
      return [
        text(c),
        num(o?.orders ?? 0),
        money(gross, c),
        num(r?.refunds ?? 0),
        money(refunded, c),
        money(gross.minus(refunded), c),
        num(w?.orders ?? 0),
        money(w?.amount, c),
      ];
    }),
  };
}

async function products(db: ReadDb, shopId: string, p: q.Period): Promise<ReportTable> {
  const rows = await q.productTotals(db, shopId, p);
  return {
    columns: ['product_id', 'product_title', 'variant_title', 'currency', 'orders', 'quantity', 'revenue'],
    rows: rows.map((r) => [
      text(r.product_id),
      text(r.product_title),
      text(r.variant_title),
      text(r.currency),
      num(r.orders),
      num(r.quantity),
      money(r.revenue, r.currency),
    ]),
  };
}

async function customers(db: ReadDb, shopId: string, p: q.Period): Promise<ReportTable> {
  const [orders, refunds] = await Promise.all([
    q.customerOrderTotals(db, shopId, p),
    q.customerRefundTotals(db, shopId, p),
  ]);
  const active = [...new Set([...orders, ...refunds].map((r) => r.customer_id!))];
  const people = await q.reportCustomers(db, shopId, p, active);
  const rows: Cell[][] = [];
  for (const c of people) {
    const isNew = c.created_at >= p.from && c.created_at < p.to;
    const mine = [...orders, ...refunds].filter((r) => r.customer_id === c.id);
    const currencies = [...new Set(mine.map((r) => r.currency))].sort();
    for (const currency of currencies.length > 0 ? currencies : ['']) {
      const o = orders.find((r) => r.customer_id === c.id && r.currency === currency);
      const r = refunds.find((x) => x.customer_id === c.id && x.currency === currency);
      rows.push([
        text(c.id),
        text(c.email),
        text(c.name),
        text(c.created_at.toISOString()),
        text(isNew ? 'yes' : 'no'),
        text(currency),
        num(o?.orders ?? 0),
        money(o?.spent, currency),
        money(r?.refunded, currency),
      ]);
    }
  }
  return {
    columns: [
      'customer_id',
      'email',
      'name',
      'customer_created_at',
      'new_in_period',
      'currency',
      'completed_orders',
      'spent',
      'refunded_amount',
    ],
    rows,
  };
}

async function gateways(db: ReadDb, shopId: string, p: q.Period): Promise<ReportTable> {
  const [orders, refunds] = await Promise.all([
    q.gatewayOrderTotals(db, shopId, p),
    q.gatewayRefundTotals(db, shopId, p),
  ]);
  const keys = [...new Map([...orders, ...refunds].map((r) => [key(r.gateway, r.currency), r])).values()].sort(
    (a, b) => a.gateway.localeCompare(b.gateway) || a.currency.localeCompare(b.currency),
  );
  return {
    columns: ['gateway', 'currency', 'completed_orders', 'gross_revenue', 'refunded_amount', 'net_revenue'],
    rows: keys.map(({ gateway, currency }) => {
      const o = orders.find((r) => r.gateway === gateway && r.currency === currency);
      const r = refunds.find((x) => x.gateway === gateway && x.currency === currency);
      const gross = new Decimal(o?.gross ?? 0);
      const refunded = new Decimal(r?.refunded ?? 0);
      return [
        text(gateway),
        text(currency),
        num(o?.orders ?? 0),
        money(gross, currency),
        money(refunded, currency),
        money(gross.minus(refunded), currency),
      ];
    }),
  };
}

async function affiliates(db: ReadDb, shopId: string, p: q.Period): Promise<ReportTable> {
  const [orders, refunds] = await Promise.all([
    q.affiliateOrderTotals(db, shopId, p),
    q.affiliateRefundTotals(db, shopId, p),
  ]);
  const pairs = [
    ...new Map([...orders, ...refunds].map((r) => [key(r.affiliate_customer_id, r.currency), r] as const)).values(),
  ];
  const people = new Map(
    (await q.affiliatesByIds(db, shopId, [...new Set(pairs.map((r) => r.affiliate_customer_id!))])).map((c) => [
      c.id,
      c,
    ]),
  );
  pairs.sort(
    (a, b) =>
      (people.get(a.affiliate_customer_id!)?.affiliate_code ?? '').localeCompare(
        people.get(b.affiliate_customer_id!)?.affiliate_code ?? '',
      ) || a.currency.localeCompare(b.currency),
  );
  return {
    columns: [
      'affiliate_customer_id',
      'affiliate_code',
      'affiliate_email',
      'currency',
      'referred_orders',
      'referred_revenue',
      'refunded_amount',
    ],
    rows: pairs.map(({ affiliate_customer_id: id, currency }) => {
      const o = orders.find((r) => r.affiliate_customer_id === id && r.currency === currency);
      const r = refunds.find((x) => x.affiliate_customer_id === id && x.currency === currency);
      const who = people.get(id!);
      return [
        text(id),
        text(who?.affiliate_code),
        text(who?.email),
        text(currency),
        num(o?.orders ?? 0),
        money(o?.revenue, currency),
        money(r?.refunded, currency),
      ];
    }),
  };
}

const byType: Record<AnalyticsReportType, (db: ReadDb, shopId: string, p: q.Period) => Promise<ReportTable>> = {
  SALES: sales,
  PRODUCTS: products,
  CUSTOMERS: customers,
  GATEWAYS: gateways,
  AFFILIATES: affiliates,
};

/** The report's table for the period (run it in one snapshot: REPEATABLE READ). */
export function reportTable(db: ReadDb, shopId: string, type: AnalyticsReportType, p: q.Period): Promise<ReportTable> {
  return byType[type](db, shopId, p);
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------------------

const formulaStart = /^[=+\-@\t\r]/;

/** One CSV field: formula-looking text neutralised, then quoted when it must be. */
export function csvField(cell: Cell): string {
  let value = 'text' in cell ? cell.text : cell.number;
  if ('text' in cell && formulaStart.test(value)) value = `'${value}`;
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

export function toCsv(table: ReportTable): string {
  const line = (cells: Cell[]) => cells.map(csvField).join(',');
  return [line(table.columns.map((c) => ({ text: c }))), ...table.rows.map(line)].map((l) => `${l}\r\n`).join('');
}

export interface JsonMeta {
  reportId: string;
  name: string;
  type: AnalyticsReportType;
  period: q.Period;
  generatedAt: Date;
}

/** JSON: the table as objects (amounts as exact decimal strings), with what the report was. */
export function toJson(table: ReportTable, meta: JsonMeta): string {
  return JSON.stringify({
    report_id: meta.reportId,
    name: meta.name,
    type: meta.type,
    period_from: meta.period.from.toISOString(),
    period_to: meta.period.to.toISOString(),
    generated_at: meta.generatedAt.toISOString(),
    columns: table.columns,
    rows: table.rows.map((r) =>
      Object.fromEntries(r.map((cell, i) => [table.columns[i], 'text' in cell ? cell.text : cell.number])),
    ),
  });
}

export function render(format: AnalyticsReportFormat, table: ReportTable, meta: JsonMeta): string {
  return format === 'CSV' ? toCsv(table) : toJson(table, meta);
}

export function contentTypeOf(format: AnalyticsReportFormat): string {
  return format === 'CSV' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
}
