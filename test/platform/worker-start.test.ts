// The worker loop inside a starting server (`npm start`) waits one idle interval before its first round, so the
// start's first requests go first; `npm run worker` and tests start at once. Either way stop() ends the wait.
import { createLogger } from '../../src/logger';
import { Worker, type Job } from '../../src/worker/worker';

const logger = createLogger('silent');

function countingJob(): Job & { rounds: number } {
  const job = {
    name: 'counting',
    rounds: 0,
    async runOnce() {
      job.rounds++;
      return 0;
    },
  };
  return job;
}

test('idleFirst: no round before one idle interval; stop() during the wait ends it without a round', async () => {
  const job = countingJob();
  const worker = new Worker([job], { logger, idleMs: 60_000 });
  worker.start({ idleFirst: true });
  await new Promise((r) => setTimeout(r, 300));
  expect(job.rounds).toBe(0);
  await worker.stop(); // would hang for a minute (past the test's timeout) if the wait were not woken
  expect(job.rounds).toBe(0);
}, 10_000);

test('without it the first round runs at once', async () => {
  const job = countingJob();
  const worker = new Worker([job], { logger, idleMs: 60_000 });
  worker.start();
  for (let i = 0; i < 100 && job.rounds === 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(job.rounds).toBe(1);
  await worker.stop();
  expect(job.rounds).toBe(1);
}, 10_000);
