// Server secrets are read before anything is written (every start asks for several), and first uses racing for one
// still agree on a single value, on real PostgreSQL where DATABASE_URL is set (pool of 20: the uses run at once).
import { sql } from 'kysely';
import { serverSecret } from '../../db/queries/server-secrets';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t.close());

const rowsNamed = async (name: string) =>
  (await t.db.selectFrom('server_secrets').select('secret').where('name', '=', name).execute()).length;

test('first uses racing for one secret agree on one value, stored once', async () => {
  const values = await Promise.all(Array.from({ length: 12 }, () => serverSecret(t.db, 'race-test')));
  expect(values[0]).toHaveLength(32);
  expect(new Set(values.map((v) => v.toString('hex'))).size).toBe(1);
  expect(await rowsNamed('race-test')).toBe(1);
});

test('a secret that exists is read, not written again', async () => {
  const first = await serverSecret(t.db, 'read-test');
  // A trigger counts every insert attempt on the table, no-op ones (ON CONFLICT DO NOTHING) included.
  await sql`create table secret_inserts (n int not null)`.execute(t.db);
  await sql`insert into secret_inserts values (0)`.execute(t.db);
  await sql`create function count_secret_insert() returns trigger language plpgsql as
    $$ begin update secret_inserts set n = n + 1; return new; end $$`.execute(t.db);
  await sql`create trigger count_secret_insert before insert on server_secrets
    for each row execute function count_secret_insert()`.execute(t.db);
  try {
    expect((await serverSecret(t.db, 'read-test')).equals(first)).toBe(true);
    expect((await sql<{ n: number }>`select n from secret_inserts`.execute(t.db)).rows[0]!.n).toBe(0);
    await serverSecret(t.db, 'another-test'); // the trigger counts: a missing secret is inserted
    expect((await sql<{ n: number }>`select n from secret_inserts`.execute(t.db)).rows[0]!.n).toBe(1);
  } finally {
    await sql`drop trigger count_secret_insert on server_secrets`.execute(t.db);
  }
});
