// Idempotency claims become leases (issue 24, point 4). A `processing` row names its owner (a random token per
// request) and holds the key only until `lease_expires_at`, which the owner renews while its request runs. A server
// that dies stops renewing, so its keys free within one lease instead of the old 60 s lock timeout; a live slow
// request keeps renewing and keeps its key. The lease is database time (`now()`), the one clock every server shares,
// and lives in the row, never in a database session, so it is correct behind a transaction-mode pooler.
//
// The default covers rows written without a lease: those claimed before this migration and, during a rolling deploy,
// by servers that predate it. They get the old 60 s lock timeout as their lease, which is what those servers expect.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table idempotency_keys
    add column owner_token text,
    add column lease_expires_at timestamptz not null default (now() + interval '60 seconds')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table idempotency_keys drop column lease_expires_at, drop column owner_token`.execute(db);
}
