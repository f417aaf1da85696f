// Email marketing and messaging bots (issue 14, item 3). The shop's email-marketing integrations (one per provider;
// listed by GET /email-marketing/settings), its Telegram bots and the bots' users with their notification switches
// (set in bulk by PUT /telegram/bots/{botId}/users/bulk/notifications). All three are written by the CLI and fixtures
// (src/ops/marketing-admin.ts, marketing-fixtures.ts). A bot user is a Telegram user of one bot, addressed in the
// API by its Telegram user id; it points at its bot with (shop_id, bot_id), so it can never hang on another shop's bot.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table email_marketing_settings (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    provider text not null check (provider in ('MAILCHIMP', 'KLAVIYO', 'SENDGRID', 'BREVO')),
    enabled boolean not null default true,
    list_id text check (char_length(list_id) between 1 and 200),
    double_opt_in boolean not null default false,
    sync_customers boolean not null default true,
    last_synced_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint email_marketing_settings_shop_id_id_key unique (shop_id, id),
    constraint email_marketing_settings_shop_provider_key unique (shop_id, provider)
  )`.execute(db);
  // GET /email-marketing/settings: newest first, keyset on (created_at, id).
  await sql`create index email_marketing_settings_shop_created_idx
    on email_marketing_settings (shop_id, created_at, id)`.execute(db);

  await sql`create table messaging_bots (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    -- The bot's Telegram username (5-32 letters, digits or _, ending in "bot"), without the @.
    username text not null check (username ~ '^[A-Za-z][A-Za-z0-9_]{1,28}[Bb][Oo][Tt]$'),
    name text check (char_length(name) between 1 and 100),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint messaging_bots_shop_id_id_key unique (shop_id, id)
  )`.execute(db);
  // Telegram usernames are case-insensitive: one bot per username in a shop.
  await sql`create unique index messaging_bots_shop_username_key on messaging_bots (shop_id, lower(username))`.execute(
    db,
  );

  await sql`create table messaging_bot_users (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    bot_id text collate "C" not null,
    -- The user's Telegram user id (a positive integer, as decimal text).
    telegram_user_id text collate "C" not null check (telegram_user_id ~ '^[1-9][0-9]{0,19}$'),
    username text check (char_length(username) between 1 and 64),
    order_paid boolean not null default true,
    order_completed boolean not null default true,
    ticket_replied boolean not null default true,
    review_created boolean not null default true,
    dispute_opened boolean not null default true,
    stock_low boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint messaging_bot_users_shop_id_id_key unique (shop_id, id),
    -- Also the index of the bulk update (every user of a bot, or the listed Telegram ids).
    constraint messaging_bot_users_bot_user_key unique (shop_id, bot_id, telegram_user_id),
    constraint messaging_bot_users_bot_fkey foreign key (shop_id, bot_id) references messaging_bots (shop_id, id)
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table messaging_bot_users`.execute(db);
  await sql`drop table messaging_bots`.execute(db);
  await sql`drop table email_marketing_settings`.execute(db);
}
