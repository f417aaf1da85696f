// An order line's product and variant are checked at commit (db/migrations/0032), so that a rush on one product
// does not have every order hold its row FOR KEY SHARE (issue 39). The checks must still refuse what they always
// refused: a line naming another shop's product or variant, or one deleted before the order commits. On both
// databases; the deletion racing an open order needs a second connection (real PostgreSQL).
import { sql, type Transaction } from 'kysely';
import { insertOrderWithItems } from '../../db/queries/orders';
import type { Database } from '../../db/tables';
import { databaseErrorAnswer } from '../../src/http/database-errors';
import { newId, newUniqid } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-29T12:00:00.000Z'));
let t: TestApp;
let shopA: string;
let shopB: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  shopA = await t.createShop();
  shopB = await t.createShop();
});
afterAll(() => t.close());

/** Writes an order of `shopId` with one line naming `productId` (and `variantId`), as POST /orders does. */
function writeOrder(trx: Transaction<Database>, shopId: string, productId: string, variantId: string | null = null) {
  const orderId = newId('ord');
  const now = clock.now();
  return insertOrderWithItems(
    trx,
    shopId,
    {
      id: orderId,
      uniqid: newUniqid(),
      kind: 'ORDER',
      customer_email: 'line@example.com',
      currency: 'USD',
      status: 'PENDING',
      status_details: 'Awaiting payment',
      payment_status: 'PENDING',
      flow_type: 'DEVELOPER',
      subtotal: '5.00',
      total: '5.00',
      is_developer_invoice: true,
      created_at: now,
      updated_at: now,
    },
    [
      {
        id: newId('item'),
        order_id: orderId,
        position: 0,
        product_id: productId,
        variant_id: variantId,
        product_title: 'P',
        product_type: 'SERVICE',
        quantity: 1,
        unit_price: '5.00',
        total: '5.00',
        created_at: now,
      },
    ],
  );
}

/** Runs `write` in a transaction that commits; returns the error its commit (or a statement) failed with. */
async function committed(write: (trx: Transaction<Database>) => Promise<unknown>): Promise<unknown> {
  try {
    await t.db.transaction().execute(write);
  } catch (err) {
    return err;
  }
  return undefined;
}

const ordersOf = async (shopId: string) =>
  Number(
    (await sql<{ n: string }>`select count(*) as n from orders where shop_id = ${shopId}`.execute(t.db)).rows[0]!.n,
  );
const itemsOf = async (shopId: string) =>
  Number(
    (await sql<{ n: string }>`select count(*) as n from order_items where shop_id = ${shopId}`.execute(t.db)).rows[0]!
      .n,
  );

test('a line naming another shop’s product or variant is refused at commit, and nothing of the order is kept', async () => {
  const seededA = await t.seed(shopA, {
    products: [{ title: 'A', type: 'SERVICE', price: '5.00', variants: [{ title: 'A1', price: '5.00' }] }],
  });
  const [productB] = (await t.seed(shopB, { products: [{ title: 'B', type: 'SERVICE', price: '5.00' }] })).products;
  const before = { orders: await ordersOf(shopB), items: await itemsOf(shopB) };

  // The same line naming its own shop's product commits: the refusals below are about the shop, nothing else.
  expect(await committed((trx) => writeOrder(trx, shopB, productB!))).toBeUndefined();
  expect(await ordersOf(shopB)).toBe(before.orders + 1);

  const product = await committed((trx) => writeOrder(trx, shopB, seededA.products[0]!));
  expect(product).toMatchObject({ code: '23503', constraint: 'order_items_product_fkey' });
  const variant = await committed((trx) => writeOrder(trx, shopB, productB!, seededA.variants[0]!));
  expect(variant).toMatchObject({ code: '23503', constraint: 'order_items_variant_fkey' });
  // Neither order nor its line was kept.
  expect(await ordersOf(shopB)).toBe(before.orders + 1);
  expect(await itemsOf(shopB)).toBe(before.items + 1);

  // What the API answers for it: the reference that does not exist, on the order's items.
  const answer = databaseErrorAnswer(product);
  expect(answer).toMatchObject({ status: 422, code: 'VALIDATION_ERROR' });
  expect(answer?.details).toEqual([{ field: 'items', message: 'does not exist in this shop' }]);
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

pgOnly(
  'a product deleted while an order of it is written: the deletion does not wait, and the order is refused at its commit',
  async () => {
    const [product] = (await t.seed(shopA, { products: [{ title: 'Going', type: 'SERVICE', price: '5.00' }] }))
      .products;
    const before = await ordersOf(shopA);
    const refused = await committed(async (trx) => {
      await writeOrder(trx, shopA, product!);
      // Another connection deletes the product while this order is open. Were the line's product checked at its
      // insert, the order would hold the product's row and this deletion would wait for it (and time out here).
      await t.db.transaction().execute(async (other) => {
        await sql`set local lock_timeout = '5s'`.execute(other);
        await sql`delete from products where shop_id = ${shopA} and id = ${product!}`.execute(other);
      });
    });
    expect(refused).toMatchObject({ code: '23503', constraint: 'order_items_product_fkey' });
    expect(await ordersOf(shopA)).toBe(before);
    const left = await sql`select id from products where shop_id = ${shopA} and id = ${product!}`.execute(t.db);
    expect(left.rows).toEqual([]);
  },
);
