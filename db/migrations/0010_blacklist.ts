// The index of the coupon list; the shop's blacklist (emails, email domains, IP addresses or ranges, countries refused at order creation), and the
// customer figures that were stored copies becoming computed ones: `blacklisted` is whether an entry matches the
// customer, `total_spent` / `total_orders` come from the customer's paid orders (db/queries/customers.ts derives
// them in SQL), so no code path can let them drift from the orders, refunds and entries they describe.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table blacklist_entries (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    type text not null check (type in ('EMAIL', 'EMAIL_DOMAIN', 'IP', 'COUNTRY')),
    -- Normalised: emails and domains lower-cased, countries upper-cased, IPs as PostgreSQL prints the network.
    value text collate "C" not null check (char_length(value) between 1 and 254),
    -- The address or range of an IP entry (null for the other types), so a match is one containment test.
    network inet,
    note text check (char_length(note) <= 1000),
    created_at timestamptz not null default now(),
    constraint blacklist_entries_shop_id_id_key unique (shop_id, id),
    constraint blacklist_entries_shop_value_key unique (shop_id, type, value),
    constraint blacklist_entries_network check ((type = 'IP') = (network is not null)),
    constraint blacklist_entries_email check (type <> 'EMAIL' or value = lower(value)),
    constraint blacklist_entries_domain check (type <> 'EMAIL_DOMAIN' or (value = lower(value) and value !~ '@')),
    constraint blacklist_entries_country check (type <> 'COUNTRY' or value ~ '^[A-Z]{2}$')
  )`.execute(db);
  // The list (newest first, keyset on created_at, id); matching uses the unique (shop_id, type, value).
  await sql`create index blacklist_entries_shop_created_idx on blacklist_entries (shop_id, created_at, id)`.execute(db);
  await sql`create index blacklist_entries_shop_network_idx on blacklist_entries using gist (network inet_ops) where type = 'IP'`.execute(
    db,
  );

  // GET /coupons: newest first, keyset on (created_at, id).
  await sql`create index coupons_shop_created_idx on coupons (shop_id, created_at, id)`.execute(db);

  // Paid orders of a customer, summed per customer for the computed figures.
  await sql`create index orders_shop_customer_paid_idx on orders (shop_id, customer_id) include (total, refunded)
    where completed_at is not null`.execute(db);

  await sql`drop index customers_shop_spent_idx`.execute(db);
  await sql`drop index customers_shop_blacklisted_idx`.execute(db);
  await sql`alter table customers drop column total_spent, drop column total_orders, drop column blacklisted`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table customers
    add column total_spent numeric(20, 8) not null default 0 check (total_spent >= 0),
    add column total_orders integer not null default 0 check (total_orders >= 0),
    add column blacklisted boolean not null default false`.execute(db);
  await sql`create index customers_shop_spent_idx on customers (shop_id, total_spent, id)`.execute(db);
  await sql`create index customers_shop_blacklisted_idx on customers (shop_id, created_at, id) where blacklisted = true`.execute(
    db,
  );
  await sql`drop index orders_shop_customer_paid_idx`.execute(db);
  await sql`drop index coupons_shop_created_idx`.execute(db);
  await sql`drop table blacklist_entries`.execute(db);
}
