// insertOrderWithItems writes an order and its items in one statement, and completeOrderAndLines completes them in
// one, each returning the items through JSON: what they return must be exactly what reading the rows back gives
// (amounts as their decimal text, dates, JSON columns), on both databases, for an item with every optional column
// set and one with none.
import { sql } from 'kysely';
import { completeOrderAndLines, insertOrderWithItems } from '../../db/queries/orders';
import { newId, newUniqid } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-26T12:00:00.123Z'));
let t: TestApp;
let shop: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  shop = await t.createShop();
});
afterAll(() => t.close());

test('the items returned are the items stored, to the last digit', async () => {
  const [product] = (await t.seed(shop, { products: [{ title: 'P', type: 'SERVICE', price: '12.34' }] })).products;
  const now = clock.now();
  const orderId = newId('ord');
  const written = await t.db.transaction().execute((trx) =>
    insertOrderWithItems(
      trx,
      shop,
      {
        id: orderId,
        uniqid: newUniqid(),
        kind: 'ORDER',
        customer_email: 'json@example.com',
        currency: 'USD',
        status: 'PENDING',
        status_details: 'Awaiting payment',
        payment_status: 'PENDING',
        flow_type: 'DEVELOPER',
        subtotal: '123456789012.12345678',
        total: '123456789012.12345678',
        is_developer_invoice: true,
        created_at: now,
        updated_at: now,
      },
      [
        {
          id: newId('item'),
          order_id: orderId,
          position: 0,
          product_id: product!,
          product_title: 'P — "quoted" ✓',
          product_type: 'SERVICE',
          quantity: 3,
          unit_price: '41152263004.04115226',
          quantity_discount: '0.10000000',
          total: '123456789012.12345678',
          variant_options: JSON.stringify([{ field_id: 'vfd_x', name: 'Size', value: 'L' }]),
          addons: JSON.stringify([{ id: 'add_x', title: 'Gift', price: '1.50' }]),
          custom_fields: JSON.stringify({ note: 'a\nb' }),
          delivery_instructions: 'Leave at the door',
          delivery_instructions_label: 'Where?',
          reserved_stock: 3,
          created_at: now,
        },
        {
          id: newId('item'),
          order_id: orderId,
          position: 1,
          product_id: null,
          product_title: 'Gone',
          product_type: 'SERVICE',
          quantity: 1,
          unit_price: '0',
          total: '0',
          custom_fields: null,
          created_at: now,
        },
      ],
    ),
  );
  const stored = await sql`select * from order_items where shop_id = ${shop} and order_id = ${orderId}
    order by position`.execute(t.db);
  expect(written.items).toEqual(stored.rows);
  expect(written.items[0]!.unit_price).toBe('41152263004.04115226');
  const order = await sql`select * from orders where id = ${orderId}`.execute(t.db);
  expect(written.order).toEqual(order.rows[0]);

  // Completed in one statement: the lines in the order given, the order's columns, the payment attempt.
  const [first, second] = written.items;
  const deliveredAt = new Date('2026-11-26T12:00:01.456Z');
  const paymentId = newId('pay');
  const completed = await t.db.transaction().execute((trx) =>
    completeOrderAndLines(
      trx,
      shop,
      orderId,
      [
        { id: second!.id, delivery_status: 'AWAITING_FULFILLMENT', delivered_at: null, delivered_items: null },
        {
          id: first!.id,
          delivery_status: 'DELIVERED',
          delivered_at: deliveredAt,
          delivered_items: { codes: ['A-1', 'ü "2"'] },
        },
      ],
      {
        id: paymentId,
        order_id: orderId,
        gateway: 'MANUAL',
        session_id: null,
        status: 'PAID',
        amount: '123456789012.12345678',
        created_at: deliveredAt,
        paid_at: deliveredAt,
      },
      { status: 'COMPLETED', payment_status: 'PAID', completed_at: deliveredAt, updated_at: deliveredAt },
    ),
  );
  const storedAfter = await sql<{ id: string }>`select * from order_items where shop_id = ${shop}
    and order_id = ${orderId} order by position`.execute(t.db);
  expect(completed.items).toEqual([storedAfter.rows[1], storedAfter.rows[0]]);
  expect(completed.items[1]).toMatchObject({ delivered_at: deliveredAt, reserved_stock: 0 });
  const orderAfter = await sql`select * from orders where id = ${orderId}`.execute(t.db);
  expect(completed.order).toEqual(orderAfter.rows[0]);
  expect(completed.order).toMatchObject({ status: 'COMPLETED', completed_at: deliveredAt });
  const paid =
    await sql`select status, amount from payment_attempts where shop_id = ${shop} and id = ${paymentId}`.execute(t.db);
  expect(paid.rows).toEqual([{ status: 'PAID', amount: '123456789012.12345678' }]);
});
