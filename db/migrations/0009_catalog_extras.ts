// Catalog extras that change what an order costs and records: variant fields and their options (a buyer picks one
// option per field), quantity deals (tiers of minimum quantity -> discount on a line) and add-ons (extras sold with
// products). Tenancy as in 0004: a unique (shop_id, id) per table, composite foreign keys between shop rows.
// Names are unique per product and option values per field, case-insensitively (`Size` and `size` would look the
// same to a buyer): unique indexes on lower(...), answered 409 CONFLICT (src/http/database-errors.ts).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table product_variant_fields (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    product_id text not null,
    name text not null check (char_length(name) between 1 and 100),
    sort_order integer not null default 0,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint product_variant_fields_shop_id_id_key unique (shop_id, id),
    constraint product_variant_fields_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create unique index product_variant_fields_name_key
    on product_variant_fields (shop_id, product_id, lower(name))`.execute(db);

  await sql`create table product_variant_field_options (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    field_id text collate "C" not null,
    value text not null check (char_length(value) between 1 and 100),
    price_adjustment numeric(20, 8) not null default 0 check (price_adjustment between -1000000 and 1000000),
    sort_order integer not null default 0,
    created_at timestamptz not null default now(),
    constraint product_variant_field_options_shop_id_id_key unique (shop_id, id),
    constraint product_variant_field_options_field_fkey foreign key (shop_id, field_id) references product_variant_fields (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create unique index product_variant_field_options_value_key
    on product_variant_field_options (shop_id, field_id, lower(value))`.execute(db);

  // A quantity deal: tiers (minimum quantity -> discount per unit) for the products it names.
  await sql`create table quantity_deals (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    uniqid uuid not null unique,
    title text not null check (char_length(title) between 1 and 200),
    enabled boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint quantity_deals_shop_id_id_key unique (shop_id, id)
  )`.execute(db);
  await sql`create table quantity_deal_products (
    shop_id text not null references shops (id),
    deal_id text collate "C" not null,
    product_id text not null,
    primary key (shop_id, deal_id, product_id),
    constraint quantity_deal_products_deal_fkey foreign key (shop_id, deal_id) references quantity_deals (shop_id, id) on delete cascade,
    constraint quantity_deal_products_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index quantity_deal_products_product_idx on quantity_deal_products (shop_id, product_id)`.execute(
    db,
  );
  await sql`create table quantity_deal_tiers (
    shop_id text not null references shops (id),
    deal_id text collate "C" not null,
    min_quantity integer not null check (min_quantity >= 2),
    discount_type text not null check (discount_type in ('PERCENTAGE', 'FIXED')),
    discount_value numeric(20, 8) not null check (discount_value > 0),
    primary key (shop_id, deal_id, min_quantity),
    constraint quantity_deal_tiers_deal_fkey foreign key (shop_id, deal_id) references quantity_deals (shop_id, id) on delete cascade,
    constraint quantity_deal_tiers_percentage check (discount_type <> 'PERCENTAGE' or discount_value <= 100)
  )`.execute(db);

  // Add-ons: extras a buyer adds to an item of one of the products they are offered with, priced per unit.
  await sql`create table addons (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    title text not null check (char_length(title) between 1 and 200),
    description text,
    price numeric(20, 8) not null check (price >= 0),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    required boolean not null default false,
    enabled boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint addons_shop_id_id_key unique (shop_id, id)
  )`.execute(db);
  // The list: newest first, in keyset order.
  await sql`create index addons_shop_created_idx on addons (shop_id, created_at, id)`.execute(db);
  await sql`create table addon_products (
    shop_id text not null references shops (id),
    addon_id text collate "C" not null,
    product_id text not null,
    primary key (shop_id, addon_id, product_id),
    constraint addon_products_addon_fkey foreign key (shop_id, addon_id) references addons (shop_id, id) on delete cascade,
    constraint addon_products_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index addon_products_product_idx on addon_products (shop_id, product_id)`.execute(db);

  // What an order item was bought with, as bought (like product_title: names, values and prices at the time of
  // purchase, kept when the catalog changes later): the chosen options, the add-ons, and the quantity deal's
  // discount on the line (the deal itself by reference).
  await sql`alter table order_items
    add column variant_options jsonb,
    add column addons jsonb,
    add column quantity_discount numeric(20, 8) not null default 0 check (quantity_discount >= 0),
    add column quantity_deal_id text collate "C",
    add constraint order_items_quantity_deal_fkey foreign key (shop_id, quantity_deal_id)
      references quantity_deals (shop_id, id) on delete set null (quantity_deal_id)`.execute(db);
  await sql`create index order_items_quantity_deal_idx on order_items (shop_id, quantity_deal_id)
    where quantity_deal_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table order_items
    drop constraint order_items_quantity_deal_fkey,
    drop column quantity_deal_id,
    drop column quantity_discount,
    drop column addons,
    drop column variant_options`.execute(db);
  for (const t of [
    'addon_products',
    'addons',
    'quantity_deal_tiers',
    'quantity_deal_products',
    'quantity_deals',
    'product_variant_field_options',
    'product_variant_fields',
  ])
    await sql`drop table ${sql.table(t)}`.execute(db);
}
