// The background worker: a loop over jobs (webhook deliveries, mail, later expiry and renewals). Each job claims
// its own due rows with FOR UPDATE SKIP LOCKED and a lease, so any number of workers, in this process or others,
// can run side by side without doing the same work twice. The loop only decides when to look again: at once while
// a job finds work, after `idleMs` when none did.
// A test shop whose test clock was advanced runs ahead of real time: each round first runs the jobs whose work falls
// due with time once for each such shop, restricted to it and on its clock (what a request of that shop reads), then
// every job for every shop at real time. Time only moves forward, so the real-time pass never does a test shop's
// work early; a live shop's clock never moves (clock_offset_ms is 0), so live shops always run on real time.
import type { Kysely } from 'kysely';
import { shopsWithClockAhead } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import type { Logger } from '../logger';
import { clockAhead, type Clock } from '../platform/clock';

/** One shop's pass: only its rows, judged by its clock. */
export interface JobScope {
  shopId: string;
  clock: Clock;
}

export interface Job {
  name: string;
  /**
   * Handles one batch of due work; returns how many items it handled (0: nothing was due). With a scope, only that
   * shop's work falling due by the scope's clock (a job without `onShopClocks` is never given one).
   */
  runOnce(scope?: JobScope): Promise<number>;
  /** The job's work falls due with time (expiry, renewals, retries): it also runs on each advanced shop clock. */
  onShopClocks?: boolean;
  /**
   * For a job whose work goes on after runOnce returns (webhook attempts in flight): waits until that work is done
   * and recorded; returns how many items it handled since runOnce last reported. Called on shutdown.
   */
  settle?(): Promise<number>;
}

export interface WorkerOptions {
  logger: Logger;
  /** Wait between polls when no job found work (default 500 ms). */
  idleMs?: number;
  /**
   * Where the shops whose clock runs ahead are found, and the real clock their offsets add to; without it the worker
   * runs the real-time pass only.
   */
  shopClocks?: { db: Kysely<Database>; clock: Clock };
}

export class Worker {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly jobs: readonly Job[],
    private readonly options: WorkerOptions,
  ) {}

  /** Runs every job (the shop-clock passes included) until none finds work: what tests call instead of waiting. */
  async drain(maxRounds = 1000): Promise<number> {
    let total = 0;
    for (let round = 0; round < maxRounds; round++) {
      const handled = await this.runJobsOnce();
      total += handled;
      if (handled === 0) return total;
    }
    return total;
  }

  /**
   * Starts the loop. With `idleFirst` its first round waits one idle interval, as after a round that found nothing:
   * a server starting gives its first requests the process first (on the embedded database the jobs' queries run in
   * this process, and the first round's claims, planned for the first time, were ~45 ms in front of a restart's
   * first request).
   */
  start(options: { idleFirst?: boolean } = {}): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run(options.idleFirst ?? false);
  }

  /** Stops claiming; resolves once the work under way (attempts in flight included) is finished and recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    for (const job of this.jobs) {
      try {
        await job.settle?.();
      } catch (err) {
        // Not recorded: the leases run out and the work is done again by a worker that runs. Nothing is lost.
        this.options.logger.warn('worker job could not finish its work', {
          job: job.name,
          error: (err as Error)?.message,
        });
      }
    }
  }

  private async run(idleFirst: boolean): Promise<void> {
    const idleMs = this.options.idleMs ?? 500;
    if (idleFirst) await this.pause(idleMs);
    while (this.running) {
      const handled = await this.runJobsOnce();
      if (handled === 0 && this.running) await this.pause(idleMs);
    }
  }

  /** Waits `ms`, or less if stop() wakes it. */
  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  private async runJobsOnce(): Promise<number> {
    let handled = await this.runShopClockPasses();
    for (const job of this.jobs) handled += await this.runJob(job);
    return handled;
  }

  /** The time-dependent jobs once for each shop whose clock runs ahead, restricted to it, on its clock. */
  private async runShopClockPasses(): Promise<number> {
    const shopClocks = this.options.shopClocks;
    if (!shopClocks) return 0;
    let shops: { id: string; offsetMs: number }[];
    try {
      shops = await shopsWithClockAhead(shopClocks.db);
    } catch (err) {
      this.options.logger.warn('worker could not list shop clocks', { error: (err as Error)?.message });
      return 0;
    }
    let handled = 0;
    for (const shop of shops) {
      const scope = { shopId: shop.id, clock: clockAhead(shopClocks.clock, shop.offsetMs) };
      for (const job of this.jobs) if (job.onShopClocks) handled += await this.runJob(job, scope);
    }
    return handled;
  }

  private async runJob(job: Job, scope?: JobScope): Promise<number> {
    try {
      return await job.runOnce(scope);
    } catch (err) {
      // A job that fails (database briefly away) is tried again on the next round; the worker itself goes on.
      this.options.logger.warn('worker job failed', {
        job: job.name,
        ...(scope ? { shop_id: scope.shopId } : {}),
        error: (err as Error)?.message,
      });
      return 0;
    }
  }
}

/** Shared by the jobs: the clock they read and the lease a claim holds. */
export interface JobContext {
  clock: Clock;
  logger: Logger;
  /** How long a claimed row stays claimed; a worker that died holding it loses it after this (default 60 s). */
  leaseMs?: number;
}
