// The fast timestamptz parser (db/timestamptz.ts) gives the very Date the general parser gives, for every shape
// PostgreSQL prints and for what it hands on; and the database's own output, read through the drivers, is the
// instant PostgreSQL means.
import fc from 'fast-check';
import { sql } from 'kysely';
import { timestamptzParser } from '../../db/timestamptz';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

// The general parser pg uses (pg-types' own dependency); pg's registry already holds the fast one.
const general = require('postgres-date') as (text: string) => Date | number | null;
const fast = timestamptzParser(general);
const time = (v: Date | number | null) => (v instanceof Date ? v.getTime() : v);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** PostgreSQL's ISO output of a timestamptz: the fraction without trailing zeros, the zone ±HH[:MM[:SS]]. */
const isoText = fc
  .record({
    year: fc.integer({ min: 100, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    micros: fc.integer({ min: 0, max: 999_999 }),
    sign: fc.constantFrom('+', '-'),
    offH: fc.integer({ min: 0, max: 15 }),
    offM: fc.constantFrom(0, 30, 45, 17),
    offS: fc.constantFrom(0, 0, 0, 12),
  })
  .map((t) => {
    const fraction = t.micros ? `.${pad(t.micros, 6).replace(/0+$/, '')}` : '';
    const zone = `${t.sign}${pad(t.offH)}${t.offM || t.offS ? `:${pad(t.offM)}` : ''}${t.offS ? `:${pad(t.offS)}` : ''}`;
    return `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)} ${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}${fraction}${zone}`;
  });

test('the same instant as the general parser for every ISO timestamptz', () => {
  fc.assert(
    fc.property(isoText, (text) => {
      const got = fast(text);
      expect(got).toBeInstanceOf(Date);
      expect({ text, ms: time(got) }).toEqual({ text, ms: time(general(text)) });
    }),
    { numRuns: 5000 },
  );
});

test('the same result for what it does not read itself, and for text that only looks close', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        isoText.map((t) => t.slice(0, -1)),
        fc.string({ maxLength: 40 }),
      ),
      (text) => {
        expect(time(fast(text))).toEqual(time(general(text)));
      },
    ),
    { numRuns: 2000 },
  );
  for (const text of [
    'infinity',
    '-infinity',
    '2026-11-22 08:57:00+00 BC',
    '0099-01-01 00:00:00+00',
    '0001-01-01 00:00:00+00',
    '12026-11-22 08:57:00+00',
    '2026-11-22 08:57:00.1234567+00',
    '2026-11-22 08:57:00.+00',
    '2026-11-22 08:57:00+0',
    '2026-11-22 08:57:00+00:3',
    '2026-11-22 08:57:00+00:30:1',
    '2026-11-22 08:57:00+00:30:15x',
    '2026-11-22T08:57:00Z',
    '2026-11-22 08:57:00',
  ]) {
    expect({ text, ms: time(fast(text)) }).toEqual({ text, ms: time(general(text)) });
  }
});

describe('through the database driver', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  test('timestamptz values come back as the instants PostgreSQL holds, in any session time zone', async () => {
    const values = [
      '2026-11-22 08:57:00.123456+00',
      '2026-11-22 08:57:00+00',
      '1999-12-31 23:59:59.999999+00',
      '2026-03-29 01:30:00.5+00',
      '1883-11-18 12:00:00+00',
    ];
    await database.db.connection().execute(async (conn) => {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Europe/Amsterdam']) {
        await sql`select set_config('TimeZone', ${zone}, false)`.execute(conn);
        for (const value of values) {
          const { rows } = await sql<{ at: Date; ms: string }>`
            select ${value}::timestamptz as at,
                   floor(extract(epoch from ${value}::timestamptz) * 1000)::bigint::text as ms`.execute(conn);
          expect({ zone, value, ms: rows[0]!.at.getTime() }).toEqual({ zone, value, ms: Number(rows[0]!.ms) });
        }
      }
    });
  });
});
