// The Greenfield API's shapes this adapter reads and writes, by hand from the pinned document
// (test/fixtures/providers/btcpay/openapi.json: BTCPay Server v2.3.9). Only the fields we use; the server sends more.
// A generator is not worth it for six operations, and the document's allOf/additionalProperties mix confuses them.

/** #/components/schemas/InvoiceStatus */
export type InvoiceStatus = 'New' | 'Processing' | 'Expired' | 'Invalid' | 'Settled';
/** #/components/schemas/InvoiceAdditionalStatus */
export type InvoiceAdditionalStatus = 'None' | 'PaidLate' | 'PaidPartial' | 'Marked' | 'Invalid' | 'PaidOver';

export const invoiceStatuses: readonly InvoiceStatus[] = ['New', 'Processing', 'Expired', 'Invalid', 'Settled'];
export const invoiceAdditionalStatuses: readonly InvoiceAdditionalStatus[] = [
  'None',
  'PaidLate',
  'PaidPartial',
  'Marked',
  'Invalid',
  'PaidOver',
];

/** #/components/schemas/InvoiceMetadata: free-form; these are the keys we set. */
export interface InvoiceMetadata {
  orderId?: string | null;
  orderUrl?: string | null;
  itemDesc?: string | null;
  buyerEmail?: string | null;
  /** Ours: the order's public uniqid and the shop, for a merchant reading the invoice in BTCPay's dashboard. */
  order_uniqid?: string;
  shop_id?: string;
  [key: string]: unknown;
}

/** #/components/schemas/CheckoutOptions (the fields we send). */
export interface CheckoutOptions {
  redirectURL?: string | null;
  redirectAutomatically?: boolean | null;
  defaultPaymentMethod?: string | null;
  paymentMethods?: string[] | null;
}

/** #/components/schemas/CreateInvoiceRequest */
export interface CreateInvoiceRequest {
  /** Decimal string (format: decimal). */
  amount: string;
  currency: string;
  metadata: InvoiceMetadata;
  checkout: CheckoutOptions;
}

/** #/components/schemas/InvoiceData */
export interface InvoiceData {
  id: string;
  storeId: string;
  amount: string;
  /** Since v2.1.2: what the buyer paid, in the invoice currency (net of payment-method fees). */
  paidAmount?: string;
  currency: string;
  checkoutLink: string;
  status: InvoiceStatus;
  additionalStatus: InvoiceAdditionalStatus;
  metadata?: InvoiceMetadata | null;
  checkout?: CheckoutOptions | null;
}

/** #/components/schemas/InvoicePaymentMethodDataModel (the fields we use). */
export interface InvoicePaymentMethod {
  paymentMethodId: string;
  currency: string;
  /** Invoice currency per unit of this method's currency. */
  rate: string;
  paymentMethodPaid: string;
  /** Everything paid to the invoice by any method, in this method's currency. */
  totalPaid: string;
  due: string;
  amount: string;
}

/** #/components/schemas/PullPaymentData */
export interface PullPaymentData {
  id: string;
  name?: string | null;
  description?: string | null;
  currency: string;
  amount: string;
  archived?: boolean;
  viewLink?: string;
}

/** The body of POST .../invoices/{invoiceId}/refund. */
export interface RefundInvoiceRequest {
  name?: string | null;
  description?: string;
  refundVariant: 'RateThen' | 'CurrentRate' | 'OverpaidAmount' | 'Fiat' | 'Custom';
  customAmount?: string;
  customCurrency?: string;
}

/** #/components/schemas/ProblemDetails: GreenfieldAPIError { code, message }. */
export interface ProblemDetails {
  code?: string;
  message?: string;
}

/** #/components/schemas/ValidationProblemDetails */
export type ValidationProblemDetails = { path?: string; message?: string }[];

/** #/components/schemas/WebhookInvoiceEvent and its concrete events (the fields we read). */
export interface WebhookInvoiceEvent {
  deliveryId: string;
  webhookId?: string;
  /** The first delivery's id; the same as deliveryId on a first delivery, kept by every redelivery. */
  originalDeliveryId?: string;
  isRedelivery?: boolean;
  type: string;
  timestamp?: number;
  storeId: string;
  invoiceId?: string;
  metadata?: InvoiceMetadata | null;
  /** InvoiceExpired */
  partiallyPaid?: boolean;
  /** InvoiceSettled, InvoiceProcessing */
  overPaid?: boolean;
  /** InvoiceSettled, InvoiceInvalid */
  manuallyMarked?: boolean;
  /** InvoiceReceivedPayment, InvoicePaymentSettled */
  afterExpiration?: boolean;
  paymentMethodId?: string;
}
