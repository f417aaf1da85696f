// A payment attempt as a BTCPay invoice: opened once per attempt (BTCPay has no idempotency key, so the attempt id
// is the invoice's orderId and an existing invoice for it is reused), and its state read in our words.
import Decimal from 'decimal.js';
import { decimalString, roundToMinor } from '../../platform/money';
import {
  ProviderError,
  type ProviderAccount,
  type ProviderSession,
  type SessionState,
  type StartSessionInput,
} from '../gateway-provider';
import { greenfield, segment, storeId, type BtcpayClientOptions } from './client';
import * as shapes from './shapes';
import type { CreateInvoiceRequest, InvoiceData, InvoicePaymentMethod } from './types';

function invoicesPath(account: ProviderAccount): string {
  return `/api/v1/stores/${segment(storeId(account))}/invoices`;
}

function sameAmount(a: string, b: string): boolean {
  return new Decimal(a).equals(new Decimal(b));
}

function asSession(invoice: InvoiceData): ProviderSession {
  return { sessionId: invoice.id, checkoutUrl: invoice.checkoutLink };
}

export async function startSession(
  account: ProviderAccount,
  input: StartSessionInput,
  options: BtcpayClientOptions,
): Promise<ProviderSession> {
  // The look-up stands in for an idempotency key: a retry after a lost answer finds the invoice the first call made.
  // Two calls racing for one attempt could still both create one; the core serialises an attempt's start.
  const found = await greenfield(
    account,
    { method: 'GET', path: invoicesPath(account), query: { orderId: input.attemptId } },
    options,
  );
  if (found.status === 404) throw new ProviderError('unauthorized', 'BTCPay Server has no such store');
  const existing = shapes.invoices(found.body).find((invoice) => invoice.metadata?.orderId === input.attemptId);
  if (existing) {
    if (
      existing.currency.toUpperCase() !== input.currency.toUpperCase() ||
      !sameAmount(existing.amount, input.amount)
    ) {
      throw new ProviderError('refused', 'an invoice for this payment attempt already exists with another amount');
    }
    return asSession(existing);
  }

  const body: CreateInvoiceRequest = {
    amount: input.amount,
    currency: input.currency,
    metadata: {
      orderId: input.attemptId,
      itemDesc: input.description,
      order_uniqid: input.orderUniqid,
      shop_id: input.shopId,
      ...(input.customerEmail ? { buyerEmail: input.customerEmail } : {}),
    },
    checkout: {
      redirectURL: input.successUrl,
      redirectAutomatically: true,
      ...(input.coin ? { defaultPaymentMethod: input.coin, paymentMethods: [input.coin] } : {}),
    },
  };
  const created = await greenfield(account, { method: 'POST', path: invoicesPath(account), body }, options);
  if (created.status === 404) throw new ProviderError('unauthorized', 'BTCPay Server has no such store');
  return asSession(shapes.invoice(created.body));
}

/**
 * What the buyer paid, in the invoice currency. `paidAmount` says it (v2.1.2 and later); older servers only give
 * each payment method's view: totalPaid (every method's payments, in that method's currency) times its rate.
 */
export async function paidInInvoiceCurrency(
  account: ProviderAccount,
  invoice: InvoiceData,
  options: BtcpayClientOptions,
): Promise<string> {
  if (invoice.paidAmount !== undefined) return decimalString(invoice.paidAmount, invoice.currency);
  const answer = await greenfield(
    account,
    { method: 'GET', path: `${invoicesPath(account)}/${segment(invoice.id)}/payment-methods` },
    options,
  );
  if (answer.status === 404) throw new ProviderError('refused', 'BTCPay Server has no such invoice');
  const methods: InvoicePaymentMethod[] = shapes.paymentMethods(answer.body);
  const method = methods.find((m) => new Decimal(m.totalPaid).greaterThan(0));
  if (!method) return decimalString('0', invoice.currency);
  const paid = roundToMinor(new Decimal(method.totalPaid).times(method.rate), invoice.currency);
  return decimalString(paid, invoice.currency);
}

/**
 * The invoice's state in our words. PAID only when BTCPay says Settled (PaidOver and Marked included: the amount
 * is the invoice's). Money that arrived without a settlement is PARTIAL with what was paid: a New invoice paid in
 * part, and an Expired one paid in part, late or over (BTCPay does not settle those; the merchant must act, so the
 * money is reported rather than hidden behind EXPIRED). Processing (paid, awaiting confirmations) is OPEN.
 */
export async function sessionState(
  account: ProviderAccount,
  invoice: InvoiceData,
  options: BtcpayClientOptions,
): Promise<SessionState> {
  const paymentRef = invoice.id;
  switch (invoice.status) {
    case 'Settled':
      return {
        status: 'PAID',
        amount: decimalString(invoice.amount, invoice.currency),
        currency: invoice.currency,
        paymentRef,
      };
    case 'Processing':
      return { status: 'OPEN' };
    case 'Invalid':
      return { status: 'FAILED' };
    case 'New':
    case 'Expired': {
      const paidSome = ['PaidPartial', 'PaidLate', 'PaidOver'].includes(invoice.additionalStatus);
      if (!paidSome) return invoice.status === 'New' ? { status: 'OPEN' } : { status: 'EXPIRED' };
      const amount = await paidInInvoiceCurrency(account, invoice, options);
      return { status: 'PARTIAL', amount, currency: invoice.currency, paymentRef };
    }
  }
}

export async function readInvoice(
  account: ProviderAccount,
  invoiceId: string,
  options: BtcpayClientOptions,
): Promise<InvoiceData> {
  const answer = await greenfield(
    account,
    { method: 'GET', path: `${invoicesPath(account)}/${segment(invoiceId)}` },
    options,
  );
  if (answer.status === 404) throw new ProviderError('refused', 'BTCPay Server has no such invoice in this store');
  return shapes.invoice(answer.body);
}

export async function readSession(
  account: ProviderAccount,
  sessionId: string,
  options: BtcpayClientOptions,
): Promise<SessionState> {
  return sessionState(account, await readInvoice(account, sessionId, options), options);
}
