// The Database interface Kysely checks every query against: one XTable type per table, grouped by business area in the
// same order as `Database` lists them.
// numeric columns are strings (exact decimals); int8 columns are strings too (pg's convention, PGlite is told the same).
import type { ColumnType, Generated, Selectable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type NullableText = ColumnType<string | null, string | null | undefined, string | null>;
type Json<T> = ColumnType<T, string, string>;
// Columns with a database default (optional on insert).
type Money = ColumnType<string, string | undefined, string>;
type Int = ColumnType<number, number | undefined, number>;
type Bool = ColumnType<boolean, boolean | undefined, boolean>;

export interface Database {
  // Shops and their API credentials
  shops: ShopsTable;
  credentials: CredentialsTable;

  // Catalog
  products: ProductsTable;
  product_variants: ProductVariantsTable;
  product_serials: ProductSerialsTable;
  attachments: AttachmentsTable;
  product_files: ProductFilesTable;
  coupons: CouponsTable;
  coupon_products: CouponProductsTable;
  product_variant_fields: ProductVariantFieldsTable;
  product_variant_field_options: ProductVariantFieldOptionsTable;
  quantity_deals: QuantityDealsTable;
  quantity_deal_products: QuantityDealProductsTable;
  quantity_deal_tiers: QuantityDealTiersTable;
  addons: AddonsTable;
  addon_products: AddonProductsTable;

  // Customers
  customers: CustomersTable;
  blacklist_entries: BlacklistEntriesTable;
  wallet_transactions: WalletTransactionsTable;

  // Orders and payments
  gateways: GatewaysTable;
  payment_links: PaymentLinksTable;
  orders: OrdersTable;
  order_items: OrderItemsTable;
  payment_attempts: PaymentAttemptsTable;
  refunds: RefundsTable;
  gateway_connections: GatewayConnectionsTable;
  gateway_events: GatewayEventsTable;
  dynamic_deliveries: DynamicDeliveriesTable;
  dynamic_delivery_secrets: DynamicDeliverySecretsTable;

  // Licenses
  licenses: LicensesTable;
  license_devices: LicenseDevicesTable;

  // Subscriptions
  subscriptions: SubscriptionsTable;
  subscription_renewals: SubscriptionRenewalsTable;

  // Affiliates
  affiliate_applications: AffiliateApplicationsTable;
  affiliate_commissions: AffiliateCommissionsTable;

  // Resellers
  reseller_tiers: ResellerTiersTable;
  reseller_programs: ResellerProgramsTable;
  resellers: ResellersTable;

  // Support: disputes, reviews, tickets
  disputes: DisputesTable;
  reviews: ReviewsTable;
  tickets: TicketsTable;
  ticket_messages: TicketMessagesTable;

  // Themes
  themes: ThemesTable;
  theme_revisions: ThemeRevisionsTable;
  theme_preview_sessions: ThemePreviewSessionsTable;

  // Store: settings, domains, email marketing, messaging bots
  store_settings: StoreSettingsTable;
  store_domains: StoreDomainsTable;
  email_marketing_settings: EmailMarketingSettingsTable;
  email_marketing_keys: EmailMarketingKeysTable;
  email_marketing_syncs: EmailMarketingSyncsTable;
  messaging_bots: MessagingBotsTable;
  messaging_bot_users: MessagingBotUsersTable;
  bot_notifications: BotNotificationsTable;

  // Analytics
  analytics_reports: AnalyticsReportsTable;
  analytics_report_generations: AnalyticsReportGenerationsTable;

  // Events, webhooks, outbound mail, audit trail
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  outbound_emails: OutboundEmailsTable;
  audit_entries: AuditEntriesTable;

  // Security: owner accounts and consent-page sessions, OAuth
  owner_accounts: OwnerAccountsTable;
  owner_sessions: OwnerSessionsTable;
  owner_sign_in_failures: OwnerSignInFailuresTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;

  // Platform
  idempotency_keys: IdempotencyKeysTable;
  server_secrets: ServerSecretsTable;
}

// ---------------------------------------------------------------------------------------------------------------
// Shops and their API credentials
// ---------------------------------------------------------------------------------------------------------------

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
  /** `false`: the test twin of the live shop `live_shop_id` (db/migrations/0028_test_mode.ts). */
  livemode: Generated<boolean>;
  live_shop_id: ColumnType<string | null, string | null | undefined, never>;
  /** How far the shop's clock runs ahead of real time: 0 for live shops; a test shop's test clock moves it. */
  clock_offset_ms: ColumnType<string, string | number | undefined, string | number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type Shop = Selectable<ShopsTable>;

/** API keys, and OAuth access tokens (with a grant and an expiry; see the OAuth tables below). */
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
  /** Access tokens only: when the token stops working. Null: never (API keys). */
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Access tokens only: the grant (token family) it belongs to; revoking the grant revokes the token. */
  grant_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  last_used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export type Credential = Selectable<CredentialsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Catalog: products and variants, serials, files, coupons, and the extras (variant fields and options, quantity
// deals, add-ons: src/domain/catalog/catalog-extras.ts)
// ---------------------------------------------------------------------------------------------------------------

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
  /** With billing_interval_count; both null: every 1 MONTH. */
  billing_interval: ColumnType<BillingInterval | null, BillingInterval | null | undefined, BillingInterval | null>;
  billing_interval_count: ColumnType<number | null, number | null | undefined, number | null>;
  /** Devices per key issued for this product; null: not a license product (src/domain/licenses/issuing.ts). */
  license_activation_limit: ColumnType<number | null, number | null | undefined, number | null>;
  /** Issued keys expire this many days after the order completes; null: never. */
  license_duration_days: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type ProductType = ProductsTable['type'];
export type ProductRow = Selectable<ProductsTable>;

export interface ProductVariantsTable {
  id: string;
  shop_id: string;
  product_id: string;
  title: string;
  price: string;
  price_display: string;
  stock: number;
  sort_priority: number;
  /** Null: the product's interval. */
  billing_interval: ColumnType<BillingInterval | null, BillingInterval | null | undefined, BillingInterval | null>;
  billing_interval_count: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
}

export type ProductVariantRow = Selectable<ProductVariantsTable>;

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

export type ProductSerialRow = Selectable<ProductSerialsTable>;

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

export type CouponRow = Selectable<CouponsTable>;

export interface CouponProductsTable {
  shop_id: string;
  coupon_id: string;
  product_id: string;
}

export interface ProductVariantFieldsTable {
  id: string;
  shop_id: string;
  product_id: string;
  name: string;
  sort_order: Int;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type VariantFieldRow = Selectable<ProductVariantFieldsTable>;

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

export type VariantFieldOptionRow = Selectable<ProductVariantFieldOptionsTable>;

export interface QuantityDealsTable {
  id: string;
  shop_id: string;
  uniqid: string;
  title: string;
  enabled: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type QuantityDealRow = Selectable<QuantityDealsTable>;

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

export type QuantityDealTierRow = Selectable<QuantityDealTiersTable>;

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

export type AddonRow = Selectable<AddonsTable>;

export interface AddonProductsTable {
  shop_id: string;
  addon_id: string;
  product_id: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Customers: customers (with their wallet and affiliate columns), the blacklist, the wallet ledger
// ---------------------------------------------------------------------------------------------------------------

export interface CustomersTable {
  id: string;
  shop_id: string;
  /** Lower-cased. */
  email: string;
  name: string | null;
  phone: string | null;
  country: string | null;
  note: string | null;
  // total_spent, total_orders and blacklisted are computed: see CustomerFigures.
  wallet_id: string;
  wallet_currency: string;
  /** The sum of the customer's wallet_transactions, kept by src/domain/customers/wallets.ts. */
  wallet_balance: ColumnType<string, string | undefined, string>;
  wallet_held: ColumnType<string, string | undefined, string>;
  is_affiliate: ColumnType<boolean, boolean | undefined, boolean>;
  affiliate_code: string | null;
  affiliate_status: 'ACTIVE' | 'SUSPENDED' | null;
  affiliate_commission_percent: string | null;
  // An affiliate's figures are sums over affiliate_commissions (src/domain/affiliate-figures.ts). The next three
  // columns only hold what a fixture imported from before the commission ledger (nothing changes them afterwards)
  // and are added to those sums.
  affiliate_balance: ColumnType<string, string | undefined, string>;
  affiliate_lifetime_earnings: ColumnType<string, string | undefined, string>;
  affiliate_referred_orders: ColumnType<number, number | undefined, number>;
  /** When the customer became an affiliate (approval, or creation for a fixture affiliate); null otherwise. */
  affiliate_approved_at: NullableTimestamp;
  referred_by_customer_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type CustomerRow = Selectable<CustomersTable>;

/** What a customer's row does not store: computed in SQL from its paid orders, refunds and the blacklist. */
export interface CustomerFigures {
  /** Sum of `total - refunded` over the customer's paid orders (numeric text). */
  total_spent: string;
  /** Number of the customer's paid orders (refunded ones included). */
  total_orders: number;
  /** An EMAIL, EMAIL_DOMAIN or COUNTRY entry matches the customer. */
  blacklisted: boolean;
}

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

export type BlacklistEntryRow = Selectable<BlacklistEntriesTable>;

/** The store-credit ledger: one row per movement. */
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

export type WalletTransactionRow = Selectable<WalletTransactionsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Orders and payments: gateways, payment links, orders and their items, payment attempts, refunds, dynamic deliveries
// ---------------------------------------------------------------------------------------------------------------

export type GatewayKind = 'HOSTED' | 'CRYPTO' | 'SESSION';
export type OrderStatus =
  'PENDING' | 'PROCESSING' | 'PARTIAL' | 'COMPLETED' | 'PARTIALLY_REFUNDED' | 'REFUNDED' | 'DISPUTED' | 'VOIDED';
export type PaymentStatus =
  'PENDING' | 'PROCESSING' | 'PARTIAL' | 'PAID' | 'FAILED' | 'CANCELLED' | 'PARTIALLY_REFUNDED' | 'REFUNDED';
export type ItemDeliveryStatus = 'PENDING' | 'AWAITING_FULFILLMENT' | 'DELIVERED' | 'FAILED';

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

export type GatewayRow = Selectable<GatewaysTable>;

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

export type PaymentLinkRow = Selectable<PaymentLinksTable>;

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
  /** The reseller the order was priced for (its buyer was an ACTIVE reseller at creation). */
  reseller_id: NullableText;
  /** The wholesale percent applied (with reseller_id). */
  reseller_discount_percent: NullableText;
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
  /** Paid from the buyer's wallet: held while PENDING, captured on completion, released on void. */
  balance_paid: Money;
  coupon_id: string | null;
  payment_link_id: string | null;
  /** The subscription this order started (its first SUBSCRIPTION line) or renews. */
  subscription_id: ColumnType<string | null, string | null | undefined, string | null>;
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

export type OrderRow = Selectable<OrdersTable>;

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

/**
 * An order's line. variant_options, addons and the quantity deal record what it was bought with
 * (src/domain/catalog/line-extras.ts).
 */
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
  variant_options: ColumnType<ChosenOptionRecord[] | null, string | null | undefined, string | null>;
  addons: ColumnType<ChosenAddonRecord[] | null, string | null | undefined, string | null>;
  quantity: number;
  unit_price: string;
  /** The quantity deal's discount on the line (0 when none applied). */
  quantity_discount: ColumnType<string, string | undefined, string>;
  quantity_deal_id: ColumnType<string | null, string | null | undefined, string | null>;
  total: string;
  custom_fields: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  delivery_instructions: string | null;
  delivery_instructions_label: string | null;
  delivery_status: ColumnType<ItemDeliveryStatus, ItemDeliveryStatus | undefined, ItemDeliveryStatus>;
  delivered_at: NullableTimestamp;
  delivered_items: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** Units of the product's (or variant's) counted stock this item holds. */
  reserved_stock: Int;
  /** Licenses the item issued when its order completed (0: none). */
  license_count: Int;
  created_at: Timestamp;
}

export type OrderItemRow = Selectable<OrderItemsTable>;

export interface PaymentAttemptsTable {
  id: string;
  shop_id: string;
  order_id: string;
  gateway: string;
  session_id: string | null;
  status: 'PENDING' | 'PAID' | 'FAILED' | 'EXPIRED';
  amount: string;
  created_at: Timestamp;
  paid_at: NullableTimestamp;
  /** The provider's hosted page of the session (SANDBOX's is rebuilt from its id). */
  session_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** The provider's payment (payment intent, capture, invoice) its refunds and disputes name. */
  payment_ref: ColumnType<string | null, string | null | undefined, string | null>;
  /** What the provider says arrived (a partial payment too), in `paid_currency`. */
  paid_amount: ColumnType<string | null, string | null | undefined, string | null>;
  paid_currency: ColumnType<string | null, string | null | undefined, string | null>;
  /** Money that did not pay its invoice: a second payment, one after the invoice expired, short or another currency. */
  flag: ColumnType<AttemptFlag | null, AttemptFlag | null | undefined, AttemptFlag | null>;
  /** Giving a flagged payment back through its provider. */
  return_status: ColumnType<ReturnStatus | null, ReturnStatus | null | undefined, ReturnStatus | null>;
  /** When the reconciler looks at the attempt next (the shop's clock); null: nothing to look at. */
  reconcile_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  reconcile_count: ColumnType<number, number | undefined, number>;
  lease_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lease_token: ColumnType<string | null, string | null | undefined, string | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
}

export type AttemptFlag = 'DUPLICATE' | 'LATE' | 'SHORT' | 'CURRENCY';
export type ReturnStatus = 'PENDING' | 'REFUNDED' | 'FAILED';

export type PaymentAttemptRow = Selectable<PaymentAttemptsTable>;

export interface RefundsTable {
  id: string;
  shop_id: string;
  order_id: string;
  amount: string;
  reason: string | null;
  created_at: Timestamp;
  /** The paid attempt the money went back through (a provider refund). */
  attempt_id: ColumnType<string | null, string | null | undefined, string | null>;
  gateway: ColumnType<string | null, string | null | undefined, string | null>;
  provider_refund_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A shop's connection to a payment provider: sealed credentials, settings shown in clear. */
export interface GatewayConnectionsTable {
  shop_id: string;
  gateway: string;
  sealed_credentials: Uint8Array;
  settings: Json<Record<string, string>>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type GatewayConnectionRow = Selectable<GatewayConnectionsTable>;

/** A verified provider webhook waiting to be applied (the leased-queue protocol). */
export interface GatewayEventsTable {
  id: string;
  shop_id: string;
  gateway: string;
  event_id: string;
  notice: Json<unknown>;
  status: DeliveryStatus;
  attempts: Int;
  next_attempt_at: NullableTimestamp;
  lease_until: NullableTimestamp;
  lease_token: string | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
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

export type DynamicDeliveryRow = Selectable<DynamicDeliveriesTable>;

/** Each shop's signing secret for dynamic-delivery callbacks, sealed (src/platform/secret-box.ts). */
export interface DynamicDeliverySecretsTable {
  shop_id: string;
  purpose: ColumnType<'dynamic_delivery', 'dynamic_delivery' | undefined, never>;
  secret: Buffer;
  created_at: Timestamp;
}

// ---------------------------------------------------------------------------------------------------------------
// Licenses: license keys (hashed for look-up, sealed for display) and their registered devices
// (src/domain/licenses/issuing.ts; the products' license_* columns make a product a license product)
// ---------------------------------------------------------------------------------------------------------------

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

export type LicenseRow = Selectable<LicensesTable>;

export interface LicenseDevicesTable {
  id: string;
  shop_id: string;
  license_id: string;
  slot: number;
  hwid: string;
  registered_at: Timestamp;
  last_validated_at: Timestamp;
}

export type LicenseDeviceRow = Selectable<LicenseDevicesTable>;

// ---------------------------------------------------------------------------------------------------------------
// Subscriptions and their renewal invoices (products and variants carry the billing interval)
// ---------------------------------------------------------------------------------------------------------------

export type BillingInterval = 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';
export type SubscriptionStatus = 'TRIALING' | 'ACTIVE' | 'PAST_DUE' | 'PAUSED' | 'CANCELLED' | 'EXPIRED';

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

export type SubscriptionRow = Selectable<SubscriptionsTable>;

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

export type SubscriptionRenewalRow = Selectable<SubscriptionRenewalsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Affiliates: applications and the commission ledger (the affiliate itself is a customer: see CustomersTable)
// ---------------------------------------------------------------------------------------------------------------

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

export type AffiliateApplicationRow = Selectable<AffiliateApplicationsTable>;

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

export type AffiliateCommissionRow = Selectable<AffiliateCommissionsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Resellers: tiers, the program (one row per shop, stored on the first write), resellers (never deleted); each
// order records the reseller it was priced for (OrdersTable.reseller_id)
// ---------------------------------------------------------------------------------------------------------------

export type ResellerStatus = 'INVITED' | 'APPLIED' | 'ACTIVE' | 'SUSPENDED' | 'REJECTED';
export type EnrollmentMode = 'MANUAL' | 'APPLICATION' | 'OPEN';

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

export type ResellerTierRow = Selectable<ResellerTiersTable>;

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

export type ResellerProgramRow = Selectable<ResellerProgramsTable>;

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

export type ResellerRow = Selectable<ResellersTable>;

// ---------------------------------------------------------------------------------------------------------------
// Support: disputes, reviews, tickets and their messages
// ---------------------------------------------------------------------------------------------------------------

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
  /** The provider's dispute id (Stripe dp_..., PayPal PP-D-...), when a provider opened it. */
  provider_dispute_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type DisputeRow = Selectable<DisputesTable>;

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

export type ReviewRow = Selectable<ReviewsTable>;

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

export type TicketRow = Selectable<TicketsTable>;

export interface TicketMessagesTable {
  id: string;
  shop_id: string;
  ticket_id: string;
  author: 'BUYER' | 'MERCHANT';
  body: string;
  created_at: Timestamp;
}

export type TicketMessageRow = Selectable<TicketMessagesTable>;

// ---------------------------------------------------------------------------------------------------------------
// Themes: themes, every saved revision of a theme's document, and preview sessions
// ---------------------------------------------------------------------------------------------------------------

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

export type ThemeRow = Selectable<ThemesTable>;

export interface ThemeRevisionsTable {
  shop_id: string;
  theme_id: string;
  revision: number;
  document: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export type ThemeRevisionRow = Selectable<ThemeRevisionsTable>;

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

export type ThemePreviewSessionRow = Selectable<ThemePreviewSessionsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Store: settings and domains; email marketing (each setting's sealed provider API key, and the outbox of "add this
// customer to the list" requests the worker sends: src/domain/store/email-marketing-sync.ts); Telegram messaging
// bots, their users, and the outbox of notifications to them
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

export type StoreSettingsRow = Selectable<StoreSettingsTable>;

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

export type StoreDomainRow = Selectable<StoreDomainsTable>;

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

export type EmailMarketingSettingRow = Selectable<EmailMarketingSettingsTable>;

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

export type EmailMarketingSyncRow = Selectable<EmailMarketingSyncsTable>;

export interface MessagingBotsTable {
  id: string;
  shop_id: string;
  /** Telegram username, without the @. */
  username: string;
  name: NullableText;
  /** The bot's Telegram token, sealed (src/platform/secret-box.ts); null: no token, no deliveries. */
  token_sealed: Buffer | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type MessagingBotRow = Selectable<MessagingBotsTable>;

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

export type MessagingBotUserRow = Selectable<MessagingBotUsersTable>;

export type BotNotificationStatus = 'PENDING' | 'RETRYING' | 'SENT' | 'FAILED';

/** The outbox of messages to bot users, sent by the worker. */
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

export type BotNotificationRow = Selectable<BotNotificationsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Analytics reports: a report definition per shop, its queued and finished generations (claimed by the worker with
// a lease), and the last generation's output (src/domain/analytics/reports.ts)
// ---------------------------------------------------------------------------------------------------------------

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

export type AnalyticsReportRow = Selectable<AnalyticsReportsTable>;

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

export type AnalyticsReportGenerationRow = Selectable<AnalyticsReportGenerationsTable>;

// ---------------------------------------------------------------------------------------------------------------
// Events, webhook endpoints, deliveries and attempts, queued outbound mail, the audit trail
// ---------------------------------------------------------------------------------------------------------------

/** The status of a leased delivery (webhook deliveries and attempts, dynamic deliveries). */
export type DeliveryStatus = 'PENDING' | 'RETRYING' | 'SUCCEEDED' | 'FAILED';

export interface EventsTable {
  id: string;
  shop_id: string;
  type: string;
  /**
   * JSON text of the event's data, exactly as first serialised: jsonb would reorder keys and JSON.parse would round
   * amounts beyond a double's precision; the webhook body and the events API send these bytes unchanged.
   */
  data: string;
  /** The mode of the shop that wrote it (`false`: a test shop's), stamped at insert; the webhook body says it. */
  livemode: Generated<boolean>;
  created_at: Timestamp;
  /** W3C traceparent of the request that wrote it (tracing on), for the delivery span's link; null otherwise. */
  traceparent: Generated<string | null>;
}

export type EventRow = Selectable<EventsTable>;

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

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;

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

export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

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
  /** Why the attempt failed; null while queued and when delivered. Set with `error`. */
  error_code: WebhookAttemptErrorCode | null;
  /** The failure's message for the merchant (host and port at most: never a path, header, signature or secret). */
  error: string | null;
  next_retry_at: NullableTimestamp;
  attempted_at: NullableTimestamp;
  created_at: Timestamp;
}

export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;

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
  /** W3C traceparent of the request that queued it (tracing on), for the mail span's link; null otherwise. */
  traceparent: Generated<string | null>;
}

export type OutboundEmailRow = Selectable<OutboundEmailsTable>;

export interface AuditEntriesTable {
  id: string;
  shop_id: string;
  occurred_at: Timestamp;
  credential_id: string | null;
  credential_kind: string;
  /** The consent page's entries name the owner and the session (they have no credential). */
  owner_id: ColumnType<string | null, string | null | undefined, string | null>;
  session_id: ColumnType<string | null, string | null | undefined, string | null>;
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

export type AuditEntryRow = Selectable<AuditEntriesTable>;

// ---------------------------------------------------------------------------------------------------------------
// Security: shop owner accounts and consent-page sessions; OAuth 2.0 (src/auth/oauth-grants.ts): apps are global
// rows; grants, codes and refresh tokens are shop-owned; access tokens are `credentials` rows of kind
// oauth_access_token with a grant and an expiry
// ---------------------------------------------------------------------------------------------------------------

export interface OwnerAccountsTable {
  id: string;
  shop_id: string;
  email: string;
  password_hash: string;
  created_at: Timestamp;
  disabled_at: NullableTimestamp;
}

export type OwnerAccountRow = Selectable<OwnerAccountsTable>;

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

export type OwnerSessionRow = Selectable<OwnerSessionsTable>;

export interface OwnerSignInFailuresTable {
  id: Generated<string>;
  ip: string;
  email: string;
  failed_at: Timestamp;
}

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

export type OAuthClientRow = Selectable<OAuthClientsTable>;

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

export type OAuthGrantRow = Selectable<OAuthGrantsTable>;

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

export type OAuthCodeRow = Selectable<OAuthCodesTable>;

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

export type OAuthRefreshTokenRow = Selectable<OAuthRefreshTokensTable>;

// ---------------------------------------------------------------------------------------------------------------
// Platform: idempotency keys, server secrets
// ---------------------------------------------------------------------------------------------------------------

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
  /** The current owner: a random token per request; null on rows claimed before leases were introduced. */
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

export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;

export interface ServerSecretsTable {
  name: string;
  secret: Buffer;
  created_at: Timestamp;
}
