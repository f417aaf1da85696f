// POST /orders/{id}/refund: full and partial refunds that add up exactly, in 2 and in 8 decimals; every refusal
// (over-refund, wrong status, bad amounts, another shop's order) leaves the order, its refunds, the customer and
// the events as they were; concurrent refunds of one order never refund more than its total.
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import { customerFigures } from '../../db/queries/customers';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import { refundsOfOrder } from '../../db/queries/refunds';
import type { OrderRow, OrderStatus, PaymentStatus } from '../../db/tables';
import { newId, newUniqid } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

const seededAt = new Date('2026-11-01T00:00:00Z');

beforeAll(async () => {
  clock = new ManualClock('2026-11-22T00:00:00Z');
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { name: 'A', scopes: ['orders.write'] }, b: { name: 'B' } }));
});
afterAll(() => t.close());

interface SeedOrder {
  total: string;
  currency?: string;
  status?: OrderStatus;
  paymentStatus?: PaymentStatus;
  customerId?: string;
  email?: string;
}

/** A completed (by default) order of one item, written through the query layer. */
async function seedOrder(shopId: string, o: SeedOrder): Promise<OrderRow> {
  return t.db.transaction().execute(async (trx) => {
    const order = await insertOrder(trx, shopId, {
      id: newId('ord'),
      uniqid: newUniqid(),
      kind: 'ORDER',
      customer_id: o.customerId ?? null,
      customer_email: o.email ?? 'buyer@example.com',
      currency: o.currency ?? 'USD',
      status: o.status ?? 'COMPLETED',
      payment_status: o.paymentStatus ?? (o.status === undefined || o.status === 'COMPLETED' ? 'PAID' : 'PENDING'),
      subtotal: o.total,
      total: o.total,
      is_developer_invoice: true,
      completed_at: o.status === undefined || o.status === 'COMPLETED' ? seededAt : null,
      created_at: seededAt,
      updated_at: seededAt,
    });
    await insertOrderItems(trx, shopId, [
      {
        id: newId('item'),
        order_id: order.id,
        position: 0,
        product_title: 'Pro License',
        product_type: 'SERVICE',
        quantity: 1,
        unit_price: o.total,
        total: o.total,
      },
    ]);
    return order;
  });
}

async function customer(shopId: string, email: string, totalSpent: string): Promise<string> {
  return (await t.seed(shopId, { customers: [{ email, total_spent: totalSpent }] })).customers[0]!;
}

const refund = (orderId: string, body?: object, key = keyA) => {
  const req = t.http.post(`/dev/v1/orders/${orderId}/refund`).set(bearer(key));
  return body === undefined ? req : req.send(body);
};

/** Everything a refund may change: the order row, its refunds, its refund events, the customer's spend. */
async function state(order: OrderRow, customerId?: string) {
  const row = await t.db
    .selectFrom('orders')
    .select(['status', 'payment_status', 'refunded', 'total', 'updated_at'])
    .where('id', '=', order.id)
    .executeTakeFirstOrThrow();
  const refunds = await refundsOfOrder(t.db, order.shop_id, order.id);
  const events = await sql<{ data: string }>`select data from events
    where shop_id = ${order.shop_id} and type = 'order:refunded' order by created_at, id`.execute(t.db);
  // Computed from the customer's paid orders minus what was refunded (db/queries/customers.ts).
  const spent = customerId ? (await customerFigures(t.db, order.shop_id, customerId))!.total_spent : null;
  return {
    status: row.status,
    payment_status: row.payment_status,
    refunded: new Decimal(row.refunded).toFixed(),
    updated_at: row.updated_at.toISOString(),
    refunds: refunds.map((r) => ({ id: r.id, amount: new Decimal(r.amount).toFixed(), reason: r.reason })),
    events: events.rows.map((e) => JSON.parse(e.data) as { uniqid: string }).filter((e) => e.uniqid === order.uniqid),
    spent: spent === null ? null : new Decimal(spent).toFixed(),
  };
}

test('no body refunds everything: REFUNDED, one refund row, the event, the customer spend reduced', async () => {
  // Spend is computed from paid orders: 15.00 of earlier purchases plus this order's 10.00.
  const cus = await customer(shopA, 'full@example.com', '15.00');
  const order = await seedOrder(shopA, { total: '10.00', customerId: cus, email: 'full@example.com' });
  clock.set('2026-11-22T01:00:00Z');
  const res = await refund(order.id);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ data: { message: 'Refunded 10.00 USD; the order is fully refunded.' } });
  const after = await state(order, cus);
  expect(after).toMatchObject({
    status: 'REFUNDED',
    payment_status: 'REFUNDED',
    refunded: '10',
    updated_at: '2026-11-22T01:00:00.000Z',
    spent: '15',
  });
  expect(after.refunds).toEqual([{ id: expect.stringMatching(/^rfd_[0-9a-f]{32}$/), amount: '10', reason: null }]);
  expect(after.events).toEqual([
    { uniqid: order.uniqid, amount: '10.00', currency: 'USD', reason: null, fully_refunded: true },
  ]);

  // Nothing remains: a further refund is refused, and changes nothing.
  const again = await refund(order.id, { amount: '0.01' });
  expect(again.status).toBe(400);
  expect(again.body.error.code).toBe('ORDER_NOT_REFUNDABLE');
  expect(await state(order, cus)).toEqual(after);
});

test('10.00 = 3.33 + 3.33 + 3.34: PARTIALLY_REFUNDED twice, then REFUNDED; the reason is kept', async () => {
  const order = await seedOrder(shopA, { total: '10.00' });
  const first = await refund(order.id, { amount: '3.33', reason: 'Damaged' });
  expect(first.status).toBe(200);
  expect(first.body.data.message).toBe('Refunded 3.33 USD; 6.67 USD remains refundable.');
  expect(await state(order)).toMatchObject({ status: 'PARTIALLY_REFUNDED', payment_status: 'PARTIALLY_REFUNDED' });
  const second = await refund(order.id, { amount: '3.33' });
  expect(second.body.data.message).toBe('Refunded 3.33 USD; 3.34 USD remains refundable.');
  const over = await refund(order.id, { amount: '3.35' });
  expect(over.status).toBe(400);
  expect(over.body.error.code).toBe('REFUND_EXCEEDS_REMAINING');
  const third = await refund(order.id, { amount: '3.34' });
  expect(third.status).toBe(200);
  expect(third.body.data.message).toBe('Refunded 3.34 USD; the order is fully refunded.');
  const after = await state(order);
  expect(after).toMatchObject({ status: 'REFUNDED', payment_status: 'REFUNDED', refunded: '10' });
  expect(after.refunds.map((r) => [r.amount, r.reason])).toEqual([
    ['3.33', 'Damaged'],
    ['3.33', null],
    ['3.34', null],
  ]);
  expect(after.events.map((e) => e)).toEqual([
    { uniqid: order.uniqid, amount: '3.33', currency: 'USD', reason: 'Damaged', fully_refunded: false },
    { uniqid: order.uniqid, amount: '3.33', currency: 'USD', reason: null, fully_refunded: false },
    { uniqid: order.uniqid, amount: '3.34', currency: 'USD', reason: null, fully_refunded: true },
  ]);
});

test('BTC in 8 decimals: 0.1 = 0.03333333 + 0.03333333 + 0.03333334, exactly', async () => {
  const order = await seedOrder(shopA, { total: '0.1', currency: 'BTC' });
  for (const amount of ['0.03333333', '0.03333333']) {
    expect((await refund(order.id, { amount })).status).toBe(200);
  }
  const tooMuch = await refund(order.id, { amount: '0.03333335' });
  expect(tooMuch.status).toBe(400);
  expect(tooMuch.body.error).toMatchObject({
    code: 'REFUND_EXCEEDS_REMAINING',
    message: 'The refund of 0.03333335 BTC exceeds the 0.03333334 BTC that remains refundable. Nothing was refunded.',
  });
  // No amount: the rest, to the last satoshi.
  const rest = await refund(order.id);
  expect(rest.body.data.message).toBe('Refunded 0.03333334 BTC; the order is fully refunded.');
  const after = await state(order);
  expect(after).toMatchObject({ status: 'REFUNDED', refunded: '0.1' });
  expect(after.events.map((e) => (e as unknown as { amount: string }).amount)).toEqual([
    '0.03333333',
    '0.03333333',
    '0.03333334',
  ]);
});

test('more than remains: 400 REFUND_EXCEEDS_REMAINING, and no refund row, order change, spend change or event', async () => {
  const cus = await customer(shopA, 'over@example.com', '30'); // + this order's 20 = 50
  const order = await seedOrder(shopA, { total: '20.00', customerId: cus });
  expect((await refund(order.id, { amount: '15.00' })).status).toBe(200);
  const before = await state(order, cus);
  expect(before.spent).toBe('35');
  for (const amount of ['5.01', '20.00', '999999999999.99']) {
    const res = await refund(order.id, { amount });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('REFUND_EXCEEDS_REMAINING');
  }
  expect(await state(order, cus)).toEqual(before);
});

test('a PENDING (or otherwise not completed) order: 400 ORDER_NOT_REFUNDABLE, nothing changed', async () => {
  for (const status of ['PENDING', 'VOIDED', 'PARTIAL'] as const) {
    const order = await seedOrder(shopA, { total: '5.00', status });
    const before = await state(order);
    for (const body of [undefined, { amount: '1.00' }]) {
      const res = await refund(order.id, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('ORDER_NOT_REFUNDABLE');
      expect(res.body.error.message).toContain(status);
    }
    expect(await state(order)).toEqual(before);
  }
});

test('amount 0, or more decimals than the currency has: 422 on amount, nothing changed', async () => {
  const usd = await seedOrder(shopA, { total: '10.00' });
  const jpy = await seedOrder(shopA, { total: '1200', currency: 'JPY' });
  const before = [await state(usd), await state(jpy)];
  const cases: [OrderRow, string, string][] = [
    [usd, '0', 'must be greater than 0'],
    [usd, '0.00', 'must be greater than 0'],
    [usd, '1.005', 'must have at most 2 decimals (the minor unit of USD)'],
    [jpy, '100.5', 'must have at most 0 decimals (the minor unit of JPY)'],
  ];
  for (const [order, amount, message] of cases) {
    const res = await refund(order.id, { amount });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'amount', message }]);
  }
  // What the contract itself refuses (a sign, an exponent, 9 decimals) never reaches the order.
  for (const amount of ['-1', '1e2', '0.000000001', 'ten']) {
    const res = await refund(usd.id, { amount });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  }
  expect([await state(usd), await state(jpy)]).toEqual(before);
  // JPY in whole yen is fine.
  expect((await refund(jpy.id, { amount: '200' })).body.data.message).toBe(
    'Refunded 200 JPY; 1000 JPY remains refundable.',
  );
});

test("another shop's order, or none: 404 INVOICE_NOT_FOUND, nothing changed", async () => {
  const order = await seedOrder(shopA, { total: '10.00' });
  const before = await state(order);
  const res = await refund(order.id, { amount: '1.00' }, keyB);
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('INVOICE_NOT_FOUND');
  expect((await refund(order.id, undefined, keyB)).status).toBe(404);
  expect((await refund('ord_00000000000000000000000000000000')).body.error.code).toBe('INVOICE_NOT_FOUND');
  expect(await state(order)).toEqual(before);
  expect(await refundsOfOrder(t.db, shopB, order.id)).toEqual([]);
});

test('spend is computed: a full refund takes back exactly the order, never the earlier purchases', async () => {
  const cus = await customer(shopA, 'small@example.com', '4.00');
  const order = await seedOrder(shopA, { total: '10.00', customerId: cus });
  expect((await state(order, cus)).spent).toBe('14');
  expect((await refund(order.id)).status).toBe(200);
  expect((await state(order, cus)).spent).toBe('4');
  // A customer with no paid order has spent 0 (a pending order does not count).
  const none = await customer(shopA, 'none@example.com', '0');
  const pending = await seedOrder(shopA, { total: '10.00', customerId: none, status: 'PENDING' });
  expect((await state(pending, none)).spent).toBe('0');
});

test('an Idempotency-Key replays the first answer and refunds once', async () => {
  const order = await seedOrder(shopA, { total: '10.00' });
  const send = () =>
    t.http
      .post(`/dev/v1/orders/${order.id}/refund`)
      .set(bearer(keyA))
      .set('Idempotency-Key', `refund-${order.id}`)
      .send({ amount: '4.00' });
  const first = await send();
  const second = await send();
  expect(first.status).toBe(200);
  expect(second.status).toBe(200);
  expect(second.body).toEqual(first.body);
  expect(second.headers['idempotency-status']).toBe('cached');
  const after = await state(order);
  expect(after.refunds).toHaveLength(1);
  expect(after.refunded).toBe('4');
  expect(after.events).toHaveLength(1);
});

(process.env.DATABASE_URL ? test : test.skip)(
  'concurrent partial refunds that together exceed what remains: exactly one of two wins; 4 of 10',
  async () => {
    const pair = await seedOrder(shopA, { total: '10.00' });
    const two = await Promise.all([refund(pair.id, { amount: '6.00' }), refund(pair.id, { amount: '6.00' })]);
    expect(two.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(two.find((r) => r.status === 400)!.body.error.code).toBe('REFUND_EXCEEDS_REMAINING');
    expect(await state(pair)).toMatchObject({ status: 'PARTIALLY_REFUNDED', refunded: '6' });
    expect((await state(pair)).refunds).toHaveLength(1);

    const many = await seedOrder(shopA, { total: '10.00' });
    const ten = await Promise.all(Array.from({ length: 10 }, () => refund(many.id, { amount: '2.50' })));
    expect(ten.filter((r) => r.status === 200)).toHaveLength(4);
    expect(ten.filter((r) => r.status === 400)).toHaveLength(6);
    const after = await state(many);
    expect(after).toMatchObject({ status: 'REFUNDED', refunded: '10' });
    expect(after.refunds).toHaveLength(4);
    expect(after.events.filter((e) => (e as unknown as { fully_refunded: boolean }).fully_refunded)).toHaveLength(1);
  },
);

test('through the API: an order created and completed over HTTP is refunded; the spend completion added is taken back', async () => {
  const product = (await t.seed(shopA, { products: [{ title: 'Consulting', type: 'SERVICE', price: '12.50' }] }))
    .products[0]!;
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(keyA))
    .send({ email: 'http-flow@example.com', items: [{ product_id: product, quantity: 2 }] });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const completed = await t.http
    .post(`/dev/v1/orders/${id}/complete`)
    .set(bearer(keyA))
    .send({ suppress_emails: true });
  expect(completed.status).toBe(200);
  const order = await t.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  expect(order.status).toBe('COMPLETED');
  expect(order.customer_id).not.toBeNull();
  const total = new Decimal(order.total).toFixed();
  const spentBefore = (await state(order, order.customer_id!)).spent!;
  expect(new Decimal(spentBefore).gte(total)).toBe(true);

  const part = await refund(id, { amount: '5.00', reason: 'Half a session' });
  expect(part.status).toBe(200);
  const rest = await refund(id);
  expect(rest.status).toBe(200);
  expect(rest.body.data.message).toBe(
    `Refunded ${new Decimal(total).minus(5).toFixed(2)} USD; the order is fully refunded.`,
  );
  const after = await state(order, order.customer_id!);
  expect(after).toMatchObject({ status: 'REFUNDED', payment_status: 'REFUNDED', refunded: total });
  expect(after.spent).toBe(new Decimal(spentBefore).minus(total).toFixed());
  expect(after.events.map((e) => (e as unknown as { fully_refunded: boolean }).fully_refunded)).toEqual([false, true]);
});
