// The fixture format of `cli seed`: serials and customers are validated (schema and cross-field rules) before
// anything is written.
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { seedWrite } from '../../src/ops/fixtures/seed-write';
import { ManualClock } from '../../src/platform/clock';

const bad = (value: unknown) => () => parseFixtures(value, new Date());

test('accepts serials on a SERIALS product and customers with an affiliate and a referral', () => {
  expect(() =>
    parseFixtures(
      {
        products: [{ title: 'Keys', type: 'SERIALS', price: '1.00', serials: ['A', 'B'], stock: 2 }],
        customers: [
          {
            email: 'ada@example.com',
            country: 'GB',
            total_spent: '1.5',
            affiliate: { code: 'ADA', commission_percent: '12.5' },
          },
          { email: 'bob@example.com', referred_by: 'ADA@example.com' },
        ],
      },
      new Date(),
    ),
  ).not.toThrow();
});

test.each([
  [
    'serials on a non-SERIALS product',
    { products: [{ title: 'F', type: 'FILE', price: '1', serials: ['A'] }] },
    /type/,
  ],
  ['serials without a type', { products: [{ title: 'F', price: '1', serials: ['A'] }] }, /type/],
  [
    'duplicate serials',
    { products: [{ title: 'K', type: 'SERIALS', price: '1', serials: ['A', 'A'] }] },
    /the same item twice/,
  ],
  ['empty serial', { products: [{ title: 'K', type: 'SERIALS', price: '1', serials: [''] }] }, /serials\/0/],
  [
    'stock not the serial count',
    { products: [{ title: 'K', type: 'SERIALS', price: '1', serials: ['A'], stock: 5 }] },
    /stock must equal/,
  ],
  ['customer without email', { customers: [{ name: 'x' }] }, /email/],
  ['bad email', { customers: [{ email: 'nope' }] }, /email/],
  ['bad country', { customers: [{ email: 'a@b.co', country: 'usa' }] }, /country/],
  ['unknown customer field', { customers: [{ email: 'a@b.co', password: 'x' }] }, /is not a known field/],
  ['duplicate email (any case)', { customers: [{ email: 'a@b.co' }, { email: 'A@b.co' }] }, /duplicates/],
  [
    'duplicate affiliate code',
    {
      customers: [
        { email: 'a@b.co', affiliate: { code: 'X' } },
        { email: 'c@d.co', affiliate: { code: 'X' } },
      ],
    },
    /used twice/,
  ],
  ['referred_by unknown', { customers: [{ email: 'a@b.co', referred_by: 'z@b.co' }] }, /names no customer/],
  [
    'referred_by not an affiliate',
    { customers: [{ email: 'a@b.co' }, { email: 'c@d.co', referred_by: 'a@b.co' }] },
    /not an affiliate/,
  ],
  [
    'commission over 100',
    { customers: [{ email: 'a@b.co', affiliate: { code: 'X', commission_percent: '101' } }] },
    /commission_percent/,
  ],
])('rejects %s', (_name, value, message) => {
  expect(bad(value)).toThrow(FixtureError);
  expect(bad(value)).toThrow(message);
});

test('a fixture write refuses a side effect rather than losing it (seeding writes none)', () => {
  const w = seedWrite({} as Transaction<Database>, 'shop_x', new ManualClock('2026-11-25T00:00:00Z'));
  expect(w.now.toISOString()).toBe('2026-11-25T00:00:00.000Z');
  expect(() => w.effects.emit('order:created', {})).toThrow('a fixture write recorded the event order:created');
  expect(() => w.effects.mail({ to: 'a@example.com', template: 'receipt', data: {} })).toThrow(/queued mail/);
  expect(() => w.effects.audit({ action: 'x', resourceType: 'y', resourceId: 'z' })).toThrow(/audit line/);
});
