// Store-credit wallets as a ledger: one wallet_transactions row per movement (signed amount), and the part of the
// wallet a pending order holds. customers.wallet_balance stays as a cache of the ledger's sum: it is only ever
// changed by src/domain/customers/wallets.ts, in the transaction that inserts the ledger row, after locking the customer row
// (SELECT … FOR UPDATE), so balance = sum(amount) holds after every commit (test/customers/wallets.test.ts checks it after
// every operation). The checks below make the database refuse a negative balance and a hold larger than the
// balance, whatever a caller does.
import { sql, type Kysely } from 'kysely';

/** Every type a ledger row may have: the credit and debit request types, and the movements other modules post. */
export const walletTransactionTypes = [
  // Credits (WalletCreditRequest.type).
  'PROMO',
  'REFUND',
  'COMPENSATION',
  'TOP_UP',
  // Both directions.
  'ADJUSTMENT',
  // Debits (WalletDebitRequest.type).
  'PURCHASE',
  'CORRECTION',
  'EXPIRY',
  // Internal: affiliate commission converted into store credit (convert-to-balance).
  'AFFILIATE_COMMISSION',
  // Internal: the wallet part of an order, captured when it completes / given back when it is refunded.
  'ORDER_PAYMENT',
  'ORDER_REFUND',
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  const types = sql.join(walletTransactionTypes.map((t) => sql.lit(t)));
  await sql`create table wallet_transactions (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    customer_id text collate "C" not null,
    amount numeric(20, 8) not null check (amount <> 0),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    type text not null check (type in (${types})),
    description text,
    -- What caused the movement, where it was an order (its wallet payment, its refund).
    order_id text collate "C",
    created_at timestamptz not null default now(),
    constraint wallet_transactions_shop_id_id_key unique (shop_id, id),
    constraint wallet_transactions_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint wallet_transactions_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint wallet_transactions_sign check (
      (type in ('PROMO', 'REFUND', 'COMPENSATION', 'TOP_UP', 'AFFILIATE_COMMISSION', 'ORDER_REFUND') and amount > 0)
      or (type in ('PURCHASE', 'CORRECTION', 'EXPIRY', 'ORDER_PAYMENT') and amount < 0)
      or type = 'ADJUSTMENT'
    )
  )`.execute(db);
  // A customer's history, newest first; and the movements of an order.
  await sql`create index wallet_transactions_customer_idx on wallet_transactions (shop_id, customer_id, created_at, id)`.execute(
    db,
  );
  await sql`create index wallet_transactions_order_idx on wallet_transactions (shop_id, order_id) where order_id is not null`.execute(
    db,
  );

  // Balances written before the ledger existed become one opening ADJUSTMENT row each, so the sum holds from here.
  await sql`insert into wallet_transactions (id, shop_id, customer_id, amount, currency, type, description, created_at)
    select 'wtx_' || replace(gen_random_uuid()::text, '-', ''), shop_id, id, wallet_balance, wallet_currency,
      'ADJUSTMENT', 'Opening balance', created_at
    from customers where wallet_balance <> 0`.execute(db);

  await sql`alter table customers
    add constraint customers_wallet_balance_nonnegative check (wallet_balance >= 0),
    add constraint customers_wallet_held_within check (wallet_held <= wallet_balance)`.execute(db);

  // The part of an order's total paid from the buyer's wallet: held while the order is PENDING, captured (an
  // ORDER_PAYMENT ledger row) when it completes, released when it is voided.
  await sql`alter table orders
    add column balance_paid numeric(20, 8) not null default 0 check (balance_paid >= 0),
    add constraint orders_balance_paid_within check (balance_paid <= total)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table orders drop constraint orders_balance_paid_within, drop column balance_paid`.execute(db);
  await sql`alter table customers drop constraint customers_wallet_held_within,
    drop constraint customers_wallet_balance_nonnegative`.execute(db);
  await sql`drop table wallet_transactions`.execute(db);
}
