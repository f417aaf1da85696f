// The subscription part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): billing intervals of
// SUBSCRIPTION products and variants, and subscriptions imported as they stand (no origin order). An imported
// subscription is paid up to the period that contains the time of seeding: its periods are counted from
// `started_at` by its interval.
import type { Transaction } from 'kysely';
import * as subscriptions from '../../db/queries/subscriptions';
import type { BillingInterval, Database } from '../../db/tables';
import { newId } from '../ids';
import { addInterval, billingOf } from './subscription-billing';

export const billingFixtureSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['interval'],
  properties: {
    interval: { enum: ['DAY', 'WEEK', 'MONTH', 'YEAR'] },
    interval_count: { type: 'integer', minimum: 1, maximum: 365 },
  },
} as const;

export const subscriptionFixturesSchema = {
  type: 'array',
  maxItems: 10000,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['customer', 'product'],
    properties: {
      // The email of a customer of this file, the title of a SUBSCRIPTION product of this file, a variant's title.
      customer: { type: 'string', format: 'email' },
      product: { type: 'string', minLength: 1 },
      variant: { type: 'string', minLength: 1 },
      quantity: { type: 'integer', minimum: 1, maximum: 1000 },
      status: { enum: ['ACTIVE', 'PAUSED', 'CANCELLED'] },
      started_at: { type: 'string', format: 'date-time' },
      // PAUSED only: when it resumes by itself.
      resume_at: { type: 'string', format: 'date-time' },
      custom_fields: {
        type: 'object',
        maxProperties: 50,
        propertyNames: { minLength: 1, maxLength: 100 },
        additionalProperties: { type: 'string', maxLength: 1000 },
      },
    },
    dependentSchemas: { resume_at: { required: ['status'], properties: { status: { const: 'PAUSED' } } } },
  },
} as const;

export interface BillingFixture {
  interval: BillingInterval;
  interval_count?: number;
}

export interface SubscriptionFixture {
  customer: string;
  product: string;
  variant?: string;
  quantity?: number;
  status?: 'ACTIVE' | 'PAUSED' | 'CANCELLED';
  started_at?: string;
  resume_at?: string;
  custom_fields?: Record<string, string>;
}

interface FileFacts {
  products?: { title: string; type?: string; variants?: { title: string }[] }[];
  customers?: { email: string }[];
  subscriptions?: SubscriptionFixture[];
}

/** The billing columns of a product or variant fixture (both null: the default). */
export function billingColumns(billing: BillingFixture | undefined) {
  return {
    billing_interval: billing?.interval ?? null,
    billing_interval_count: billing ? (billing.interval_count ?? 1) : null,
  };
}

/** Cross-references the JSON Schema cannot check. */
export function subscriptionFixtureProblems(f: FileFacts, now: Date): string[] {
  const problems: string[] = [];
  const emails = new Set((f.customers ?? []).map((c) => c.email.toLowerCase()));
  (f.subscriptions ?? []).forEach((s, i) => {
    const at = `/subscriptions/${i}`;
    if (!emails.has(s.customer.toLowerCase())) problems.push(`${at}/customer names no customer of this file`);
    const products = (f.products ?? []).filter((p) => p.title === s.product);
    const product = products[0];
    if (products.length !== 1)
      problems.push(`${at}/product names ${products.length === 0 ? 'no product' : 'several products'} of this file`);
    else if (product!.type !== 'SUBSCRIPTION') problems.push(`${at}/product names a product that is not SUBSCRIPTION`);
    else if ((product!.variants ?? []).length > 0 && s.variant === undefined)
      problems.push(`${at}/variant is required: the product has variants`);
    else if (s.variant !== undefined && !(product!.variants ?? []).some((v) => v.title === s.variant))
      problems.push(`${at}/variant names no variant of the product`);
    if (s.started_at !== undefined && new Date(s.started_at).getTime() > now.getTime())
      problems.push(`${at}/started_at is in the future`);
    if (s.resume_at !== undefined && new Date(s.resume_at).getTime() <= now.getTime())
      problems.push(`${at}/resume_at must be in the future`);
  });
  return problems;
}

/** Inserts the file's subscriptions (after its products and customers); returns their ids in file order. */
export async function seedSubscriptionFixtures(
  trx: Transaction<Database>,
  shopId: string,
  list: readonly SubscriptionFixture[],
  refs: { productsByTitle: Map<string, string>; customersByEmail: Map<string, string> },
  now: Date,
): Promise<string[]> {
  const ids: string[] = [];
  for (const s of list) {
    const productId = refs.productsByTitle.get(s.product)!;
    const customerId = refs.customersByEmail.get(s.customer.toLowerCase())!;
    const product = await subscriptions.productForSubscriptionFixture(trx, shopId, productId);
    const variant =
      s.variant === undefined
        ? null
        : ((await subscriptions.variantsOfProduct(trx, shopId, productId)).find((v) => v.title === s.variant) ?? null);
    const billing = billingOf(product, variant);
    let start = s.started_at === undefined ? now : new Date(s.started_at);
    let end = addInterval(start, billing.interval, billing.count);
    while (end.getTime() <= now.getTime()) {
      start = end;
      end = addInterval(start, billing.interval, billing.count);
    }
    const status = s.status ?? 'ACTIVE';
    const row = await subscriptions.insertSubscription(trx, shopId, {
      id: newId('sub'),
      customer_id: customerId,
      customer_email: s.customer.toLowerCase(),
      product_id: productId,
      variant_id: variant?.id ?? null,
      origin_order_id: null,
      origin_item_id: null,
      status,
      unit_price: variant?.price ?? product.price,
      quantity: s.quantity ?? 1,
      currency: product.currency,
      interval: billing.interval,
      interval_count: billing.count,
      current_period_start: start,
      current_period_end: end,
      next_renewal_at: end,
      paused_at: status === 'PAUSED' ? now : null,
      resume_at: status === 'PAUSED' && s.resume_at !== undefined ? new Date(s.resume_at) : null,
      cancelled_at: status === 'CANCELLED' ? now : null,
      custom_fields: JSON.stringify(s.custom_fields ?? {}),
      created_at: s.started_at === undefined ? now : new Date(s.started_at),
      updated_at: now,
    });
    ids.push(row.id);
  }
  return ids;
}
