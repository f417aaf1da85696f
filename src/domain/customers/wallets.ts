// Store-credit wallets. Every movement is one wallet_transactions row (a signed amount); the customer row caches the
// ledger's sum (wallet_balance) and the part pending orders hold (wallet_held). Both are changed only here, in the
// transaction that writes the ledger row, after the customer row was locked (SELECT … FOR UPDATE): movements of one
// wallet run one after another, each sees what the one before it left, so the cache equals the sum after every
// commit and `available = balance - held` never drops below zero (the database's checks are the last line behind
// that: balance >= 0, 0 <= held <= balance).
//
// Amounts are decimal strings with at most the wallet currency's minor unit of decimals: 0.001 USD is refused
// (422 on `amount`), never rounded, as payments and refunds do. (Only an imported opening balance, postOpeningBalance,
// keeps up to the 8 stored decimals.) The balance is kept as a cache rather than computed on every read because
// every customer read and list shows it; test/customers/wallets.test.ts and wallet-orders.test.ts check cache == sum after
// every test.
import Decimal from 'decimal.js';
import * as wallets from '../../../db/queries/wallets';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import { amountScale, decimalString, jsonAmount, maxAmount, minorUnit, parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';

/** The credit types a merchant may give (WalletCreditRequest.type). */
export const walletCreditTypes = ['PROMO', 'REFUND', 'COMPENSATION', 'TOP_UP', 'ADJUSTMENT'] as const;
/** The debit types a merchant may give (WalletDebitRequest.type). */
export const walletDebitTypes = ['PURCHASE', 'CORRECTION', 'EXPIRY', 'ADJUSTMENT'] as const;
/**
 * Every type a ledger row may have (the migration's check lists the same): the request types, and the movements
 * other modules post — AFFILIATE_COMMISSION (convert-to-balance), ORDER_PAYMENT (an order's wallet part captured
 * on completion), ORDER_REFUND (that part given back by a refund).
 */
export const walletTransactionTypes: ReadonlySet<string> = new Set([
  ...walletCreditTypes,
  ...walletDebitTypes,
  'AFFILIATE_COMMISSION',
  'ORDER_PAYMENT',
  'ORDER_REFUND',
]);

/** The Wallet transaction object of the contract. */
export interface WalletTransactionView {
  transaction_id: string;
  /** Signed: positive for a credit, negative for a debit. */
  amount: number;
  currency: string;
  new_balance: number;
  available_balance: number;
  wallet_id: string;
}

export interface WalletMovement {
  /** Signed decimal string: positive credits, negative debits; at most the wallet currency's minor unit. */
  amount: string;
  type: string;
  description?: string | null;
  /** The order that caused the movement, if any. */
  orderId?: string | null;
}

const signedDecimal = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * Posts one movement on the customer's wallet: locks the customer row, refuses with 400 INSUFFICIENT_FUNDS when a
 * debit would take more than the available balance (balance minus held), writes the ledger row and the cached
 * balance, and returns the transaction. 404 CUSTOMER_NOT_FOUND for a customer that is not the shop's; 422 on
 * `amount` for 0, a malformed amount or more decimals than the wallet currency has. Nothing is written when it
 * throws (and the caller's unit of work rolls back).
 */
export async function postWalletMovement(
  w: ShopWrite,
  customerId: string,
  movement: WalletMovement,
): Promise<WalletTransactionView> {
  return moveWallet(w, customerId, movement);
}

/**
 * A balance brought in from elsewhere (fixtures: `customers[].wallet_balance`), as one ADJUSTMENT ledger row of
 * `Opening balance`. Unlike a movement through the API it keeps every digit the database stores (up to 8 decimals),
 * as imported data is taken as it is.
 */
export async function postOpeningBalance(
  w: ShopWrite,
  customerId: string,
  amount: string,
): Promise<WalletTransactionView> {
  return moveWallet(
    w,
    customerId,
    { amount, type: 'ADJUSTMENT', description: 'Opening balance' },
    { storedScale: true },
  );
}

export interface MoveWalletOptions {
  /** Signed decimal string added to the hold with the movement (default '0': the hold is untouched). */
  heldDelta?: string;
  /** Keep every digit the database stores instead of the currency's minor unit (an imported opening balance). */
  storedScale?: boolean;
}

/**
 * The one writer of a wallet: a ledger row of `movement.amount` and, with it, `heldDelta` (signed) added to the
 * hold — a captured order hold is a debit of X that also releases X of the hold, so what is available stays as it
 * was. Refused (INSUFFICIENT_FUNDS) when the available balance after it would be below zero.
 */
export async function moveWallet(
  w: ShopWrite,
  customerId: string,
  movement: WalletMovement,
  options: MoveWalletOptions = {},
): Promise<WalletTransactionView> {
  const { trx, shopId, now } = w;
  const heldDelta = options.heldDelta ?? '0';
  if (!walletTransactionTypes.has(movement.type)) throw new Error(`unknown wallet transaction type ${movement.type}`);
  const wallet = await wallets.walletOfCustomerForUpdate(trx, shopId, customerId);
  if (!wallet) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  const amount = signedAmount(movement.amount, wallet.wallet_currency, options.storedScale === true);
  const balance = new Decimal(wallet.wallet_balance);
  const held = new Decimal(wallet.wallet_held);
  const available = balance.minus(held);
  const newHeld = held.plus(heldDelta);
  if (newHeld.isNegative())
    throw new Error(`wallet ${wallet.wallet_id}: releasing ${heldDelta} of a ${held.toFixed()} hold`);
  if (balance.plus(amount).minus(newHeld).isNegative()) {
    throw insufficientFunds(amount.negated(), available, wallet.wallet_currency);
  }
  if (balance.plus(amount).gt(maxAmount)) {
    // numeric(20, 8) could not hold it: refused rather than failing in the database.
    throw invalidAmount(`would take the balance beyond ${decimalString(maxAmount, wallet.wallet_currency)}`);
  }
  const row = await wallets.insertWalletTransaction(trx, shopId, {
    id: newId('wtx'),
    customer_id: customerId,
    amount: amount.toFixed(),
    currency: wallet.wallet_currency,
    type: movement.type,
    description: movement.description ?? null,
    order_id: movement.orderId ?? null,
    created_at: now,
  });
  const after = await wallets.shiftWallet(
    trx,
    shopId,
    customerId,
    { balance: amount.toFixed(), held: new Decimal(heldDelta).toFixed() },
    now,
  );
  return {
    transaction_id: row.id,
    amount: jsonAmount(amount),
    currency: wallet.wallet_currency,
    new_balance: jsonAmount(after.wallet_balance),
    available_balance: jsonAmount(new Decimal(after.wallet_balance).minus(after.wallet_held)),
    wallet_id: wallet.wallet_id,
  };
}

/** What an order asks its buyer's wallet to hold: up to `wanted`, in `currency`; a refusal names `field`. */
export interface WalletHoldRequest {
  wanted: string;
  currency: string;
  field: string;
}

/**
 * Holds up to `wanted` of the customer's available balance (no ledger row: nothing has moved yet) and returns what
 * was held ('0' when nothing is available). The wallet must be in `currency`: 422 on `field` otherwise.
 */
export async function holdWalletBalance(
  w: ShopWrite,
  customerId: string,
  { wanted, currency, field }: WalletHoldRequest,
): Promise<string> {
  const { trx, shopId, now } = w;
  const wallet = await wallets.walletOfCustomerForUpdate(trx, shopId, customerId);
  if (!wallet) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  if (wallet.wallet_currency !== currency) {
    throw new ValidationError([
      { field, message: `cannot be used: the wallet is in ${wallet.wallet_currency}, the order in ${currency}` },
    ]);
  }
  const available = new Decimal(wallet.wallet_balance).minus(wallet.wallet_held);
  const hold = Decimal.max(Decimal.min(available, wanted), 0);
  if (hold.isZero()) return '0';
  await wallets.shiftWallet(trx, shopId, customerId, { balance: '0', held: hold.toFixed() }, now);
  return hold.toFixed();
}

/** Gives a hold back (a voided order): the balance is untouched, the amount is available again. */
export async function releaseWalletHold(w: ShopWrite, customerId: string, amount: string): Promise<void> {
  const { trx, shopId, now } = w;
  const wallet = await wallets.walletOfCustomerForUpdate(trx, shopId, customerId);
  if (!wallet) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  if (new Decimal(wallet.wallet_held).lt(amount))
    throw new Error(`wallet ${wallet.wallet_id}: releasing ${amount} of a ${wallet.wallet_held} hold`);
  await wallets.shiftWallet(
    trx,
    shopId,
    customerId,
    { balance: '0', held: new Decimal(amount).negated().toFixed() },
    now,
  );
}

function signedAmount(text: string, currency: string, storedScale: boolean): Decimal {
  if (!signedDecimal.test(text)) throw invalidAmount('must be a decimal amount such as 10 or -19.99');
  const value = new Decimal(text);
  if (value.isZero()) throw invalidAmount('must not be 0');
  const scale = storedScale ? amountScale : minorUnit(currency);
  if (value.decimalPlaces() > scale) {
    throw invalidAmount(
      `must have at most ${scale} decimal${scale === 1 ? '' : 's'}${storedScale ? '' : ` (the minor unit of ${currency})`}`,
    );
  }
  // Within numeric(20, 8): parseAmount refuses what could not be stored.
  parseAmount(value.abs().toFixed(), 'amount');
  return value;
}

function invalidAmount(message: string): ValidationError {
  return new ValidationError([{ field: 'amount', message }]);
}

function insufficientFunds(wanted: Decimal, available: Decimal, currency: string): ApiError {
  return new ApiError(
    'INSUFFICIENT_FUNDS',
    `The wallet has ${decimalString(Decimal.max(available, 0), currency)} ${currency} available; ${decimalString(wanted, currency)} ${currency} cannot be taken from it. Nothing changed.`,
  );
}

export interface WalletRequest {
  amount: string;
  type: string;
  description?: string;
}

/** `POST /customers/{id}/wallet/credit`: adds store credit. */
export async function creditCustomerWallet(
  w: ShopWrite,
  customerId: string,
  input: WalletRequest,
): Promise<WalletTransactionView> {
  return requestedMovement(w, customerId, input, 1);
}

/** `POST /customers/{id}/wallet/debit`: removes store credit; the transaction's amount is negative. */
export async function debitCustomerWallet(
  w: ShopWrite,
  customerId: string,
  input: WalletRequest,
): Promise<WalletTransactionView> {
  return requestedMovement(w, customerId, input, -1);
}

async function requestedMovement(
  w: ShopWrite,
  customerId: string,
  input: WalletRequest,
  sign: 1 | -1,
): Promise<WalletTransactionView> {
  const { trx, shopId, effects } = w;
  // The currency's minor unit is the wallet's: read it (and 404 an unknown customer) before judging the amount.
  const wallet = await wallets.walletOfCustomerForUpdate(trx, shopId, customerId);
  if (!wallet) throw new NotFoundError('CUSTOMER_NOT_FOUND');
  const amount = parseAmount(input.amount, 'amount', {
    currency: wallet.wallet_currency,
    min: 0,
    exclusiveMin: true,
  });
  const signed = sign === 1 ? amount : `-${amount}`;
  const result = await postWalletMovement(w, customerId, {
    amount: signed,
    type: input.type,
    description: input.description ?? null,
  });
  // No wallet events exist in the contract: the request's audit entry (written for every customers.write request,
  // refused ones too) is the record, named here.
  effects.audit({
    action: sign === 1 ? 'customer.wallet_credited' : 'customer.wallet_debited',
    resourceType: 'customer',
    resourceId: customerId,
  });
  return result;
}
