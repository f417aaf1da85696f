// Customer wallets: the ledger (wallet_transactions) and its cached sum and hold on the customer row. The wallet
// columns of customers are written only here, and only by src/domain/customers/wallets.ts after it locked the row.
import { sql, type Transaction } from 'kysely';
import type { Database, WalletTransactionRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export interface WalletState {
  customer_id: string;
  wallet_id: string;
  wallet_currency: string;
  wallet_balance: string;
  wallet_held: string;
}

const walletColumns = ['id as customer_id', 'wallet_id', 'wallet_currency', 'wallet_balance', 'wallet_held'] as const;

/** The customer's wallet, its row locked for the transaction (movements of one wallet run one after another). */
export async function walletOfCustomerForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
): Promise<WalletState | undefined> {
  return inShop(trx, shopId)
    .selectFrom('customers')
    .select(walletColumns)
    .where('id', '=', customerId)
    .forUpdate()
    .executeTakeFirst();
}

/** The customer's wallet as it is (no lock). */
export async function walletOfCustomer(
  db: ReadDb,
  shopId: string,
  customerId: string,
): Promise<WalletState | undefined> {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select(walletColumns)
    .where('id', '=', customerId)
    .executeTakeFirst();
}

export async function insertWalletTransaction(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'wallet_transactions'>,
): Promise<WalletTransactionRow> {
  return inShopForWrite(trx, shopId).insertInto('wallet_transactions', row).returningAll().executeTakeFirstOrThrow();
}

/** Adds `delta` (signed numeric text) to the cached balance and `heldDelta` to the hold; returns the new values. */
export async function shiftWallet(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
  delta: { balance: string; held: string },
  now: Date,
): Promise<{ wallet_balance: string; wallet_held: string }> {
  return inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set({
      wallet_balance: sql<string>`wallet_balance + ${delta.balance}::numeric`,
      wallet_held: sql<string>`wallet_held + ${delta.held}::numeric`,
      updated_at: now,
    })
    .where('id', '=', customerId)
    .returning(['wallet_balance', 'wallet_held'])
    .executeTakeFirstOrThrow();
}

/** The sum of the customer's ledger ('0' without rows). */
export async function walletLedgerSum(db: ReadDb, shopId: string, customerId: string): Promise<string> {
  const row = await inShop(db, shopId)
    .selectFrom('wallet_transactions')
    .select(sql<string>`coalesce(sum(amount), 0)::text`.as('sum'))
    .where('customer_id', '=', customerId)
    .executeTakeFirstOrThrow();
  return row.sum;
}

/** The ledger rows of one order (its wallet payment and refunds), oldest first. */
export async function walletTransactionsOfOrder(
  db: ReadDb,
  shopId: string,
  orderId: string,
): Promise<WalletTransactionRow[]> {
  return inShop(db, shopId)
    .selectFrom('wallet_transactions')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
