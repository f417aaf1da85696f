// Checks that an answer is what the document says before anything is read from it: an answer that is not (a proxy's
// page, a different server version's surprise) is ProviderError('unavailable'), never a guess.
import Decimal from 'decimal.js';
import { ProviderError } from '../gateway-provider';
import {
  invoiceAdditionalStatuses,
  invoiceStatuses,
  type InvoiceData,
  type InvoicePaymentMethod,
  type PullPaymentData,
} from './types';

type Fields = Record<string, unknown>;

function object(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decimalText(value: unknown): value is string {
  if (typeof value !== 'string' || !/^-?[0-9]+(\.[0-9]+)?$/.test(value)) return false;
  return new Decimal(value).isFinite();
}

function undocumented(what: string): never {
  throw new ProviderError('unavailable', `BTCPay Server's answer is not a documented ${what}`);
}

export function invoice(value: unknown): InvoiceData {
  if (
    !object(value) ||
    typeof value.id !== 'string' ||
    typeof value.storeId !== 'string' ||
    !decimalText(value.amount) ||
    (value.paidAmount !== undefined && !decimalText(value.paidAmount)) ||
    typeof value.currency !== 'string' ||
    typeof value.checkoutLink !== 'string' ||
    !invoiceStatuses.includes(value.status as InvoiceData['status']) ||
    !invoiceAdditionalStatuses.includes(value.additionalStatus as InvoiceData['additionalStatus']) ||
    (value.metadata !== undefined && value.metadata !== null && !object(value.metadata))
  ) {
    return undocumented('invoice');
  }
  return value as unknown as InvoiceData;
}

export function invoices(value: unknown): InvoiceData[] {
  if (!Array.isArray(value)) return undocumented('invoice list');
  return value.map(invoice);
}

export function paymentMethods(value: unknown): InvoicePaymentMethod[] {
  if (!Array.isArray(value)) return undocumented('payment method list');
  return value.map((item) => {
    if (
      !object(item) ||
      typeof item.paymentMethodId !== 'string' ||
      !decimalText(item.rate) ||
      !decimalText(item.totalPaid) ||
      !decimalText(item.paymentMethodPaid)
    ) {
      return undocumented('payment method');
    }
    return item as unknown as InvoicePaymentMethod;
  });
}

export function pullPayment(value: unknown): PullPaymentData {
  if (
    !object(value) ||
    typeof value.id !== 'string' ||
    typeof value.currency !== 'string' ||
    !decimalText(value.amount) ||
    (value.name !== undefined && value.name !== null && typeof value.name !== 'string') ||
    (value.description !== undefined && value.description !== null && typeof value.description !== 'string')
  ) {
    return undocumented('pull payment');
  }
  return value as unknown as PullPaymentData;
}

export function pullPayments(value: unknown): PullPaymentData[] {
  if (!Array.isArray(value)) return undocumented('pull payment list');
  return value.map(pullPayment);
}
