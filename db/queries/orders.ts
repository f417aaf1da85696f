// Orders (invoices) and their line items.
import { sql, type Transaction } from 'kysely';
import type { Database, OrderItemRow, OrderRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export async function insertOrder(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'orders'>,
): Promise<OrderRow> {
  return inShopForWrite(trx, shopId).insertInto('orders', row).returningAll().executeTakeFirstOrThrow();
}

export async function insertOrderItems(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'order_items'>[],
): Promise<OrderItemRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId).insertInto('order_items', rows).returningAll().execute();
}

/**
 * An order and its items written by one statement (the items' foreign key to the order is checked at its end),
 * both returned. The items come back as JSON, so what JSON would change is restored: amounts as their exact
 * decimal text (never a binary float), timestamps as dates. test/orders/order-insert.test.ts compares them with
 * the rows read back.
 */
export async function insertOrderWithItems(
  trx: Transaction<Database>,
  shopId: string,
  order: ShopRow<'orders'>,
  items: ShopRow<'order_items'>[],
): Promise<{ order: OrderRow; items: OrderItemRow[] }> {
  const scope = inShopForWrite(trx, shopId);
  if (items.length === 0) return { order: await insertOrder(trx, shopId, order), items: [] };
  const { rows } = await sql<
    OrderRow & { items_json: (OrderItemRow & { delivered_at: string | null; created_at: string })[] }
  >`
    with o as (${scope.insertInto('orders', order).returningAll()}),
      i as (${scope.insertInto('order_items', items).returningAll()})
    select o.*, (select json_agg(to_jsonb(i) || jsonb_build_object('unit_price', i.unit_price::text,
        'quantity_discount', i.quantity_discount::text, 'total', i.total::text) order by i.position) from i) as items_json
    from o`.execute(trx);
  const { items_json, ...inserted } = rows[0]!;
  return {
    order: inserted,
    items: items_json.map((i) => ({
      ...i,
      created_at: new Date(i.created_at),
      delivered_at: i.delivered_at === null ? null : new Date(i.delivered_at),
    })),
  };
}

export async function orderById(db: ReadDb, shopId: string, id: string): Promise<OrderRow | undefined> {
  return inShop(db, shopId).selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The order, locked until the transaction ends: whatever changes its state takes this lock first. */
export async function orderByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<OrderRow | undefined> {
  return inShop(trx, shopId).selectFrom('orders').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** An invoice by its public id, of any shop: the hosted checkout knows only the uniqid. */
export async function orderByUniqid(db: ReadDb, uniqid: string): Promise<OrderRow | undefined> {
  // unscopedByDesign: the public checkout addresses an invoice by its unguessable uniqid alone.
  return db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirst();
}

/** Items of the given orders, in line order, by order id. */
export async function itemsOfOrders(
  db: ReadDb,
  shopId: string,
  orderIds: readonly string[],
): Promise<Map<string, OrderItemRow[]>> {
  const byOrder = new Map<string, OrderItemRow[]>(orderIds.map((id) => [id, []]));
  if (orderIds.length === 0) return byOrder;
  const rows = await inShop(db, shopId)
    .selectFrom('order_items')
    .selectAll()
    .where('order_id', 'in', orderIds)
    .orderBy('order_id')
    .orderBy('position')
    .execute();
  for (const row of rows) byOrder.get(row.order_id)?.push(row);
  return byOrder;
}

export async function updateOrder(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: Partial<Omit<ShopRow<'orders'>, 'id'>>,
): Promise<OrderRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('orders')
    .set(set)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateOrderItem(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  set: Partial<Omit<ShopRow<'order_items'>, 'id'>>,
): Promise<OrderItemRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('order_items')
    .set(set)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** An attachment with its content, for the buyer's download of a delivered file. */
export async function attachmentForDownload(
  db: ReadDb,
  shopId: string,
  attachmentId: string,
): Promise<{ id: string; filename: string; content_type: string; content: Buffer } | undefined> {
  return inShop(db, shopId)
    .selectFrom('attachments')
    .select(['id', 'filename', 'content_type', 'content'])
    .where('id', '=', attachmentId)
    .executeTakeFirst();
}

/**
 * Pending orders past their expiry, locked and skipped by any other worker that holds them (FOR UPDATE SKIP LOCKED):
 * several workers void disjoint batches.
 */
export async function expiredPendingOrdersForUpdate(
  trx: Transaction<Database>,
  now: Date,
  limit: number,
  shopId?: string,
): Promise<OrderRow[]> {
  // unscopedByDesign: the expiry job works across every shop (or one, `shopId`: a shop whose clock runs ahead); each
  // row then names its shop.
  let q = trx.selectFrom('orders').selectAll();
  if (shopId !== undefined) q = q.where('shop_id', '=', shopId);
  return q
    .where('status', '=', 'PENDING')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/** The shop's payment (an invoice of kind PAYMENT, POST /payments) with this uniqid; an order's uniqid is not one. */
export async function paymentByUniqid(db: ReadDb, shopId: string, uniqid: string): Promise<OrderRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('orders')
    .selectAll()
    .where('uniqid', '=', uniqid)
    .where('kind', '=', 'PAYMENT')
    .executeTakeFirst();
}
