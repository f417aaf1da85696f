// Idempotency keys: one row per (credential, operation, key). The row is claimed (state `processing`) before the
// handler runs and completed, with the response to replay, in the handler's own transaction.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('credential_id', 'text', (c) => c.notNull().references('credentials.id').onDelete('cascade'))
    .addColumn('operation_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull().check(sql`char_length(key) between 1 and 128`))
    // SHA-256 (hex) of method, path and canonical JSON body.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('processing', 'completed')`))
    // When the current owner claimed (or took over) the key; compare-and-set on it hands a stale lock over.
    .addColumn('locked_at', 'timestamptz', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_headers', 'jsonb')
    // The exact JSON text sent, so a replay is byte-identical (jsonb would reorder keys).
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('completed_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['credential_id', 'operation_id', 'key'])
    .addCheckConstraint(
      'idempotency_keys_completed_has_response',
      sql`state = 'processing' or (response_status is not null and response_headers is not null and response_body is not null)`,
    )
    .execute();
  await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
