// A refund as BTCPay makes one: a pull payment the buyer claims (gives an address or a Lightning invoice) through
// its link; BTCPay cannot push money back to a buyer by itself, so a refund is always PENDING here.
//
// BTCPay has no refund idempotency key and does not bound a Custom refund by what was paid, so this module does
// both: a pull payment whose description carries our refund id is reused, and the refunds already made for the
// invoice (ours and the dashboard's, both named "Refund <invoiceId>", BTCPay's own default name) are counted
// against what the buyer paid before a new one is asked for. Two refunds racing for one invoice could both pass
// the bound; the core serialises refunds of a payment.
import Decimal from 'decimal.js';
import { ProviderError, type ProviderAccount, type ProviderRefund, type RefundRequest } from '../gateway-provider';
import { greenfield, segment, storeId, type BtcpayClientOptions } from './client';
import { paidInInvoiceCurrency, readInvoice } from './session';
import * as shapes from './shapes';
import type { InvoiceData, PullPaymentData, RefundInvoiceRequest } from './types';

const ourDescription = /^Refund (\S+) of invoice (\S+)/;

/** The pull payment's description names our refund id and the invoice; the name is BTCPay's default for a refund. */
export function refundDescription(request: RefundRequest): string {
  const base = `Refund ${request.refundId} of invoice ${request.paymentRef}`;
  return request.reason ? `${base}: ${request.reason}`.slice(0, 500) : base;
}

export function refundName(invoiceId: string): string {
  return `Refund ${invoiceId}`;
}

function ourRefundId(pullPayment: PullPaymentData): { refundId: string; invoiceId: string } | undefined {
  const match = ourDescription.exec(pullPayment.description ?? '');
  return match ? { refundId: match[1]!, invoiceId: match[2]! } : undefined;
}

function refundsOf(invoiceId: string, all: PullPaymentData[]): PullPaymentData[] {
  return all.filter((pp) => pp.name === refundName(invoiceId) || ourRefundId(pp)?.invoiceId === invoiceId);
}

/** What the buyer paid, the most any refunds of the invoice may add up to. */
async function refundable(
  account: ProviderAccount,
  invoice: InvoiceData,
  options: BtcpayClientOptions,
): Promise<Decimal> {
  const paid = new Decimal(await paidInInvoiceCurrency(account, invoice, options));
  // A Settled invoice marked paid by hand counts as its full amount, as BTCPay's own refund code does.
  if (paid.isZero() && invoice.status === 'Settled') return new Decimal(invoice.amount);
  return paid;
}

export async function refund(
  account: ProviderAccount,
  request: RefundRequest,
  options: BtcpayClientOptions,
): Promise<ProviderRefund> {
  const store = segment(storeId(account));
  // Archived ones too: a refund made and later archived is still the one this refund id asked for.
  const listed = await greenfield(
    account,
    { method: 'GET', path: `/api/v1/stores/${store}/pull-payments`, query: { includeArchived: 'true' } },
    options,
  );
  if (listed.status === 404) throw new ProviderError('unauthorized', 'BTCPay Server has no such store');
  const all = shapes.pullPayments(listed.body);

  const again = all.find((pp) => ourRefundId(pp)?.refundId === request.refundId);
  if (again) {
    if (
      again.currency.toUpperCase() !== request.currency.toUpperCase() ||
      !new Decimal(again.amount).equals(request.amount)
    ) {
      throw new ProviderError('refused', 'this refund id was already used for another amount');
    }
    return { providerRefundId: again.id, status: 'PENDING' };
  }

  const invoice = await readInvoice(account, request.paymentRef, options);
  if (invoice.currency.toUpperCase() !== request.currency.toUpperCase()) {
    throw new ProviderError('refused', `the invoice was paid in ${invoice.currency}, not ${request.currency}`);
  }
  const earlier = refundsOf(invoice.id, all);
  const foreign = earlier.find((pp) => pp.currency.toUpperCase() !== invoice.currency.toUpperCase());
  if (foreign) {
    // A dashboard refund in the coin (RateThen, CurrentRate) cannot be weighed against the paid amount exactly.
    throw new ProviderError(
      'refused',
      `a refund in ${foreign.currency} exists for this invoice: refund it in BTCPay Server's dashboard`,
    );
  }
  const already = earlier.reduce((sum, pp) => sum.plus(pp.amount), new Decimal(0));
  if (already.plus(request.amount).greaterThan(await refundable(account, invoice, options))) {
    throw new ProviderError('refused', 'the refunds would exceed what the buyer paid');
  }

  const body: RefundInvoiceRequest = {
    name: refundName(invoice.id),
    description: refundDescription(request),
    refundVariant: 'Custom',
    customAmount: request.amount,
    customCurrency: invoice.currency,
  };
  const answer = await greenfield(
    account,
    { method: 'POST', path: `/api/v1/stores/${store}/invoices/${segment(invoice.id)}/refund`, body },
    options,
  );
  if (answer.status === 404) throw new ProviderError('refused', 'BTCPay Server has no such invoice in this store');
  return { providerRefundId: shapes.pullPayment(answer.body).id, status: 'PENDING' };
}
