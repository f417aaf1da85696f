// The subscription operations of the API: the cursor list, plan options, pause and custom fields. Subscriptions
// are started by completed orders and renewed by the renewal job (src/domain/subscriptions/start.ts,
// src/domain/subscriptions/renewals.ts); the rules are documented on the operations in openapi.yaml.
import { productById } from '../../../db/queries/products';
import type { ReadDb } from '../../../db/queries/shop-scope';
import * as subscriptions from '../../../db/queries/subscriptions';
import type { SubscriptionRow } from '../../../db/tables';
import type { components } from '../../generated/api-types';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import { jsonAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { subscriptionView, type SubscriptionView } from '../../views/subscription';
import { billingOf } from './billing';

export type PauseInput = components['schemas']['PauseSubscriptionRequest'];
export type CustomFieldsInput = components['schemas']['SubscriptionCustomFieldsRequest'];
export type PlanOptions = components['schemas']['SubscriptionPlanOptions'];

/** A subscription holds at most this many custom fields (a PATCH that would exceed it is refused). */
export const MAX_CUSTOM_FIELDS = 50;

/** `GET /subscriptions`: newest first, no filters. */
export const subscriptionListSpec: ListSpec = {
  name: 'subscriptions',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const subscriptionCursorList: CursorList<subscriptions.SubscriptionPageRow, SubscriptionView> = {
  spec: subscriptionListSpec,
  page: subscriptions.subscriptionsPage,
  view: (rows) => rows.map(subscriptionView),
};

/** Pausable: ACTIVE, TRIALING, and PAUSED (pausing again replaces `resume_at` and the reason). */
const pausable = new Set<SubscriptionRow['status']>(['ACTIVE', 'TRIALING', 'PAUSED']);

async function locked(w: ShopWrite, id: string): Promise<SubscriptionRow> {
  const { trx, shopId } = w;
  const row = await subscriptions.subscriptionByIdForUpdate(trx, shopId, id);
  if (!row) throw new NotFoundError('SUBSCRIPTION_NOT_FOUND');
  return row;
}

/** The plans of the subscribed product: each variant (or the product itself when it has none), the current one marked. */
export async function subscriptionPlanOptions(db: ReadDb, shopId: string, id: string): Promise<PlanOptions> {
  const sub = await subscriptions.subscriptionById(db, shopId, id);
  if (!sub) throw new NotFoundError('SUBSCRIPTION_NOT_FOUND');
  const product = await productById(db, shopId, sub.product_id);
  if (!product) throw new NotFoundError('SUBSCRIPTION_NOT_FOUND');
  const variants = await subscriptions.variantsOfProduct(db, shopId, product.id);
  const plans =
    variants.length === 0
      ? [{ variant: null, title: product.title, price: product.price }]
      : variants.map((v) => ({ variant: v, title: v.title, price: v.price }));
  return {
    subscription_id: sub.id,
    options: plans.map((p) => {
      const billing = billingOf(product, p.variant);
      return {
        product_id: product.id,
        variant_id: p.variant?.id ?? null,
        title: p.title,
        price: jsonAmount(p.price),
        currency: product.currency,
        interval: billing.interval,
        interval_count: billing.count,
        is_current: (p.variant?.id ?? null) === sub.variant_id,
      };
    }),
  };
}

export async function pauseSubscription(
  w: ShopWrite,
  id: string,
  input: PauseInput | undefined,
): Promise<SubscriptionView> {
  const { trx, shopId, effects, now } = w;
  const sub = await locked(w, id);
  if (!pausable.has(sub.status))
    throw new ApiError(
      'SUBSCRIPTION_NOT_ACTIVE',
      `The subscription is ${sub.status}; only an ACTIVE, TRIALING or PAUSED subscription can be paused.`,
    );
  const resumeAt = input?.resume_at === undefined ? null : new Date(input.resume_at * 1000);
  if (resumeAt !== null && resumeAt.getTime() <= now.getTime())
    throw new ValidationError([{ field: 'resume_at', message: 'must be in the future' }]);
  const paused = await subscriptions.updateSubscription(trx, shopId, sub.id, {
    status: 'PAUSED',
    paused_at: sub.paused_at ?? now,
    resume_at: resumeAt,
    pause_reason: input?.reason ?? null,
    updated_at: now,
  });
  const view = subscriptionView(paused);
  effects.emit('subscription:paused', view);
  effects.audit({
    action: 'subscription.paused',
    resourceType: 'subscription',
    resourceId: sub.id,
    detail: { resume_at: input?.resume_at ?? null },
  });
  return view;
}

export async function updateSubscriptionCustomFields(
  w: ShopWrite,
  id: string,
  input: CustomFieldsInput,
): Promise<SubscriptionView> {
  const { trx, shopId, effects, now } = w;
  const sub = await locked(w, id);
  // A Map, so a key such as `__proto__` is a key like any other.
  const merged = new Map(Object.entries(sub.custom_fields));
  for (const [key, value] of Object.entries(input.custom_fields)) {
    if (value === null || value === undefined) merged.delete(key);
    else merged.set(key, value);
  }
  const fields = Object.fromEntries(merged) as Record<string, string>;
  const count = merged.size;
  if (count > MAX_CUSTOM_FIELDS)
    throw new ValidationError([
      {
        field: 'custom_fields',
        message: `would give the subscription ${count} fields; it may hold ${MAX_CUSTOM_FIELDS}`,
      },
    ]);
  if (sameFields(fields, sub.custom_fields)) return subscriptionView(sub);
  const updated = await subscriptions.updateSubscription(trx, shopId, sub.id, {
    custom_fields: JSON.stringify(fields),
    updated_at: now,
  });
  effects.audit({
    action: 'subscription.custom_fields_updated',
    resourceType: 'subscription',
    resourceId: sub.id,
    detail: { keys: Object.keys(input.custom_fields) },
  });
  return subscriptionView(updated);
}

function sameFields(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}
