// Telegram bot notifications (issue 14, item 3, made to work): a bot's token, sealed with the server's secret box
// (src/platform/secret-box.ts; the server must recover it to call Telegram, so it cannot be hashed), and the outbox
// of messages to the bots' users. A notification is queued in the transaction of the event it describes
// (src/domain/store/bot-notifications.ts, called by emitEvent) for every user of the shop's bots whose switch for that
// event is on, and sent by the worker (src/worker/bot-notifications.ts) with a lease, as dynamic deliveries are.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // AES-256-GCM: iv | tag | ciphertext, opened only with `messaging-bot:<shop>:<bot>`. Null: no token, no deliveries.
  await sql`alter table messaging_bots add column token_sealed bytea`.execute(db);

  await sql`create table bot_notifications (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    bot_id text collate "C" not null,
    bot_user_id text collate "C" not null,
    event_id text collate "C" not null,
    event_type text not null,
    -- Short text of the message (no secrets, nothing the merchant does not already see).
    text text not null check (char_length(text) between 1 and 4096),
    status text not null default 'PENDING' check (status in ('PENDING', 'RETRYING', 'SENT', 'FAILED')),
    attempts integer not null default 0 check (attempts >= 0),
    next_attempt_at timestamptz,
    lease_until timestamptz,
    lease_token text,
    last_error text check (char_length(last_error) <= 1000),
    sent_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint bot_notifications_shop_id_id_key unique (shop_id, id),
    -- One message per user and event: an event queued twice (it cannot be, but) does not message twice.
    constraint bot_notifications_event_user_key unique (shop_id, event_id, bot_user_id),
    constraint bot_notifications_bot_fkey foreign key (shop_id, bot_id) references messaging_bots (shop_id, id),
    constraint bot_notifications_bot_user_fkey foreign key (shop_id, bot_user_id)
      references messaging_bot_users (shop_id, id),
    constraint bot_notifications_event_fkey foreign key (shop_id, event_id) references events (shop_id, id)
  )`.execute(db);
  // The worker's claim: due rows of every shop, oldest first.
  await sql`create index bot_notifications_due_idx on bot_notifications (next_attempt_at, id)
    where status in ('PENDING', 'RETRYING')`.execute(db);
  // The foreign keys' other ends.
  await sql`create index bot_notifications_bot_user_idx on bot_notifications (shop_id, bot_user_id)`.execute(db);
  await sql`create index bot_notifications_bot_idx on bot_notifications (shop_id, bot_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table bot_notifications`.execute(db);
  await sql`alter table messaging_bots drop column token_sealed`.execute(db);
}
