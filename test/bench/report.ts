// The one table of `npm run bench`: every scenario's whole-stack figure beside its baseline's from the same run,
// their ratio, the target and whether it was met; with the machine and settings it was measured on. Printed, and
// written to docs/benchmarks.md (or BENCH_OUT) unless BENCH_QUICK is set without BENCH_OUT: a quick run's figures
// say only that the bench runs.
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { settings } from './settings';
import type { Cost } from '../helpers/round-trips';

export interface Target {
  /** What the target is on: the ratio (whole stack / baseline), or the whole stack's own figure. */
  on: 'ratio' | 'full';
  op: '>=' | '<=' | '<';
  value: number;
}

export interface Row {
  scenario: string;
  unit: 'req/s' | 'ms' | 'events/s' | 'orders/s' | 'MB';
  /** null: not measured in this setting (see `why`). */
  full: number | null;
  baseline: number | null;
  /** What the baseline is (listed under the table). */
  baselineIs: string;
  /** Median of the rounds' ratios where there were rounds; else full / baseline. */
  ratio?: number;
  target?: Target;
  /** Why a figure is missing. */
  why?: string;
  /** Statements sent to PostgreSQL and CPU of the server per request, each side (counted, not estimated). */
  cost?: { full?: Cost; baseline?: Cost };
}

export interface Machine {
  date: string;
  cpu: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  database: string;
  loadAtStart: number[];
  loadAtEnd?: number[];
}

function osName(): string {
  try {
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
    if (pretty) return `${pretty} (${type()} ${release()})`;
  } catch {
    // not Linux
  }
  return `${type()} ${release()}`;
}

export function machine(database: string): Machine {
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: osName(),
    node: process.version,
    database,
    loadAtStart: loadavg(),
  };
}

const load3 = (l: number[]) => l.map((x) => x.toFixed(2)).join(', ');
const figure = (v: number | null, unit: string) =>
  v === null ? 'n/a' : `${v.toLocaleString('en', { maximumFractionDigits: unit === 'ms' ? 2 : 0 })} ${unit}`;

export function ratioOf(row: Row): number | null {
  if (row.ratio !== undefined) return row.ratio;
  if (row.full === null || row.baseline === null || row.baseline === 0) return null;
  return row.full / row.baseline;
}

/** 'pass' / 'FAIL' against the target; '—' when the row has none; 'n/a' when the figure is missing. */
export function verdict(row: Row): string {
  if (!row.target) return '—';
  const v = row.target.on === 'ratio' ? ratioOf(row) : row.full;
  if (v === null) return 'n/a';
  const { op, value } = row.target;
  const ok = op === '>=' ? v >= value : op === '<=' ? v <= value : v < value;
  return ok ? 'pass' : 'FAIL';
}

function targetText(row: Row): string {
  if (!row.target) return '—';
  const { on, op, value } = row.target;
  const sign = op === '>=' ? '≥' : op === '<=' ? '≤' : '<';
  return on === 'ratio' ? `${sign} ${value}x` : `${sign} ${figure(value, row.unit)}`;
}

export function table(rows: Row[]): string {
  const lines = [
    '| # | Scenario | Whole stack | Baseline | Ratio | Target | Result |',
    '|---|---|---|---|---|---|---|',
  ];
  rows.forEach((r, i) => {
    const ratio = ratioOf(r);
    lines.push(
      `| ${i + 1} | ${r.scenario} | ${figure(r.full, r.unit)} | ${figure(r.baseline, r.unit)} | ` +
        `${ratio === null ? 'n/a' : `${ratio.toFixed(2)}x`} | ${targetText(r)} | ${verdict(r)} |`,
    );
  });
  return lines.join('\n');
}

const costText = (c: Cost | undefined, what: 'roundTrips' | 'cpuMs') =>
  c === undefined ? 'n/a' : what === 'roundTrips' ? c.roundTrips.toFixed(1) : `${c.cpuMs.toFixed(2)} ms`;

/** The cost table: per request, round trips to PostgreSQL and the server's CPU, whole stack beside baseline. */
export function costTable(rows: Row[]): string {
  const lines = [
    '| Scenario (row) | Round trips, whole stack | Round trips, baseline | CPU per request, whole stack | CPU per request, baseline |',
    '|---|---|---|---|---|',
  ];
  rows.forEach((r, i) => {
    if (!r.cost) return;
    const { full, baseline } = r.cost;
    lines.push(
      `| ${r.scenario} (${i + 1}) | ${costText(full, 'roundTrips')} | ${costText(baseline, 'roundTrips')} | ` +
        `${costText(full, 'cpuMs')} | ${costText(baseline, 'cpuMs')} |`,
    );
  });
  return lines.length > 2 ? lines.join('\n') : '';
}

function baselines(rows: Row[]): string {
  return rows
    .map(
      (r, i) =>
        `${i + 1}. Baseline: ${r.baselineIs}.${r.why && (r.full === null || r.baseline === null) ? ` ${r.why}` : ''}`,
    )
    .join('\n');
}

function machineText(m: Machine): string {
  return [
    `- Date: ${m.date}`,
    `- CPU: ${m.cpu}, ${m.cores} cores; memory ${m.memoryGb} GB`,
    `- OS: ${m.os}`,
    `- Node: ${m.node}`,
    `- Database: ${m.database}`,
    `- Load average (1, 5, 15 min) at start: ${load3(m.loadAtStart)}${m.loadAtEnd ? `; at end: ${load3(m.loadAtEnd)}` : ''}`,
    `- Settings: ${settings.connections} connections, ` +
      (settings.quickRequests > 0
        ? `${settings.quickRequests} requests per run without warm-up (QUICK MODE, BENCH_QUICK=1: not a measurement)`
        : `${settings.seconds} s per measured run after a ${settings.warmupSeconds} s warm-up`) +
      `, ${settings.rounds} round(s) of baseline and whole stack, which goes first alternating (medians), ` +
      `${settings.coldRuns} start(s) per cold-start setting`,
  ].join('\n');
}

/** The rows whose costs the CPU rows compare, found by the words their scenario starts with (test/bench/run.ts). */
export const ORDINARY_ORDER = 'POST /orders (one line, returning buyer)';
export const HOT_PRODUCT = (connections: number) =>
  `POST /orders, ${connections} buyers at once, all of ONE product with counted stock`;

/**
 * The CPU targets of the write path (issue 39), as rows of their own computed from the measured rows' costs: POST
 * /orders' CPU per request beside its bare route's, and an order of a product fifty buyers want at once beside an
 * ordinary one, for the whole stack (the target) and for the bare route (what the same contention costs without
 * the stack). Computed from each run's rows, so the medians are of each run's ratio. Rows without costs (the
 * embedded database, or a run without them) add nothing.
 */
export function withCpuRows(rows: Row[]): Row[] {
  const ordinary = rows.find((r) => r.scenario === ORDINARY_ORDER)?.cost;
  const hot = rows.find((r) => r.scenario.startsWith(HOT_PRODUCT(settings.connections)))?.cost;
  if (!ordinary?.full || !ordinary.baseline || !hot?.full || !hot.baseline) return rows;
  const rush = `CPU per order, ${settings.connections} buyers of ONE product vs an ordinary order`;
  // [scenario, measured, compared with, what that is, the ratio's ceiling (none: shown for reference)]
  const comparisons: [string, Cost, Cost, string, number?][] = [
    [
      'CPU per request, POST /orders (one line): whole stack vs bare route',
      ordinary.full,
      ordinary.baseline,
      `the bare POST /orders route's CPU per request, same run (the row "${ORDINARY_ORDER}")`,
      1.6,
    ],
    [
      `${rush}, whole stack`,
      hot.full,
      ordinary.full,
      'the whole stack’s CPU per ordinary POST /orders (one line, returning buyer), same run',
      1.2,
    ],
    [
      `${rush}, bare route`,
      hot.baseline,
      ordinary.baseline,
      'the bare route’s CPU per ordinary order, same run: what the same rush costs without the stack (no target)',
    ],
  ];
  return [
    ...rows,
    ...comparisons.map(([scenario, full, baseline, baselineIs, ceiling]): Row => ({
      scenario,
      unit: 'ms',
      full: Math.round(full.cpuMs * 1000) / 1000,
      baseline: Math.round(baseline.cpuMs * 1000) / 1000,
      ratio: full.cpuMs / baseline.cpuMs,
      baselineIs,
      ...(ceiling === undefined ? {} : { target: { on: 'ratio', op: '<=', value: ceiling } as const }),
    })),
  ];
}

/** One full run of the bench, as `BENCH_JSON` keeps it for test/bench/medians.ts. */
export interface Run {
  rows: Row[];
  machine: Machine;
}

const middle = (values: number[]): number => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * Each row's median over the runs: of the whole stack's figure, the baseline's, the ratio and the costs, each on its
 * own (the runs list the same scenarios in the same order). The scenario's words are those of the run whose ratio
 * is the median (some carry that run's counts); the target and the baseline's description are the last run's, so a
 * target changed between runs is judged as it now stands.
 */
export function medianRows(runs: Run[]): Row[] {
  return runs[0]!.rows.map((first, i) => {
    const all = runs.map((r) => r.rows[i]!);
    const last = all[all.length - 1]!;
    if (all.some((r) => r.unit !== first.unit))
      throw new Error(`row ${i + 1}: the runs do not list the same scenarios`);
    const of = (pick: (r: Row) => number | null | undefined): number | null => {
      const values = all.map(pick).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
      return values.length === all.length ? middle(values) : null;
    };
    const ratio = of(ratioOf);
    const byRatio = ratio === null ? first : (all.find((r) => ratioOf(r) === ratio) ?? first);
    const cost = (side: 'full' | 'baseline') => {
      const roundTrips = of((r) => r.cost?.[side]?.roundTrips);
      const cpuMs = of((r) => r.cost?.[side]?.cpuMs);
      return roundTrips === null || cpuMs === null ? undefined : { roundTrips, cpuMs };
    };
    const full = of((r) => r.full);
    const baseline = of((r) => r.baseline);
    return {
      ...last,
      scenario: byRatio.scenario,
      full: full === null ? null : Math.round(full * 100) / 100,
      baseline: baseline === null ? null : Math.round(baseline * 100) / 100,
      ...(ratio === null ? {} : { ratio }),
      ...(first.cost ? { cost: { full: cost('full'), baseline: cost('baseline') } } : {}),
    };
  });
}

/**
 * Each run's ratio (or figure, for a target on the figure) per row: the spread behind the medians, each judged by
 * the target of the row in the document (`rows`).
 */
function runsTable(runs: Run[], rows: Row[]): string {
  const lines = [
    `| # | ${runs.map((_, i) => `Run ${i + 1}`).join(' | ')} |`,
    `|---|${runs.map(() => '---|').join('')}`,
  ];
  runs[0]!.rows.forEach((row, i) => {
    const cells = runs.map((run) => {
      const r = { ...run.rows[i]!, target: rows[i]?.target };
      const ratio = ratioOf(r);
      const shown = r.target?.on === 'full' ? figure(r.full, r.unit) : ratio === null ? 'n/a' : `${ratio.toFixed(2)}x`;
      return `${shown} (${verdict(r)})`;
    });
    lines.push(`| ${i + 1} | ${cells.join(' | ')} |`);
  });
  return lines.join('\n');
}

export function document(rows: Row[], m: Machine, runs?: Run[]): string {
  const what = runs
    ? `Generated by \`npm run bench\` run ${runs.length} times (test/bench/run.ts with BENCH_JSON), then
test/bench/medians.ts: every figure below is the **median of the ${runs.length} full runs**, each row's own (the table
after the costs gives every run's result). Do not edit by hand. Each row is measured side by side with its baseline
in the same run, one after the other, so both see the same machine.`
    : `Generated by \`npm run bench\` (test/bench/run.ts); do not edit by hand. Each row is measured side by side with
its baseline in the same run, one after the other, so both see the same machine.`;
  return `# Benchmarks

${what} The machine below is shared and
busy (other processes run tests on it; see the load average): **the ratios are the meaningful part**, the absolute
figures move with the load.

${table(rows)}

What each request costs, counted on the driver (statements sent to PostgreSQL, each a round trip) and by the
process (CPU of the servers, which run in the bench's process for these rows; the load generator does not):

${costTable(rows) || 'Not counted in this run (the embedded database has no round trips to count).'}

${runs ? `Each run (the ratio, or the figure where the target is on the figure; pass/FAIL against the target):\n\n${runsTable(runs, rows)}\n\n` : ''}${baselines(rows)}

Machine:

${runs ? runs.map((r, i) => `Run ${i + 1}:\n\n${machineText(r.machine)}`).join('\n\n') : machineText(m)}
`;
}

/** Prints the table and writes the document where it belongs (see the top of this file); returns its path, if any. */
export function report(rows: Row[], m: Machine): string | undefined {
  m.loadAtEnd = loadavg();
  const text = document(withCpuRows(rows), m);
  console.log(`\n${text}`);
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ rows, machine: m } satisfies Run));
  const out =
    process.env.BENCH_OUT || (settings.quick ? undefined : join(__dirname, '..', '..', 'docs', 'benchmarks.md'));
  if (out) {
    writeFileSync(out, text);
    console.log(`written to ${out}`);
  }
  return out;
}
