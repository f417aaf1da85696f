// The account views (src/domain/account/account.ts) for a credential that authentication found but that is gone by the time
// the view reads the rest of its account: 401, not a 500 or an empty account.
import { sql } from 'kysely';
import { liveCredentialWithShopByHash } from '../../db/queries/credentials';
import { hashCredential } from '../../src/auth/credentials';
import { accountOf, capabilitiesOf } from '../../src/domain/account/account';
import * as admin from '../../src/ops/admin';
import { UnauthorizedError } from '../../src/errors';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

test('a credential deleted after authentication: both views answer 401', async () => {
  const db = database.db;
  const shop = await admin.createShop(db, { name: 'Gone', plan: 'pro' });
  const { id, key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['orders.read'], name: 'k' });
  const auth = (await liveCredentialWithShopByHash(db, hashCredential(key), new Date()))!;
  expect(await accountOf(db, auth)).toMatchObject({ id: shop.id, name: 'Gone', currency: 'USD' });
  expect(await capabilitiesOf(db, auth)).toMatchObject({
    scopes: ['orders.read'],
    full_access: false,
    plan: 'pro',
    credential: { id, kind: 'api_key', name: 'k', client: null },
  });
  await sql`delete from credentials where id = ${id}`.execute(db);
  await expect(accountOf(db, auth)).rejects.toBeInstanceOf(UnauthorizedError);
  await expect(capabilitiesOf(db, auth)).rejects.toBeInstanceOf(UnauthorizedError);
});
