// The two queries every shop-owned resource has, written once: a keyset page of the shop's rows and one row by id.
// A resource module names its table (`export const productsPage = pageOf('products')`) instead of writing them out.
import { CompiledQuery, type Selectable } from 'kysely';
import type { Database } from '../tables';
import { applyKeyset, keysetParameters, keysetShape, type Keyset } from './keyset';
import { inShop, type ReadDb, type ShopTable } from './shop-scope';

type Column<T extends ShopTable> = keyof Selectable<Database[T]> & string;

export type PageRow<T extends ShopTable, C extends Column<T> = Column<T>> = Pick<Selectable<Database[T]>, C> & {
  cursor_value: string;
};

/**
 * `limit + 1` rows of the shop's table in the keyset's order, matching its filters (see keyset.ts): every column, or
 * only `columns` (what the page's view reads: a wide table's unused columns cost parsing on every request).
 */
export function pageOf<T extends ShopTable, C extends Column<T> = Column<T>>(table: T, columns?: readonly C[]) {
  // A list page runs on every list request; building it with Kysely each time costs more than the rest of the
  // query's handling. Its SQL depends only on the keyset's shape (which filters, which sort, whether there is a
  // cursor), a finite set given by the list's allow-lists, so each shape is compiled once and reused with the
  // request's values. The first compile of a shape checks that the values land where Kysely put them.
  const compiled = new Map<string, string>();
  return async (db: ReadDb, shopId: string, keyset: Keyset): Promise<PageRow<T, C>[]> => {
    const shape = keysetShape(keyset);
    const values = [shopId, ...keysetParameters(keyset)];
    let text = compiled.get(shape);
    if (text === undefined) {
      const from = inShop(db, shopId).selectFrom(table as ShopTable);
      // The row type is PageRow's either way (the cast): which columns is a list of names, not a type Kysely follows.
      const selected = (columns ? from.select(columns as never) : from.selectAll()) as ReturnType<
        typeof from.selectAll
      >;
      const query = applyKeyset(selected, keyset).compile();
      if (query.parameters.length !== values.length || query.parameters.some((p, i) => p !== values[i])) {
        throw new Error(`pageOf(${table}): the page query's parameters are not in the expected order`);
      }
      text = query.sql;
      compiled.set(shape, text);
    }
    return (await db.executeQuery<PageRow<T, C>>(CompiledQuery.raw(text, values))).rows;
  };
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
