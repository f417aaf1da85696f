// Store settings: the storefront's branding and layout (one row per shop, stored on the first write: a shop without
// a row reads the documented defaults), and its additional domains with their DNS verification.
//
// A hostname is added once per shop (unique (shop_id, domain)); any number of shops may have it pending, but only
// one can prove it: at most one VERIFIED row per hostname across all shops (a partial unique index), so two shops
// verifying one hostname at the same moment cannot both win.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table store_settings (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    -- Branding
    name text not null check (char_length(name) between 1 and 100),
    logo_url text check (char_length(logo_url) <= 2048),
    favicon_url text check (char_length(favicon_url) <= 2048),
    primary_color text not null check (primary_color ~ '^#[0-9a-f]{6}$'),
    accent_color text not null check (accent_color ~ '^#[0-9a-f]{6}$'),
    support_email text check (char_length(support_email) <= 254),
    branding_updated_at timestamptz not null,
    -- Layout
    product_grid_columns integer not null check (product_grid_columns between 1 and 6),
    show_search boolean not null,
    show_categories boolean not null,
    show_reviews boolean not null,
    announcement text check (char_length(announcement) <= 500),
    footer_links jsonb not null default '[]'::jsonb check (jsonb_typeof(footer_links) = 'array'),
    layout_updated_at timestamptz not null,
    created_at timestamptz not null default now(),
    constraint store_settings_shop_id_id_key unique (shop_id, id),
    constraint store_settings_shop_key unique (shop_id)
  )`.execute(db);

  await sql`create table store_domains (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    domain text collate "C" not null check (domain = lower(domain) and char_length(domain) between 1 and 253),
    status text not null check (status in ('PENDING_VERIFICATION', 'VERIFIED', 'FAILED')),
    ssl_status text not null check (ssl_status in ('PENDING', 'ACTIVE', 'FAILED')),
    record_name text not null,
    -- The TXT value to publish; random, shown on every read (it is public once published in DNS).
    record_value text not null,
    verified_at timestamptz,
    last_checked_at timestamptz,
    last_check_error text check (last_check_error in ('RECORD_NOT_FOUND', 'DNS_UNAVAILABLE')),
    created_at timestamptz not null,
    updated_at timestamptz not null,
    constraint store_domains_shop_id_id_key unique (shop_id, id),
    constraint store_domains_shop_domain_key unique (shop_id, domain),
    constraint store_domains_verified_at check ((status = 'VERIFIED') = (verified_at is not null))
  )`.execute(db);
  await sql`create unique index store_domains_verified_domain_key on store_domains (domain)
    where status = 'VERIFIED'`.execute(db);
  // The list: newest first (ties by id).
  await sql`create index store_domains_shop_created_idx on store_domains (shop_id, created_at desc, id desc)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table store_domains`.execute(db);
  await sql`drop table store_settings`.execute(db);
}
