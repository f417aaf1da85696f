// The Database interface Kysely checks every query against: one XTable type per table.
// numeric columns are strings (exact decimals); int8 columns are strings too (pg's convention, PGlite is told the same).
import type { ColumnType, Generated, Selectable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export interface ShopsTable {
  id: string;
  name: string;
  plan: 'free' | 'pro' | 'business';
  currency: string;
  status: Generated<'active' | 'suspended'>;
  enabled_payment_methods: Generated<string[]>;
  /** Percent, up to 4 decimals. */
  tax_rate: Generated<string>;
  /** `true`: prices contain the tax; `false`: it is added on top. */
  tax_inclusive: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CredentialsTable {
  id: string;
  shop_id: string;
  kind: 'api_key' | 'oauth_access_token';
  name: string | null;
  /** SHA-256 of the whole credential, hex. The credential itself is never stored. */
  token_hash: string;
  /** The first characters, safe to show in listings (`mdk_AbCd`). */
  display_prefix: string;
  scopes: string[];
  created_at: Timestamp;
  last_used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface DescriptionTabRow {
  title: string;
  content: string;
}

export interface CustomFieldRow {
  name: string;
  type: 'text' | 'textarea' | 'number' | 'email' | 'checkbox' | 'hidden';
  required: boolean;
  placeholder: string | null;
  default: string | null;
}

export interface ProductsTable {
  id: string;
  shop_id: string;
  uniqid: string;
  slug: string;
  type: 'SERIALS' | 'FILE' | 'SERVICE' | 'DYNAMIC' | 'SUBSCRIPTION';
  subtype: string | null;
  title: string;
  currency: string;
  description: string;
  price: string;
  price_display: string;
  description_tabs: Json<DescriptionTabRow[]>;
  gateways: string[];
  custom_fields: Json<CustomFieldRow[]>;
  delivery_instructions: string | null;
  quantity_min: number;
  quantity_max: number;
  quantity_warning: number;
  stock: number;
  stock_delimiter: string;
  unlisted: boolean;
  private: boolean;
  on_hold: boolean;
  block_vpn_proxies: boolean;
  watermark_enabled: boolean;
  sort_priority: number;
  crypto_confirmations: number;
  max_risk_level: number;
  delivery_text: string;
  service_text: string;
  delivery_time: number | null;
  dynamic_webhook: string | null;
  image_id: string | null;
  image_url: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProductVariantsTable {
  id: string;
  shop_id: string;
  product_id: string;
  title: string;
  price: string;
  price_display: string;
  stock: number;
  sort_priority: number;
  created_at: Timestamp;
}

export interface ServerSecretsTable {
  name: string;
  secret: Buffer;
  created_at: Timestamp;
}

export interface Database {
  server_secrets: ServerSecretsTable;
  shops: ShopsTable;
  credentials: CredentialsTable;
  products: ProductsTable;
  product_variants: ProductVariantsTable;
}

export type Shop = Selectable<ShopsTable>;
export type Credential = Selectable<CredentialsTable>;
export type ProductRow = Selectable<ProductsTable>;
export type ProductVariantRow = Selectable<ProductVariantsTable>;

// Customers and product serials (migration 0003). Declared as a second part of `Database` (interfaces merge),
// so migrations can add tables without editing the same lines.
export interface CustomersTable {
  id: string;
  shop_id: string;
  /** Lower-cased. */
  email: string;
  name: string | null;
  phone: string | null;
  country: string | null;
  note: string | null;
  // total_spent, total_orders and blacklisted are computed (migration 0010): see CustomerFigures.
  wallet_id: string;
  wallet_currency: string;
  wallet_balance: ColumnType<string, string | undefined, string>;
  wallet_held: ColumnType<string, string | undefined, string>;
  is_affiliate: ColumnType<boolean, boolean | undefined, boolean>;
  affiliate_code: string | null;
  affiliate_status: 'ACTIVE' | 'SUSPENDED' | null;
  affiliate_commission_percent: string | null;
  affiliate_balance: ColumnType<string, string | undefined, string>;
  affiliate_lifetime_earnings: ColumnType<string, string | undefined, string>;
  affiliate_referred_orders: ColumnType<number, number | undefined, number>;
  referred_by_customer_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type SerialStatus = 'available' | 'reserved' | 'claimed';

export interface ProductSerialsTable {
  id: string;
  shop_id: string;
  product_id: string;
  variant_id: string | null;
  serial: string;
  status: ColumnType<SerialStatus, SerialStatus | undefined, SerialStatus>;
  /** The order item holding (reserved) or given (claimed) this serial. */
  order_item_id: ColumnType<string | null, string | null | undefined, string | null>;
  claimed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
}

export interface Database {
  customers: CustomersTable;
  product_serials: ProductSerialsTable;
}

export type CustomerRow = Selectable<CustomersTable>;
export type ProductSerialRow = Selectable<ProductSerialsTable>;

/** One idempotency key of one credential for one operation (see src/platform/idempotency.ts). */
export interface IdempotencyKeysTable {
  credential_id: string;
  operation_id: string;
  key: string;
  /** SHA-256 (hex) of method, path and canonical JSON body. */
  fingerprint: string;
  state: 'processing' | 'completed';
  /** When the current owner claimed (or took over) the key, by the API's clock. */
  locked_at: Timestamp;
  /** The current owner: a random token per request (migration 0027); null on rows claimed before leases. */
  owner_token: ColumnType<string | null, string | null | undefined, string | null>;
  /** Database time until which the owner holds the key; it renews this while its request runs. */
  lease_expires_at: Timestamp;
  response_status: number | null;
  /** Headers replayed with the stored response (JSON object of strings). */
  response_headers: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  /** The exact JSON text sent the first time. */
  response_body: string | null;
  created_at: Timestamp;
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  expires_at: Timestamp;
}

export interface Database {
  idempotency_keys: IdempotencyKeysTable;
}

export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;

// The outbox (migration 0005): events, webhook endpoints and deliveries, queued mail, the audit trail.
export type DeliveryStatus = 'PENDING' | 'RETRYING' | 'SUCCEEDED' | 'FAILED';
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface WebhookEndpointsTable {
  id: string;
  shop_id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: Generated<boolean>;
  /** Encrypted (src/platform/secret-box.ts). */
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EventsTable {
  id: string;
  shop_id: string;
  type: string;
  /** JSON text of the event's data, exact (see migration 0005). */
  data: string;
  created_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  shop_id: string;
  endpoint_id: string;
  event_id: string;
  status: DeliveryStatus;
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  pending_attempt_id: string | null;
  manual: Generated<boolean>;
  lease_until: NullableTimestamp;
  lease_token: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookAttemptsTable {
  id: string;
  shop_id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  url: string;
  attempt: number;
  status: DeliveryStatus;
  response_status: number | null;
  response_body: string | null;
  duration_ms: number | null;
  /** Why the attempt failed (migration 0026); null while queued and when delivered. Set with `error`. */
  error_code: WebhookAttemptErrorCode | null;
  /** The failure's message for the merchant (host and port at most: never a path, header, signature or secret). */
  error: string | null;
  next_retry_at: NullableTimestamp;
  attempted_at: NullableTimestamp;
  created_at: Timestamp;
}

/** The contract's WebhookAttemptError codes (src/worker/webhook-delivery.ts lists them at run time). */
export type WebhookAttemptErrorCode =
  | 'CONNECTION_REFUSED'
  | 'CONNECT_TIMEOUT'
  | 'TIMEOUT'
  | 'DNS_FAILURE'
  | 'TLS_ERROR'
  | 'CONNECTION_RESET'
  | 'HOST_UNREACHABLE'
  | 'INVALID_RESPONSE'
  | 'NETWORK_ERROR'
  | 'PRIVATE_TARGET_REFUSED'
  | 'INVALID_TARGET'
  | 'HTTP_ERROR';

export interface OutboundEmailsTable {
  id: string;
  shop_id: string;
  to_address: string;
  template: string;
  subject: string;
  html: string;
  text: string;
  status: 'QUEUED' | 'SENT' | 'RECORDED' | 'FAILED';
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  last_error: string | null;
  provider_message_id: string | null;
  sent_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface AuditEntriesTable {
  id: string;
  shop_id: string;
  occurred_at: Timestamp;
  credential_id: string | null;
  credential_kind: string;
  /** Null for the consent page's entries (sign-in, sign-out, approvals, denials: no API operation). */
  operation_id: string | null;
  method: string;
  path: string;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  path_params: ColumnType<Record<string, string>, string | undefined, string>;
  status: number;
  error_code: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string;
}

export interface Database {
  webhook_endpoints: WebhookEndpointsTable;
  events: EventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  outbound_emails: OutboundEmailsTable;
  audit_entries: AuditEntriesTable;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type EventRow = Selectable<EventsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type OutboundEmailRow = Selectable<OutboundEmailsTable>;
export type AuditEntryRow = Selectable<AuditEntriesTable>;

// Orders and what they need (migration 0007).
type Money = ColumnType<string, string | undefined, string>;
type Int = ColumnType<number, number | undefined, number>;
type Bool = ColumnType<boolean, boolean | undefined, boolean>;
export type GatewayKind = 'HOSTED' | 'CRYPTO' | 'SESSION';
export type OrderStatus =
  'PENDING' | 'PROCESSING' | 'PARTIAL' | 'COMPLETED' | 'PARTIALLY_REFUNDED' | 'REFUNDED' | 'DISPUTED' | 'VOIDED';
export type PaymentStatus =
  'PENDING' | 'PROCESSING' | 'PARTIAL' | 'PAID' | 'FAILED' | 'CANCELLED' | 'PARTIALLY_REFUNDED' | 'REFUNDED';
export type ItemDeliveryStatus = 'PENDING' | 'AWAITING_FULFILLMENT' | 'DELIVERED' | 'FAILED';
export type ProductType = ProductsTable['type'];

export interface GatewaysTable {
  id: string;
  shop_id: string;
  /** The identifier integrators send (`SANDBOX`, `STRIPE`, `CRYPTO`). */
  code: string;
  kind: GatewayKind;
  active: Bool;
  /** Coins or networks of a CRYPTO gateway. */
  coins: ColumnType<string[], string[] | undefined, string[]>;
  created_at: Timestamp;
}

export interface CouponsTable {
  id: string;
  shop_id: string;
  /** Lower-cased. */
  code: string;
  type: 'PERCENTAGE' | 'FIXED';
  value: string;
  currency: string | null;
  max_uses: number | null;
  uses: Int;
  expires_at: NullableTimestamp;
  enabled: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CouponProductsTable {
  shop_id: string;
  coupon_id: string;
  product_id: string;
}

export interface AttachmentsTable {
  id: string;
  shop_id: string;
  filename: string;
  content_type: string;
  content: Buffer;
  created_at: Timestamp;
}

export interface ProductFilesTable {
  shop_id: string;
  product_id: string;
  attachment_id: string;
}

export interface PaymentLinksTable {
  id: string;
  shop_id: string;
  uniqid: string;
  title: string;
  product_id: string | null;
  variant_id: string | null;
  amount: string | null;
  currency: string;
  quantity: Int;
  enabled: Bool;
  uses: Int;
  max_uses: number | null;
  expires_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OrdersTable {
  id: string;
  shop_id: string;
  uniqid: string;
  kind: 'ORDER' | 'PAYMENT';
  customer_id: string | null;
  /** Lower-cased. */
  customer_email: string | null;
  affiliate_customer_id: string | null;
  affiliate_code: string | null;
  affiliate_link_id: string | null;
  affiliate_discount_amount: Money;
  currency: string;
  status: OrderStatus;
  status_details: string | null;
  payment_status: PaymentStatus;
  gateway: string | null;
  blockchain: string | null;
  flow_type: string | null;
  provider_reference: string | null;
  provider_reference_type: string | null;
  subtotal: Money;
  discount: Money;
  tax: Money;
  tax_percentage: Money;
  tax_inclusive: Bool;
  total: Money;
  /** Sum of the refunds so far. */
  refunded: Money;
  coupon_id: string | null;
  payment_link_id: string | null;
  custom_fields: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  is_developer_invoice: boolean;
  developer_title: string | null;
  note: string | null;
  /** When a PENDING order is voided by the expiry job. */
  expires_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OrderItemsTable {
  id: string;
  shop_id: string;
  order_id: string;
  position: number;
  product_id: string | null;
  variant_id: string | null;
  product_title: string;
  product_type: ProductType;
  variant_title: string | null;
  quantity: number;
  unit_price: string;
  total: string;
  custom_fields: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  delivery_instructions: string | null;
  delivery_instructions_label: string | null;
  delivery_status: ColumnType<ItemDeliveryStatus, ItemDeliveryStatus | undefined, ItemDeliveryStatus>;
  delivered_at: NullableTimestamp;
  delivered_items: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** Units of the product's (or variant's) counted stock this item holds. */
  reserved_stock: Int;
  created_at: Timestamp;
}

export interface PaymentAttemptsTable {
  id: string;
  shop_id: string;
  order_id: string;
  gateway: string;
  session_id: string | null;
  status: 'PENDING' | 'PAID' | 'FAILED';
  amount: string;
  created_at: Timestamp;
  paid_at: NullableTimestamp;
}

export interface RefundsTable {
  id: string;
  shop_id: string;
  order_id: string;
  amount: string;
  reason: string | null;
  created_at: Timestamp;
}

export interface DynamicDeliveriesTable {
  id: string;
  shop_id: string;
  order_item_id: string;
  url: string;
  body: string;
  status: DeliveryStatus;
  attempts: Int;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  lease_token: string | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  gateways: GatewaysTable;
  coupons: CouponsTable;
  coupon_products: CouponProductsTable;
  attachments: AttachmentsTable;
  product_files: ProductFilesTable;
  payment_links: PaymentLinksTable;
  orders: OrdersTable;
  order_items: OrderItemsTable;
  payment_attempts: PaymentAttemptsTable;
  refunds: RefundsTable;
  dynamic_deliveries: DynamicDeliveriesTable;
}

export type GatewayRow = Selectable<GatewaysTable>;
export type CouponRow = Selectable<CouponsTable>;
export type PaymentLinkRow = Selectable<PaymentLinksTable>;
export type OrderRow = Selectable<OrdersTable>;
export type OrderItemRow = Selectable<OrderItemsTable>;
export type PaymentAttemptRow = Selectable<PaymentAttemptsTable>;
export type DynamicDeliveryRow = Selectable<DynamicDeliveriesTable>;

/** Each shop's signing secret for dynamic-delivery callbacks, sealed (src/platform/secret-box.ts). */
export interface DynamicDeliverySecretsTable {
  shop_id: string;
  purpose: ColumnType<'dynamic_delivery', 'dynamic_delivery' | undefined, never>;
  secret: Buffer;
  created_at: Timestamp;
}

export interface Database {
  dynamic_delivery_secrets: DynamicDeliverySecretsTable;
}

// The blacklist (migration 0010). A customer's figures are computed from it and from the orders, never stored.
export type BlacklistEntryType = 'EMAIL' | 'EMAIL_DOMAIN' | 'IP' | 'COUNTRY';

export interface BlacklistEntriesTable {
  id: string;
  shop_id: string;
  type: BlacklistEntryType;
  /** Normalised: emails and domains lower-cased, countries upper-cased, IPs as PostgreSQL prints the network. */
  value: string;
  /** IP entries: the address or range (inet text); null for the other types. */
  network: string | null;
  note: string | null;
  created_at: Timestamp;
}

export interface Database {
  blacklist_entries: BlacklistEntriesTable;
}

/** What a customer's row does not store: computed in SQL from its paid orders, refunds and the blacklist. */
export interface CustomerFigures {
  /** Sum of `total - refunded` over the customer's paid orders (numeric text). */
  total_spent: string;
  /** Number of the customer's paid orders (refunded ones included). */
  total_orders: number;
  /** An EMAIL, EMAIL_DOMAIN or COUNTRY entry matches the customer. */
  blacklisted: boolean;
}

export type BlacklistEntryRow = Selectable<BlacklistEntriesTable>;

// Store-credit wallets (migration 0011): the ledger (one row per movement; customers.wallet_balance is its sum,
// kept by src/domain/customers/wallets.ts) and the part of an order paid from the buyer's wallet.
export interface WalletTransactionsTable {
  id: string;
  shop_id: string;
  customer_id: string;
  /** Signed: positive credits, negative debits. */
  amount: string;
  currency: string;
  type: string;
  description: string | null;
  order_id: string | null;
  created_at: Timestamp;
}

export interface OrdersTable {
  /** Paid from the buyer's wallet: held while PENDING, captured on completion, released on void. */
  balance_paid: Money;
}

export interface Database {
  wallet_transactions: WalletTransactionsTable;
}

export type WalletTransactionRow = Selectable<WalletTransactionsTable>;

// Catalog extras (migration 0009): variant fields and options, quantity deals, add-ons, and what an order item was
// bought with (src/domain/catalog/catalog-extras.ts, src/domain/orders/line-extras.ts).
export interface ProductVariantFieldsTable {
  id: string;
  shop_id: string;
  product_id: string;
  name: string;
  sort_order: Int;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProductVariantFieldOptionsTable {
  id: string;
  shop_id: string;
  field_id: string;
  value: string;
  /** Added to the unit price when chosen; may be negative. */
  price_adjustment: ColumnType<string, string | undefined, string>;
  sort_order: Int;
  created_at: Timestamp;
}

export interface QuantityDealsTable {
  id: string;
  shop_id: string;
  uniqid: string;
  title: string;
  enabled: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface QuantityDealProductsTable {
  shop_id: string;
  deal_id: string;
  product_id: string;
}

export interface QuantityDealTiersTable {
  shop_id: string;
  deal_id: string;
  min_quantity: number;
  discount_type: 'PERCENTAGE' | 'FIXED';
  discount_value: string;
}

export interface AddonsTable {
  id: string;
  shop_id: string;
  title: string;
  description: string | null;
  price: string;
  currency: string;
  required: Bool;
  enabled: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AddonProductsTable {
  shop_id: string;
  addon_id: string;
  product_id: string;
}

/** An option chosen for an order item, as bought. */
export interface ChosenOptionRecord {
  field_id: string;
  name: string;
  option_id: string;
  value: string;
  /** Numeric text. */
  price_adjustment: string;
}

/** An add-on of an order item, as bought: its price per unit and its total for the item's quantity. */
export interface ChosenAddonRecord {
  id: string;
  title: string;
  /** Numeric text. */
  unit_price: string;
  /** Numeric text. */
  total: string;
}

export interface OrderItemsTable {
  variant_options: ColumnType<ChosenOptionRecord[] | null, string | null | undefined, string | null>;
  addons: ColumnType<ChosenAddonRecord[] | null, string | null | undefined, string | null>;
  /** The quantity deal's discount on the line (0 when none applied). */
  quantity_discount: ColumnType<string, string | undefined, string>;
  quantity_deal_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  product_variant_fields: ProductVariantFieldsTable;
  product_variant_field_options: ProductVariantFieldOptionsTable;
  quantity_deals: QuantityDealsTable;
  quantity_deal_products: QuantityDealProductsTable;
  quantity_deal_tiers: QuantityDealTiersTable;
  addons: AddonsTable;
  addon_products: AddonProductsTable;
}

export type VariantFieldRow = Selectable<ProductVariantFieldsTable>;
export type VariantFieldOptionRow = Selectable<ProductVariantFieldOptionsTable>;
export type QuantityDealRow = Selectable<QuantityDealsTable>;
export type QuantityDealTierRow = Selectable<QuantityDealTiersTable>;
export type AddonRow = Selectable<AddonsTable>;

// The affiliate program (migration 0012): applications, the time a customer became an affiliate, and the commission
// ledger. An affiliate's figures are sums over affiliate_commissions (src/domain/affiliate-figures.ts); the
// customers columns affiliate_balance / affiliate_lifetime_earnings / affiliate_referred_orders only hold what a
// fixture imported from before (nothing changes them afterwards) and are added to those sums.
export interface CustomersTable {
  /** When the customer became an affiliate (approval, or creation for a fixture affiliate); null otherwise. */
  affiliate_approved_at: NullableTimestamp;
}

export type AffiliateApplicationStatus = 'PENDING' | 'APPROVED' | 'REJECTED';

export interface AffiliateApplicationsTable {
  id: string;
  shop_id: string;
  customer_id: string;
  status: ColumnType<AffiliateApplicationStatus, AffiliateApplicationStatus | undefined, AffiliateApplicationStatus>;
  /** The code asked for; null: one is generated on approval. */
  requested_code: string | null;
  commission_percent: Money;
  note: string | null;
  created_at: Timestamp;
  decided_at: NullableTimestamp;
}

export type AffiliateCommissionKind = 'ACCRUAL' | 'REVERSAL' | 'CONVERSION';

export interface AffiliateCommissionsTable {
  id: string;
  shop_id: string;
  affiliate_customer_id: string;
  kind: AffiliateCommissionKind;
  /** Signed: accruals positive, reversals and conversions negative. */
  amount: string;
  currency: string;
  order_id: string | null;
  refund_id: string | null;
  wallet_transaction_id: string | null;
  commission_percent: string | null;
  created_at: Timestamp;
}

export interface Database {
  affiliate_applications: AffiliateApplicationsTable;
  affiliate_commissions: AffiliateCommissionsTable;
}

export type AffiliateApplicationRow = Selectable<AffiliateApplicationsTable>;
export type AffiliateCommissionRow = Selectable<AffiliateCommissionsTable>;

// Subscriptions (migration 0014): billing intervals of products and variants, subscriptions, renewal invoices.
export type BillingInterval = 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';
export type SubscriptionStatus = 'TRIALING' | 'ACTIVE' | 'PAST_DUE' | 'PAUSED' | 'CANCELLED' | 'EXPIRED';

export interface ProductsTable {
  /** With billing_interval_count; both null: every 1 MONTH. */
  billing_interval: ColumnType<BillingInterval | null, BillingInterval | null | undefined, BillingInterval | null>;
  billing_interval_count: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface ProductVariantsTable {
  /** Null: the product's interval. */
  billing_interval: ColumnType<BillingInterval | null, BillingInterval | null | undefined, BillingInterval | null>;
  billing_interval_count: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface SubscriptionsTable {
  id: string;
  shop_id: string;
  customer_id: string;
  /** Lower-cased. */
  customer_email: string;
  product_id: string;
  variant_id: string | null;
  origin_order_id: string | null;
  origin_item_id: string | null;
  status: SubscriptionStatus;
  unit_price: string;
  quantity: number;
  currency: string;
  interval: BillingInterval;
  interval_count: number;
  current_period_start: Timestamp;
  current_period_end: Timestamp;
  next_renewal_at: Timestamp;
  cancel_at_period_end: Bool;
  paused_at: NullableTimestamp;
  resume_at: NullableTimestamp;
  pause_reason: string | null;
  unpaid_renewals: Int;
  cancelled_at: NullableTimestamp;
  custom_fields: ColumnType<Record<string, string>, string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type RenewalStatus = 'OPEN' | 'PAID' | 'EXPIRED';

export interface SubscriptionRenewalsTable {
  id: string;
  shop_id: string;
  subscription_id: string;
  order_id: string;
  period_start: Timestamp;
  period_end: Timestamp;
  status: RenewalStatus;
  created_at: Timestamp;
  settled_at: NullableTimestamp;
}

export interface OrdersTable {
  /** The subscription this order started (its first SUBSCRIPTION line) or renews. */
  subscription_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  subscriptions: SubscriptionsTable;
  subscription_renewals: SubscriptionRenewalsTable;
}

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type SubscriptionRenewalRow = Selectable<SubscriptionRenewalsTable>;

// Licenses (migration 0013): license keys (hashed for look-up, sealed for display), their registered devices, and
// the product columns that make a product a license product (src/domain/licenses/issuing.ts).
export interface ProductsTable {
  /** Devices per key issued for this product; null: not a license product. */
  license_activation_limit: ColumnType<number | null, number | null | undefined, number | null>;
  /** Issued keys expire this many days after the order completes; null: never. */
  license_duration_days: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface OrderItemsTable {
  /** Licenses the item issued when its order completed (0: none). */
  license_count: Int;
}

export interface LicensesTable {
  id: string;
  shop_id: string;
  product_id: string;
  order_id: string | null;
  order_item_id: string | null;
  customer_id: string | null;
  /** Lower-cased. */
  customer_email: string | null;
  /** HMAC-SHA256 of the key under the server's license secret (src/platform/license-keys.ts). */
  key_hash: Buffer;
  /** The key, AES-256-GCM sealed to this row (shown on the license and its order). */
  key_sealed: Buffer;
  status: 'ACTIVE' | 'REVOKED';
  activation_limit: Int;
  expires_at: NullableTimestamp;
  note: string | null;
  last_validated_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LicenseDevicesTable {
  id: string;
  shop_id: string;
  license_id: string;
  slot: number;
  hwid: string;
  registered_at: Timestamp;
  last_validated_at: Timestamp;
}

export interface Database {
  licenses: LicensesTable;
  license_devices: LicenseDevicesTable;
}

export type LicenseRow = Selectable<LicensesTable>;
export type LicenseDeviceRow = Selectable<LicenseDevicesTable>;

// Disputes, reviews and support tickets (migration 0015).
export type DisputeReason =
  | 'FRAUDULENT'
  | 'PRODUCT_NOT_RECEIVED'
  | 'PRODUCT_UNACCEPTABLE'
  | 'DUPLICATE'
  | 'SUBSCRIPTION_CANCELED'
  | 'CREDIT_NOT_PROCESSED'
  | 'GENERAL';
export type DisputeStatus = 'OPEN' | 'UNDER_REVIEW' | 'WON' | 'LOST' | 'CLOSED';

export interface DisputesTable {
  id: string;
  shop_id: string;
  order_id: string;
  order_uniqid: string;
  gateway: string;
  reason: DisputeReason;
  status: DisputeStatus;
  amount: string;
  currency: string;
  /** Lower-cased. */
  customer_email: string | null;
  /** Where a WON or CLOSED dispute puts the order back. */
  order_status_before: 'COMPLETED' | 'PARTIALLY_REFUNDED';
  evidence_due_by: NullableTimestamp;
  closed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ReviewsTable {
  id: string;
  shop_id: string;
  order_id: string;
  product_id: string | null;
  customer_id: string | null;
  /** Lower-cased. */
  customer_email: string | null;
  rating: number;
  message: string | null;
  reply: string | null;
  replied_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type TicketStatus = 'OPEN' | 'PENDING' | 'CLOSED';
export type TicketPriority = 'LOW' | 'NORMAL' | 'HIGH';

export interface TicketsTable {
  id: string;
  shop_id: string;
  customer_id: string;
  /** Lower-cased. */
  customer_email: string;
  order_id: string | null;
  subject: string;
  status: TicketStatus;
  priority: TicketPriority;
  message_count: number;
  last_message_at: Timestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TicketMessagesTable {
  id: string;
  shop_id: string;
  ticket_id: string;
  author: 'BUYER' | 'MERCHANT';
  body: string;
  created_at: Timestamp;
}

export interface Database {
  disputes: DisputesTable;
  reviews: ReviewsTable;
  tickets: TicketsTable;
  ticket_messages: TicketMessagesTable;
}

export type DisputeRow = Selectable<DisputesTable>;
export type ReviewRow = Selectable<ReviewsTable>;
export type TicketRow = Selectable<TicketsTable>;
export type TicketMessageRow = Selectable<TicketMessagesTable>;

// Resellers (migration 0016): tiers, the program (one row per shop, stored on the first write), resellers (never
// deleted), and on each order the reseller it was priced for.
export type ResellerStatus = 'INVITED' | 'APPLIED' | 'ACTIVE' | 'SUSPENDED' | 'REJECTED';
export type EnrollmentMode = 'MANUAL' | 'APPLICATION' | 'OPEN';
type NullableText = ColumnType<string | null, string | null | undefined, string | null>;

export interface ResellerTiersTable {
  id: string;
  shop_id: string;
  name: string;
  /** Percent, up to 2 decimals. */
  discount_percent: string;
  auto_advance_revenue: NullableText;
  auto_advance_orders: ColumnType<number | null, number | null | undefined, number | null>;
  auto_advance_requires_both: Bool;
  sort_order: Int;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ResellerProgramsTable {
  id: string;
  shop_id: string;
  enabled: Bool;
  enrollment_mode: ColumnType<EnrollmentMode, EnrollmentMode | undefined, EnrollmentMode>;
  application_message: NullableText;
  require_application_note: Bool;
  default_tier_id: NullableText;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ResellersTable {
  id: string;
  shop_id: string;
  customer_id: string;
  /** Lower-cased. */
  email: string;
  status: ResellerStatus;
  tier_id: string;
  application_note: NullableText;
  lifetime_revenue: Money;
  lifetime_orders: Int;
  approved_at: NullableTimestamp;
  suspended_at: NullableTimestamp;
  rejected_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OrdersTable {
  /** The reseller the order was priced for (its buyer was an ACTIVE reseller at creation). */
  reseller_id: NullableText;
  /** The wholesale percent applied (with reseller_id). */
  reseller_discount_percent: NullableText;
}

export interface Database {
  reseller_tiers: ResellerTiersTable;
  reseller_programs: ResellerProgramsTable;
  resellers: ResellersTable;
}

export type ResellerTierRow = Selectable<ResellerTiersTable>;
export type ResellerProgramRow = Selectable<ResellerProgramsTable>;
export type ResellerRow = Selectable<ResellersTable>;

// Email marketing and messaging bots (migration 0019).
export type EmailMarketingProvider = 'MAILCHIMP' | 'KLAVIYO' | 'SENDGRID' | 'BREVO';

export interface EmailMarketingSettingsTable {
  id: string;
  shop_id: string;
  provider: EmailMarketingProvider;
  enabled: Bool;
  list_id: NullableText;
  double_opt_in: Bool;
  sync_customers: Bool;
  last_synced_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MessagingBotsTable {
  id: string;
  shop_id: string;
  /** Telegram username, without the @. */
  username: string;
  name: NullableText;
  /** The bot's Telegram token, sealed (src/platform/secret-box.ts); null: no token, no deliveries (migration 0023). */
  token_sealed: Buffer | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The notification switches of a bot user (MessagingNotificationSettings in the contract). */
export type MessagingNotificationSwitch =
  'order_paid' | 'order_completed' | 'ticket_replied' | 'review_created' | 'dispute_opened' | 'stock_low';

export interface MessagingBotUsersTable extends Record<MessagingNotificationSwitch, Bool> {
  id: string;
  shop_id: string;
  bot_id: string;
  /** Decimal text of the Telegram user id. */
  telegram_user_id: string;
  username: NullableText;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  email_marketing_settings: EmailMarketingSettingsTable;
  messaging_bots: MessagingBotsTable;
  messaging_bot_users: MessagingBotUsersTable;
}

export type EmailMarketingSettingRow = Selectable<EmailMarketingSettingsTable>;
export type MessagingBotRow = Selectable<MessagingBotsTable>;
export type MessagingBotUserRow = Selectable<MessagingBotUsersTable>;

// Telegram bot notifications (migration 0023): the outbox of messages to bot users, sent by the worker.
export type BotNotificationStatus = 'PENDING' | 'RETRYING' | 'SENT' | 'FAILED';

export interface BotNotificationsTable {
  id: string;
  shop_id: string;
  bot_id: string;
  bot_user_id: string;
  event_id: string;
  event_type: string;
  text: string;
  status: BotNotificationStatus;
  attempts: Int;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  lease_token: string | null;
  last_error: string | null;
  sent_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  bot_notifications: BotNotificationsTable;
}

export type BotNotificationRow = Selectable<BotNotificationsTable>;

// OAuth 2.0 (migration 0021, src/auth/oauth-grants.ts): apps are global rows; grants, codes and refresh tokens are
// shop-owned; access tokens are `credentials` rows of kind oauth_access_token with a grant and an expiry.
export interface OAuthClientsTable {
  id: string;
  name: string;
  is_public: boolean;
  /** SHA-256 of the client secret `mcs_…`, hex; null for a public client. */
  secret_hash: string | null;
  secret_prefix: string | null;
  redirect_uris: string[];
  scopes: string[];
  /** Set: only this shop may authorize the app; null: any shop may install it. */
  owner_shop_id: string | null;
  created_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export type OAuthGrantRevokedReason =
  'code_replayed' | 'refresh_token_reused' | 'revoked_by_client' | 'revoked_by_operator' | 'app_revoked';

export interface OAuthGrantsTable {
  id: string;
  shop_id: string;
  client_id: string;
  scopes: string[];
  granted_by_kind: 'owner' | 'credential';
  granted_by_id: string;
  session_id: string | null;
  created_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revoked_reason: ColumnType<
    OAuthGrantRevokedReason | null,
    OAuthGrantRevokedReason | null | undefined,
    OAuthGrantRevokedReason | null
  >;
}

export interface OAuthCodesTable {
  id: string;
  shop_id: string;
  grant_id: string;
  code_hash: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string | null;
  code_challenge_method: 'S256' | null;
  expires_at: Timestamp;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
}

export interface OAuthRefreshTokensTable {
  id: string;
  shop_id: string;
  grant_id: string;
  token_hash: string;
  scopes: string[];
  expires_at: Timestamp;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
}

export interface CredentialsTable {
  /** Access tokens only: when the token stops working. Null: never (API keys). */
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Access tokens only: the grant (token family) it belongs to; revoking the grant revokes the token. */
  grant_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
}

export type OAuthClientRow = Selectable<OAuthClientsTable>;
export type OAuthGrantRow = Selectable<OAuthGrantsTable>;
export type OAuthCodeRow = Selectable<OAuthCodesTable>;
export type OAuthRefreshTokenRow = Selectable<OAuthRefreshTokensTable>;

// Themes (migration 0017): themes, every saved revision of a theme's document, and preview sessions.
export type ThemeBase =
  'default' | 'classic' | 'pulse' | 'starlight' | 'clean-minimal' | 'apex' | 'nebula' | 'phantom' | 'shadow' | 'vault';

export interface ThemesTable {
  id: string;
  shop_id: string;
  name: string;
  base: ThemeBase;
  /** Stored setting values (the base's defaults fill the rest when read). */
  settings: Json<Record<string, unknown>>;
  settings_updated_at: Timestamp;
  /** The draft's revision. */
  revision: Int;
  published_revision: ColumnType<number | null, number | null | undefined, number | null>;
  /** The shop's live storefront theme (at most one per shop). */
  live: Bool;
  published_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ThemeRevisionsTable {
  shop_id: string;
  theme_id: string;
  revision: number;
  document: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface ThemePreviewSessionsTable {
  id: string;
  shop_id: string;
  theme_id: string;
  revision: number;
  /** SHA-256 (hex) of the URL's token. */
  token_hash: string;
  expires_at: Timestamp;
  stopped_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface Database {
  themes: ThemesTable;
  theme_revisions: ThemeRevisionsTable;
  theme_preview_sessions: ThemePreviewSessionsTable;
}

export type ThemeRow = Selectable<ThemesTable>;
export type ThemeRevisionRow = Selectable<ThemeRevisionsTable>;
export type ThemePreviewSessionRow = Selectable<ThemePreviewSessionsTable>;

// Analytics reports (migration 0020): a report definition per shop, its queued and finished generations (claimed by
// the worker with a lease), and the last generation's output (src/domain/analytics/reports.ts).
export type AnalyticsReportType = 'SALES' | 'PRODUCTS' | 'CUSTOMERS' | 'GATEWAYS' | 'AFFILIATES';
export type AnalyticsReportFormat = 'CSV' | 'JSON';
export type AnalyticsReportStatus = 'NEVER_GENERATED' | 'GENERATING' | 'READY' | 'FAILED';

export interface AnalyticsReportsTable {
  id: string;
  shop_id: string;
  name: string;
  type: AnalyticsReportType;
  format: ColumnType<AnalyticsReportFormat, AnalyticsReportFormat | undefined, AnalyticsReportFormat>;
  status: ColumnType<AnalyticsReportStatus, AnalyticsReportStatus | undefined, AnalyticsReportStatus>;
  period_from: NullableTimestamp;
  period_to: NullableTimestamp;
  generation_id: ColumnType<string | null, string | null | undefined, string | null>;
  generated_at: NullableTimestamp;
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** The READY output (CSV or JSON text). */
  content: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AnalyticsReportGenerationsTable {
  id: string;
  shop_id: string;
  report_id: string;
  type: AnalyticsReportType;
  format: AnalyticsReportFormat;
  period_from: Timestamp;
  period_to: Timestamp;
  status: ColumnType<
    'QUEUED' | 'DONE' | 'FAILED',
    'QUEUED' | 'DONE' | 'FAILED' | undefined,
    'QUEUED' | 'DONE' | 'FAILED'
  >;
  attempts: ColumnType<number, number | undefined, number>;
  lease_until: NullableTimestamp;
  lease_token: ColumnType<string | null, string | null | undefined, string | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  requested_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface Database {
  analytics_reports: AnalyticsReportsTable;
  analytics_report_generations: AnalyticsReportGenerationsTable;
}

export type AnalyticsReportRow = Selectable<AnalyticsReportsTable>;
export type AnalyticsReportGenerationRow = Selectable<AnalyticsReportGenerationsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Store settings (db/migrations/0018_store_settings.ts)
// ---------------------------------------------------------------------------------------------------------------

/** A footer link of the layout (the contract's FulfillmentLink). */
export interface StoreFooterLink {
  url: string;
  label: string;
}

export interface StoreSettingsTable {
  id: string;
  shop_id: string;
  name: string;
  logo_url: string | null;
  favicon_url: string | null;
  primary_color: string;
  accent_color: string;
  support_email: string | null;
  branding_updated_at: Timestamp;
  product_grid_columns: number;
  show_search: boolean;
  show_categories: boolean;
  show_reviews: boolean;
  announcement: string | null;
  footer_links: Json<StoreFooterLink[]>;
  layout_updated_at: Timestamp;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export type StoreDomainStatus = 'PENDING_VERIFICATION' | 'VERIFIED' | 'FAILED';
export type StoreDomainSslStatus = 'PENDING' | 'ACTIVE' | 'FAILED';
export type StoreDomainCheckError = 'RECORD_NOT_FOUND' | 'DNS_UNAVAILABLE';

export interface StoreDomainsTable {
  id: string;
  shop_id: string;
  domain: string;
  status: StoreDomainStatus;
  ssl_status: StoreDomainSslStatus;
  record_name: string;
  record_value: string;
  verified_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_checked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_check_error: StoreDomainCheckError | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  store_settings: StoreSettingsTable;
  store_domains: StoreDomainsTable;
}

export type StoreSettingsRow = Selectable<StoreSettingsTable>;
export type StoreDomainRow = Selectable<StoreDomainsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Shop owner accounts and consent-page sessions (db/migrations/0022_owner_sessions.ts)
// ---------------------------------------------------------------------------------------------------------------

export interface OwnerAccountsTable {
  id: string;
  shop_id: string;
  email: string;
  password_hash: string;
  created_at: Timestamp;
  disabled_at: NullableTimestamp;
}

export interface OwnerSessionsTable {
  id: string;
  shop_id: string;
  owner_id: string;
  token_hash: string;
  ip: string | null;
  user_agent: string | null;
  started_at: Timestamp;
  expires_at: Timestamp;
  ended_at: NullableTimestamp;
}

export interface OwnerSignInFailuresTable {
  id: Generated<string>;
  ip: string;
  email: string;
  failed_at: Timestamp;
}

/** The consent page's entries name the owner and the session (0022). */
export interface AuditEntriesTable {
  owner_id: ColumnType<string | null, string | null | undefined, string | null>;
  session_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  owner_accounts: OwnerAccountsTable;
  owner_sessions: OwnerSessionsTable;
  owner_sign_in_failures: OwnerSignInFailuresTable;
}

export type OwnerAccountRow = Selectable<OwnerAccountsTable>;
export type OwnerSessionRow = Selectable<OwnerSessionsTable>;

// Email-marketing sync (migration 0024, src/domain/store/email-marketing-sync.ts): each setting's sealed provider API key,
// and the outbox of "add this customer to the list" requests the worker sends.
export interface EmailMarketingKeysTable {
  shop_id: string;
  setting_id: string;
  /** The provider API key, sealed with the secret box (context: shop and setting); never returned or logged. */
  sealed_key: Buffer;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type EmailMarketingSyncStatus = 'PENDING' | 'RETRYING' | 'SYNCED' | 'FAILED' | 'CANCELLED';

export interface EmailMarketingSyncsTable {
  id: string;
  shop_id: string;
  setting_id: string;
  customer_id: string;
  email: string;
  status: EmailMarketingSyncStatus;
  attempts: Int;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  lease_token: string | null;
  /** HTTP status of the last answer, if there was one. */
  last_status: number | null;
  last_error: string | null;
  synced_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  email_marketing_keys: EmailMarketingKeysTable;
  email_marketing_syncs: EmailMarketingSyncsTable;
}

export type EmailMarketingSyncRow = Selectable<EmailMarketingSyncsTable>;
