// One webhook delivery worker as an OS process of its own, for tests that run several side by side or kill one
// mid-delivery (test/webhooks/webhook-workers.test.ts). Run as `tsx test/helpers/webhook-worker-process.ts` with:
//   DATABASE_URL        the PostgreSQL database to serve (required)
//   WORKER_LEASE_MS     lease of a claim (default 60000)
//   WORKER_TIMEOUT_MS   total time an attempt may take (default 10000)
//   WORKER_BATCH        attempts in flight at once (default 20)
//   WORKER_IDLE_MS      wait after a round that found nothing (default 20)
//   LOG_LEVEL           of the job's logger, written to stderr (default warn)
//   WORKER_STOP_ON_STDIN_END=1  stop when stdin closes: a test that spawns the process with a stdin pipe cannot
//                       leave it running, even if the test runner itself is killed
//   WORKER_CLOCK_FROM_STDIN=1  the job's clock is the system's plus an offset the test moves by writing
//                       `clock-offset <ms>` lines to stdin (answered `clock-offset <ms>` on stdout once in effect), so
//                       a test walks through the hours-long retry schedule without sleeping (test/faults/)
// stdout carries only the protocol the test reads: `ready <pid>` once the job can claim, then `claimed <n>` each time
// n > 0 claimed deliveries were attempted and recorded (so a process killed mid-attempt never counts that attempt).
// SIGTERM (or SIGINT) stops claiming, lets the attempts in flight finish and be recorded, closes the database and
// exits 0; SIGKILL is what the crash test sends.
import winston from 'winston';
import { openPostgres } from '../../db/database';
import { systemClock, type Clock } from '../../src/platform/clock';
import { loadSecretBox } from '../../src/platform/secret-box';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return value;
}

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is required');
  const idleMs = intEnv('WORKER_IDLE_MS', 20);
  const logger = winston.createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    // Every level to stderr: stdout is the protocol.
    transports: [new winston.transports.Console({ stderrLevels: Object.keys(winston.config.npm.levels) })],
  });
  let clockOffsetMs = 0;
  const clock: Clock =
    process.env.WORKER_CLOCK_FROM_STDIN === '1' ? { now: () => new Date(Date.now() + clockOffsetMs) } : systemClock;
  const database = openPostgres(url, { max: 10 });
  const job = webhookDeliveryJob(database.db, {
    clock,
    logger,
    secrets: await loadSecretBox(database.db, undefined),
    allowPrivateTargets: true,
    leaseMs: intEnv('WORKER_LEASE_MS', 60_000),
    timeoutMs: intEnv('WORKER_TIMEOUT_MS', 10_000),
    concurrency: intEnv('WORKER_BATCH', 20),
  });

  let running = true;
  let wake: (() => void) | undefined;
  const stop = () => {
    running = false;
    wake?.();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (process.env.WORKER_STOP_ON_STDIN_END === '1') {
    process.stdin.on('end', stop).on('close', stop).on('error', stop).resume();
  }
  if (process.env.WORKER_CLOCK_FROM_STDIN === '1') {
    let pending = '';
    process.stdin.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const match = /^clock-offset (-?\d+)$/.exec(line.trim());
        if (!match) continue;
        clockOffsetMs = Number(match[1]);
        process.stdout.write(`clock-offset ${clockOffsetMs}\n`);
      }
    });
  }

  process.stdout.write(`ready ${process.pid}\n`);
  while (running) {
    let claimed = 0;
    try {
      claimed = await job.runOnce();
    } catch (err) {
      // The database briefly away: try again after the idle wait, as src/worker/worker.ts does.
      logger.warn('webhook job failed', { error: (err as Error)?.message });
    }
    if (claimed > 0) process.stdout.write(`claimed ${claimed}\n`);
    else if (running) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, idleMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }
  const rest = (await job.settle?.()) ?? 0;
  if (rest > 0) process.stdout.write(`claimed ${rest}\n`);
  await database.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
