// Time for rules that depend on it (retry schedules, leases, expiry): injected, so tests move it instead of sleeping.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private ms: number;

  constructor(start: Date | string | number = '2026-11-22T00:00:00Z') {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  advance(ms: number): void {
    this.ms += ms;
  }

  set(to: Date | string | number): void {
    this.ms = new Date(to).getTime();
  }
}

/**
 * The clock of a shop whose clock runs `offsetMs` ahead of real time (a test shop whose test clock was advanced):
 * the same clock when the offset is 0, so a live shop always runs on real time.
 */
export function clockAhead(clock: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return clock;
  return { now: () => new Date(clock.now().getTime() + offsetMs) };
}
