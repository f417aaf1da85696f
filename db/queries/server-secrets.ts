// Server-wide secrets, created once and then shared by every process on the same database.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../tables';

/**
 * The named secret, created (32 random bytes) on first use. Concurrent first uses agree on one value. Read first:
 * every start asks for several, and a write each (a no-op insert still writes WAL) was ~15 ms of an embedded start.
 */
export async function serverSecret(db: Kysely<Database>, name: string): Promise<Buffer> {
  const existing = await existingServerSecret(db, name);
  if (existing) return existing;
  await db
    .insertInto('server_secrets')
    .values({ name, secret: randomBytes(32) })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('server_secrets').select('secret').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(row.secret);
}

/** The named secret if it was ever made (a read: works on a read-only connection). */
export async function existingServerSecret(
  db: Pick<Kysely<Database>, 'selectFrom'>,
  name: string,
): Promise<Buffer | undefined> {
  const row = await db.selectFrom('server_secrets').select('secret').where('name', '=', name).executeTakeFirst();
  return row ? Buffer.from(row.secret) : undefined;
}
