// The medians document of several bench runs (test/bench/medians.ts): each figure is its own median over the runs.
import { document, HOT_PRODUCT, medianRows, ORDINARY_ORDER, table, withCpuRows, type Row, type Run } from './report';
import { settings } from './settings';

const machine = (date: string): Run['machine'] => ({
  date,
  cpu: 'test cpu',
  cores: 2,
  memoryGb: 1,
  os: 'test os',
  node: 'v24',
  database: 'PostgreSQL',
  loadAtStart: [0.5, 0.4, 0.3],
  loadAtEnd: [1, 1, 1],
});

const row = (full: number, baseline: number, ratio: number, cpuMs: number, scenario = 'POST /orders'): Row => ({
  scenario,
  unit: 'req/s',
  full,
  baseline,
  ratio,
  baselineIs: 'a bare route',
  target: { on: 'ratio', op: '>=', value: 0.8 },
  cost: { full: { roundTrips: 7, cpuMs }, baseline: { roundTrips: 9, cpuMs: 2 } },
});

const runs: Run[] = [
  { rows: [row(100, 200, 0.5, 4, 'run 1 words'), row(10, 10, 1, 1)], machine: machine('d1') },
  { rows: [row(300, 310, 0.97, 3, 'run 2 words'), row(30, 10, 3, 1)], machine: machine('d2') },
  { rows: [row(200, 250, 0.8, 5, 'run 3 words'), row(20, 10, 2, 1)], machine: machine('d3') },
];

test('every figure of a row is its own median over the runs, the words those of the median ratio’s run', () => {
  const [first, second] = medianRows(runs);
  expect(first).toMatchObject({ full: 200, baseline: 250, ratio: 0.8, scenario: 'run 3 words' });
  expect(first!.cost).toEqual({ full: { roundTrips: 7, cpuMs: 4 }, baseline: { roundTrips: 9, cpuMs: 2 } });
  expect(second).toMatchObject({ full: 20, ratio: 2 });
});

test('the document says it holds medians and lists each run’s result and machine', () => {
  const text = document(medianRows(runs), runs[2]!.machine, runs);
  expect(text).toContain('median of the 3 full runs');
  expect(text).toContain('| 1 | 0.50x (FAIL) | 0.97x (pass) | 0.80x (pass) |');
  expect(text).toMatch(/Run 1:\n\n- Date: d1[\s\S]*Run 3:\n\n- Date: d3/);
  expect(text).toContain('| run 3 words | 200 req/s | 250 req/s | 0.80x | ≥ 0.8x | pass |');
});

test('runs that do not list the same scenarios are refused', () => {
  const odd: Run = { rows: [{ ...row(1, 1, 1, 1), unit: 'ms' }, row(1, 1, 1, 1)], machine: machine('d4') };
  expect(() => medianRows([runs[0]!, odd])).toThrow(/same scenarios/);
});

test('a target changed between runs is judged as the last run states it, in every run’s column too', () => {
  const stricter = runs.map((r, i) =>
    i === 2 ? { ...r, rows: r.rows.map((x) => ({ ...x, target: { on: 'ratio', op: '>=', value: 0.9 } as const })) } : r,
  );
  const rows = medianRows(stricter);
  expect(rows[0]!.target).toEqual({ on: 'ratio', op: '>=', value: 0.9 });
  const text = document(rows, stricter[2]!.machine, stricter);
  expect(text).toContain('| 1 | 0.50x (FAIL) | 0.97x (pass) | 0.80x (FAIL) |');
});

test('the CPU rows compare POST /orders with its bare route and a rush on one product with an ordinary order', () => {
  const cost = (full: number, baseline: number) => ({
    full: { roundTrips: 7, cpuMs: full },
    baseline: { roundTrips: 9, cpuMs: baseline },
  });
  const measured: Row[] = [
    { ...row(800, 1000, 0.8, 0), scenario: ORDINARY_ORDER, cost: cost(0.8, 0.5) },
    { ...row(700, 800, 0.875, 0), scenario: HOT_PRODUCT(settings.connections), cost: cost(1.2, 0.7) },
  ];
  const [, , own, hot, bare] = withCpuRows(measured);
  expect(own).toMatchObject({ full: 0.8, baseline: 0.5, target: { on: 'ratio', op: '<=', value: 1.6 } });
  expect(own!.ratio).toBeCloseTo(1.6);
  expect(hot).toMatchObject({ full: 1.2, baseline: 0.8, target: { on: 'ratio', op: '<=', value: 1.2 } });
  expect(hot!.ratio).toBeCloseTo(1.5);
  expect(bare).toMatchObject({ full: 0.7, baseline: 0.5 });
  expect(bare!.target).toBeUndefined();
  expect(table([own!, hot!])).toMatch(/\| 1\.60x \| ≤ 1\.6x \| pass \|[\s\S]*\| 1\.50x \| ≤ 1\.2x \| FAIL \|/);
  // Without costs (the embedded database) there is nothing to compare.
  expect(withCpuRows(measured.map((r) => ({ ...r, cost: undefined })))).toHaveLength(2);
});
