// SMOKE TEST OF THE BENCH, not a benchmark: runs `npm run -s bench` in quick mode (BENCH_QUICK=1: runs of 100
// requests, small seeds, one round, one start per cold-start setting) as a child process, its document going to a
// temporary file (BENCH_OUT) instead of docs/, and checks that the one table has every row, each with numbers.
// It asserts no timing and no target (the quick figures mean nothing, and the machines are shared), so that the
// bench cannot rot unnoticed: a scenario that stops running, answers non-2xx or loses a row fails here.
// PostgreSQL only (the PostgreSQL run of .ci/run): the bare baselines are express + pg, the process-level rows
// need a database other processes can reach, and on the embedded database those rows read n/a by design.
// About two and a half minutes on an idle machine (cold starts, the Stripe webhook, pooler and replica rows: the
// replica row starts a primary and a standby of its own, ~15 s); the timeout is generous because these machines are
// shared.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');

const expectedRows: [RegExp, string][] = [
  [/^GET \/orders\?limit=50, authenticated/, 'req/s'],
  [/^GET \/orders page \d+ vs page 1, p50 latency$/, 'ms'],
  [/^GET \/orders\?limit=50 through PgBouncer \(transaction mode\) vs direct$/, 'req/s'],
  [/^POST \/orders through PgBouncer \(transaction mode\) vs direct$/, 'req/s'],
  [/^GET \/orders\?limit=50 from a streaming replica vs the primary$/, 'req/s'],
  [/^POST \/orders \(/, 'req/s'],
  [/^POST \/orders, \d+ buyers at once, all of ONE product/, 'req/s'],
  [/^POST \/orders\/\{id\}\/complete, serial delivered$/, 'req/s'],
  [/^Signed Stripe checkout\.session\.completed -> order completed/, 'orders/s'],
  [/^POST \/orders \(one line, returning buyer\), EMBEDDED database$/, 'req/s'],
  [/^POST \/orders, \d+ buyers of ONE product, EMBEDDED database$/, 'req/s'],
  [/^POST \/orders\/\{id\}\/complete, serial delivered, EMBEDDED database$/, 'req/s'],
  [/^Idempotent replay vs original/, 'ms'],
  [/^POST \/licenses\/validate$/, 'req/s'],
  [/^Webhook delivery, one worker/, 'events/s'],
  [/^Webhook delivery to \d+ endpoints beside one answering after/, 'events/s'],
  [/^Cold start to first 200, embedded, empty data directory/, 'ms'],
  [/^Cold start to first 200, embedded, existing data directory$/, 'ms'],
  [/^Floor of the embedded first start: PGlite alone, schema image unpacked, one query$/, 'ms'],
  [/^Floor of the embedded restart: PGlite alone on the same data directory, one query$/, 'ms'],
  [/^Cold start to first 200, PostgreSQL$/, 'ms'],
  [/^RSS of the embedded server, idle/, 'MB'],
  [/^Admin CLI command, PostgreSQL/, 'ms'],
  [/^Peak RSS of the server process/, 'MB'],
  // Computed from the write rows' costs (withCpuRows in test/bench/report.ts).
  [/^CPU per request, POST \/orders \(one line\): whole stack vs bare route$/, 'ms'],
  [/^CPU per order, \d+ buyers of ONE product vs an ordinary order, whole stack$/, 'ms'],
  [/^CPU per order, \d+ buyers of ONE product vs an ordinary order, bare route$/, 'ms'],
];

/** "1,234.5 req/s" -> 1234.5, checking the unit. */
function figure(cell: string, unit: string): number {
  const match = /^([\d,]+(?:\.\d+)?) (\S+)$/.exec(cell);
  expect(match?.[2]).toBe(unit);
  return Number(match![1]!.replace(/,/g, ''));
}

(process.env.DATABASE_URL ? describe : describe.skip)('npm run bench, quick mode (smoke test)', () => {
  test('prints and writes one table with every row measured beside its baseline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
    const out = join(dir, 'benchmarks.md');
    try {
      const { stdout } = await run('npm', ['run', '-s', 'bench'], {
        cwd: root,
        env: { ...process.env, BENCH_QUICK: '1', BENCH_OUT: out },
        maxBuffer: 16 * 1024 * 1024,
        timeout: 570_000,
      });
      const doc = readFileSync(out, 'utf8');
      expect(stdout).toContain(doc.split('\n').find((l) => l.startsWith('| 1 |')));

      const rows = doc
        .split('\n')
        .filter((l) => /^\| \d+ \|/.test(l))
        .map((l) => l.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, '').trim()));
      expect(rows).toHaveLength(expectedRows.length);
      rows.forEach(([n, scenario, full, baseline, ratio, target, result], i) => {
        const [pattern, unit] = expectedRows[i]!;
        expect({ n, scenario }).toEqual({ n: String(i + 1), scenario: expect.stringMatching(pattern) });
        expect(figure(full!, unit)).toBeGreaterThan(0);
        expect(figure(baseline!, unit)).toBeGreaterThan(0);
        expect(ratio).toMatch(/^\d+\.\d\dx$/);
        expect(target).toMatch(/^(—|[≥≤<] .+)$/);
        expect(result).toMatch(target === '—' ? /^—$/ : /^(pass|FAIL)$/);
      });
      // The cost table: each write row's round trips and CPU per request, counted, on both sides.
      for (const row of [
        'POST /orders (one line',
        'GET /orders?limit=50 through PgBouncer',
        'POST /orders through PgBouncer',
        'GET /orders?limit=50 from a streaming replica',
        'POST /orders/{id}/complete',
        'Signed Stripe checkout.session.completed',
        'POST /licenses/validate',
      ]) {
        const line = doc.split('\n').find((l) => l.startsWith(`| ${row}`) && /round trips|\| [\d.]+ \|/i.test(l));
        expect(line).toMatch(/^\| .+ \(\d+\) \| \d+\.\d \| \d+\.\d \| \d+\.\d\d ms \| \d+\.\d\d ms \|$/);
      }
      for (const line of [
        '- CPU: ',
        '- Node: v',
        '- Database: PostgreSQL ',
        '- Load average (1, 5, 15 min) at start: ',
      ]) {
        expect(doc).toContain(line);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
