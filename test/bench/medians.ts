// Three (or any number of) full runs of `npm run bench` into one document of medians: run the bench with BENCH_JSON
// naming a file per run (BENCH_OUT too, to keep docs/benchmarks.md for the result), then
// `npx tsx test/bench/medians.ts run1.json run2.json run3.json`: each row's figures are the medians of the runs, and
// the document lists every run's result and machine (test/bench/report.ts). Written to docs/benchmarks.md, or BENCH_OUT.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { document, medianRows, withCpuRows, type Run } from './report';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error(
    'usage: tsx test/bench/medians.ts RUN.json [RUN.json ...]  (each written by npm run bench with BENCH_JSON)',
  );
  process.exit(2);
}
// The CPU rows are computed from each run's measured rows (a run keeps only those), then their medians taken.
const runs = files.map((f) => {
  const run = JSON.parse(readFileSync(f, 'utf8')) as Run;
  return { ...run, rows: withCpuRows(run.rows) };
});
const text = document(medianRows(runs), runs[runs.length - 1]!.machine, runs);
const out = process.env.BENCH_OUT || join(__dirname, '..', '..', 'docs', 'benchmarks.md');
writeFileSync(out, text);
console.log(`${text}\nwritten to ${out}`);
