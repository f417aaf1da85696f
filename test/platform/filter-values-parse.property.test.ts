// Filter values (src/platform/list-query.ts parseValue): impossible or out-of-range times are refused with a reason,
// and for every value type, whatever the input, parseValue never throws and every value it accepts is one
// PostgreSQL accepts for its type and reads back unchanged (same text, same number, same instant) — so an accepted
// filter can never become a database error (a 500) or silently mean something else. Checked on this file's test
// database (PGlite, or PostgreSQL with DATABASE_URL).
import fc from 'fast-check';
import { sql } from 'kysely';
import { parseValue, type FieldType, type FilterField } from '../../src/platform/list-query';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const runs = Number(process.env.PROPERTY_RUNS ?? 200);

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const field = (type: FieldType): FilterField => ({
  column: 'x',
  type,
  ...(type === 'enum' ? { values: ['ACTIVE', 'SUSPENDED', 'ÉTÉ'] } : {}),
});
const timestamp = field('timestamp');
const accept = (type: FieldType, raw: string) => {
  const r = parseValue(field(type), raw);
  return 'value' in r ? r.value : undefined;
};

async function one<T>(query: ReturnType<typeof sql<T>>): Promise<T> {
  const { rows } = await query.execute(database.db);
  return rows[0]!;
}

// ---- an oracle for times, written independently of parseValue (no Date: civil-from-days arithmetic) -------------

const leap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const daysInMonth = (y: number, m: number) => [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;
/** Days from 1970-01-01 to y-m-d (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

interface TimeParts {
  year: number;
  month: number;
  day: number;
  time?: {
    hour: number;
    minute: number;
    second?: number;
    fraction?: string;
    zone: 'Z' | '' | { sign: '+' | '-'; hours: number; minutes: number; colon: boolean };
  };
}

const d2 = (n: number) => String(n).padStart(2, '0');
function formatTime(p: TimeParts): string {
  let s = `${String(p.year).padStart(4, '0')}-${d2(p.month)}-${d2(p.day)}`;
  if (!p.time) return s;
  const t = p.time;
  s += `T${d2(t.hour)}:${d2(t.minute)}`;
  if (t.second !== undefined) s += `:${d2(t.second)}${t.fraction !== undefined ? `.${t.fraction}` : ''}`;
  if (typeof t.zone === 'string') return s + t.zone;
  return `${s}${t.zone.sign}${d2(t.zone.hours)}${t.zone.colon ? ':' : ''}${d2(t.zone.minutes)}`;
}

/** The instant in microseconds since 1970, or undefined when the text names no acceptable time. */
function oracle(p: TimeParts): bigint | undefined {
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > daysInMonth(p.year, p.month)) return undefined;
  let seconds = daysFromCivil(p.year, p.month, p.day) * 86400;
  let micros = 0n;
  if (p.time) {
    const t = p.time;
    if (t.zone === '' || t.hour > 23 || t.minute > 59 || (t.second ?? 0) > 59) return undefined;
    const fraction = t.second === undefined ? undefined : t.fraction; // written only after seconds
    if (fraction !== undefined && (fraction.length < 1 || fraction.length > 6)) return undefined;
    let offset = 0;
    if (typeof t.zone !== 'string') {
      if (t.zone.minutes > 59 || t.zone.hours * 60 + t.zone.minutes > 14 * 60) return undefined;
      offset = (t.zone.sign === '-' ? -1 : 1) * (t.zone.hours * 60 + t.zone.minutes) * 60;
    }
    seconds += t.hour * 3600 + t.minute * 60 + (t.second ?? 0) - offset;
    micros = BigInt((fraction ?? '').padEnd(6, '0') || '0');
  }
  const total = BigInt(seconds) * 1_000_000n + micros;
  return total >= 0n && total <= 4_102_444_800_000_000n ? total : undefined;
}

const zoneArb = fc.oneof(
  fc.constant('Z' as const),
  fc.constant('' as const),
  fc.record({
    sign: fc.constantFrom('+' as const, '-' as const),
    hours: fc.oneof(fc.integer({ min: 0, max: 15 }), fc.constantFrom(13, 14, 99)),
    minutes: fc.oneof(fc.constantFrom(0, 30, 45, 59, 60, 99), fc.integer({ min: 0, max: 99 })),
    colon: fc.boolean(),
  }),
);
/** Times near the edges: day 0 to 32 in every month, hour 24, second 60, leap years, the range's ends. */
const nearTimeArb: fc.Arbitrary<TimeParts> = fc.record(
  {
    year: fc.oneof(
      // 0070 is not 1970, whatever Date.UTC says
      fc.constantFrom(0, 1, 70, 99, 1900, 1968, 1969, 1970, 1971, 2000, 2023, 2024, 2026, 2099, 2100, 2101, 9999),
      fc.integer({ min: 1965, max: 2105 }),
    ),
    month: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 2, 13, 99)),
    day: fc.oneof(fc.integer({ min: 1, max: 28 }), fc.constantFrom(0, 29, 30, 31, 32, 99)),
    time: fc.record(
      {
        hour: fc.oneof(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 23, 24, 25, 99)),
        minute: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constantFrom(59, 60, 61, 99)),
        second: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constantFrom(59, 60, 61, 99)),
        fraction: fc.stringMatching(/^\d{0,8}$/),
        zone: zoneArb,
      },
      { requiredKeys: ['hour', 'minute', 'zone'] },
    ),
  },
  { requiredKeys: ['year', 'month', 'day'] },
);

describe('times', () => {
  test.each([
    ['2026-02-30T00:00:00Z', /2026-02 has no day 30/],
    ['2026-02-30', /2026-02 has no day 30/],
    ['2026-02-29T12:00:00Z', /has no day 29/], // not a leap year
    ['2100-02-29', /has no day 29/], // divisible by 100, not by 400
    ['2026-04-31T00:00:00Z', /has no day 31/],
    ['2026-01-00', /has no day 00/],
    ['2026-13-01T00:00:00Z', /month \(13\)/],
    ['2026-00-10', /month \(00\)/],
    ['2026-01-01T24:00:00Z', /time of day/],
    ['2026-01-01T23:60:00Z', /time of day/],
    ['2026-01-01T23:59:60Z', /time of day/],
    ['2026-01-01T23:59:61Z', /time of day/],
    ['2026-01-01T00:00:00+14:01', /offset/],
    ['2026-01-01T00:00:00-1500', /offset/],
    ['2026-01-01T00:00:00+00:60', /offset/],
    ['1969-12-31T23:59:59Z', /1970-01-01/],
    ['1970-01-01T00:30:00+01:00', /1970-01-01/],
    ['2100-01-01T00:00:00.000001Z', /2100-01-01/],
    ['2101-01-01', /2100-01-01/],
    ['0000-01-01', /2100-01-01/],
    ['4102444801', /2100-01-01/],
    ['99999999999', /2100-01-01/],
    ['2026-11-22T03:10:00', /ISO 8601/], // no offset: the session's zone would decide
    ['2026-11-22T03:10:00.1234567Z', /ISO 8601/],
    ['2026-11-22 03:10:00Z', /ISO 8601/],
    ['yesterday', /ISO 8601/],
  ])('%s is refused', (raw, reason) => {
    const r = parseValue(timestamp, raw);
    expect(r).toEqual({ error: expect.stringMatching(reason) });
  });

  test.each([
    ['2024-02-29', '2024-02-29T00:00:00Z'],
    ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00Z'],
    ['1969-12-31T23:00:00-01:00', '1970-01-01T00:00:00Z'],
    ['2100-01-01T00:00:00.000000Z', '2100-01-01T00:00:00Z'],
    ['2099-12-31T23:00:00-0100', '2100-01-01T00:00:00Z'],
    ['2026-11-22T03:10:00.123450+01:00', '2026-11-22T02:10:00.12345Z'],
    ['2026-11-22T03:10+14:00', '2026-11-21T13:10:00Z'],
    ['2026-11-22T03:10:59.999999-14:00', '2026-11-22T17:10:59.999999Z'],
    ['0', '1970-01-01T00:00:00Z'],
    ['4102444800', '2100-01-01T00:00:00Z'],
    ['1768003204', '2026-01-10T00:00:04Z'],
  ])('%s is %s', (raw, value) => {
    expect(parseValue(timestamp, raw)).toEqual({ value });
  });

  test(`near-valid times are accepted exactly when they exist and are in range, meaning that instant (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(nearTimeArb, async (parts) => {
        const raw = formatTime(parts);
        const expected = oracle(parts);
        const got = accept('timestamp', raw);
        if (expected === undefined) {
          expect(got).toBeUndefined();
          return;
        }
        expect(typeof got).toBe('string');
        const row = await one(
          sql<{ us: string }>`select (extract(epoch from ${got}::timestamptz) * 1000000)::bigint::text as us`,
        );
        expect(BigInt(row.us)).toBe(expected);
      }),
      { numRuns: runs },
    );
  });
});

// ---- every type: arbitrary and near-valid input --------------------------------------------------------------

const nul = '\u0000';
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
/** Any text, with the characters that trouble databases and parsers mixed in. */
const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.oneof(fc.constantFrom(nul, '\u007f', '\u0085', '\u00a0', '\ufeff', 'é', '💳'), loneSurrogate) }),
  fc.tuple(fc.string(), fc.constantFrom(nul, '\ud800', '\n', ','), fc.string()).map(([a, b, c]) => a + b + c),
);
const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
const sprinkle = (arb: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 3, arbitrary: arb },
    fc.tuple(arb, fc.nat(), fc.constantFrom(nul, '\ud800', ' ', 'é', '\t')).map(([s, at, c]) => {
      const i = s.length ? at % (s.length + 1) : 0;
      return s.slice(0, i) + c + s.slice(i);
    }),
  );

const nearValid: Record<FieldType, fc.Arbitrary<string>> = {
  string: anyText,
  email: fc
    .tuple(
      fc.oneof(fc.stringMatching(/^[a-z.+]{1,20}$/), anyText),
      fc.constantFrom('@', '@@', ''),
      fc.oneof(fc.stringMatching(/^[a-z]{1,10}\.[a-z]{2,4}$/), anyText),
    )
    .map(([a, at, b]) => a + at + b),
  id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{0,70}$/), anyText),
  enum: fc.oneof(fc.constantFrom('ACTIVE', 'active', 'ACTIVE ', 'ÉTÉ', 'ETE', 'ÉTÉ'.normalize('NFD')), anyText),
  country: fc.oneof(fc.stringMatching(/^[A-Za-z]{1,3}$/), fc.constantFrom('US', 'ÜS', 'us'), anyText),
  currency: fc.oneof(fc.stringMatching(/^[A-Za-z]{2,4}$/), fc.constantFrom('USD', 'usd', 'ÜSD'), anyText),
  integer: fc.oneof(
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
    fc.tuple(fc.constantFrom('', '-', '+', '0', '-0', ' '), digits(0, 25)).map(([a, b]) => a + b),
    fc.constantFrom('9007199254740991', '9007199254740992', '-9007199254740991', '1e3', '0x10', '1.0', '-0'),
    anyText,
  ),
  decimal: fc.oneof(
    fc
      .tuple(fc.constantFrom('', '-', '+', '0', '-0'), digits(0, 25), fc.constantFrom('', '.'), digits(0, 12))
      .map(([a, b, c, d]) => a + b + c + d),
    fc.constantFrom('99999999999999999999.99999999', '-99999999999999999999.99999999', '1e3', 'NaN', 'Infinity'),
    anyText,
  ),
  boolean: fc.oneof(fc.constantFrom('true', 'false', 'TRUE', 'True', 't', '1', 'yes', 'true '), anyText),
  timestamp: fc.oneof(
    nearTimeArb.map(formatTime),
    digits(1, 13),
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    anyText,
  ),
};

/** What PostgreSQL makes of an accepted value, for the type it is compared as. */
async function databaseCheck(type: FieldType, raw: string, value: string | number | boolean): Promise<void> {
  switch (type) {
    case 'string':
    case 'email':
    case 'id':
    case 'enum':
    case 'currency':
    case 'country': {
      // Stored exactly: a NUL would be refused, and a lone surrogate would not survive UTF-8 (the driver would send
      // U+FFFD). Compared as bytes inside the database, since a driver may strip a leading BOM when reading back.
      expect(typeof value).toBe('string');
      expect(Buffer.from(String(value), 'utf8').toString('utf8')).toBe(value);
      const row = await one(
        sql<{ hex: string; country: boolean }>`select encode(convert_to(${value}::text, 'UTF8'), 'hex') as hex,
          ${value} ~ '^[A-Z]{2}$' as country`,
      );
      expect(row.hex).toBe(Buffer.from(String(value), 'utf8').toString('hex'));
      if (type === 'country') expect(row.country).toBe(true);
      return;
    }
    case 'integer': {
      const row = await one(sql<{ v: string }>`select ${value}::bigint::text as v`);
      expect(BigInt(row.v)).toBe(BigInt(raw));
      return;
    }
    case 'decimal': {
      // As the filter uses it: compared with a numeric(20,8) column. And the same number as the text sent.
      const row = await one(
        sql<{ same: boolean; compared: boolean }>`select ${value}::numeric = ${raw}::numeric as same,
          (0::numeric(20,8) >= ${value}) is not null as compared`,
      );
      expect(row).toEqual({ same: true, compared: true });
      return;
    }
    case 'boolean': {
      const row = await one(sql<{ v: boolean }>`select ${value}::boolean as v`);
      expect(row.v).toBe(raw === 'true');
      return;
    }
    case 'timestamp': {
      // The instant PostgreSQL reads from the normalised text is the one the raw text names.
      const same = /^\d+$/.test(raw)
        ? sql<{ same: boolean }>`select ${value}::timestamptz = to_timestamp(${raw}::bigint) as same`
        : raw.includes('T')
          ? sql<{ same: boolean }>`select ${value}::timestamptz = ${raw}::timestamptz as same`
          : sql<{
              same: boolean;
            }>`select ${value}::timestamptz = (${raw}::date::text || ' 00:00:00+00')::timestamptz as same`;
      expect((await one(same)).same).toBe(true);
      return;
    }
  }
}

const types = Object.keys(nearValid) as FieldType[];

test.each(types)(
  `%s: parseValue never throws, and PostgreSQL takes every value it accepts unchanged (${runs} runs)`,
  async (type) => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(sprinkle(nearValid[type]), async (raw) => {
        const r = parseValue(field(type), raw);
        if ('error' in r) {
          expect(r.error).toEqual(expect.any(String));
          return;
        }
        accepted++;
        await databaseCheck(type, raw, r.value);
      }),
      { numRuns: runs },
    );
    // The generators must reach the accepting side too, or the property proves nothing.
    expect(accepted).toBeGreaterThan(type === 'string' ? runs / 4 : runs / 50);
  },
);
