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
