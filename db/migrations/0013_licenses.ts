// Software licenses (issue 11, item 1): license keys, the devices each has registered, and what makes a product a
// "license product" (completing an order for one issues a key per unit, src/domain/licenses/issuing.ts).
//
// A key is never stored in clear: `key_hash` is HMAC-SHA256 under a server secret (src/platform/license-keys.ts),
// unique per shop, so validating a key is one indexed look-up on (shop_id, key_hash); `key_sealed` is the key
// encrypted (AES-256-GCM, the row's identity as authenticated data), because it must be shown again on the license
// and on the order it was issued for.
//
// Devices take numbered slots 1..activation_limit, unique per license, and a hardware id is unique per license too:
// two concurrent first validations with different hardware ids cannot both take the last free slot (the second
// insert conflicts), which is what makes the one-statement validation race-free without locking the license row.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // A license product: license_activation_limit set (devices per issued key); license_duration_days: keys issued
  // for it expire that many days after the order completes (null: never).
  await sql`alter table products
    add column license_activation_limit integer check (license_activation_limit between 1 and 1000),
    add column license_duration_days integer check (license_duration_days between 1 and 36500),
    add constraint products_license_duration_needs_limit check (license_duration_days is null or license_activation_limit is not null)`.execute(
    db,
  );

  // How many licenses a completed order item issued: order views look licenses up only for items that have some.
  await sql`alter table order_items add column license_count integer not null default 0 check (license_count >= 0)`.execute(
    db,
  );

  await sql`create table licenses (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    product_id text not null,
    order_id text collate "C",
    order_item_id text collate "C",
    customer_id text collate "C",
    customer_email text collate "C" check (customer_email = lower(customer_email)),
    key_hash bytea not null check (length(key_hash) = 32),
    key_sealed bytea not null,
    -- EXPIRED is not stored: it is ACTIVE past expires_at, decided when read.
    status text not null check (status in ('ACTIVE', 'REVOKED')),
    activation_limit integer not null default 1 check (activation_limit between 1 and 1000),
    expires_at timestamptz,
    note text,
    last_validated_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint licenses_shop_id_id_key unique (shop_id, id),
    constraint licenses_shop_key_hash_key unique (shop_id, key_hash),
    constraint licenses_product_fkey foreign key (shop_id, product_id) references products (shop_id, id),
    constraint licenses_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint licenses_order_item_fkey foreign key (shop_id, order_item_id) references order_items (shop_id, id),
    constraint licenses_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint licenses_item_needs_order check (order_item_id is null or order_id is not null)
  )`.execute(db);
  // The list (newest first) and its filters, in keyset order; the licenses of an order (order views, refunds).
  await sql`create index licenses_shop_created_idx on licenses (shop_id, created_at, id)`.execute(db);
  for (const column of ['product_id', 'status', 'customer_id', 'customer_email']) {
    await sql`create index ${sql.raw(`licenses_shop_${column}_created_idx`)} on licenses (shop_id, ${sql.ref(column)}, created_at, id)`.execute(
      db,
    );
  }
  await sql`create index licenses_shop_order_idx on licenses (shop_id, order_id) where order_id is not null`.execute(
    db,
  );

  await sql`create table license_devices (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    license_id text collate "C" not null,
    slot integer not null check (slot between 1 and 1000),
    hwid text not null check (length(hwid) between 1 and 256),
    registered_at timestamptz not null,
    last_validated_at timestamptz not null,
    constraint license_devices_shop_id_id_key unique (shop_id, id),
    constraint license_devices_slot_key unique (shop_id, license_id, slot),
    constraint license_devices_hwid_key unique (shop_id, license_id, hwid),
    constraint license_devices_license_fkey foreign key (shop_id, license_id) references licenses (shop_id, id) on delete cascade
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table license_devices`.execute(db);
  await sql`drop table licenses`.execute(db);
  await sql`alter table order_items drop column license_count`.execute(db);
  await sql`alter table products drop constraint products_license_duration_needs_limit,
    drop column license_duration_days, drop column license_activation_limit`.execute(db);
}
