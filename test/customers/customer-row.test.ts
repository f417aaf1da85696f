// newCustomerRow (src/domain/customers/customers.ts): the row a new customer gets, with its defaults.
import { newCustomerRow } from '../../src/domain/customers/customers';

const shop = { currency: 'EUR' };
/** The time of the write that makes the row (an affiliate without a creation time became one then). */
const now = new Date('2026-03-01T12:00:00Z');

test('only an email: new ids, the email lower-cased, everything else empty or zero, a wallet in the shop currency', () => {
  const row = newCustomerRow(shop, { email: 'Ada@Example.COM' }, now);
  expect(row).toEqual({
    id: expect.stringMatching(/^cus_/),
    email: 'ada@example.com',
    name: null,
    phone: null,
    country: null,
    note: null,
    wallet_id: expect.stringMatching(/^wal_/),
    wallet_currency: 'EUR',
    wallet_balance: '0',
    is_affiliate: false,
    affiliate_code: null,
    affiliate_status: null,
    affiliate_commission_percent: null,
    affiliate_balance: '0',
    affiliate_lifetime_earnings: '0',
    affiliate_referred_orders: 0,
    affiliate_approved_at: null,
  });
  // No times given: the database's now() sets both.
  expect(row).not.toHaveProperty('created_at');
  expect(row).not.toHaveProperty('updated_at');
  // total_spent, total_orders and blacklisted are computed (db/queries/customers.ts), never part of the row.
  expect(row).not.toHaveProperty('total_spent');
  expect(row).not.toHaveProperty('blacklisted');
  expect(newCustomerRow(shop, { email: 'a@b.co' }, now).id).not.toBe(row.id);
});

test('every field given is kept as given', () => {
  const row = newCustomerRow(
    shop,
    {
      email: 'bob@example.com',
      name: 'Bob',
      phone: '+44 20 7946 0000',
      country: 'GB',
      note: 'VIP',
      wallet_balance: '7.25',
      affiliate: {
        code: 'BOB5',
        status: 'SUSPENDED',
        commission_percent: '12.5',
        balance: '1.5',
        lifetime_earnings: '30',
        referred_orders: 4,
      },
      created_at: '2026-01-10T00:00:00Z',
      updated_at: '2026-01-11T00:00:00Z',
    },
    now,
  );
  expect(row).toMatchObject({
    name: 'Bob',
    phone: '+44 20 7946 0000',
    country: 'GB',
    note: 'VIP',
    wallet_balance: '7.25',
    is_affiliate: true,
    affiliate_code: 'BOB5',
    affiliate_status: 'SUSPENDED',
    affiliate_commission_percent: '12.5',
    affiliate_balance: '1.5',
    affiliate_lifetime_earnings: '30',
    affiliate_referred_orders: 4,
    // A fixture affiliate became one when it was created.
    affiliate_approved_at: '2026-01-10T00:00:00Z',
    created_at: '2026-01-10T00:00:00Z',
    updated_at: '2026-01-11T00:00:00Z',
  });
});

test('an affiliate with only a code: ACTIVE, 10 % commission, nothing earned yet, approved at the write', () => {
  expect(newCustomerRow(shop, { email: 'a@b.co', affiliate: { code: 'A1' } }, now)).toMatchObject({
    is_affiliate: true,
    affiliate_code: 'A1',
    affiliate_status: 'ACTIVE',
    affiliate_commission_percent: '10',
    affiliate_balance: '0',
    affiliate_lifetime_earnings: '0',
    affiliate_referred_orders: 0,
    affiliate_approved_at: now,
  });
});

test('a creation time alone is also the update time', () => {
  const row = newCustomerRow(shop, { email: 'a@b.co', created_at: '2026-02-01T00:00:00Z' }, now);
  expect(row).toMatchObject({ created_at: '2026-02-01T00:00:00Z', updated_at: '2026-02-01T00:00:00Z' });
  const onlyUpdated = newCustomerRow(shop, { email: 'a@b.co', updated_at: '2026-02-02T00:00:00Z' }, now);
  expect(onlyUpdated).toMatchObject({ updated_at: '2026-02-02T00:00:00Z' });
  expect(onlyUpdated).not.toHaveProperty('created_at');
});
