// The load half of `npm run bench`, shared by its scenarios: a server on a free port, autocannon in a process of
// its own (so the load generator takes no CPU from a server in this process), and one measured run: req/s, latency,
// and optionally the peak RSS of a server process.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { profileMeasuredRun } from './profile';
import { settings } from './settings';
import { measureCost, type Cost } from '../helpers/round-trips';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');

export function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

/** One request of a sequence: its path (default: the URL's) and JSON body. Requests are sent in order, cycling. */
export interface Shot {
  path?: string;
  body?: unknown;
  /** These exact bytes as the body instead of `body`'s JSON (a signed webhook: the signature covers them). */
  raw?: string;
  /** Headers of this request besides the run's. */
  headers?: Record<string, string>;
}

export interface LoadOptions {
  method?: 'GET' | 'POST';
  shots?: Shot[];
  /** Send exactly this many requests (shots[warmup ...]) instead of running for settings.seconds. */
  amount?: number;
  /** With `amount`: the number of shots the warm-up uses first (each shot is used once: a consumable resource). */
  warmup?: number;
  /** Sample this process's resident memory during the measured run. */
  rssPid?: number;
  /**
   * Count the statements sent to PostgreSQL and this process's CPU per request (servers in this process); with
   * BENCH_PROFILE_DIR set, also profile the measured run (test/bench/profile.ts).
   */
  cost?: boolean;
  /** The name of the run's profile (create-full, create-bare, ...); the method and path otherwise. */
  label?: string;
  /** Connections the load keeps open (settings.connections by default). */
  connections?: number;
  /** Seconds autocannon waits for an answer before counting a timeout, which fails the run (its default: 10). */
  timeoutSeconds?: number;
  /**
   * With `amount`: the work this process still does for a run's requests after answering them (a worker applying
   * what they queued), started with each run (warm-up and measured) and given its number of requests. The run ends
   * when both the requests and this are done: its rate, cost and profile include it.
   */
  settle?: (requests: number) => Promise<void>;
}

// The autocannon API in a child process: each request takes the next shot of the list.
const cannonScript = `
const autocannon = require('autocannon');
const spec = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'));
let i = spec.offset;
const options = {
  url: spec.url, connections: spec.connections, method: spec.method, timeout: spec.timeout,
  headers: { authorization: 'Bearer ' + spec.key, 'content-type': 'application/json' },
};
if (spec.amount) options.amount = spec.amount; else options.duration = spec.duration;
if (spec.shots) options.requests = [{ setupRequest: (req) => {
  const shot = spec.shots[i++ % spec.shots.length];
  const body = shot.raw !== undefined ? shot.raw : shot.body === undefined ? undefined : JSON.stringify(shot.body);
  return { ...req, ...(shot.path ? { path: shot.path } : {}), ...(shot.headers ? { headers: { ...req.headers, ...shot.headers } } : {}), ...(body === undefined ? {} : { body }) };
} }];
let lastResponseAt = 0;
let answered = 0;
autocannon(options, (err, result) => {
  if (err) { console.error(err); process.exit(1); }
  process.stdout.write(JSON.stringify({ ...result, lastResponseAt, answered, built: i - spec.offset }));
}).on('response', () => { lastResponseAt = Date.now(); answered++; });
`;

interface CannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  start: string;
  /** When autocannon stopped: at its next once-a-second tick after the last answer of a run of `amount`. */
  finish: string;
  /** When the last answer came (ms since the epoch). */
  lastResponseAt: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Answers by status code. */
  statusCodeStats?: Record<string, { count: number }>;
  /** Answers received, and shots built (a shot is built as its request is sent; with shots only). */
  answered: number;
  built: number;
}

/**
 * A run that measured something else than it says: an answer that is not 2xx, a connection error or timeout, or
 * (with shots, which are each used once) a shot sent whose answer never came: autocannon sends the next shot on a
 * new connection when one closes under a request, and the order, webhook... of the lost one is never served.
 */
function checkRun(url: string, phase: string, r: CannonResult, options: LoadOptions, amount?: number): void {
  const lost = options.shots && amount !== undefined ? r.built - r.answered : 0;
  if (r.non2xx === 0 && r.errors === 0 && r.timeouts === 0 && lost === 0) return;
  const statuses = Object.entries(r.statusCodeStats ?? {})
    .map(([status, { count }]) => `${status}: ${count}`)
    .join(', ');
  throw new Error(
    `${options.label ?? url} (${phase}): ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts, ` +
      `${lost} shot(s) sent without an answer; answers by status: ${statuses}`,
  );
}

async function cannon(
  url: string,
  key: string,
  options: LoadOptions,
  run_: { offset: number; amount?: number; duration?: number },
): Promise<CannonResult> {
  const dir = mkdtempSync(join(tmpdir(), 'mdapi-bench-'));
  try {
    const specFile = join(dir, 'spec.json');
    writeFileSync(
      specFile,
      JSON.stringify({
        url,
        key,
        connections: Math.min(options.connections ?? settings.connections, run_.amount ?? Infinity),
        timeout: options.timeoutSeconds ?? 10,
        method: options.method ?? 'GET',
        shots: options.shots,
        ...run_,
      }),
    );
    const { stdout } = await run(process.execPath, ['-e', cannonScript, specFile], {
      maxBuffer: 64 * 1024 * 1024,
      cwd: root,
    });
    return JSON.parse(stdout) as CannonResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Load {
  rps: number;
  /** Latency percentiles in ms, as autocannon measures them. */
  p50: number;
  p99: number;
  /** Peak resident memory of `rssPid` during the run, MB (when asked). */
  rssMb?: number;
  /** Round trips to PostgreSQL and CPU ms per request (when asked). */
  cost?: Cost;
}

/** A warm-up run, then the measured one; any non-2xx answer or error fails the bench (it measured the wrong thing). */
export async function load(url: string, key: string, options: LoadOptions = {}): Promise<Load> {
  const quick = options.amount === undefined && settings.quickRequests > 0;
  const { amount = quick ? settings.quickRequests : undefined, warmup = 0 } = options;
  if (options.settle && amount === undefined) throw new Error('load: settle needs a number of requests (amount)');
  if (amount === undefined) await cannon(url, key, options, { offset: 0, duration: settings.warmupSeconds });
  else if (warmup > 0) {
    const [w] = await Promise.all([cannon(url, key, options, { offset: 0, amount: warmup }), options.settle?.(warmup)]);
    checkRun(url, 'warm-up', w, options, warmup);
  }
  const rss = options.rssPid === undefined ? undefined : watchRss(options.rssPid);
  // Started before the cost is counted so that the profiler's own start-up is not part of it.
  const profile = options.cost ? await profileMeasuredRun(options.label ?? labelOf(url, options)) : undefined;
  const cost = options.cost ? measureCost() : undefined;
  const [r, settledAt] = await Promise.all([
    cannon(url, key, options, { offset: warmup, ...(amount ? { amount } : { duration: settings.seconds }) }),
    options.settle?.(amount!).then(() => Date.now()),
  ]);
  const rssMb = rss?.stop();
  const spent = cost?.stop(r.requests.total);
  await profile?.stop(r.requests.total);
  checkRun(url, 'measured', r, options, amount);
  // A run of `amount` requests ends at its last answer, not at autocannon's finish, which waits for its next
  // once-a-second tick (a run of 100 requests would read 100, 50 or 33 req/s); with `settle`, at the later of that
  // answer and the end of the work that settles the requests (autocannon's clock and ours are the machine's).
  const end = amount === undefined ? Date.parse(r.finish) : Math.max(r.lastResponseAt, settledAt ?? 0);
  const seconds = (end - Date.parse(r.start)) / 1000;
  return {
    rps: Math.round(r.requests.total / seconds),
    p50: r.latency.p50,
    p99: r.latency.p99,
    ...(rssMb === undefined ? {} : { rssMb }),
    ...(spent ? { cost: spent } : {}),
  };
}

/** POST-dev-v1-orders for a POST to http://127.0.0.1:1234/dev/v1/orders. */
function labelOf(url: string, options: LoadOptions): string {
  const path = new URL(url).pathname.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return [options.method ?? 'GET', path].filter(Boolean).join('-');
}

/** Resident memory of a process (Linux /proc), MB; NaN where /proc is not there. */
export function rssMbOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** Samples a process's RSS every 50 ms until stopped; returns the peak. */
function watchRss(pid: number): { stop(): number } {
  let peak = rssMbOf(pid);
  const timer = setInterval(() => {
    const now = rssMbOf(pid);
    if (!(now <= peak)) peak = now;
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssMbOf(pid));
    },
  };
}

/** The median over a side-by-side's rounds of whole stack / baseline, req/s. */
export const medianRatio = (rounds: { baseline: Load; full: Load }[]): number =>
  median(rounds.map((r) => r.full.rps / r.baseline.rps));

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The medians of a scenario's rounds. */
export function summary(runs: Load[]): Load {
  const rss = runs.flatMap((r) => (r.rssMb === undefined ? [] : [r.rssMb]));
  const costs = runs.flatMap((r) => (r.cost ? [r.cost] : []));
  return {
    rps: Math.round(median(runs.map((r) => r.rps))),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    ...(rss.length ? { rssMb: Math.max(...rss) } : {}),
    ...(costs.length
      ? {
          cost: {
            roundTrips: median(costs.map((c) => c.roundTrips)),
            cpuMs: median(costs.map((c) => c.cpuMs)),
            ...(costs.every((c) => c.dbCpuMs !== undefined) ? { dbCpuMs: median(costs.map((c) => c.dbCpuMs!)) } : {}),
          },
        }
      : {}),
  };
}

/** Rounds of baseline then whole stack, one after the other, so both see the same machine (and its other load). */
/**
 * Runs one round's measurements one after the other, in the given order on even rounds and reversed on odd ones (the
 * results come back in the given order): on a shared machine whose load drifts, a fixed order would favour a side.
 */
export async function inAlternatingOrder<T>(round: number, runs: (() => Promise<T>)[]): Promise<T[]> {
  const results = new Array<T>(runs.length);
  const order = runs.map((_, i) => i);
  if (round % 2 === 1) order.reverse();
  for (const i of order) results[i] = await runs[i]!();
  return results;
}

export async function sideBySide(
  baseline: () => Promise<Load>,
  full: () => Promise<Load>,
): Promise<{ baseline: Load; full: Load; rounds: { baseline: Load; full: Load }[] }> {
  const rounds: { baseline: Load; full: Load }[] = [];
  for (let i = 0; i < settings.rounds; i++) {
    const [b, f] = await inAlternatingOrder(i, [baseline, full]);
    rounds.push({ baseline: b!, full: f! });
  }
  return {
    baseline: summary(rounds.map((r) => r.baseline)),
    full: summary(rounds.map((r) => r.full)),
    rounds,
  };
}
