// Orders (invoices) and their line items.
import { sql, type Transaction } from 'kysely';
import type { Database, ItemDeliveryStatus, OrderItemRow, OrderRow, ProductRow, ProductsTable } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';
import { addRowValues, definedColumns, prepareByShape, rowPlaceholders } from './prepared';

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
  if (items.length === 0) return { order: await insertOrder(trx, shopId, order), items: [] };
  const values = addRowValues({ $shop: shopId }, order, 'o.');
  items.forEach((item, n) => addRowValues(values, item, `i${n}.`));
  const shape = { order: definedColumns(order), items: items.map(definedColumns) };
  const [row] = await orderWithItemsInsert(trx, shape, values);
  const { items_json, ...inserted } = row!;
  return { order: inserted, items: items_json.map(itemFromJson) };
}

// Run by every order, so compiled once per shape: the columns the order and each of its items have.
const orderWithItemsInsert = prepareByShape((db, p, shape: { order: string[]; items: string[][] }) => {
  const scope = inShopForWrite(db as Transaction<Database>, p('$shop'));
  const order = rowPlaceholders<ShopRow<'orders'>>(p, shape.order, 'o.');
  const items = shape.items.map((columns, n) => rowPlaceholders<ShopRow<'order_items'>>(p, columns, `i${n}.`));
  return sql<OrderRow & { items_json: ItemJson[] }>`
    with o as (${scope.insertInto('orders', order).returningAll()}),
      i as (${scope.insertInto('order_items', items).returningAll()})
    select o.*, ${itemsJson} as items_json from o`;
});

/** An item as `itemsJson` gives it: its amounts as exact decimal text, its timestamps as JSON text. */
type ItemJson = OrderItemRow & { delivered_at: string | null; created_at: string };

/** The items of a statement's `i` entry as one JSON array in line order, amounts as their exact decimal text. */
const itemsJson = sql`(select json_agg(to_jsonb(i) || jsonb_build_object('unit_price', i.unit_price::text,
    'quantity_discount', i.quantity_discount::text, 'total', i.total::text) order by i.position) from i)`;

/** What JSON changed, restored: timestamps as dates (amounts came as decimal text, as the driver gives them). */
function itemFromJson(i: ItemJson): OrderItemRow {
  return {
    ...i,
    created_at: new Date(i.created_at),
    delivered_at: i.delivered_at === null ? null : new Date(i.delivered_at),
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

/**
 * The order locked as orderByIdForUpdate does, with its shop's name (what the completion's mail needs), in one round
 * trip.
 */
export async function orderWithShopNameForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<(OrderRow & { shop_name: string }) | undefined> {
  return (await orderWithShopName(trx, null, { $shop: shopId, $id: id }))[0];
}

// Taken by every completion, so compiled once.
const orderWithShopName = prepareByShape((db, p) =>
  inShop(db, p('$shop'))
    .selectFrom('orders')
    .innerJoin('shops', 'shops.id', 'orders.shop_id')
    .selectAll('orders')
    .select('shops.name as shop_name')
    .where('orders.id', '=', p('$id'))
    .forUpdate('orders'),
);

/** Every column of a product, in the order of db/tables.ts (a column missing here is a compile error below). */
const productColumns = [
  'id',
  'shop_id',
  'uniqid',
  'slug',
  'type',
  'subtype',
  'title',
  'currency',
  'description',
  'price',
  'price_display',
  'description_tabs',
  'gateways',
  'custom_fields',
  'delivery_instructions',
  'quantity_min',
  'quantity_max',
  'quantity_warning',
  'stock',
  'stock_delimiter',
  'unlisted',
  'private',
  'on_hold',
  'block_vpn_proxies',
  'watermark_enabled',
  'sort_priority',
  'crypto_confirmations',
  'max_risk_level',
  'delivery_text',
  'service_text',
  'delivery_time',
  'dynamic_webhook',
  'image_id',
  'image_url',
  'billing_interval',
  'billing_interval_count',
  'license_activation_limit',
  'license_duration_days',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof ProductsTable)[];
const everyProductColumn: Exclude<keyof ProductsTable, (typeof productColumns)[number]> extends never ? true : never =
  true;
void everyProductColumn;

/** A line of an order being completed: the line, its product (unless deleted), the serials it reserved. */
export interface CompletionLine {
  item: OrderItemRow;
  product: ProductRow | undefined;
  /** The serials the line had reserved at creation, claimed now, oldest first (ties by id). */
  claimedSerials: string[];
}

/**
 * Completing an order's lines, first step, in one round trip: the lines in line order, each with its product and
 * with the serials it reserved at creation, claimed (`claimed`, `claimed_at = now`). Call it under the order's row
 * lock. The products are held FOR KEY SHARE: they cannot be deleted before the licenses and subscriptions that
 * will name them are written, while their stock can still change (a share lock on the product row, not the row
 * lock of an order's creation).
 */
export async function claimCompletionLines(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
  now: Date,
): Promise<CompletionLine[]> {
  const rows = await completionLines(trx, null, { $shop: shopId, $order: orderId, $now: now });
  return rows.map((row) => {
    const item: Record<string, unknown> = {};
    const productRow: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(row)) {
      if (key.startsWith('product__')) productRow[key.slice('product__'.length)] = value;
      else if (key !== 'claimed_serials') item[key] = value;
    }
    const found = productRow.found === true;
    delete productRow.found;
    return {
      item: item as unknown as OrderItemRow,
      product: found ? (productRow as unknown as ProductRow) : undefined,
      claimedSerials: row.claimed_serials ?? [],
    };
  });
}

// Run by every completion, so compiled once.
//
// The lines are found by the order's id and the serials by their line's, never by the shop: the shop is checked
// with `(shop_id = …) is true`, which no index can serve. PostgreSQL plans these statements for the values given
// (its first five runs on a connection, and every run of an unnamed statement), and a shop newer than the table's
// statistics looks empty: with the shop as an index condition it took the shop's serials as the outer side and
// scanned the shop's every line for each of them, millions of rows per completion (the Stripe webhook bench's first
// completions took 2-4 s each and timed out). The foreign keys (shop_id, order_id) and (shop_id, order_item_id)
// keep every line and serial reached this way in the order's shop.
const completionLines = prepareByShape((db, p) => {
  const product = sql.join(productColumns.map((c) => sql`p.${sql.ref(c)} as ${sql.ref(`product__${c}`)}`));
  return sql<OrderItemRow & { claimed_serials: string[] | null } & Record<string, unknown>>`
    with claimed as (
      update product_serials set status = 'claimed', claimed_at = ${p('$now')}
      where (shop_id = ${p('$shop')}) is true and status = 'reserved'
        and order_item_id in (
          select id from order_items where order_id = ${p('$order')} and (shop_id = ${p('$shop')}) is true
        )
      returning order_item_id, serial, created_at, id
    )
    select i.*, p.id is not null as product__found, ${product},
      (select array_agg(c.serial order by date_trunc('milliseconds', c.created_at), c.id collate "C")
        from claimed c where c.order_item_id = i.id) as claimed_serials
    from order_items i
    left join lateral (
      select * from products where products.shop_id = i.shop_id and products.id = i.product_id for key share
    ) p on true
    where i.order_id = ${p('$order')} and (i.shop_id = ${p('$shop')}) is true
    order by i.position`;
});

/** How a completed line is delivered (its columns set by completeOrderAndLines). */
export interface LineDelivery {
  id: string;
  delivery_status: ItemDeliveryStatus;
  delivered_at: Date | null;
  delivered_items: Record<string, unknown> | null;
}

/**
 * Completing an order, last step, in one round trip: every line's delivery (its stock reservation released), the
 * order's own columns (`set`) and, when given, the payment attempt that paid it. Returns the order and the lines as
 * they now are, the lines in the order given. test/orders/order-insert.test.ts compares them with the rows read back.
 */
export async function completeOrderAndLines(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
  lines: readonly LineDelivery[],
  payment: ShopRow<'payment_attempts'> | undefined,
  set: Partial<Omit<ShopRow<'orders'>, 'id'>>,
): Promise<{ order: OrderRow; items: OrderItemRow[] }> {
  const values = addRowValues({ $shop: shopId, $order: orderId, $lines: JSON.stringify(lines) }, set, 'set.');
  if (payment) addRowValues(values, payment, 'pay.');
  const shape = { payment: payment ? definedColumns(payment) : null, set: definedColumns(set) };
  const rows = await completedOrder(trx, shape, values);
  if (!rows[0]) throw new Error(`order ${orderId} of shop ${shopId} was not updated`);
  const { items_json, ...order } = rows[0];
  const byId = new Map((items_json ?? []).map((r) => [r.id, itemFromJson(r)]));
  const items = lines.map((l) => {
    const row = byId.get(l.id);
    if (!row) throw new Error(`order item ${l.id} of shop ${shopId} was not updated`);
    return row;
  });
  return { order, items };
}

// Run by every completion, so compiled once per shape: the payment's columns (or none) and the order's changes.
const completedOrder = prepareByShape((db, p, shape: { payment: string[] | null; set: string[] }) => {
  const scope = inShopForWrite(db as Transaction<Database>, p('$shop'));
  const pay = shape.payment
    ? sql`paid as (${scope.insertInto('payment_attempts', rowPlaceholders<ShopRow<'payment_attempts'>>(p, shape.payment, 'pay.'))}), `
    : sql``;
  const set = rowPlaceholders<Partial<Omit<ShopRow<'orders'>, 'id'>>>(p, shape.set, 'set.');
  return sql<OrderRow & { items_json: ItemJson[] | null }>`
    with ${pay}i as (update order_items i set delivery_status = v.delivery_status, delivered_at = v.delivered_at,
        delivered_items = v.delivered_items, reserved_stock = 0
      from jsonb_to_recordset(${p('$lines')}::jsonb)
        as v(id text, delivery_status text, delivered_at timestamptz, delivered_items jsonb)
      where i.shop_id = ${p('$shop')} and i.id = v.id
      returning i.*),
    o as (${scope.updateTable('orders').set(set).where('id', '=', p('$order')).returningAll()})
    select o.*, ${itemsJson} as items_json from o`;
});

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
