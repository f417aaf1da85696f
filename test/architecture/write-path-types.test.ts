// The write path's guarantees that the compiler enforces (checked by `npm run typecheck`: an @ts-expect-error that
// stops being an error fails it), and the run-time guard behind them.
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from '../../db/tables';
import type { ReadDb } from '../../db/queries/shop-scope';
import { ReadOnlyPlugin } from '../../db/read-only';
import { claimSerials } from '../../src/domain/catalog/serials';
import { duplicateProduct } from '../../src/domain/catalog/products';
import type { OperationHandler } from '../../src/http/handler';
import type { ShopWrite } from '../../src/platform/unit-of-work';

// Never called: these lines only have to (not) compile.
export function compileChecks(read: ReadDb, w: ShopWrite) {
  // @ts-expect-error a read has no insertInto
  void read.insertInto;
  // @ts-expect-error a read has no updateTable
  void read.updateTable;
  // @ts-expect-error a read cannot open a transaction of its own
  void read.transaction;
  // @ts-expect-error functions that lock rows need the unit of work's Transaction
  void claimSerials({ ...w, trx: read }, 'prod', 1);
  // @ts-expect-error copying a product must commit with its variants: Transaction only
  void duplicateProduct({ ...w, trx: read }, 'prod');
  // @ts-expect-error a write function takes the write (transaction, shop, effects, clock), not a bare transaction
  void claimSerials(w.trx, 'prod', 1);
  void claimSerials(w, 'prod', 1);
  const aRead: OperationHandler<'listCustomers'> = async ({ db }) => {
    // @ts-expect-error a read operation's db is a ReadDb
    void db.deleteFrom;
    return { data: null };
  };
  const aWrite: OperationHandler<'duplicateProduct'> = async ({ write, effects }) => {
    effects.emit('product:created', {}); // writes have effects to record
    return { data: await duplicateProduct(write, 'prod') };
  };
  return [aRead, aWrite];
}

test('the read-only plugin refuses inserts, updates, deletes and writing CTEs before anything is sent', () => {
  // A dialect whose pool is never used: compiling and transforming a query does not connect.
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: {} as never }),
    plugins: [new ReadOnlyPlugin()],
  });
  expect(() => db.insertInto('shops').values({ id: 'x', name: 'x', plan: 'free', currency: 'USD' }).compile()).toThrow(
    'a read operation attempted a write (InsertQueryNode)',
  );
  expect(() => db.updateTable('shops').set({ name: 'y' }).compile()).toThrow('UpdateQueryNode');
  expect(() => db.deleteFrom('shops').compile()).toThrow('DeleteQueryNode');
  expect(() =>
    db
      .with('gone', (q) => q.deleteFrom('shops').returning('id'))
      .selectFrom('gone')
      .selectAll()
      .compile(),
  ).toThrow('a read operation attempted a write');
  expect(db.selectFrom('shops').selectAll().compile().sql).toBe('select * from "shops"');
});
