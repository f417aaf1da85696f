// Property: for random customers (many sharing a timestamp or an amount), random filters, sorts and page sizes,
// walking every page of the keyset paginator returns each matching row exactly once, in the order an in-memory sort
// gives (ties by id); and rows inserted between pages never make the walk skip or repeat any of the others.
// Runs through the real domain and query functions (src/domain/customers/customers.ts -> db/queries/customers.ts) on this
// file's test database (PGlite, or PostgreSQL with DATABASE_URL).
import { randomBytes } from 'node:crypto';
import Decimal from 'decimal.js';
import fc from 'fast-check';
import { insertCustomers } from '../../db/queries/customers';
import { createShop } from '../../src/ops/admin';
import { customerCursorList, newCustomerRow } from '../../src/domain/customers/customers';
import { seedCustomerPasts } from '../../src/ops/fixtures/customer-history';
import { listPage } from '../../src/platform/cursor-list';
import { CursorCodec } from '../../src/platform/cursor';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const runs = Number(process.env.PROPERTY_RUNS ?? 40);

let database: TestDatabase;
const codec = new CursorCodec(randomBytes(32));

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

// A few whole seconds, each with a few microsecond offsets: many rows share a timestamp exactly, others differ
// only in the microseconds (which a millisecond Date would lose).
const baseSecond = Date.parse('2026-03-01T00:00:00Z') / 1000;
const seconds = [0, 1, 2, 3600];
const micros = [0, 1, 999, 500000];
const spentPool = ['0', '1.5', '1.50000001', '10', '99.99', '100'];
const countries = [null, 'US', 'DE'] as const;

const timeArb = fc
  .record({ s: fc.constantFrom(...seconds), us: fc.constantFrom(...micros) })
  .map(({ s, us }) => (baseSecond + s) * 1_000_000 + us);
interface Gen {
  local: string;
  created: number;
  updated: number;
  spent: string;
  country: 'US' | 'DE' | null;
  affiliate: boolean;
  blacklisted: boolean;
}
const customerArb: fc.Arbitrary<Gen> = fc.record({
  local: fc.constantFrom('a', 'b', 'ab', 'B', 'z', 'a.b'),
  created: timeArb,
  updated: timeArb,
  spent: fc.constantFrom(...spentPool),
  country: fc.constantFrom(...countries),
  affiliate: fc.boolean(),
  blacklisted: fc.boolean(),
});

const sortArb = fc.constantFrom(
  'created_at',
  '-created_at',
  'updated_at',
  '-updated_at',
  'email',
  '-email',
  'total_spent',
  '-total_spent',
);
interface FilterValues {
  country: 'US' | 'DE';
  is_affiliate: boolean;
  blacklisted: boolean;
  created_after: number;
  min_total_spent: string;
}
type Filters = Partial<FilterValues>;
const filterValuesArb: fc.Arbitrary<FilterValues> = fc.record({
  country: fc.constantFrom('US', 'DE'),
  is_affiliate: fc.boolean(),
  blacklisted: fc.boolean(),
  created_after: fc.constantFrom(...seconds.map((s) => baseSecond + s)),
  min_total_spent: fc.constantFrom(...spentPool),
});
// None, one or two filters at a time (all five at once would match almost nothing), in random order.
const filterArb = fc
  .tuple(
    fc.shuffledSubarray(['country', 'is_affiliate', 'blacklisted', 'created_after', 'min_total_spent'] as const, {
      maxLength: 2,
    }),
    filterValuesArb,
  )
  .map(([keys, values]) => Object.fromEntries(keys.map((k) => [k, values[k]])) as Filters);

function isoMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, -1)}${String(us % 1000).padStart(3, '0')}Z`;
}

interface Row extends Gen {
  id: string;
  email: string;
}

async function insert(shop: { id: string; currency: string }, gens: Gen[], tag: string): Promise<Row[]> {
  const inputs = gens.map((g, i) => ({ ...g, email: `${g.local}${tag}${i}@example.com`.toLowerCase() }));
  const rows = await database.db.transaction().execute(async (trx) => {
    const inserted = await insertCustomers(
      trx,
      shop.id,
      inputs.map((g, i) =>
        newCustomerRow(
          shop,
          {
            email: g.email,
            country: g.country,
            ...(g.affiliate ? { affiliate: { code: `AFF${tag}${i}` } } : {}),
            created_at: isoMicros(g.created),
            updated_at: isoMicros(g.updated),
          },
          new Date(),
        ),
      ),
    );
    // The figures are computed: the spend is a paid order, `blacklisted` an EMAIL entry.
    await seedCustomerPasts(
      trx,
      shop,
      inserted.map((r, i) => ({
        customerId: r.id,
        email: r.email,
        total_spent: inputs[i]!.spent,
        blacklisted: inputs[i]!.blacklisted,
      })),
      new Date(),
    );
    return inserted;
  });
  return rows.map((r, i) => ({ ...inputs[i]!, id: r.id }));
}

function matches(r: Row, f: Filters): boolean {
  if (f.country !== undefined && r.country !== f.country) return false;
  if (f.is_affiliate !== undefined && r.affiliate !== f.is_affiliate) return false;
  if (f.blacklisted !== undefined && r.blacklisted !== f.blacklisted) return false;
  if (f.created_after !== undefined && r.created < f.created_after * 1_000_000) return false;
  if (f.min_total_spent !== undefined && new Decimal(r.spent).lt(f.min_total_spent)) return false;
  return true;
}

const cmpText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // byte order, as collate "C"

function expected(rows: Row[], f: Filters, sort: string): string[] {
  const desc = sort.startsWith('-');
  const field = desc ? sort.slice(1) : sort;
  const key = (a: Row, b: Row): number => {
    switch (field) {
      case 'created_at':
        return a.created - b.created;
      case 'updated_at':
        return a.updated - b.updated;
      case 'email':
        return cmpText(a.email, b.email);
      default:
        return new Decimal(a.spent).comparedTo(b.spent);
    }
  };
  return rows
    .filter((r) => matches(r, f))
    .sort((a, b) => (desc ? -1 : 1) * (key(a, b) || cmpText(a.id, b.id)))
    .map((r) => r.id);
}

function filterText(f: Filters): string | undefined {
  const pairs = Object.entries(f).map(([k, v]) => `${k}:${String(v)}`);
  return pairs.length ? pairs.join(',') : undefined;
}

let shopCount = 0;
async function freshShop() {
  return createShop(database.db, { name: `prop ${++shopCount}`, currency: 'USD' });
}

/** Walks every page; `between` runs after each page (to insert rows mid-walk). */
async function walk(
  shopId: string,
  f: Filters,
  sort: string,
  limit: number,
  between?: (page: number) => Promise<void>,
): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 500; page++) {
    const res = await listPage(
      customerCursorList,
      database.db,
      codec,
      shopId,
      { limit, cursor, filters: filterText(f), sorts: sort },
      undefined,
    );
    expect(res.data.length).toBeLessThanOrEqual(limit);
    seen.push(...res.data.map((c) => c.id));
    expect(res.pagination.has_more).toBe(res.pagination.next_cursor !== null);
    if (!res.pagination.next_cursor) {
      return seen;
    }
    expect(res.data.length).toBe(limit);
    cursor = res.pagination.next_cursor;
    if (between) await between(page);
  }
  throw new Error('walk did not end');
}

test(`every matching row exactly once, in order (${runs} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(customerArb, { maxLength: 40, size: 'max' }),
      filterArb,
      sortArb,
      fc.integer({ min: 1, max: 7 }),
      async (gens, f, sort, limit) => {
        const shop = await freshShop();
        const rows = await insert(shop, gens, 'x');
        const got = await walk(shop.id, f, sort, limit);
        expect(got).toEqual(expected(rows, f, sort));
      },
    ),
    { numRuns: runs },
  );
});

test(`rows inserted during the walk never cause a skip or a repeat (${runs} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(customerArb, { minLength: 1, maxLength: 30, size: 'max' }),
      fc.array(fc.array(customerArb, { maxLength: 4 }), { maxLength: 8 }),
      filterArb,
      sortArb,
      fc.integer({ min: 1, max: 5 }),
      async (gens, inserts, f, sort, limit) => {
        const shop = await freshShop();
        const rows = await insert(shop, gens, 'x');
        const added: Row[] = [];
        const got = await walk(shop.id, f, sort, limit, async (page) => {
          if (page < inserts.length) added.push(...(await insert(shop, inserts[page]!, `n${page}_`)));
        });
        expect(new Set(got).size).toBe(got.length); // no repeat of any row, old or new
        const original = new Set(rows.map((r) => r.id));
        expect(got.filter((id) => original.has(id))).toEqual(expected(rows, f, sort)); // no skip, right order
        // the new rows that did appear are in their place in the order too
        expect(got).toEqual(expected([...rows, ...added], f, sort).filter((id) => got.includes(id)));
      },
    ),
    { numRuns: runs },
  );
});
