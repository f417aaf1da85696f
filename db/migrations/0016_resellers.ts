// Resellers: the shop's tiers (read-only through the API: created by the CLI and fixtures), its program (one row per
// shop, stored on the first write: a shop without a row reads as a disabled MANUAL program), and its resellers (one
// row per email, never deleted, so a REJECTED email invited again moves the same row back to INVITED). An order
// whose buyer was an ACTIVE reseller when it was created names that reseller and the wholesale percent it got, so
// its completion counts toward the reseller's lifetime figures and its refunds take revenue back.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table reseller_tiers (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    name text not null check (char_length(name) between 1 and 100),
    discount_percent numeric(5, 2) not null check (discount_percent between 0 and 100),
    auto_advance_revenue numeric(20, 8) check (auto_advance_revenue >= 0),
    auto_advance_orders integer check (auto_advance_orders >= 0),
    auto_advance_requires_both boolean not null default false,
    sort_order integer not null default 0,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint reseller_tiers_shop_id_id_key unique (shop_id, id),
    constraint reseller_tiers_shop_name_key unique (shop_id, name)
  )`.execute(db);
  await sql`create index reseller_tiers_shop_sort_idx on reseller_tiers (shop_id, sort_order, id)`.execute(db);

  await sql`create table reseller_programs (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    enabled boolean not null default false,
    enrollment_mode text not null default 'MANUAL' check (enrollment_mode in ('MANUAL', 'APPLICATION', 'OPEN')),
    application_message text check (char_length(application_message) <= 2000),
    require_application_note boolean not null default false,
    default_tier_id text collate "C",
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint reseller_programs_shop_id_id_key unique (shop_id, id),
    constraint reseller_programs_shop_key unique (shop_id),
    constraint reseller_programs_default_tier_fkey foreign key (shop_id, default_tier_id)
      references reseller_tiers (shop_id, id),
    constraint reseller_programs_open_needs_tier check (enrollment_mode <> 'OPEN' or default_tier_id is not null)
  )`.execute(db);

  await sql`create table resellers (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    customer_id text collate "C" not null,
    email text not null check (email = lower(email)),
    status text not null check (status in ('INVITED', 'APPLIED', 'ACTIVE', 'SUSPENDED', 'REJECTED')),
    tier_id text collate "C" not null,
    application_note text check (char_length(application_note) <= 2000),
    lifetime_revenue numeric(20, 8) not null default 0,
    lifetime_orders integer not null default 0 check (lifetime_orders >= 0),
    approved_at timestamptz,
    suspended_at timestamptz,
    rejected_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint resellers_shop_id_id_key unique (shop_id, id),
    -- One row per email (and per customer): two invitations of one email cannot both insert.
    constraint resellers_shop_email_key unique (shop_id, email),
    constraint resellers_shop_customer_key unique (shop_id, customer_id),
    constraint resellers_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint resellers_tier_fkey foreign key (shop_id, tier_id) references reseller_tiers (shop_id, id),
    constraint resellers_suspended_at check (status <> 'SUSPENDED' or suspended_at is not null),
    constraint resellers_rejected_at check (status <> 'REJECTED' or rejected_at is not null)
  )`.execute(db);
  // The list: newest first (ties by id), optionally one status.
  await sql`create index resellers_shop_created_idx on resellers (shop_id, created_at desc, id desc)`.execute(db);
  await sql`create index resellers_shop_tier_idx on resellers (shop_id, tier_id)`.execute(db);

  // The reseller an order was priced for (its buyer was ACTIVE then) and the wholesale percent applied.
  await sql`alter table orders
    add column reseller_id text collate "C",
    add column reseller_discount_percent numeric(5, 2),
    add constraint orders_reseller_fkey foreign key (shop_id, reseller_id) references resellers (shop_id, id),
    add constraint orders_reseller_discount check ((reseller_id is null) = (reseller_discount_percent is null))`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table orders drop constraint orders_reseller_discount, drop constraint orders_reseller_fkey,
    drop column reseller_discount_percent, drop column reseller_id`.execute(db);
  await sql`drop table resellers`.execute(db);
  await sql`drop table reseller_programs`.execute(db);
  await sql`drop table reseller_tiers`.execute(db);
}
