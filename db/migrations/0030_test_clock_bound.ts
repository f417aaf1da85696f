// Test clocks are bounded (issue 36): a test shop's clock runs at most ten years (with their leap days: 316,224,000
// seconds) ahead of real time, so every time it writes stays inside what PostgreSQL and an ISO string can hold.
// Before the bound, advances could take a clock past year 9999, where no outcome of the shop's webhook deliveries
// could be recorded. Clocks already beyond it are brought back to it (the only way to make that shop's times writable
// again), and the database refuses any offset beyond it from now on, whatever the code does. The API and the CLI
// refuse such an advance first, with a clear error (src/domain/test-mode.ts, maxClockOffsetSeconds).
import { sql, type Kysely } from 'kysely';

/** Ten years of 366 days, in milliseconds: src/domain/test-mode.ts's maxClockOffsetSeconds * 1000. */
const MAX_OFFSET_MS = 10 * 366 * 24 * 3600 * 1000;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update shops set clock_offset_ms = ${sql.lit(MAX_OFFSET_MS)} where clock_offset_ms > ${sql.lit(MAX_OFFSET_MS)}`.execute(
    db,
  );
  await sql`alter table shops drop constraint shops_test_clock_check,
    add constraint shops_test_clock_check check (clock_offset_ms between 0 and ${sql.lit(MAX_OFFSET_MS)}
      and (not livemode or clock_offset_ms = 0))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table shops drop constraint shops_test_clock_check,
    add constraint shops_test_clock_check check (clock_offset_ms >= 0 and (not livemode or clock_offset_ms = 0))`.execute(
    db,
  );
}
