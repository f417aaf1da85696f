// The outbox: events, webhook endpoints and their deliveries (one row per event and endpoint, one log row per
// attempt), queued mail and the audit trail. Everything here is written inside the transaction of the change it
// describes and acted on after commit by workers, which claim due rows with FOR UPDATE SKIP LOCKED and a lease
// (`lease_until`), so a crashed worker's claim is taken again once its lease runs out.
// Tenancy as in 0004: a unique (shop_id, id) per table, composite foreign keys between shop rows.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('url', 'text', (c) => c.notNull().check(sql`url ~ '^https?://'`))
    .addColumn('events', sql`text[]`, (c) => c.notNull().check(sql`cardinality(events) > 0`))
    .addColumn('description', 'text')
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    // AES-256-GCM (src/platform/secret-box.ts): the secret must be recovered to sign, so it is encrypted, not hashed.
    .addColumn('secret', 'bytea', (c) => c.notNull())
    // After a rotation with a grace period, the previous secret signs beside the new one until it expires.
    .addColumn('previous_secret', 'bytea')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_endpoints_shop_id_id_key', ['shop_id', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_shop_created_idx')
    .on('webhook_endpoints')
    .columns(['shop_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('type', sql`text collate "C"`, (c) => c.notNull())
    /**
     * The event's `data` as JSON text, exactly as first serialised: jsonb would reorder keys and JSON.parse would
     * round amounts beyond a double's precision; the webhook body and the events API send these bytes unchanged.
     */
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('events_shop_id_id_key', ['shop_id', 'id'])
    .execute();
  await db.schema
    .createIndex('events_shop_created_idx')
    .on('events')
    .columns(['shop_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('events_shop_type_created_idx')
    .on('events')
    .columns(['shop_id', 'type', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('endpoint_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('event_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('PENDING', 'RETRYING', 'SUCCEEDED', 'FAILED')`),
    )
    /** Attempts made so far. */
    .addColumn('attempts', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`attempts >= 0`),
    )
    /** When the next attempt is due; null once the delivery is settled (SUCCEEDED or FAILED). */
    .addColumn('next_attempt_at', 'timestamptz')
    /** The log row of the attempt queued next (status PENDING) while one is queued. */
    .addColumn('pending_attempt_id', sql`text collate "C"`)
    /** A manual retry is one attempt: when it fails, the delivery is FAILED rather than rescheduled. */
    .addColumn('manual', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('lease_until', 'timestamptz')
    /** Who holds the lease: a worker writes an attempt's outcome only while the token is still its own. */
    .addColumn('lease_token', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_deliveries_shop_id_id_key', ['shop_id', 'id'])
    .addUniqueConstraint('webhook_deliveries_endpoint_event_key', ['shop_id', 'endpoint_id', 'event_id'])
    .addForeignKeyConstraint(
      'webhook_deliveries_endpoint_fkey',
      ['shop_id', 'endpoint_id'],
      'webhook_endpoints',
      ['shop_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .addForeignKeyConstraint('webhook_deliveries_event_fkey', ['shop_id', 'event_id'], 'events', ['shop_id', 'id'])
    .addCheckConstraint(
      'webhook_deliveries_settled',
      sql`(status in ('SUCCEEDED', 'FAILED')) = (next_attempt_at is null)`,
    )
    .execute();
  // The workers' claim: due deliveries, oldest first.
  await sql`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where next_attempt_at is not null`.execute(
    db,
  );
  await sql`create index webhook_deliveries_event_idx on webhook_deliveries (shop_id, event_id)`.execute(db);

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('delivery_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('endpoint_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('event_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull().check(sql`attempt >= 1`))
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('PENDING', 'RETRYING', 'SUCCEEDED', 'FAILED')`),
    )
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('duration_ms', 'integer')
    /** Why an attempt failed without an HTTP answer (refused target, time-out, connection refused). */
    .addColumn('error', 'text')
    .addColumn('next_retry_at', 'timestamptz')
    .addColumn('attempted_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_attempts_shop_id_id_key', ['shop_id', 'id'])
    .addForeignKeyConstraint(
      'webhook_attempts_delivery_fkey',
      ['shop_id', 'delivery_id'],
      'webhook_deliveries',
      ['shop_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .addForeignKeyConstraint(
      'webhook_attempts_endpoint_fkey',
      ['shop_id', 'endpoint_id'],
      'webhook_endpoints',
      ['shop_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('webhook_attempts_shop_created_idx')
    .on('webhook_attempts')
    .columns(['shop_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery_idx')
    .on('webhook_attempts')
    .columns(['shop_id', 'delivery_id'])
    .execute();
  await db.schema
    .createIndex('webhook_attempts_endpoint_idx')
    .on('webhook_attempts')
    .columns(['shop_id', 'endpoint_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('outbound_emails')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('html', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    /** QUEUED until the worker hands it on: SENT (SMTP accepted it) or RECORDED (no SMTP_URL: kept here only). */
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('QUEUED', 'SENT', 'RECORDED', 'FAILED')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('provider_message_id', 'text')
    .addColumn('sent_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('outbound_emails_shop_id_id_key', ['shop_id', 'id'])
    .execute();
  await sql`create index outbound_emails_due_idx on outbound_emails (next_attempt_at) where next_attempt_at is not null`.execute(
    db,
  );
  await db.schema
    .createIndex('outbound_emails_shop_created_idx')
    .on('outbound_emails')
    .columns(['shop_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('audit_entries')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('credential_id', sql`text collate "C"`)
    .addColumn('credential_kind', 'text', (c) => c.notNull())
    .addColumn('operation_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text')
    .addColumn('resource_id', 'text')
    /** Every id named in the path (`{ "id": "prod_…" }`): what the request was about, never what it said. */
    .addColumn('path_params', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('status', 'integer', (c) => c.notNull().check(sql`status between 100 and 599`))
    .addColumn('error_code', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addUniqueConstraint('audit_entries_shop_id_id_key', ['shop_id', 'id'])
    .addForeignKeyConstraint('audit_entries_credential_fkey', ['shop_id', 'credential_id'], 'credentials', [
      'shop_id',
      'id',
    ])
    .execute();
  await db.schema
    .createIndex('audit_entries_shop_occurred_idx')
    .on('audit_entries')
    .columns(['shop_id', 'occurred_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'audit_entries',
    'outbound_emails',
    'webhook_attempts',
    'webhook_deliveries',
    'events',
    'webhook_endpoints',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
