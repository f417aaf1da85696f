// The Greenfield routes the fake serves, answering as BTCPay's controllers do (GreenfieldInvoiceController,
// GreenfieldStoresController, GreenfieldPullPaymentController at v2.3.9): the same statuses and error bodies
// (401 unauthenticated, 403 missing-permission, 404 store-not-found / invoice-not-found, 400 non-refundable,
// 422 validation arrays). Like BTCPay, a Custom refund is NOT bounded by what was paid: the adapter must do that.
import Decimal from 'decimal.js';
import { due } from './actions';
import {
  base58Id,
  invoiceJson,
  paymentMethodsJson,
  pullPaymentJson,
  rateFor,
  storeJson,
  storePaymentMethods,
  type FakeInvoice,
  type FakePullPayment,
  type FakeStore,
} from './state';

export interface ApiState {
  baseUrl: string;
  stores: FakeStore[];
  invoices: Map<string, FakeInvoice>;
  pullPayments: FakePullPayment[];
  /** Older servers (before v2.1.2) send no paidAmount. */
  omitPaidAmount: boolean;
  emit(store: FakeStore, type: string, event: Record<string, unknown>): void;
}

export interface ApiRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  body: unknown;
  authorization: string | undefined;
}

export interface ApiAnswer {
  status: number;
  body: unknown;
}

const validation = (path: string, message: string): ApiAnswer => ({ status: 422, body: [{ path, message }] });
const problem = (status: number, code: string, message: string): ApiAnswer => ({ status, body: { code, message } });

function list(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function isDecimal(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9]+(\.[0-9]+)?$/.test(value);
}

function canRefund(invoice: FakeInvoice): boolean {
  return (
    invoice.status === 'Settled' ||
    invoice.status === 'Invalid' ||
    (invoice.status === 'Expired' && ['PaidLate', 'PaidOver', 'PaidPartial'].includes(invoice.additionalStatus))
  );
}

function renderInvoice(state: ApiState, invoice: FakeInvoice): Record<string, unknown> {
  const json = invoiceJson(invoice, state.baseUrl);
  if (state.omitPaidAmount) delete json.paidAmount;
  return json;
}

function createInvoice(state: ApiState, store: FakeStore, body: Record<string, unknown>): ApiAnswer {
  const amount = body.amount;
  if (!isDecimal(amount) || new Decimal(amount).lessThanOrEqualTo(0)) {
    // BTCPay makes a top-up invoice of a null amount; the fake does not model those.
    return validation('amount', 'The amount must be a positive decimal (the fake has no top-up invoices)');
  }
  const currency = typeof body.currency === 'string' ? body.currency.toUpperCase() : 'USD';
  const rate = rateFor(currency);
  if (!rate) return validation('currency', `Currency ${currency} has no rate in this store`);
  const checkout = (body.checkout ?? {}) as Record<string, unknown>;
  const asked = Array.isArray(checkout.paymentMethods) ? (checkout.paymentMethods as string[]) : undefined;
  for (const [i, id] of (asked ?? []).entries()) {
    if (!storePaymentMethods.includes(id)) return validation(`checkout.paymentMethods[${i}]`, 'Invalid payment method');
  }
  const methods = asked && asked.length > 0 ? asked : storePaymentMethods;
  const preferred = checkout.defaultPaymentMethod;
  if (typeof preferred === 'string' && !methods.includes(preferred)) {
    return validation('checkout.defaultPaymentMethod', 'Invalid payment method');
  }
  const now = Math.floor(Date.now() / 1000);
  const invoice: FakeInvoice = {
    id: base58Id(22),
    storeId: store.id,
    amount,
    currency,
    metadata: (body.metadata ?? {}) as Record<string, unknown>,
    checkout: {
      speedPolicy: 'MediumSpeed',
      paymentMethods: methods,
      defaultPaymentMethod: typeof preferred === 'string' ? preferred : null,
      lazyPaymentMethods: false,
      expirationMinutes: 15,
      monitoringMinutes: 1440,
      paymentTolerance: 0,
      redirectURL: typeof checkout.redirectURL === 'string' ? checkout.redirectURL : null,
      redirectAutomatically: checkout.redirectAutomatically === true,
      defaultLanguage: null,
    },
    status: 'New',
    additionalStatus: 'None',
    createdTime: now,
    expirationTime: now + 900,
    monitoringExpiration: now + 900 + 86400,
    payments: [],
    paymentMethodIds: typeof preferred === 'string' ? [preferred, ...methods.filter((m) => m !== preferred)] : methods,
    rate,
    livemode: store.livemode,
  };
  state.invoices.set(invoice.id, invoice);
  state.emit(store, 'InvoiceCreated', { invoiceId: invoice.id, metadata: invoice.metadata });
  return { status: 200, body: renderInvoice(state, invoice) };
}

function refundInvoice(
  state: ApiState,
  store: FakeStore,
  invoice: FakeInvoice,
  body: Record<string, unknown>,
): ApiAnswer {
  if (!canRefund(invoice)) return problem(400, 'non-refundable', 'Cannot refund this invoice');
  const variant = body.refundVariant;
  if (variant === undefined || variant === null) return validation('RefundVariant', '`refundVariant` is mandatory');
  const paid = new Decimal(invoice.amount).minus(due(invoice));
  let amount: string;
  let currency: string;
  if (variant === 'Custom') {
    if (!isDecimal(body.customAmount) || new Decimal(body.customAmount).lessThanOrEqualTo(0)) {
      return validation('CustomAmount', 'Amount must be greater than 0');
    }
    const custom = typeof body.customCurrency === 'string' ? body.customCurrency.toUpperCase() : '';
    if (!rateFor(custom)) return validation('CustomCurrency', 'Invalid currency');
    amount = body.customAmount;
    currency = custom;
  } else if (variant === 'Fiat') {
    amount = paid.toFixed();
    currency = invoice.currency;
  } else if (variant === 'RateThen') {
    amount = invoice.payments.reduce((sum, p) => sum.plus(p.value), new Decimal(0)).toFixed(8);
    currency = 'BTC';
  } else {
    return validation('RefundVariant', 'Please select a valid refund option (the fake models Custom, Fiat, RateThen)');
  }
  const pp: FakePullPayment = {
    id: base58Id(27),
    storeId: store.id,
    invoiceId: invoice.id,
    name: typeof body.name === 'string' && body.name ? body.name : `Refund ${invoice.id}`,
    description: typeof body.description === 'string' ? body.description : '',
    currency,
    amount,
    archived: false,
    autoApproveClaims: currency === 'BTC',
    createdBy: 'api',
  };
  state.pullPayments.push(pp);
  return { status: 200, body: pullPaymentJson(pp, state.baseUrl) };
}

/** One Greenfield request, after the document check and the fault injection. */
export function handleApi(state: ApiState, request: ApiRequest): ApiAnswer {
  const match = /^\/api\/v1\/stores\/([^/]+)(\/.*)?$/.exec(request.path);
  const key = /^token (.+)$/.exec(request.authorization ?? '')?.[1];
  const caller = key === undefined ? undefined : state.stores.find((s) => s.apiKey === key);
  if (!caller) return problem(401, 'unauthenticated', 'Authentication is required for accessing this endpoint');
  if (!match) return problem(404, 'not-found', 'No such Greenfield route');
  const storeId = decodeURIComponent(match[1]!);
  const rest = match[2] ?? '';
  const store = state.stores.find((s) => s.id === storeId);
  if (!store) return problem(404, 'store-not-found', 'The store was not found');
  if (store !== caller) {
    return problem(
      403,
      'missing-permission',
      'Insufficient API Permissions. Please use an API key with permission on this store.',
    );
  }
  const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<
    string,
    unknown
  >;
  const route = `${request.method} ${rest.replace(/^\/invoices\/[^/]+/, '/invoices/{id}')}`;
  const invoiceId = /^\/invoices\/([^/]+)/.exec(rest)?.[1];
  const invoice = invoiceId === undefined ? undefined : state.invoices.get(decodeURIComponent(invoiceId));
  const ownInvoice = invoice?.storeId === store.id ? invoice : undefined;
  const invoiceNotFound = problem(404, 'invoice-not-found', 'The invoice was not found');

  switch (route) {
    case 'GET ':
      return { status: 200, body: storeJson(store) };
    case 'GET /invoices': {
      const orderIds = list(request.query.orderId);
      const found = [...state.invoices.values()]
        .filter((i) => i.storeId === store.id)
        .filter((i) => orderIds.length === 0 || orderIds.includes(String(i.metadata.orderId ?? '')))
        .reverse();
      return { status: 200, body: found.map((i) => renderInvoice(state, i)) };
    }
    case 'POST /invoices':
      return createInvoice(state, store, body);
    case 'GET /invoices/{id}':
      return ownInvoice ? { status: 200, body: renderInvoice(state, ownInvoice) } : invoiceNotFound;
    case 'GET /invoices/{id}/payment-methods':
      return ownInvoice ? { status: 200, body: paymentMethodsJson(ownInvoice) } : invoiceNotFound;
    case 'POST /invoices/{id}/refund':
      return ownInvoice ? refundInvoice(state, store, ownInvoice, body) : invoiceNotFound;
    case 'GET /pull-payments': {
      const archived = list(request.query.includeArchived)[0] === 'true';
      const found = state.pullPayments.filter((pp) => pp.storeId === store.id && (archived || !pp.archived));
      return { status: 200, body: found.map((pp) => pullPaymentJson(pp, state.baseUrl)) };
    }
    default:
      return problem(404, 'not-found', 'No such Greenfield route');
  }
}
