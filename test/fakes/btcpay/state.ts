// What the BTCPay fake remembers (stores, invoices, payments, pull payments) and how BTCPay renders it (Greenfield
// JSON as the pinned document describes it). Amounts are decimal strings, arithmetic decimal.js, as BTCPay's C#
// decimals are.
import { randomBytes } from 'node:crypto';
import Decimal from 'decimal.js';
import { minorUnit } from '../../../src/platform/money';

/** BTCPay ids are base58 (Encoders.Base58 of random bytes). */
const base58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
export function base58Id(length: number): string {
  const bytes = randomBytes(length);
  return [...bytes].map((b) => base58[b % 58]).join('');
}

export interface FakeStore {
  id: string;
  name: string;
  apiKey: string;
  livemode: boolean;
  webhook: { id: string; secret: string; url: string | undefined };
}

export type InvoiceStatus = 'New' | 'Processing' | 'Expired' | 'Invalid' | 'Settled';
export type AdditionalStatus = 'None' | 'PaidLate' | 'PaidPartial' | 'Marked' | 'Invalid' | 'PaidOver';

export interface FakePayment {
  id: string;
  paymentMethodId: string;
  /** In BTC (the payment method's currency). */
  value: string;
  /** In the invoice currency, as the buyer's wallet sent it (what the fake was asked to pay). */
  invoiceValue: string;
  receivedDate: number;
  status: 'Processing' | 'Settled' | 'Invalid';
}

export interface FakeInvoice {
  id: string;
  storeId: string;
  amount: string;
  currency: string;
  metadata: Record<string, unknown>;
  checkout: Record<string, unknown>;
  status: InvoiceStatus;
  additionalStatus: AdditionalStatus;
  createdTime: number;
  expirationTime: number;
  monitoringExpiration: number;
  payments: FakePayment[];
  /** The payment methods the invoice offers (the store's, or the ones the request named). */
  paymentMethodIds: string[];
  /** Invoice currency per BTC at creation, as BTCPay fixes it in each payment prompt. */
  rate: string;
  livemode: boolean;
}

export interface FakePullPayment {
  id: string;
  storeId: string;
  invoiceId: string | undefined;
  name: string;
  description: string;
  currency: string;
  amount: string;
  archived: boolean;
  autoApproveClaims: boolean;
  createdBy: 'api' | 'dashboard';
}

/** The payment methods a fake store has enabled (BTCPay 2.x ids; 1.x called them BTC and BTC-LightningNetwork). */
export const storePaymentMethods = ['BTC-CHAIN', 'BTC-LN'];

/** Fixed rates, invoice currency per BTC: the fake's exchange. */
const rates: Record<string, string> = { USD: '50000', EUR: '46000', GBP: '40000', JPY: '7500000', BTC: '1' };

export function rateFor(currency: string): string | undefined {
  return rates[currency.toUpperCase()];
}

export function paidInInvoiceCurrency(invoice: FakeInvoice): Decimal {
  return invoice.payments
    .filter((p) => p.status !== 'Invalid')
    .reduce((sum, p) => sum.plus(p.invoiceValue), new Decimal(0))
    .toDecimalPlaces(minorUnit(invoice.currency));
}

function inBtc(invoice: FakeInvoice, invoiceCurrencyAmount: Decimal.Value): string {
  return new Decimal(invoiceCurrencyAmount).div(invoice.rate).toDecimalPlaces(8, Decimal.ROUND_UP).toFixed(8);
}

export function btcValue(invoice: FakeInvoice, invoiceCurrencyAmount: Decimal.Value): string {
  return inBtc(invoice, invoiceCurrencyAmount);
}

function fixed(value: Decimal.Value, currency: string): string {
  return new Decimal(value).toFixed(minorUnit(currency));
}

/** #/components/schemas/InvoiceData */
export function invoiceJson(invoice: FakeInvoice, baseUrl: string): Record<string, unknown> {
  const manual: InvoiceStatus[] =
    invoice.status === 'Settled' ? ['Invalid'] : invoice.status === 'Invalid' ? ['Settled'] : ['Settled', 'Invalid'];
  return {
    id: invoice.id,
    storeId: invoice.storeId,
    amount: fixed(invoice.amount, invoice.currency),
    paidAmount: fixed(paidInInvoiceCurrency(invoice), invoice.currency),
    currency: invoice.currency,
    type: 'Standard',
    checkoutLink: `${baseUrl}/i/${invoice.id}`,
    createdTime: invoice.createdTime,
    expirationTime: invoice.expirationTime,
    monitoringExpiration: invoice.monitoringExpiration,
    status: invoice.status,
    additionalStatus: invoice.additionalStatus,
    availableStatusesForManualMarking: manual,
    archived: false,
    metadata: invoice.metadata,
    checkout: invoice.checkout,
    receipt: { enabled: null, showQR: null, showPayments: null },
  };
}

/** #/components/schemas/InvoicePaymentMethodDataModel, one per payment method. */
export function paymentMethodsJson(invoice: FakeInvoice): Record<string, unknown>[] {
  const totalPaid = invoice.payments
    .filter((p) => p.status !== 'Invalid')
    .reduce((sum, p) => sum.plus(p.value), new Decimal(0));
  const amount = new Decimal(inBtc(invoice, invoice.amount));
  const due = Decimal.max(amount.minus(totalPaid), 0);
  return invoice.paymentMethodIds.map((paymentMethodId) => {
    const own = invoice.payments.filter((p) => p.paymentMethodId === paymentMethodId);
    const paid = own.filter((p) => p.status !== 'Invalid').reduce((sum, p) => sum.plus(p.value), new Decimal(0));
    const lightning = paymentMethodId.endsWith('-LN');
    return {
      paymentMethodId,
      currency: 'BTC',
      destination: lightning ? `lnbcrt${invoice.id.toLowerCase()}` : `bcrt1q${invoice.id.toLowerCase()}`,
      paymentLink: lightning
        ? `lightning:lnbcrt${invoice.id.toLowerCase()}`
        : `bitcoin:bcrt1q${invoice.id.toLowerCase()}`,
      rate: invoice.rate,
      paymentMethodPaid: paid.toFixed(8),
      totalPaid: totalPaid.toFixed(8),
      due: due.toFixed(8),
      amount: amount.toFixed(8),
      paymentMethodFee: '0.00000000',
      payments: own.map(paymentJson),
      activated: true,
      additionalData: {},
    };
  });
}

/** #/components/schemas/Payment */
export function paymentJson(payment: FakePayment): Record<string, unknown> {
  return {
    id: payment.id,
    receivedDate: payment.receivedDate,
    value: payment.value,
    fee: '0.00000000',
    status: payment.status,
    destination: 'bcrt1qfake',
  };
}

/** #/components/schemas/PullPaymentData */
export function pullPaymentJson(pp: FakePullPayment, baseUrl: string): Record<string, unknown> {
  return {
    id: pp.id,
    name: pp.name,
    description: pp.description,
    currency: pp.currency,
    amount: pp.amount,
    BOLT11Expiration: '30',
    autoApproveClaims: pp.autoApproveClaims,
    archived: pp.archived,
    viewLink: `${baseUrl}/pull-payments/${pp.id}`,
  };
}

/** #/components/schemas/StoreData */
export function storeJson(store: FakeStore): Record<string, unknown> {
  return {
    id: store.id,
    name: store.name,
    website: null,
    defaultCurrency: 'USD',
    invoiceExpiration: 900,
    monitoringExpiration: 86400,
    speedPolicy: 'MediumSpeed',
    paymentTolerance: 0,
    archived: false,
  };
}
