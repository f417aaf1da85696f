// The fixture file format of `cli seed`: validated against a JSON Schema before anything is written, and written
// in one transaction, so a bad file changes nothing.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { ValidationError } from '../errors';
import { createWebhook, webhookEventTypes, type WebhookDeps } from './webhooks';
import addFormats from 'ajv-formats';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { insertProduct, insertVariants } from '../../db/queries/products';
import { insertCustomers, setReferrer } from '../../db/queries/customers';
import { insertSerials } from '../../db/queries/serials';
import { newId, newUniqid } from '../ids';
import { newCustomerRow, type NewCustomerInput } from './customers';
import {
  billingColumns,
  billingFixtureSchema,
  seedSubscriptionFixtures,
  subscriptionFixtureProblems,
  subscriptionFixturesSchema,
  type BillingFixture,
  type SubscriptionFixture,
} from './subscription-fixtures';
import {
  licenseColumns,
  licenseFixtureProblems,
  licenseFixturesSchema,
  licenseProductFixtureDependencies,
  licenseProductFixtureProperties,
  seedLicenseFixtures,
  type LicenseFixture,
} from './license-fixtures';
import { createAffiliateApplication } from './affiliates';
import { addBlacklistEntries, normaliseEntry } from './blacklist';
import { customerPastProblem, seedCustomerPasts } from './customer-history';
import { postOpeningBalance } from './wallets';
import { systemClock } from '../platform/clock';
import Decimal from 'decimal.js';
import type { GatewayKind } from '../../db/tables';
import { insertAttachment } from '../../db/queries/attachments';
import { insertCoupon } from '../../db/queries/coupons';
import {
  catalogExtrasChecks,
  catalogExtrasFixtureSchema,
  seedCatalogExtras,
  type CatalogExtrasFixtures,
} from './catalog-extras-fixtures';
import { upsertGateway } from '../../db/queries/gateways';
import { addProductFiles } from '../../db/queries/product-files';
import { updateShopTax } from '../../db/queries/shops';
import {
  seedSupportFixtures,
  supportFixtureProblems,
  supportFixtureSchema,
  type SupportFixtures,
} from './support-fixtures';
import {
  resellerFixtureProblems,
  resellerFixtureSchema,
  seedResellerFixtures,
  type ResellerFixtures,
} from './reseller-fixtures';
import { seedThemeFixtures, themeFixtureProblems, themeFixtureSchema, type ThemeFixtures } from './theme-fixtures';
import { seedStoreFixtures, storeFixtureProblems, storeFixtureSchema, type StoreFixtures } from './store-fixtures';
import {
  marketingFixtureProblems,
  marketingFixtureSchema,
  seedMarketingFixtures,
  type MarketingFixtures,
} from './marketing-fixtures';
import { analyticsFixtureSchema, seedAnalyticsFixtures, type AnalyticsFixtures } from './analytics-fixtures';

const decimal = { type: 'string', pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,8})?$' };

export const fixtureSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  additionalProperties: false,
  properties: {
    products: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['title', 'price'],
        properties: {
          title: { type: 'string', minLength: 1, maxLength: 200 },
          slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 200 },
          type: { enum: ['SERIALS', 'FILE', 'SERVICE', 'DYNAMIC', 'SUBSCRIPTION'] },
          description: { type: 'string' },
          price: decimal,
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
          stock: { type: 'integer', minimum: -1 },
          quantity_warning: { type: 'integer', minimum: 0, maximum: 2147483647 },
          gateways: { type: 'array', items: { type: 'string' } },
          unlisted: { type: 'boolean' },
          description_tabs: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['title', 'content'],
              properties: { title: { type: 'string' }, content: { type: 'string' } },
            },
          },
          variants: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['title', 'price'],
              properties: {
                title: { type: 'string', minLength: 1 },
                price: decimal,
                stock: { type: 'integer', minimum: -1 },
                // A SUBSCRIPTION product's variant may bill by its own interval.
                billing: billingFixtureSchema,
              },
            },
          },
          // Serial keys of a SERIALS product, claimable in this order; the product's stock is their count.
          serials: {
            type: 'array',
            maxItems: 100000,
            uniqueItems: true,
            items: { type: 'string', minLength: 1, maxLength: 4096 },
          },
          // Files a FILE product delivers (text content; stored as attachments).
          files: {
            type: 'array',
            maxItems: 100,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['filename', 'content'],
              properties: {
                filename: { type: 'string', minLength: 1, maxLength: 255 },
                content_type: { type: 'string', pattern: '^[a-z]+/[A-Za-z0-9.+-]+', maxLength: 255 },
                content: { type: 'string', maxLength: 1048576 },
              },
            },
          },
          // Where a DYNAMIC product's delivery request goes.
          dynamic_webhook: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2048 },
          // How often a SUBSCRIPTION product bills (default: every 1 MONTH).
          billing: billingFixtureSchema,
          // A license product (src/domain/license-fixtures.ts).
          ...licenseProductFixtureProperties,
        },
        dependentSchemas: {
          ...licenseProductFixtureDependencies,
          serials: { required: ['type'], properties: { type: { const: 'SERIALS' } } },
          files: { required: ['type'], properties: { type: { const: 'FILE' } } },
          dynamic_webhook: { required: ['type'], properties: { type: { const: 'DYNAMIC' } } },
          billing: { required: ['type'], properties: { type: { const: 'SUBSCRIPTION' } } },
        },
      },
    },
    // The shop's payment gateways (added, or replaced by code; a new shop already has SANDBOX).
    gateways: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['code', 'kind'],
        properties: {
          code: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$' },
          kind: { enum: ['HOSTED', 'CRYPTO', 'SESSION'] },
          coins: {
            type: 'array',
            maxItems: 100,
            uniqueItems: true,
            items: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$' },
          },
          active: { type: 'boolean' },
        },
        dependentSchemas: { coins: { properties: { kind: { const: 'CRYPTO' } } } },
      },
    },
    tax: {
      type: 'object',
      additionalProperties: false,
      required: ['rate'],
      properties: {
        rate: { type: 'string', pattern: '^(100(\\.0{1,4})?|[0-9]{1,2}(\\.[0-9]{1,4})?)$' },
        inclusive: { type: 'boolean' },
      },
    },
    coupons: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['code', 'type', 'value'],
        properties: {
          code: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
          type: { enum: ['PERCENTAGE', 'FIXED'] },
          value: decimal,
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
          max_uses: { type: 'integer', minimum: 1, maximum: 2147483647 },
          uses: { type: 'integer', minimum: 0, maximum: 2147483647 },
          expires_at: { type: 'string', format: 'date-time' },
          enabled: { type: 'boolean' },
          // Titles of products of this file the coupon is limited to (none: every product).
          products: { type: 'array', maxItems: 1000, uniqueItems: true, items: { type: 'string', minLength: 1 } },
        },
      },
    },
    // Variant fields with options, quantity deals and add-ons (src/domain/catalog-extras-fixtures.ts).
    ...catalogExtrasFixtureSchema,
    // Webhook endpoints; each gets a new signing secret, returned once by `seed`.
    webhooks: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['url', 'events'],
        properties: {
          url: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2048 },
          events: {
            type: 'array',
            minItems: 1,
            maxItems: 100,
            uniqueItems: true,
            items: { enum: [...webhookEventTypes, '*'] },
          },
          description: { type: 'string', maxLength: 1000 },
          enabled: { type: 'boolean' },
        },
      },
    },
    customers: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['email'],
        properties: {
          email: { type: 'string', format: 'email', maxLength: 254 },
          name: { type: 'string', maxLength: 200 },
          phone: { type: 'string', maxLength: 32 },
          country: { type: 'string', pattern: '^[A-Z]{2}$' },
          note: { type: 'string', maxLength: 2000 },
          // The customer's past (src/domain/customer-history.ts): the figures are computed, so these seed paid
          // orders (`total_orders`, the first of `total_spent`) and, for `blacklisted`, an EMAIL blacklist entry.
          total_spent: decimal,
          total_orders: { type: 'integer', minimum: 0, maximum: 1000 },
          blacklisted: { type: 'boolean' },
          wallet_balance: decimal,
          // The email of another customer in this file: the affiliate who referred this one.
          referred_by: { type: 'string', format: 'email' },
          affiliate: {
            type: 'object',
            additionalProperties: false,
            required: ['code'],
            properties: {
              code: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
              status: { enum: ['ACTIVE', 'SUSPENDED'] },
              commission_percent: { type: 'string', pattern: '^(100|[0-9]{1,2})(\\.[0-9]{1,2})?$' },
              balance: decimal,
              lifetime_earnings: decimal,
              referred_orders: { type: 'integer', minimum: 0 },
            },
          },
        },
      },
    },
    // Affiliate applications of customers of this file (src/domain/affiliates.ts), approved with
    // POST /affiliates/applications/{id}/approve.
    affiliate_applications: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['email'],
        properties: {
          email: { type: 'string', format: 'email', maxLength: 254 },
          code: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
          commission_percent: { type: 'string', pattern: '^(100(\\.0{1,2})?|[0-9]{1,2}(\\.[0-9]{1,2})?)$' },
          note: { type: 'string', maxLength: 2000 },
          status: { enum: ['PENDING', 'REJECTED'] },
        },
      },
    },
    // Subscriptions imported as they stand (src/domain/subscription-fixtures.ts).
    subscriptions: subscriptionFixturesSchema,
    // Licenses imported as they stand (src/domain/license-fixtures.ts).
    licenses: licenseFixturesSchema,
    // Reviews, tickets and disputes of the shop's real orders and customers (src/domain/support-fixtures.ts).
    ...supportFixtureSchema,
    // Reseller tiers, the program and resellers in any state (src/domain/reseller-fixtures.ts).
    ...resellerFixtureSchema,
    // Themes on any base, retired ones too, with their revisions (src/domain/theme-fixtures.ts).
    ...themeFixtureSchema,
    // Store branding, layout and additional domains (src/domain/store-fixtures.ts).
    ...storeFixtureSchema,
    // Email-marketing settings and Telegram bots with their users (src/domain/marketing-fixtures.ts).
    ...marketingFixtureSchema,
    // Analytics report definitions (src/domain/analytics-fixtures.ts).
    ...analyticsFixtureSchema,
    // Blacklist entries (src/domain/blacklist.ts): values are normalised; a repeated entry is kept once.
    blacklist: {
      type: 'array',
      maxItems: 10000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['type', 'value'],
        properties: {
          type: { enum: ['EMAIL', 'EMAIL_DOMAIN', 'IP', 'COUNTRY'] },
          value: { type: 'string', minLength: 1, maxLength: 254 },
          note: { type: 'string', maxLength: 1000 },
        },
      },
    },
  },
} as const;

export interface ProductFixture {
  title: string;
  slug?: string;
  type?: 'SERIALS' | 'FILE' | 'SERVICE' | 'DYNAMIC' | 'SUBSCRIPTION';
  description?: string;
  price: string;
  currency?: string;
  stock?: number;
  /** Stock at or below which `product:stock_low` is sent (src/domain/stock-warnings.ts); 0 (default): never. */
  quantity_warning?: number;
  gateways?: string[];
  unlisted?: boolean;
  description_tabs?: { title: string; content: string }[];
  variants?: { title: string; price: string; stock?: number; billing?: BillingFixture }[];
  /** SERIALS products only; stock becomes their count. */
  serials?: string[];
  /** FILE products only. */
  files?: { filename: string; content_type?: string; content: string }[];
  /** DYNAMIC products only. */
  dynamic_webhook?: string;
  /** SUBSCRIPTION products only (variants may have their own). */
  billing?: BillingFixture;
  /** A license product: devices per issued key. */
  license_activation_limit?: number;
  /** A license product: issued keys expire this many days after the order completes. */
  license_duration_days?: number;
}

export interface GatewayFixture {
  code: string;
  kind: GatewayKind;
  coins?: string[];
  active?: boolean;
}

export interface CouponFixture {
  code: string;
  type: 'PERCENTAGE' | 'FIXED';
  value: string;
  currency?: string;
  max_uses?: number;
  uses?: number;
  expires_at?: string;
  enabled?: boolean;
  /** Titles of products of the same file. */
  products?: string[];
}

/** A fixture customer: the fields a new customer takes, plus the email of the affiliate who referred it. */
export interface CustomerFixture extends Omit<NewCustomerInput, 'name' | 'phone' | 'country' | 'note' | 'created_at'> {
  name?: string;
  phone?: string;
  country?: string;
  note?: string;
  referred_by?: string;
  /** Seeded as paid orders (see customer-history.ts). */
  total_spent?: string;
  total_orders?: number;
  /** Seeded as an EMAIL blacklist entry. */
  blacklisted?: boolean;
}

export interface BlacklistFixture {
  type: 'EMAIL' | 'EMAIL_DOMAIN' | 'IP' | 'COUNTRY';
  value: string;
  note?: string;
}

export interface WebhookFixture {
  url: string;
  events: string[];
  description?: string;
  enabled?: boolean;
}

/** An affiliate application of a customer of the same file (by email). */
export interface AffiliateApplicationFixture {
  email: string;
  code?: string;
  commission_percent?: string;
  note?: string;
  status?: 'PENDING' | 'REJECTED';
}

export interface Fixtures
  extends
    CatalogExtrasFixtures,
    SupportFixtures,
    ResellerFixtures,
    ThemeFixtures,
    StoreFixtures,
    MarketingFixtures,
    AnalyticsFixtures {
  affiliate_applications?: AffiliateApplicationFixture[];
  products?: ProductFixture[];
  customers?: CustomerFixture[];
  webhooks?: WebhookFixture[];
  gateways?: GatewayFixture[];
  tax?: { rate: string; inclusive?: boolean };
  coupons?: CouponFixture[];
  blacklist?: BlacklistFixture[];
  subscriptions?: SubscriptionFixture[];
  licenses?: LicenseFixture[];
}

export class FixtureError extends Error {}

// Compiled on first use: only a first start on an empty database (the demo shop) or the CLI seeds fixtures, and
// compiling the schema when the module loads cost every server start ~0.2 s.
let compiledFixtureSchema: ValidateFunction | undefined;
function fixtureValidator(): ValidateFunction {
  if (!compiledFixtureSchema) {
    const fixtureAjv = new Ajv2020({ allErrors: true });
    addFormats(fixtureAjv, ['email', 'date-time']);
    compiledFixtureSchema = fixtureAjv.compile(fixtureSchema);
  }
  return compiledFixtureSchema;
}

/** Rules across fields and items that the JSON Schema does not say. */
function crossChecks(f: Fixtures): string[] {
  const problems: string[] = [];
  (f.products ?? []).forEach((p, i) => {
    if (p.serials && p.stock !== undefined && p.stock !== p.serials.length) {
      problems.push(`/products/${i}/stock must equal the number of serials (${p.serials.length}) or be omitted`);
    }
  });
  const emails = new Map<string, number>();
  const codes = new Set<string>();
  (f.customers ?? []).forEach((c, i) => {
    const email = c.email.toLowerCase();
    if (emails.has(email)) problems.push(`/customers/${i}/email duplicates /customers/${emails.get(email)}/email`);
    else emails.set(email, i);
    if (c.affiliate) {
      if (codes.has(c.affiliate.code)) problems.push(`/customers/${i}/affiliate/code is used twice`);
      codes.add(c.affiliate.code);
    }
  });
  (f.customers ?? []).forEach((c, i) => {
    if (c.referred_by === undefined) return;
    const j = emails.get(c.referred_by.toLowerCase());
    if (j === undefined) problems.push(`/customers/${i}/referred_by names no customer of this file`);
    else if (j === i) problems.push(`/customers/${i}/referred_by names the customer itself`);
    else if (!(f.customers ?? [])[j]?.affiliate)
      problems.push(`/customers/${i}/referred_by names a customer who is not an affiliate`);
  });
  const pendingApplicants = new Set<number>();
  (f.affiliate_applications ?? []).forEach((a, i) => {
    const j = emails.get(a.email.toLowerCase());
    if (j === undefined) problems.push(`/affiliate_applications/${i}/email names no customer of this file`);
    else if ((a.status ?? 'PENDING') === 'PENDING') {
      if ((f.customers ?? [])[j]?.affiliate)
        problems.push(`/affiliate_applications/${i}/email names a customer who is already an affiliate`);
      if (pendingApplicants.has(j))
        problems.push(`/affiliate_applications/${i}/email has a second PENDING application in this file`);
      pendingApplicants.add(j);
    }
  });
  const titles = new Map<string, number>();
  for (const p of f.products ?? []) titles.set(p.title, (titles.get(p.title) ?? 0) + 1);
  const couponCodes = new Set<string>();
  (f.coupons ?? []).forEach((c, i) => {
    const code = c.code.toLowerCase();
    if (couponCodes.has(code)) problems.push(`/coupons/${i}/code is used twice (codes are case-insensitive)`);
    couponCodes.add(code);
    if (c.type === 'PERCENTAGE' && c.currency !== undefined)
      problems.push(`/coupons/${i}/currency is only for a FIXED coupon`);
    if (c.type === 'PERCENTAGE' && new Decimal(c.value).gt(100))
      problems.push(`/coupons/${i}/value of a PERCENTAGE coupon is at most 100`);
    if (new Decimal(c.value).lte(0)) problems.push(`/coupons/${i}/value must be greater than 0`);
    if (c.max_uses !== undefined && (c.uses ?? 0) > c.max_uses)
      problems.push(`/coupons/${i}/uses must not exceed max_uses`);
    (c.products ?? []).forEach((title, j) => {
      const n = titles.get(title) ?? 0;
      if (n === 0) problems.push(`/coupons/${i}/products/${j} names no product of this file`);
      else if (n > 1) problems.push(`/coupons/${i}/products/${j} names a title several products of this file have`);
    });
  });
  const gatewayCodes = new Set<string>();
  (f.gateways ?? []).forEach((g, i) => {
    if (gatewayCodes.has(g.code)) problems.push(`/gateways/${i}/code is used twice`);
    gatewayCodes.add(g.code);
  });
  (f.customers ?? []).forEach((c, i) => {
    const problem = customerPastProblem(c);
    if (problem) problems.push(`/customers/${i} ${problem}`);
  });
  (f.blacklist ?? []).forEach((e, i) => {
    const n = normaliseEntry(e.type, e.value);
    if (typeof n === 'string') problems.push(`/blacklist/${i}/value ${n}`);
  });
  problems.push(...catalogExtrasChecks(f));
  problems.push(...subscriptionFixtureProblems(f, new Date()));
  problems.push(...licenseFixtureProblems(f));
  problems.push(...supportFixtureProblems(f));
  problems.push(...resellerFixtureProblems(f));
  problems.push(...themeFixtureProblems(f));
  problems.push(...storeFixtureProblems(f));
  problems.push(...marketingFixtureProblems(f));
  return problems;
}

export function parseFixtures(value: unknown): Fixtures {
  const validate = fixtureValidator();
  if (!validate(value)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new FixtureError(`The fixture file is not valid:\n  ${problems.join('\n  ')}`);
  }
  const problems = crossChecks(value as Fixtures);
  if (problems.length > 0) throw new FixtureError(`The fixture file is not valid:\n  ${problems.join('\n  ')}`);
  return value as Fixtures;
}

function slugify(title: string): string {
  return (
    title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60) || 'product'
  );
}

/** Writes the fixtures for a shop (in the caller's transaction) and returns the ids it created. */
export async function seedFixtures(
  trx: Transaction<Database>,
  shop: { id: string; currency: string },
  fixtures: Fixtures,
  /** Needed only when the fixtures hold webhooks (their secrets are encrypted with it). */
  webhookDeps?: WebhookDeps,
) {
  const created = {
    products: [] as string[],
    variants: [] as string[],
    serials: 0,
    customers: [] as string[],
    affiliateApplications: [] as string[],
    webhooks: [] as { id: string; url: string; secret: string }[],
    attachments: [] as string[],
    gateways: [] as string[],
    coupons: [] as string[],
    blacklist: [] as string[],
    subscriptions: [] as string[],
    licenses: [] as string[],
  };
  const productsByTitle = new Map<string, string>();
  const licenseProducts = new Map<string, { id: string; license_activation_limit: number | null }>();
  const extrasProducts = new Map<string, { id: string; currency: string }>();
  for (const p of fixtures.products ?? []) {
    const product = await insertProduct(trx, shop.id, {
      id: newId('prod'),
      uniqid: newUniqid(),
      slug: p.slug ?? `${slugify(p.title)}-${newUniqid().slice(0, 8)}`,
      type: p.type ?? 'SERVICE',
      subtype: null,
      title: p.title,
      currency: p.currency ?? shop.currency,
      description: p.description ?? '',
      price: p.price,
      price_display: p.price,
      description_tabs: JSON.stringify(p.description_tabs ?? []),
      gateways: p.gateways ?? [],
      custom_fields: JSON.stringify([]),
      delivery_instructions: null,
      quantity_min: 1,
      quantity_max: -1,
      quantity_warning: p.quantity_warning ?? 0,
      stock: p.serials ? p.serials.length : (p.stock ?? (p.type === 'SERIALS' ? 0 : -1)),
      stock_delimiter: ',',
      unlisted: p.unlisted ?? false,
      private: false,
      on_hold: false,
      block_vpn_proxies: false,
      watermark_enabled: false,
      sort_priority: 0,
      crypto_confirmations: 1,
      max_risk_level: 100,
      delivery_text: '',
      service_text: '',
      delivery_time: null,
      dynamic_webhook: p.dynamic_webhook ?? null,
      image_id: null,
      image_url: null,
      ...billingColumns(p.billing),
      ...licenseColumns(p),
    });
    created.products.push(product.id);
    productsByTitle.set(p.title, product.id);
    licenseProducts.set(p.title, product);
    extrasProducts.set(p.title, { id: product.id, currency: product.currency });
    const attachments = [];
    for (const file of p.files ?? []) {
      attachments.push(
        await insertAttachment(trx, shop.id, {
          id: newId('att'),
          filename: file.filename,
          content_type: file.content_type ?? 'text/plain',
          content: Buffer.from(file.content, 'utf8'),
        }),
      );
    }
    await addProductFiles(
      trx,
      shop.id,
      product.id,
      attachments.map((a) => a.id),
    );
    created.attachments.push(...attachments.map((a) => a.id));
    const variants = await insertVariants(
      trx,
      shop.id,
      (p.variants ?? []).map((v, i) => ({
        id: newId('var'),
        product_id: product.id,
        title: v.title,
        price: v.price,
        price_display: v.price,
        stock: v.stock ?? -1,
        sort_priority: i,
        ...billingColumns(v.billing),
      })),
    );
    created.variants.push(...variants.map((v) => v.id));
    // Oldest first is claim order: give each serial its own microsecond so the file's order is kept exactly.
    const base = Date.now() * 1000;
    created.serials += await insertSerials(
      trx,
      shop.id,
      (p.serials ?? []).map((serial, i) => ({
        id: newId('ser'),
        product_id: product.id,
        variant_id: null,
        serial,
        created_at: microsIso(base + i),
      })),
    );
  }

  const customers = await insertCustomers(
    trx,
    shop.id,
    // The wallet balance is not written here: it is a ledger row, posted below.
    // Nor are the figures: they are computed from the past seeded below (paid orders, blacklist entries).
    (fixtures.customers ?? []).map(
      ({ referred_by: _r, wallet_balance: _w, total_spent: _s, total_orders: _o, blacklisted: _b, ...c }) =>
        newCustomerRow(shop, c),
    ),
  );
  created.customers.push(...customers.map((c) => c.id));
  const byEmail = new Map(customers.map((c) => [c.email, c.id]));
  await seedCustomerPasts(
    trx,
    shop,
    (fixtures.customers ?? []).map((c) => ({
      customerId: byEmail.get(c.email.toLowerCase())!,
      email: c.email.toLowerCase(),
      total_spent: c.total_spent,
      total_orders: c.total_orders,
      blacklisted: c.blacklisted,
    })),
  );
  const entries = await addBlacklistEntries(trx, shop.id, fixtures.blacklist ?? [], new Date());
  created.blacklist.push(...entries.map((e) => e.id));
  for (const c of fixtures.customers ?? []) {
    if (c.referred_by === undefined) continue;
    const id = byEmail.get(c.email.toLowerCase());
    const referrer = byEmail.get(c.referred_by.toLowerCase());
    if (id && referrer) await setReferrer(trx, shop.id, id, referrer);
  }
  for (const a of fixtures.affiliate_applications ?? []) {
    const application = await createAffiliateApplication(
      trx,
      shop.id,
      {
        customerId: byEmail.get(a.email.toLowerCase())!,
        code: a.code,
        commissionPercent: a.commission_percent,
        note: a.note,
        status: a.status,
      },
      new Date(),
    );
    created.affiliateApplications.push(application.id);
  }
  // Wallet balances: one opening ADJUSTMENT ledger row each, so the balance is the ledger's sum from the start.
  for (const [i, c] of (fixtures.customers ?? []).entries()) {
    if (c.wallet_balance === undefined || new Decimal(c.wallet_balance).isZero()) continue;
    const id = byEmail.get(c.email.toLowerCase())!;
    try {
      await postOpeningBalance(trx, shop.id, id, c.wallet_balance, systemClock);
    } catch (err) {
      if (err instanceof ValidationError)
        throw new FixtureError(
          `The fixture file is not valid: /customers/${i}/wallet_balance ${err.details?.[0]?.message ?? err.message}`,
        );
      throw err;
    }
  }
  for (const w of fixtures.webhooks ?? []) {
    if (!webhookDeps) throw new FixtureError('webhooks in a fixture file need the webhook secret key to seed');
    try {
      const endpoint = await createWebhook(trx, shop.id, w, webhookDeps);
      created.webhooks.push({ id: endpoint.id, url: endpoint.url, secret: endpoint.secret });
    } catch (err) {
      if (err instanceof ValidationError)
        throw new FixtureError(`The fixture file is not valid: ${err.message} (${w.url})`);
      throw err;
    }
  }
  for (const g of fixtures.gateways ?? []) {
    const row = await upsertGateway(trx, shop.id, {
      id: newId('gw'),
      code: g.code,
      kind: g.kind,
      coins: g.coins ?? [],
      active: g.active ?? true,
    });
    created.gateways.push(row.code);
  }
  if (fixtures.tax) {
    await updateShopTax(trx, shop.id, { rate: fixtures.tax.rate, inclusive: fixtures.tax.inclusive ?? false });
  }
  for (const c of fixtures.coupons ?? []) {
    const coupon = await insertCoupon(
      trx,
      shop.id,
      {
        id: newId('cpn'),
        code: c.code.toLowerCase(),
        type: c.type,
        value: c.value,
        currency: c.type === 'FIXED' ? (c.currency ?? shop.currency) : null,
        max_uses: c.max_uses ?? null,
        uses: c.uses ?? 0,
        expires_at: c.expires_at ?? null,
        enabled: c.enabled ?? true,
      },
      (c.products ?? []).map((title) => productsByTitle.get(title)!),
    );
    created.coupons.push(coupon.id);
  }
  created.licenses = await seedLicenseFixtures(
    trx,
    shop.id,
    fixtures.licenses ?? [],
    { products: licenseProducts, customersByEmail: byEmail },
    new Date(),
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  created.subscriptions = await seedSubscriptionFixtures(
    trx,
    shop.id,
    fixtures.subscriptions ?? [],
    { productsByTitle, customersByEmail: byEmail },
    new Date(),
  );
  const extras = await seedCatalogExtras(
    trx,
    shop,
    fixtures,
    extrasProducts,
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  const support = await seedSupportFixtures(
    trx,
    shop.id,
    fixtures,
    systemClock,
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  const store = await seedStoreFixtures(
    trx,
    shop.id,
    fixtures,
    new Date(),
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  const resellers = await seedResellerFixtures(
    trx,
    shop,
    fixtures,
    new Date(),
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  const marketing = await seedMarketingFixtures(
    trx,
    shop.id,
    fixtures,
    new Date(),
    (message) => new FixtureError(`The fixture file is not valid: ${message}`),
  );
  const reports = await seedAnalyticsFixtures(trx, shop.id, fixtures, new Date());
  const themeSeeds = await seedThemeFixtures(trx, shop.id, fixtures, new Date());
  return { ...created, ...extras, ...support, ...resellers, ...themeSeeds, ...marketing, ...store, ...reports };
}

/** Microseconds since the epoch -> ISO 8601 text with all six fractional digits (Date keeps only milliseconds). */
function microsIso(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // …T03:10:00.123Z
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}
