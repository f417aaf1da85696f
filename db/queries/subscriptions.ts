// Subscriptions and their renewal invoices (migration 0014).
import { sql, type Transaction } from 'kysely';
import type {
  Database,
  OrderStatus,
  ProductRow,
  ProductVariantRow,
  SubscriptionRenewalRow,
  SubscriptionRow,
} from '../tables';
import { byIdOf, pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type SubscriptionPageRow = PageRow<'subscriptions'>;

/** One keyset page of a shop's subscriptions (GET /subscriptions). */
export const subscriptionsPage = pageOf('subscriptions');

export const subscriptionById = byIdOf('subscriptions');

/** The subscription, locked until the transaction ends: every change of a subscription or its renewals takes it. */
export async function subscriptionByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<SubscriptionRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function insertSubscription(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'subscriptions'>,
): Promise<SubscriptionRow> {
  return inShopForWrite(trx, shopId).insertInto('subscriptions', row).returningAll().executeTakeFirstOrThrow();
}

export async function updateSubscription(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: Partial<Omit<ShopRow<'subscriptions'>, 'id'>>,
): Promise<SubscriptionRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('subscriptions')
    .set(set)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The variants of a product in display order (plan options; a subscription line's own interval). */
export async function variantsOfProduct(db: ReadDb, shopId: string, productId: string): Promise<ProductVariantRow[]> {
  return inShop(db, shopId)
    .selectFrom('product_variants')
    .selectAll()
    .where('product_id', '=', productId)
    .orderBy('sort_priority')
    .orderBy('id')
    .execute();
}

/** The renewal an invoice pays, locked (the completion of that invoice renews the subscription). */
export async function renewalByOrderForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
): Promise<SubscriptionRenewalRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('subscription_renewals')
    .selectAll()
    .where('order_id', '=', orderId)
    .forUpdate()
    .executeTakeFirst();
}

/** The subscription's OPEN renewal (at most one: a unique index), with the status of its invoice. */
export async function openRenewalOf(
  trx: Transaction<Database>,
  shopId: string,
  subscriptionId: string,
): Promise<(SubscriptionRenewalRow & { order_status: OrderStatus }) | undefined> {
  return inShop(trx, shopId)
    .selectFrom('subscription_renewals as r')
    .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
    .selectAll('r')
    .select('o.status as order_status')
    .where('r.subscription_id', '=', subscriptionId)
    .where('r.status', '=', 'OPEN')
    .executeTakeFirst();
}

export async function insertRenewal(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'subscription_renewals'>,
): Promise<SubscriptionRenewalRow> {
  return inShopForWrite(trx, shopId).insertInto('subscription_renewals', row).returningAll().executeTakeFirstOrThrow();
}

export async function settleRenewal(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  status: 'PAID' | 'EXPIRED',
  at: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('subscription_renewals')
    .set({ status, settled_at: at })
    .where('id', '=', id)
    .where('status', '=', 'OPEN')
    .executeTakeFirstOrThrow();
}

/** Marks an order as the one that started (or renews) a subscription, unless it already names one. */
export async function linkOrderToSubscription(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
  subscriptionId: string,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('orders')
    .set({ subscription_id: subscriptionId })
    .where('id', '=', orderId)
    .where('subscription_id', 'is', null)
    .execute();
}

/**
 * Subscriptions the renewal job has work on, locked and skipped by any other worker holding them (FOR UPDATE SKIP
 * LOCKED), so several workers take disjoint batches: paused ones whose `resume_at` has come; ACTIVE / PAST_DUE ones
 * whose next renewal is due and that have no open renewal invoice; and any whose open renewal invoice was voided
 * (expired unpaid). Three simple queries (each served by its own partial index) rather than one with ORs, which
 * the planner cannot serve by index; up to `limit` of each. The caller re-reads the renewal under the lock.
 */
export async function subscriptionsDueForUpdate(
  trx: Transaction<Database>,
  now: Date,
  limit: number,
  shopId?: string,
): Promise<SubscriptionRow[]> {
  // unscopedByDesign: the renewal job serves every shop (or one, `shopId`: a shop whose clock runs ahead); each row
  // names its shop, and the subqueries join on it.
  let paused = trx.selectFrom('subscriptions').selectAll();
  if (shopId !== undefined) paused = paused.where('shop_id', '=', shopId);
  const resuming = await paused
    .where('status', '=', 'PAUSED')
    .where('resume_at', '<=', now)
    .orderBy('resume_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  let active = trx.selectFrom('subscriptions as s').selectAll('s');
  if (shopId !== undefined) active = active.where('s.shop_id', '=', shopId);
  const renewing = await active
    .where('s.status', 'in', ['ACTIVE', 'PAST_DUE'])
    .where('s.next_renewal_at', '<=', now)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('subscription_renewals as r')
            .select(sql`1`.as('one'))
            .whereRef('r.shop_id', '=', 's.shop_id')
            .whereRef('r.subscription_id', '=', 's.id')
            .where('r.status', '=', 'OPEN'),
        ),
      ),
    )
    .orderBy('s.next_renewal_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  const expired = await trx
    .selectFrom('subscriptions as s')
    .selectAll('s')
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('subscription_renewals as r')
          .innerJoin('orders as o', (j) => j.onRef('o.shop_id', '=', 'r.shop_id').onRef('o.id', '=', 'r.order_id'))
          .select(sql`1`.as('one'))
          .whereRef('r.shop_id', '=', 's.shop_id')
          .whereRef('r.subscription_id', '=', 's.id')
          .where('r.status', '=', 'OPEN')
          .where('o.status', '=', 'VOIDED'),
      ),
    )
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  const byId = new Map<string, SubscriptionRow>();
  for (const row of [...resuming, ...expired, ...renewing]) if (!byId.has(row.id)) byId.set(row.id, row);
  return [...byId.values()];
}

/** What a fixture subscription needs of its product (its price, currency and billing interval). */
export async function productForSubscriptionFixture(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
): Promise<Pick<ProductRow, 'price' | 'currency' | 'billing_interval' | 'billing_interval_count'>> {
  return inShop(trx, shopId)
    .selectFrom('products')
    .select(['price', 'currency', 'billing_interval', 'billing_interval_count'])
    .where('id', '=', productId)
    .executeTakeFirstOrThrow();
}
