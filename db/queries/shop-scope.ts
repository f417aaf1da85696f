// Tenancy in one place: every query of a shop-owned table starts here, so its `shop_id` condition (or, for an
// insert, its `shop_id` value) cannot be forgotten. test/platform/tenancy.test.ts fails when a query module reaches a
// shop-owned table any other way, and the composite foreign keys (shop_id, x_id) -> (shop_id, id) make the database
// itself refuse a row that points into another shop.
import {
  sql,
  type DeleteQueryBuilder,
  type DeleteResult,
  type Insertable,
  type InsertQueryBuilder,
  type InsertResult,
  type Kysely,
  type Selectable,
  type SelectQueryBuilder,
  type Transaction,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import type { Database } from '../tables';

/**
 * What a read may use: the query builder without its writing methods. Read operations get this type, so a write
 * from a read does not compile; src/platform/read-only.ts also refuses one at run time.
 */
export type ReadDb = Omit<
  Kysely<Database>,
  | 'insertInto'
  | 'replaceInto'
  | 'updateTable'
  | 'deleteFrom'
  | 'mergeInto'
  | 'transaction'
  | 'startTransaction'
  | 'connection'
  | 'schema'
  | 'destroy'
>;

/** The tables whose rows belong to a shop (they have a `shop_id` column). */
export type ShopTable = {
  [T in keyof Database]: Database[T] extends { shop_id: unknown } ? T : never;
}[keyof Database];

/** A shop-owned table, optionally with an alias: `'product_serials'` or `'product_serials as s'`. */
export type ShopTableExpression = ShopTable | `${ShopTable} as ${string}`;

type AliasOf<TE extends string> = TE extends `${string} as ${infer A}` ? A : TE;
type TableOf<TE extends string> = TE extends `${infer T} as ${string}` ? T : TE;
type Scoped<TE extends ShopTableExpression> = Database & { [A in AliasOf<TE>]: Database[TableOf<TE> & ShopTable] };

function shopColumn(from: string): ReturnType<typeof sql.ref> {
  const alias = from.includes(' as ') ? from.split(' as ')[1]!.trim() : from;
  return sql.ref(`${alias}.shop_id`);
}

/** Queries of one shop's rows. Each builder already carries `shop_id = <shop>`. */
export interface ShopScope {
  readonly shopId: string;
  selectFrom<TE extends ShopTableExpression>(from: TE): SelectQueryBuilder<Scoped<TE>, AliasOf<TE>, object>;
}

/** Writes of one shop's rows (inside a transaction only). */
export interface ShopWriteScope extends ShopScope {
  updateTable<T extends ShopTable>(table: T): UpdateQueryBuilder<Database, T, T, UpdateResult>;
  deleteFrom<T extends ShopTable>(table: T): DeleteQueryBuilder<Database, T, DeleteResult>;
  /** Inserts rows of this shop: `shop_id` is set here, whatever the rows say. */
  insertInto<T extends ShopTable>(
    table: T,
    rows: ShopRow<T> | readonly ShopRow<T>[],
  ): InsertQueryBuilder<Database, T, InsertResult>;
}

/** An insertable row of a shop-owned table, without its `shop_id` (the scope sets it). */
export type ShopRow<T extends ShopTable> = Omit<Insertable<Database[T]>, 'shop_id'>;

export function inShop(db: ReadDb, shopId: string): ShopScope {
  return {
    shopId,
    selectFrom: (from) =>
      (db.selectFrom(from as never) as SelectQueryBuilder<Database, never, object>).where(
        shopColumn(from),
        '=',
        shopId,
      ) as never,
  };
}

export function inShopForWrite(trx: Transaction<Database>, shopId: string): ShopWriteScope {
  return {
    ...inShop(trx, shopId),
    updateTable: (table) =>
      (trx.updateTable(table as ShopTable) as UpdateQueryBuilder<Database, ShopTable, ShopTable, UpdateResult>).where(
        shopColumn(table),
        '=',
        shopId,
      ) as never,
    deleteFrom: (table) =>
      (trx.deleteFrom(table as ShopTable) as DeleteQueryBuilder<Database, ShopTable, DeleteResult>).where(
        shopColumn(table),
        '=',
        shopId,
      ) as never,
    insertInto: (table, rows) => {
      const list = (Array.isArray(rows) ? rows : [rows]) as ShopRow<typeof table>[];
      return trx.insertInto(table).values(list.map((r) => ({ ...r, shop_id: shopId })) as never);
    },
  };
}

/** The tables holding one row per shop, inserted by the shop's first write of it (absent until then). */
export type ShopSingletonTable = 'store_settings' | 'reseller_programs';

/**
 * The shop's row of `table`, inserted with `fresh` (the defaults) when it has none yet, locked until the transaction
 * ends: two writers of it run one after the other. No conflict target: every unique index is an arbiter. The row's
 * id is derived from the shop's, so a racing first write can collide on the primary key before the shop_id index,
 * and a conflict outside the arbiters would abort it.
 */
export async function shopSingletonForUpdate<T extends ShopSingletonTable>(
  trx: Transaction<Database>,
  shopId: string,
  table: T,
  fresh: ShopRow<T>,
): Promise<Selectable<Database[T]>> {
  await inShopForWrite(trx, shopId)
    .insertInto(table, fresh)
    .onConflict((oc) => oc.doNothing())
    .execute();
  const row = await inShop(trx, shopId)
    .selectFrom(table as ShopSingletonTable)
    .selectAll()
    .forUpdate()
    .executeTakeFirstOrThrow();
  return row as Selectable<Database[T]>;
}
