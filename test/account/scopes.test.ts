// Scopes fail closed: an operation the generated table does not know needs `*`, and an operation that names several
// scopes needs every one of them.
import { hasScope } from '../../src/auth/scopes';
import { scopesNeeded } from '../../src/http/api';
import { operations } from '../../src/generated/operations';

test('an operation missing from the generated table needs full access', () => {
  expect(scopesNeeded('noSuchOperation')).toEqual(['*']);
  expect(scopesNeeded(undefined)).toEqual(['*']);
  expect(scopesNeeded('toString')).toEqual(['*']); // not an own entry: no prototype look-ups
  expect(hasScope(['products.read', 'orders.write'], scopesNeeded('noSuchOperation'))).toBe(false);
  expect(hasScope(['*'], scopesNeeded('noSuchOperation'))).toBe(true);
});

test('a known operation needs exactly its scopes from the contract', () => {
  expect(scopesNeeded('listProducts')).toEqual(operations.listProducts.scopes);
  expect(scopesNeeded('getAccount')).toEqual([]);
});

test('several scopes: all of them are needed', () => {
  const needed = ['orders.read', 'customers.read'];
  expect(hasScope(['orders.read'], needed)).toBe(false);
  expect(hasScope(['customers.read'], needed)).toBe(false);
  expect(hasScope(['customers.read', 'orders.read'], needed)).toBe(true);
  expect(hasScope(['*'], needed)).toBe(true);
  expect(hasScope([], [])).toBe(true);
  expect(hasScope(['orders.write'], ['orders.read'])).toBe(false); // write does not imply read
});
