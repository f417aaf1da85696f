// Email-marketing sync (src/domain/store/email-marketing-sync.ts, src/worker/email-marketing-sync.ts). Each setting's
// provider API key, sealed (src/platform/secret-box.ts, bound to the shop and the setting), one row per setting; and
// the outbox of "add this customer to the provider's list" requests, one per (setting, customer), queued in the
// transaction that created the customer and sent by the worker (SKIP LOCKED, a lease, bounded retries).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table email_marketing_keys (
    shop_id text not null references shops (id),
    setting_id text collate "C" not null,
    sealed_key bytea not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (shop_id, setting_id),
    constraint email_marketing_keys_setting_fkey foreign key (shop_id, setting_id)
      references email_marketing_settings (shop_id, id) on delete cascade
  )`.execute(db);

  await sql`create table email_marketing_syncs (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    setting_id text collate "C" not null,
    customer_id text collate "C" not null,
    email text not null check (char_length(email) between 3 and 320),
    status text not null default 'PENDING'
      check (status in ('PENDING', 'RETRYING', 'SYNCED', 'FAILED', 'CANCELLED')),
    attempts integer not null default 0 check (attempts >= 0),
    next_attempt_at timestamptz,
    lease_until timestamptz,
    lease_token text,
    last_status integer,
    last_error text check (char_length(last_error) <= 1000),
    synced_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint email_marketing_syncs_shop_id_id_key unique (shop_id, id),
    -- One sync of a customer per setting: a second queueing of the same customer is a no-op.
    constraint email_marketing_syncs_setting_customer_key unique (shop_id, setting_id, customer_id),
    constraint email_marketing_syncs_setting_fkey foreign key (shop_id, setting_id)
      references email_marketing_settings (shop_id, id) on delete cascade,
    constraint email_marketing_syncs_customer_fkey foreign key (shop_id, customer_id)
      references customers (shop_id, id) on delete cascade
  )`.execute(db);
  // The worker's claim: due rows only.
  await sql`create index email_marketing_syncs_due_idx on email_marketing_syncs (next_attempt_at, id)
    where status in ('PENDING', 'RETRYING')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table email_marketing_syncs`.execute(db);
  await sql`drop table email_marketing_keys`.execute(db);
}
