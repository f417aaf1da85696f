// The knobs of `npm run bench`, in one place. BENCH_QUICK=1 shrinks every run and seed so the whole bench takes
// about a minute on an idle machine: the figures then only show that every scenario still runs (test/bench/bench-smoke.test.ts),
// not how fast anything is. Each setting can still be overridden on its own.
const quick = process.env.BENCH_QUICK === '1';
const num = (name: string, full: number, small: number) => Number(process.env[name] ?? (quick ? small : full));

export const settings = {
  quick,
  /** Seconds of each measured load run (after a warm-up run). */
  seconds: num('BENCH_SECONDS', 6, 1),
  /**
   * Quick mode: each load run is this many requests instead (~1-2 s on an idle machine), without a warm-up run,
   * so a busy machine makes it slower rather than empty.
   */
  quickRequests: num('BENCH_QUICK_REQUESTS', 0, 100),
  warmupSeconds: num('BENCH_WARMUP_SECONDS', 2, 1),
  connections: num('BENCH_CONNECTIONS', 50, 20),
  /** Rounds of baseline and whole stack (which goes first alternates); the medians are reported. */
  rounds: num('BENCH_ROUNDS', 5, 1),
  /** `npm start`-style starts per cold-start setting. */
  coldRuns: num('BENCH_COLD_RUNS', 3, 1),
  /** Seconds the restarted embedded server idles before its resident memory is read. */
  idleSeconds: num('BENCH_IDLE_SECONDS', 5, 1),
  /** Orders of the list scenario; the deep page is the last full page of them. */
  orders: num('BENCH_ORDERS', 100_000, 2_000),
  /** Orders completed per measured run of the completion scenario (each request completes another order). */
  completions: num('BENCH_COMPLETIONS', 2_000, 100),
  licenses: num('BENCH_LICENSES', 1_000, 100),
  webhookEvents: num('BENCH_WEBHOOK_EVENTS', 2_000, 200),
  webhookBatch: num('BENCH_WEBHOOK_BATCH', 50, 50),
  /** Returning buyers of the POST /orders scenario (each first created by one order). */
  buyers: num('BENCH_BUYERS', 100, 20),
  /** Sequential requests per side of the idempotency scenario. */
  idempotentRequests: num('BENCH_IDEMPOTENT_REQUESTS', 200, 20),
};
