// Orders (invoices) and what they need: the shop's gateways and tax settings, coupons, line items with the stock
// or serials they hold, payment attempts, refunds and payment links.
// Tenancy as in 0004: a unique (shop_id, id) per table, composite foreign keys between shop rows. Columns a list
// filters or sorts on are NOT NULL (or filtered as such) and indexed (shop_id, column, id) in keyset order.
import { sql, type Kysely } from 'kysely';

const money = (c: string) => sql`numeric(20, 8) not null default 0 check (${sql.ref(c)} >= 0)`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Tax settings of the shop: one rate, added on top (exclusive) or contained in the prices (inclusive).
  await sql`alter table shops
    add column tax_rate numeric(7, 4) not null default 0 check (tax_rate >= 0 and tax_rate <= 100),
    add column tax_inclusive boolean not null default false`.execute(db);

  await sql`create table gateways (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    code text collate "C" not null check (code ~ '^[A-Z][A-Z0-9_]{0,63}$'),
    kind text not null check (kind in ('HOSTED', 'CRYPTO', 'SESSION')),
    active boolean not null default true,
    coins text[] not null default '{}',
    created_at timestamptz not null default now(),
    constraint gateways_shop_id_id_key unique (shop_id, id),
    constraint gateways_shop_code_key unique (shop_id, code),
    constraint gateways_coins_crypto check (kind = 'CRYPTO' or cardinality(coins) = 0)
  )`.execute(db);

  await sql`create table coupons (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    code text collate "C" not null check (code = lower(code)),
    type text not null check (type in ('PERCENTAGE', 'FIXED')),
    value numeric(20, 8) not null check (value > 0),
    currency text check (currency ~ '^[A-Z]{3}$'),
    max_uses integer check (max_uses >= 1),
    uses integer not null default 0 check (uses >= 0),
    expires_at timestamptz,
    enabled boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint coupons_shop_id_id_key unique (shop_id, id),
    constraint coupons_shop_code_key unique (shop_id, code),
    constraint coupons_percentage check (type <> 'PERCENTAGE' or (value <= 100 and currency is null)),
    constraint coupons_fixed check (type <> 'FIXED' or currency is not null),
    constraint coupons_uses_within check (max_uses is null or uses <= max_uses)
  )`.execute(db);
  // The products a coupon is limited to (none: all products).
  await sql`create table coupon_products (
    shop_id text not null references shops (id),
    coupon_id text collate "C" not null,
    product_id text not null,
    primary key (shop_id, coupon_id, product_id),
    constraint coupon_products_coupon_fkey foreign key (shop_id, coupon_id) references coupons (shop_id, id) on delete cascade,
    constraint coupon_products_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete cascade
  )`.execute(db);

  // Attachments: files the shop delivers (FILE products, item fulfillment).
  await sql`create table attachments (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    filename text not null,
    content_type text not null,
    content bytea not null,
    created_at timestamptz not null default now(),
    constraint attachments_shop_id_id_key unique (shop_id, id)
  )`.execute(db);
  await sql`create table product_files (
    shop_id text not null references shops (id),
    product_id text not null,
    attachment_id text collate "C" not null,
    primary key (shop_id, product_id, attachment_id),
    constraint product_files_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete cascade,
    constraint product_files_attachment_fkey foreign key (shop_id, attachment_id) references attachments (shop_id, id) on delete cascade
  )`.execute(db);

  await sql`create table payment_links (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    uniqid uuid not null unique,
    title text not null,
    product_id text,
    variant_id text,
    amount numeric(20, 8) check (amount > 0),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    quantity integer not null default 1 check (quantity >= 1),
    enabled boolean not null default true,
    uses integer not null default 0 check (uses >= 0),
    max_uses integer check (max_uses >= 1),
    expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint payment_links_shop_id_id_key unique (shop_id, id),
    constraint payment_links_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete set null (product_id),
    constraint payment_links_variant_fkey foreign key (shop_id, variant_id) references product_variants (shop_id, id) on delete set null (variant_id),
    constraint payment_links_sells_one check ((product_id is null) <> (amount is null) or (product_id is null and amount is null)),
    constraint payment_links_uses_within check (max_uses is null or uses <= max_uses)
  )`.execute(db);

  await sql`create table orders (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    uniqid uuid not null unique,
    -- ORDER: sells products (createOrder, a payment link for a product); PAYMENT: a generic amount (createPayment).
    kind text not null check (kind in ('ORDER', 'PAYMENT')),
    customer_id text collate "C",
    customer_email text collate "C" check (customer_email = lower(customer_email)),
    affiliate_customer_id text collate "C",
    affiliate_code text,
    affiliate_link_id text,
    affiliate_discount_amount ${money('affiliate_discount_amount')},
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    status text not null check (status in ('PENDING', 'PROCESSING', 'PARTIAL', 'COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED', 'DISPUTED', 'VOIDED')),
    status_details text,
    payment_status text not null check (payment_status in ('PENDING', 'PROCESSING', 'PARTIAL', 'PAID', 'FAILED', 'CANCELLED', 'PARTIALLY_REFUNDED', 'REFUNDED')),
    gateway text collate "C",
    blockchain text,
    flow_type text,
    provider_reference text,
    provider_reference_type text,
    subtotal ${money('subtotal')},
    discount ${money('discount')},
    tax ${money('tax')},
    tax_percentage numeric(7, 4) not null default 0,
    tax_inclusive boolean not null default false,
    total ${money('total')},
    refunded ${money('refunded')},
    coupon_id text collate "C",
    payment_link_id text collate "C",
    custom_fields jsonb,
    is_developer_invoice boolean not null,
    developer_title text,
    note text,
    expires_at timestamptz,
    completed_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint orders_shop_id_id_key unique (shop_id, id),
    constraint orders_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint orders_affiliate_fkey foreign key (shop_id, affiliate_customer_id) references customers (shop_id, id),
    constraint orders_coupon_fkey foreign key (shop_id, coupon_id) references coupons (shop_id, id),
    constraint orders_payment_link_fkey foreign key (shop_id, payment_link_id) references payment_links (shop_id, id),
    constraint orders_refunded_within check (refunded <= total)
  )`.execute(db);
  // Lists: one index per sort in keyset order, for all invoices and for orders (kind ORDER) alone; the filters
  // (status, payment_status, customer_email, customer_id, gateway, currency, coupon_id) in the default order.
  for (const column of ['created_at', 'updated_at', 'total']) {
    await sql`create index ${sql.raw(`orders_shop_${column}_idx`)} on orders (shop_id, ${sql.ref(column)}, id)`.execute(
      db,
    );
    await sql`create index ${sql.raw(`orders_shop_kind_${column}_idx`)} on orders (shop_id, kind, ${sql.ref(column)}, id)`.execute(
      db,
    );
  }
  for (const column of [
    'status',
    'payment_status',
    'customer_email',
    'customer_id',
    'gateway',
    'currency',
    'coupon_id',
  ]) {
    await sql`create index ${sql.raw(`orders_shop_${column}_created_idx`)} on orders (shop_id, ${sql.ref(column)}, created_at, id)`.execute(
      db,
    );
  }
  await sql`create index orders_shop_developer_created_idx on orders (shop_id, is_developer_invoice, created_at, id)`.execute(
    db,
  );
  // The expiry job finds pending orders past their time.
  await sql`create index orders_pending_expiry_idx on orders (expires_at) where status = 'PENDING'`.execute(db);

  await sql`create table order_items (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_id text collate "C" not null,
    position integer not null,
    product_id text,
    variant_id text,
    product_title text not null,
    product_type text not null check (product_type in ('SERIALS', 'FILE', 'SERVICE', 'DYNAMIC', 'SUBSCRIPTION')),
    variant_title text,
    quantity integer not null check (quantity >= 1),
    unit_price ${money('unit_price')},
    total ${money('total')},
    custom_fields jsonb,
    delivery_instructions text,
    delivery_instructions_label text,
    delivery_status text not null default 'PENDING' check (delivery_status in ('PENDING', 'AWAITING_FULFILLMENT', 'DELIVERED', 'FAILED')),
    delivered_at timestamptz,
    delivered_items jsonb,
    -- Units of products.stock / product_variants.stock this item holds (0 for unlimited stock and serials).
    reserved_stock integer not null default 0 check (reserved_stock >= 0),
    created_at timestamptz not null default now(),
    constraint order_items_shop_id_id_key unique (shop_id, id),
    constraint order_items_order_position_key unique (order_id, position),
    constraint order_items_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id) on delete cascade,
    constraint order_items_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete set null (product_id),
    constraint order_items_variant_fkey foreign key (shop_id, variant_id) references product_variants (shop_id, id) on delete set null (variant_id),
    constraint order_items_delivered check ((delivery_status = 'DELIVERED') = (delivered_at is not null))
  )`.execute(db);

  // Serials are reserved by a pending order's item, then claimed (delivered) when it completes, or released.
  await sql`alter table product_serials drop constraint product_serials_status_check`.execute(db);
  await sql`alter table product_serials drop constraint product_serials_claimed_at`.execute(db);
  await sql`alter table product_serials
    add column order_item_id text collate "C",
    add constraint product_serials_status_check check (status in ('available', 'reserved', 'claimed')),
    add constraint product_serials_claimed_at check ((status = 'claimed') = (claimed_at is not null)),
    add constraint product_serials_reserved_item check (status <> 'reserved' or order_item_id is not null),
    add constraint product_serials_order_item_fkey foreign key (shop_id, order_item_id) references order_items (shop_id, id)`.execute(
    db,
  );
  await sql`create index product_serials_order_item_idx on product_serials (order_item_id) where order_item_id is not null`.execute(
    db,
  );

  // One row per payment started for an invoice (a gateway session); several may exist for one invoice, and the
  // invoice completes once whichever is paid first.
  await sql`create table payment_attempts (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_id text collate "C" not null,
    gateway text collate "C" not null,
    session_id text collate "C",
    status text not null check (status in ('PENDING', 'PAID', 'FAILED')),
    amount numeric(20, 8) not null check (amount >= 0),
    created_at timestamptz not null default now(),
    paid_at timestamptz,
    constraint payment_attempts_shop_id_id_key unique (shop_id, id),
    constraint payment_attempts_session_key unique (gateway, session_id),
    constraint payment_attempts_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index payment_attempts_order_idx on payment_attempts (shop_id, order_id, created_at)`.execute(db);

  await sql`create table refunds (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_id text collate "C" not null,
    amount numeric(20, 8) not null check (amount > 0),
    reason text,
    created_at timestamptz not null default now(),
    constraint refunds_shop_id_id_key unique (shop_id, id),
    constraint refunds_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index refunds_order_idx on refunds (shop_id, order_id, created_at)`.execute(db);

  // Dynamic-delivery callbacks: the outbox of signed requests to a DYNAMIC product's target, sent by the worker
  // after commit, retried like webhook deliveries.
  await sql`create table dynamic_deliveries (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_item_id text collate "C" not null,
    url text not null check (url ~ '^https?://'),
    body text not null,
    status text not null check (status in ('PENDING', 'RETRYING', 'SUCCEEDED', 'FAILED')),
    attempts integer not null default 0 check (attempts >= 0),
    next_attempt_at timestamptz,
    lease_until timestamptz,
    lease_token text,
    last_error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint dynamic_deliveries_shop_id_id_key unique (shop_id, id),
    constraint dynamic_deliveries_item_fkey foreign key (shop_id, order_item_id) references order_items (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index dynamic_deliveries_due_idx on dynamic_deliveries (next_attempt_at) where status in ('PENDING', 'RETRYING')`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table product_serials drop constraint product_serials_order_item_fkey,
    drop constraint product_serials_reserved_item, drop column order_item_id`.execute(db);
  for (const t of [
    'dynamic_deliveries',
    'refunds',
    'payment_attempts',
    'order_items',
    'orders',
    'payment_links',
    'product_files',
    'attachments',
    'coupon_products',
    'coupons',
    'gateways',
  ])
    await sql`drop table ${sql.table(t)}`.execute(db);
  await sql`alter table shops drop column tax_rate, drop column tax_inclusive`.execute(db);
}
