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
