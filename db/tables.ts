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
  total_spent: ColumnType<string, string | undefined, string>;
  total_orders: ColumnType<number, number | undefined, number>;
  blacklisted: ColumnType<boolean, boolean | undefined, boolean>;
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

export interface ProductSerialsTable {
  id: string;
  shop_id: string;
  product_id: string;
  variant_id: string | null;
  serial: string;
  status: ColumnType<'available' | 'claimed', 'available' | 'claimed' | undefined, 'available' | 'claimed'>;
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
  locked_at: Timestamp;
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
  error: string | null;
  next_retry_at: NullableTimestamp;
  attempted_at: NullableTimestamp;
  created_at: Timestamp;
}

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
  operation_id: string;
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
