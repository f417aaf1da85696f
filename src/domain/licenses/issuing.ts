// License keys and orders. A license product is a product with `license_activation_limit` set (fixtures, the CLI's
// seed): completing an order issues one key per unit of each of its line items (`license:created` each), the keys
// are shown in the order's and the item's `license_keys`, and refunding the order in full revokes them
// (`license:revoked` each). A partial refund leaves them as they are (the merchant revokes by hand, PATCH
// /licenses/{id}, if it means to).
//
// Hooks: src/domain/orders/completion.ts calls withLicenses() on each delivered item and withLicenseKeys() on the
// completed order's view; src/domain/orders/lists.ts calls withLicenseKeys() on a page; src/domain/orders/refunds.ts calls
// revokeOrderLicenses() on a full refund.
//
// withLicenseKeys() is the only way a key reaches an order view, and it adds keys only for a reader that may read
// licenses: `orders.read` alone must not be a side door around `licenses.read` (GET /licenses would refuse it).
import * as licenses from '../../../db/queries/licenses';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { ItemDeliveryStatus, LicenseRow, OrderItemRow, OrderRow, ProductRow } from '../../../db/tables';
import { hasScope } from '../../auth/scopes';
import { loadLicenseKeyring } from '../../platform/license-keys';
import type { ShopWrite } from '../../platform/unit-of-work';
import { licenseKeyRef, licenseView, type LicenseKeyRefView } from '../../views/license';
import { licenseRow, licenseViews } from './licenses';

/** What the completion pipeline made of a line item (its `Delivered`). */
interface DeliveredLike {
  status: ItemDeliveryStatus;
  items: Record<string, unknown> | null;
  mailContent: string[];
}

export function isLicenseProduct(
  product: ProductRow | undefined,
): product is ProductRow & { license_activation_limit: number } {
  return product !== undefined && product.license_activation_limit !== null;
}

const DAY_MS = 86_400_000;

/**
 * Issues the keys of one completed line item of a license product: one per unit, each for that product, the
 * order's customer, the product's activation limit, expiring `license_duration_days` after `now` (or never).
 * What the item's type delivered stays; a SERVICE item, which had nothing else to deliver, is DELIVERED by its
 * keys. The keys go into the delivery mail; `delivered_items.license_ids` names the licenses. Any other item is
 * returned unchanged.
 */
export async function withLicenses<D extends DeliveredLike>(
  w: ShopWrite,
  order: OrderRow,
  item: OrderItemRow,
  product: ProductRow | undefined,
  delivered: D,
): Promise<D> {
  if (!isLicenseProduct(product) || item.license_count > 0) return delivered;
  const { trx, shopId, effects, now } = w;
  const keyring = await loadLicenseKeyring(trx);
  const fields = {
    product_id: product.id,
    order_id: order.id,
    order_item_id: item.id,
    customer_id: order.customer_id,
    customer_email: order.customer_email,
    status: 'ACTIVE' as const,
    activation_limit: product.license_activation_limit,
    expires_at:
      product.license_duration_days === null ? null : new Date(now.getTime() + product.license_duration_days * DAY_MS),
    note: null,
    last_validated_at: null,
    created_at: now,
    updated_at: now,
  };
  const issued: { row: LicenseRow; key: string }[] = [];
  // 125 random bits per key: a collision with one of the shop's keys is as good as impossible, but it would only
  // skip that row, so a few rounds make up for it.
  for (let round = 0; issued.length < item.quantity; round++) {
    if (round >= 5) throw new Error(`could not issue ${item.quantity} unique license keys for item ${item.id}`);
    const fresh = Array.from({ length: item.quantity - issued.length }, () => licenseRow(keyring, shopId, fields));
    const written = await licenses.insertLicensesUnlessTaken(
      trx,
      shopId,
      fresh.map((f) => f.row),
    );
    const keys = new Map(fresh.map((f) => [f.row.id, f.key]));
    for (const row of written) issued.push({ row, key: keys.get(row.id)! });
  }
  await licenses.setItemLicenseCount(trx, shopId, item.id, issued.length);
  for (const { row, key } of issued) effects.emit('license:created', licenseView(row, key, [], now));
  const keys = issued.map((i) => i.key);
  return {
    ...delivered,
    status:
      item.product_type === 'SERVICE' && delivered.status === 'AWAITING_FULFILLMENT' ? 'DELIVERED' : delivered.status,
    items: { ...(delivered.items ?? {}), license_ids: issued.map((i) => i.row.id) },
    mailContent: [...keys.map((k) => `License key: ${k}`), ...delivered.mailContent],
  };
}

/** The scope a reader needs to see an order's `license_keys`: the one that reads the licenses themselves. */
export const licenseKeysScope = 'licenses.read';

/**
 * Whether a reader with these scopes sees the keys on order views. Decided once per response, never per row; a
 * reader that does not still finds the license ids in the items' `delivered_items.license_ids`.
 */
export function seesLicenseKeys(readerScopes: readonly string[]): boolean {
  return hasScope(readerScopes, [licenseKeysScope]);
}

interface ViewWithItems {
  id: string;
  items: { id: string }[];
}

type WithKeys<V extends ViewWithItems> = V & {
  license_keys?: LicenseKeyRefView[];
  items: (V['items'][number] & { license_keys?: LicenseKeyRefView[] })[];
};

/**
 * Adds `license_keys` to the orders (and their items) that have licenses, as they are at `now` (a refunded order's
 * are REVOKED; `now` decides which are EXPIRED), for a reader with these scopes that may read licenses
 * (seesLicenseKeys); for any other the views are returned as they are, with no query. Knows from the items'
 * `license_count` which orders have any, so a page without one costs no query either.
 */
export async function withLicenseKeys<V extends ViewWithItems>(
  db: ReadDb,
  shopId: string,
  entries: { view: V; items: Pick<OrderItemRow, 'id' | 'license_count'>[] }[],
  readerScopes: readonly string[],
  now: Date,
): Promise<WithKeys<V>[]> {
  if (!seesLicenseKeys(readerScopes)) return entries.map((e) => e.view);
  const orderIds = entries.filter((e) => e.items.some((i) => i.license_count > 0)).map((e) => e.view.id);
  if (orderIds.length === 0) return entries.map((e) => e.view);
  const rows = await licenses.licensesOfOrders(db, shopId, orderIds);
  const keyring = await loadLicenseKeyring(db as never);
  const byOrder = new Map<string, { itemId: string | null; ref: LicenseKeyRefView }[]>();
  for (const row of rows) {
    const ref = licenseKeyRef(row, keyring.open(row.key_sealed, shopId, row.id), now);
    const list = byOrder.get(row.order_id!) ?? [];
    list.push({ itemId: row.order_item_id, ref });
    byOrder.set(row.order_id!, list);
  }
  return entries.map(({ view }) => {
    const refs = byOrder.get(view.id);
    if (!refs) return view;
    return {
      ...view,
      license_keys: refs.map((r) => r.ref),
      items: view.items.map((item) => {
        const own = refs.filter((r) => r.itemId === item.id).map((r) => r.ref);
        return own.length > 0 ? { ...item, license_keys: own } : item;
      }),
    };
  });
}

/** A full refund: the order's ACTIVE licenses are revoked, `license:revoked` each. */
export async function revokeOrderLicenses(w: ShopWrite, orderId: string): Promise<void> {
  const { trx, shopId, effects, now } = w;
  const revoked = await licenses.revokeActiveLicensesOfOrder(trx, shopId, orderId, now);
  if (revoked.length === 0) return;
  const keyring = await loadLicenseKeyring(trx);
  const views = await licenseViews(trx, shopId, revoked, {
    clock: { now: () => now },
    keyring: () => Promise.resolve(keyring),
  });
  for (const view of views) effects.emit('license:revoked', view);
}
