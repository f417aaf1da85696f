// The affiliate program: applications (a customer asks to become an affiliate; the merchant approves), the time a
// customer became an affiliate (the affiliate list's order), and the commission ledger: one row per accrual (an
// attributed order completed), per reversal (a refund of that order) and per conversion (commission moved into
// the wallet). An affiliate's unpaid balance, lifetime earnings and referred orders are sums over these rows (plus
// the figures a fixture imported into the customers columns, which nothing changes afterwards), never a copy kept
// up to date beside them.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // When the customer became an affiliate: approval, or (fixtures) creation. Set exactly for affiliates.
  await sql`alter table customers add column affiliate_approved_at timestamptz`.execute(db);
  await sql`update customers set affiliate_approved_at = created_at where is_affiliate`.execute(db);
  await sql`alter table customers add constraint customers_affiliate_approved_at
    check ((affiliate_approved_at is not null) = is_affiliate)`.execute(db);
  // The affiliate list: most recently approved first (keyset order, ties by id).
  await sql`create index customers_shop_affiliate_approved_idx on customers (shop_id, affiliate_approved_at, id)
    where is_affiliate`.execute(db);

  await sql`create table affiliate_applications (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    customer_id text collate "C" not null,
    status text not null default 'PENDING' check (status in ('PENDING', 'APPROVED', 'REJECTED')),
    -- The code the applicant asked for (null: one is generated on approval).
    requested_code text collate "C" check (requested_code ~ '^[A-Za-z0-9_-]{1,64}$'),
    commission_percent numeric(5, 2) not null default 10 check (commission_percent between 0 and 100),
    note text check (char_length(note) <= 2000),
    created_at timestamptz not null default now(),
    decided_at timestamptz,
    constraint affiliate_applications_shop_id_id_key unique (shop_id, id),
    constraint affiliate_applications_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint affiliate_applications_decided check ((status = 'PENDING') = (decided_at is null))
  )`.execute(db);
  // At most one pending application per customer.
  await sql`create unique index affiliate_applications_pending_key on affiliate_applications (shop_id, customer_id)
    where status = 'PENDING'`.execute(db);

  await sql`create table affiliate_commissions (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    affiliate_customer_id text collate "C" not null,
    kind text not null check (kind in ('ACCRUAL', 'REVERSAL', 'CONVERSION')),
    -- Signed: an accrual adds to the unpaid balance, a reversal and a conversion take from it.
    amount numeric(20, 8) not null,
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    order_id text collate "C",
    refund_id text collate "C",
    wallet_transaction_id text collate "C",
    -- ACCRUAL: the percent applied to the order total.
    commission_percent numeric(5, 2),
    created_at timestamptz not null default now(),
    constraint affiliate_commissions_shop_id_id_key unique (shop_id, id),
    constraint affiliate_commissions_affiliate_fkey foreign key (shop_id, affiliate_customer_id) references customers (shop_id, id),
    constraint affiliate_commissions_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint affiliate_commissions_refund_fkey foreign key (shop_id, refund_id) references refunds (shop_id, id),
    constraint affiliate_commissions_wallet_transaction_fkey foreign key (shop_id, wallet_transaction_id)
      references wallet_transactions (shop_id, id),
    constraint affiliate_commissions_kind check (
      (kind = 'ACCRUAL' and amount >= 0 and order_id is not null and refund_id is null
        and wallet_transaction_id is null and commission_percent is not null)
      or (kind = 'REVERSAL' and amount <= 0 and order_id is not null and refund_id is not null
        and wallet_transaction_id is null)
      or (kind = 'CONVERSION' and amount < 0 and order_id is null and refund_id is null
        and wallet_transaction_id is not null)
    )
  )`.execute(db);
  // One accrual per order, one reversal per refund, one conversion per wallet movement.
  await sql`create unique index affiliate_commissions_accrual_key on affiliate_commissions (shop_id, order_id)
    where kind = 'ACCRUAL'`.execute(db);
  await sql`create unique index affiliate_commissions_refund_key on affiliate_commissions (shop_id, refund_id)
    where refund_id is not null`.execute(db);
  await sql`create unique index affiliate_commissions_wallet_key on affiliate_commissions (shop_id, wallet_transaction_id)
    where wallet_transaction_id is not null`.execute(db);
  // An affiliate's rows by time (balance sums and the performance periods).
  await sql`create index affiliate_commissions_affiliate_idx on affiliate_commissions
    (shop_id, affiliate_customer_id, created_at)`.execute(db);
  // An affiliate's attributed orders by completion time (the performance figures).
  await sql`create index orders_shop_affiliate_completed_idx on orders (shop_id, affiliate_customer_id, completed_at)
    where affiliate_customer_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index orders_shop_affiliate_completed_idx`.execute(db);
  await sql`drop table affiliate_commissions`.execute(db);
  await sql`drop table affiliate_applications`.execute(db);
  await sql`drop index customers_shop_affiliate_approved_idx`.execute(db);
  await sql`alter table customers drop constraint customers_affiliate_approved_at,
    drop column affiliate_approved_at`.execute(db);
}
