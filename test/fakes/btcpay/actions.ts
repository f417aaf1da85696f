// What happens to an invoice when the buyer (or time) acts, with the webhooks BTCPay sends for it, in its order:
// a full payment is InvoiceReceivedPayment, InvoicePaymentSettled, InvoiceSettled (a Lightning payment settles at
// once); an on-chain one waiting for confirmations is InvoiceReceivedPayment, InvoiceProcessing, then the settling
// two when confirmed; a short payment leaves the invoice New with PaidPartial after InvoiceReceivedPayment.
import Decimal from 'decimal.js';
import { minorUnit } from '../../../src/platform/money';
import {
  base58Id,
  btcValue,
  paidInInvoiceCurrency,
  paymentJson,
  type FakeInvoice,
  type FakePayment,
  type FakeStore,
} from './state';

export type Emit = (store: FakeStore, type: string, event: Record<string, unknown>) => void;

function invoiceEvent(invoice: FakeInvoice): Record<string, unknown> {
  return { invoiceId: invoice.id, metadata: invoice.metadata };
}

function addPayment(invoice: FakeInvoice, invoiceValue: Decimal, status: FakePayment['status']): FakePayment {
  const payment: FakePayment = {
    id: `${base58Id(32)}-0`,
    paymentMethodId: invoice.paymentMethodIds[0]!,
    value: btcValue(invoice, invoiceValue),
    invoiceValue: invoiceValue.toFixed(minorUnit(invoice.currency)),
    receivedDate: Math.floor(Date.now() / 1000),
    status,
  };
  invoice.payments.push(payment);
  return payment;
}

function paymentEvent(invoice: FakeInvoice, payment: FakePayment, afterExpiration: boolean): Record<string, unknown> {
  return {
    ...invoiceEvent(invoice),
    afterExpiration,
    paymentMethodId: payment.paymentMethodId,
    payment: paymentJson(payment),
  };
}

export function due(invoice: FakeInvoice): Decimal {
  return Decimal.max(new Decimal(invoice.amount).minus(paidInInvoiceCurrency(invoice)), 0);
}

function settle(store: FakeStore, invoice: FakeInvoice, emit: Emit): void {
  for (const payment of invoice.payments) {
    if (payment.status !== 'Processing') continue;
    payment.status = 'Settled';
    emit(store, 'InvoicePaymentSettled', paymentEvent(invoice, payment, false));
  }
  const overPaid = paidInInvoiceCurrency(invoice).greaterThan(invoice.amount);
  invoice.status = 'Settled';
  invoice.additionalStatus = overPaid ? 'PaidOver' : 'None';
  emit(store, 'InvoiceSettled', { ...invoiceEvent(invoice), manuallyMarked: false, overPaid });
}

/**
 * A payment of `amount` (default: what is due) in the invoice currency. A Processing invoice is confirmed instead.
 * Paid to an Expired invoice it stays Expired (PaidLate or PaidPartial), as BTCPay does.
 */
export function pay(store: FakeStore, invoice: FakeInvoice, emit: Emit, amount?: string): void {
  if (invoice.status === 'Processing' && amount === undefined) return settle(store, invoice, emit);
  if (invoice.status === 'Settled' || invoice.status === 'Invalid' || invoice.status === 'Processing') {
    throw new Error(`invoice ${invoice.id} is ${invoice.status}: it takes no payment here`);
  }
  const value = new Decimal(amount ?? due(invoice));
  if (!value.isFinite() || value.lessThanOrEqualTo(0)) throw new Error(`not a payment amount: ${String(amount)}`);
  const afterExpiration = invoice.status === 'Expired';
  const payment = addPayment(invoice, value, 'Settled');
  emit(store, 'InvoiceReceivedPayment', paymentEvent(invoice, payment, afterExpiration));
  const paidInFull = due(invoice).isZero();
  if (afterExpiration) {
    invoice.additionalStatus = paidInFull ? 'PaidLate' : 'PaidPartial';
    return;
  }
  if (!paidInFull) {
    invoice.additionalStatus = 'PaidPartial';
    return;
  }
  emit(store, 'InvoicePaymentSettled', paymentEvent(invoice, payment, false));
  const overPaid = paidInInvoiceCurrency(invoice).greaterThan(invoice.amount);
  invoice.status = 'Settled';
  invoice.additionalStatus = overPaid ? 'PaidOver' : 'None';
  emit(store, 'InvoiceSettled', { ...invoiceEvent(invoice), manuallyMarked: false, overPaid });
}

/** The rest paid on chain, not yet confirmed: Processing. */
export function process(store: FakeStore, invoice: FakeInvoice, emit: Emit): void {
  if (invoice.status !== 'New') throw new Error(`invoice ${invoice.id} is ${invoice.status}, not New`);
  const payment = addPayment(invoice, due(invoice), 'Processing');
  emit(store, 'InvoiceReceivedPayment', paymentEvent(invoice, payment, false));
  invoice.status = 'Processing';
  invoice.additionalStatus = 'None';
  emit(store, 'InvoiceProcessing', { ...invoiceEvent(invoice), overPaid: false });
}

/** The hosted page's "Fail": the invoice becomes Invalid (payments never confirmed, or marked so). */
export function fail(store: FakeStore, invoice: FakeInvoice, emit: Emit): void {
  if (invoice.status === 'Settled' || invoice.status === 'Invalid') {
    throw new Error(`invoice ${invoice.id} is ${invoice.status}: it cannot fail`);
  }
  for (const payment of invoice.payments) if (payment.status === 'Processing') payment.status = 'Invalid';
  invoice.status = 'Invalid';
  emit(store, 'InvoiceInvalid', { ...invoiceEvent(invoice), manuallyMarked: false });
}

export function expire(store: FakeStore, invoice: FakeInvoice, emit: Emit): void {
  if (invoice.status !== 'New') throw new Error(`invoice ${invoice.id} is ${invoice.status}, not New`);
  const partiallyPaid = invoice.payments.length > 0;
  invoice.status = 'Expired';
  invoice.expirationTime = Math.floor(Date.now() / 1000);
  emit(store, 'InvoiceExpired', { ...invoiceEvent(invoice), partiallyPaid });
}
