// The two queries every shop-owned resource has, written once: a keyset page of the shop's rows and one row by id.
// A resource module names its table (`export const productsPage = pageOf('products')`) instead of writing them out.
import type { Selectable } from 'kysely';
import type { Database } from '../tables';
import { applyKeyset, type Keyset } from './keyset';
import { inShop, type ReadDb, type ShopTable } from './shop-scope';

export type PageRow<T extends ShopTable> = Selectable<Database[T]> & { cursor_value: string };

/** `limit + 1` rows of the shop's table in the keyset's order, matching its filters (see keyset.ts). */
export function pageOf<T extends ShopTable>(table: T) {
  return (db: ReadDb, shopId: string, keyset: Keyset): Promise<PageRow<T>[]> =>
    applyKeyset(
      inShop(db, shopId)
        .selectFrom(table as ShopTable)
        .selectAll(),
      keyset,
    ).execute() as Promise<PageRow<T>[]>;
}

/** The shop's row with this id, or undefined (another shop's row is not found, like a missing one). */
export function byIdOf<T extends ShopTable>(table: T) {
  return (db: ReadDb, shopId: string, id: string): Promise<Selectable<Database[T]> | undefined> =>
    inShop(db, shopId)
      .selectFrom(table as ShopTable)
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst() as Promise<Selectable<Database[T]> | undefined>;
}
