// The background worker: a loop over jobs (webhook deliveries, mail, later expiry and renewals). Each job claims
// its own due rows with FOR UPDATE SKIP LOCKED and a lease, so any number of workers, in this process or others,
// can run side by side without doing the same work twice. The loop only decides when to look again: at once while
// a job finds work, after `idleMs` when none did.
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';

export interface Job {
  name: string;
  /** Handles one batch of due work; returns how many items it handled (0: nothing was due). */
  runOnce(): Promise<number>;
}

export interface WorkerOptions {
  logger: Logger;
  /** Wait between polls when no job found work (default 500 ms). */
  idleMs?: number;
}

export class Worker {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly jobs: readonly Job[],
    private readonly options: WorkerOptions,
  ) {}

  /** Runs every job until none finds work: what tests call instead of waiting for the loop. */
  async drain(maxRounds = 1000): Promise<number> {
    let total = 0;
    for (let round = 0; round < maxRounds; round++) {
      const handled = await this.runJobsOnce();
      total += handled;
      if (handled === 0) return total;
    }
    return total;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const idleMs = this.options.idleMs ?? 500;
    while (this.running) {
      const handled = await this.runJobsOnce();
      if (handled === 0 && this.running) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, idleMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  private async runJobsOnce(): Promise<number> {
    let handled = 0;
    for (const job of this.jobs) {
      try {
        handled += await job.runOnce();
      } catch (err) {
        // A job that fails (database briefly away) is tried again on the next round; the worker itself goes on.
        this.options.logger.warn('worker job failed', { job: job.name, error: (err as Error)?.message });
      }
    }
    return handled;
  }
}

/** Shared by the jobs: the clock they read and the lease a claim holds. */
export interface JobContext {
  clock: Clock;
  logger: Logger;
  /** How long a claimed row stays claimed; a worker that died holding it loses it after this (default 60 s). */
  leaseMs?: number;
}
