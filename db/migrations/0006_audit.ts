// The audit trail's list filters (GET /security/audit-trail): by credential and by operation, each newest first.
// The status filter and the time range ride the (shop_id, occurred_at, id) index of 0005. The credential index
// also serves the (shop_id, credential_id) foreign key.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('audit_entries_shop_credential_idx')
    .on('audit_entries')
    .columns(['shop_id', 'credential_id', 'occurred_at', 'id'])
    .execute();
  await db.schema
    .createIndex('audit_entries_shop_operation_idx')
    .on('audit_entries')
    .columns(['shop_id', 'operation_id', 'occurred_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('audit_entries_shop_operation_idx').execute();
  await db.schema.dropIndex('audit_entries_shop_credential_idx').execute();
}
