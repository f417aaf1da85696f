// Subscriptions (src/domain/subscriptions/subscriptions.ts): the billing interval of a SUBSCRIPTION product (and of each variant,
// which may have its own), the subscriptions that completed orders start, and their renewal invoices.
// Tenancy as in 0004: a unique (shop_id, id) per table, composite foreign keys between shop rows.
// What the database itself guarantees about renewals: one subscription per order line (an order completed once
// starts it once), at most one OPEN renewal invoice per subscription, and never two live (OPEN or PAID) renewals of
// the same period, so no worker, however many run, can bill a period twice.
import { sql, type Kysely } from 'kysely';

const intervals = sql`('DAY', 'WEEK', 'MONTH', 'YEAR')`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Both null: a SUBSCRIPTION product bills every 1 MONTH; a variant without its own interval uses its product's.
  for (const table of ['products', 'product_variants']) {
    await sql`alter table ${sql.table(table)}
      add column billing_interval text check (billing_interval in ${intervals}),
      add column billing_interval_count integer check (billing_interval_count between 1 and 365),
      add constraint ${sql.raw(`${table}_billing_interval_pair`)}
        check ((billing_interval is null) = (billing_interval_count is null))`.execute(db);
  }

  await sql`create table subscriptions (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    customer_id text collate "C" not null,
    customer_email text collate "C" not null check (customer_email = lower(customer_email)),
    product_id text not null,
    variant_id text,
    -- The order line that started it (null for a subscription imported by a fixture).
    origin_order_id text collate "C",
    origin_item_id text collate "C",
    status text not null check (status in ('TRIALING', 'ACTIVE', 'PAST_DUE', 'PAUSED', 'CANCELLED', 'EXPIRED')),
    -- What each renewal bills before tax: unit_price x quantity (the price of the starting order's line).
    unit_price numeric(20, 8) not null check (unit_price >= 0),
    quantity integer not null check (quantity >= 1),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    interval text not null check (interval in ${intervals}),
    interval_count integer not null check (interval_count between 1 and 365),
    current_period_start timestamptz not null,
    current_period_end timestamptz not null,
    -- When the next renewal invoice is due; its period starts here.
    next_renewal_at timestamptz not null,
    cancel_at_period_end boolean not null default false,
    paused_at timestamptz,
    resume_at timestamptz,
    pause_reason text,
    -- Renewal invoices that expired unpaid in a row (reset by a paid one).
    unpaid_renewals integer not null default 0 check (unpaid_renewals >= 0),
    cancelled_at timestamptz,
    custom_fields jsonb not null default '{}'::jsonb check (jsonb_typeof(custom_fields) = 'object'),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint subscriptions_shop_id_id_key unique (shop_id, id),
    constraint subscriptions_origin_item_key unique (shop_id, origin_item_id),
    constraint subscriptions_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint subscriptions_product_fkey foreign key (shop_id, product_id) references products (shop_id, id),
    constraint subscriptions_variant_fkey foreign key (shop_id, variant_id) references product_variants (shop_id, id),
    constraint subscriptions_origin_order_fkey foreign key (shop_id, origin_order_id) references orders (shop_id, id),
    constraint subscriptions_origin_item_fkey foreign key (shop_id, origin_item_id) references order_items (shop_id, id),
    constraint subscriptions_period check (current_period_end > current_period_start),
    constraint subscriptions_paused check ((status = 'PAUSED') = (paused_at is not null)),
    constraint subscriptions_resume_paused check (resume_at is null or status = 'PAUSED'),
    constraint subscriptions_cancelled check ((status = 'CANCELLED') = (cancelled_at is not null))
  )`.execute(db);
  // GET /subscriptions: newest first.
  await sql`create index subscriptions_shop_created_idx on subscriptions (shop_id, created_at, id)`.execute(db);
  // The renewal job: subscriptions due for an invoice, and paused ones due to resume.
  await sql`create index subscriptions_renewal_due_idx on subscriptions (next_renewal_at)
    where status in ('ACTIVE', 'PAST_DUE')`.execute(db);
  await sql`create index subscriptions_resume_due_idx on subscriptions (resume_at) where status = 'PAUSED'`.execute(db);

  // One renewal invoice (an order) for one period of a subscription.
  await sql`create table subscription_renewals (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    subscription_id text collate "C" not null,
    order_id text collate "C" not null,
    period_start timestamptz not null,
    period_end timestamptz not null,
    -- OPEN: the invoice awaits payment; PAID: it was paid and the period began; EXPIRED: it was voided unpaid.
    status text not null check (status in ('OPEN', 'PAID', 'EXPIRED')),
    created_at timestamptz not null default now(),
    settled_at timestamptz,
    constraint subscription_renewals_shop_id_id_key unique (shop_id, id),
    constraint subscription_renewals_order_key unique (shop_id, order_id),
    constraint subscription_renewals_subscription_fkey foreign key (shop_id, subscription_id) references subscriptions (shop_id, id),
    constraint subscription_renewals_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint subscription_renewals_period check (period_end > period_start),
    constraint subscription_renewals_settled check ((status = 'OPEN') = (settled_at is null))
  )`.execute(db);
  await sql`create unique index subscription_renewals_one_open on subscription_renewals (shop_id, subscription_id)
    where status = 'OPEN'`.execute(db);
  await sql`create unique index subscription_renewals_period_once on subscription_renewals (shop_id, subscription_id, period_start)
    where status <> 'EXPIRED'`.execute(db);
  await sql`create index subscription_renewals_open_idx on subscription_renewals (order_id) where status = 'OPEN'`.execute(
    db,
  );

  // The subscription an order started (its first SUBSCRIPTION line) or renews (a renewal invoice).
  await sql`alter table orders
    add column subscription_id text collate "C",
    add constraint orders_subscription_fkey foreign key (shop_id, subscription_id) references subscriptions (shop_id, id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table orders drop constraint orders_subscription_fkey, drop column subscription_id`.execute(db);
  await sql`drop table subscription_renewals`.execute(db);
  await sql`drop table subscriptions`.execute(db);
  for (const table of ['products', 'product_variants']) {
    await sql`alter table ${sql.table(table)}
      drop constraint ${sql.raw(`${table}_billing_interval_pair`)},
      drop column billing_interval_count,
      drop column billing_interval`.execute(db);
  }
}
