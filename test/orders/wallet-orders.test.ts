// Orders paid from the buyer's store-credit wallet (`use_wallet_balance` on POST /orders): the hold at creation
// (`balance_paid_amount`), the rest charged on the checkout, the capture on completion (a ledger debit), the release
// on void, the refund going back to the wallet first, and a total the wallet covers entirely completing at once.
// After every test, every wallet's cached balance equals its ledger's sum and its hold fits in it.
import Decimal from 'decimal.js';
import request from 'supertest';
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { orderExpiryJob } from '../../src/worker/order-expiry';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const clock = new ManualClock(new Date('2026-11-23T12:00:00Z'));
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let service: string;
let euro: string;
let keys: string;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { ORDER_TTL_MINUTES: '30' } });
  // A pays the rest of its orders through SANDBOX, which only test mode offers: a test-mode shop.
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { plan: 'business', mode: 'test' } }));
  const seeded = await t.seed(shopA, {
    products: [
      { title: 'Support hour', type: 'SERVICE', price: '10.00' },
      { title: 'Euro thing', type: 'SERVICE', price: '10.00', currency: 'EUR' },
      {
        title: 'Game key',
        type: 'SERIALS',
        price: '10.00',
        serials: Array.from({ length: 20 }, (_, i) => `KEY-${i}`),
      },
    ],
    gateways: [{ code: 'SANDBOX', kind: 'SESSION' }],
  });
  [service, euro, keys] = seeded.products as [string, string, string];
});

afterEach(async () => {
  const rows = await sql<{ id: string; balance: string; held: string; sum: string }>`
    select c.id, c.wallet_balance::text as balance, c.wallet_held::text as held,
      coalesce((select sum(w.amount) from wallet_transactions w where w.shop_id = c.shop_id and w.customer_id = c.id), 0)::text as sum
    from customers c`.execute(t.db);
  for (const r of rows.rows) {
    expect({ id: r.id, balance: new Decimal(r.balance).toFixed() }).toEqual({
      id: r.id,
      balance: new Decimal(r.sum).toFixed(),
    });
    expect(new Decimal(r.held).gte(0) && new Decimal(r.held).lte(r.balance)).toBe(true);
  }
});
afterAll(() => t.close());

let n = 0;
/** A customer of shop A with this wallet balance (a fixture: one opening ledger row). */
async function buyer(walletBalance: string): Promise<{ id: string; email: string }> {
  n += 1;
  const email = `buyer${n}@wallet.example`;
  const id = (await t.seed(shopA, { customers: [{ email, wallet_balance: walletBalance }] })).customers[0]!;
  return { id, email };
}

const createOrder = (body: object, key = keyA) => t.http.post('/dev/v1/orders').set(bearer(key)).send(body);
const complete = (id: string) => t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(keyA)).send({});
const refund = (id: string, amount?: string) =>
  t.http
    .post(`/dev/v1/orders/${id}/refund`)
    .set(bearer(keyA))
    .send(amount === undefined ? {} : { amount });
const debit = (id: string, amount: string) =>
  t.http.post(`/dev/v1/customers/${id}/wallet/debit`).set(bearer(keyA)).send({ amount, type: 'PURCHASE' });
const form = (path: string, body: Record<string, string> = {}) => request(t.app).post(path).type('form').send(body);

async function wallet(customerId: string) {
  const row = await t.db
    .selectFrom('customers')
    .select(['wallet_balance', 'wallet_held'])
    .where('id', '=', customerId)
    .executeTakeFirstOrThrow();
  const ledger = await t.db
    .selectFrom('wallet_transactions')
    .select(['amount', 'type', 'order_id', 'description'])
    .where('customer_id', '=', customerId)
    // Ids are time-ordered (UUID v7) in the order they were made; created_at is the test clock's (or, for fixtures,
    // the real one).
    .orderBy('id')
    .execute();
  return {
    balance: new Decimal(row.wallet_balance).toFixed(),
    held: new Decimal(row.wallet_held).toFixed(),
    ledger: ledger.map((l) => ({ ...l, amount: new Decimal(l.amount).toFixed() })),
  };
}

async function attemptsOf(orderId: string) {
  return (
    await t.db
      .selectFrom('payment_attempts')
      .select(['gateway', 'status', 'amount'])
      .where('order_id', '=', orderId)
      .execute()
  ).map((a) => ({ ...a, amount: new Decimal(a.amount).toFixed() }));
}

const eventCount = async (type: string, uniqid: string) =>
  Number(
    (
      await sql<{ n: string }>`select count(*)::text as n from events
        where type = ${type} and data::jsonb ->> 'uniqid' = ${uniqid}`.execute(t.db)
    ).rows[0]!.n,
  );

describe('creation', () => {
  test('holds the available balance up to the total; the rest is due; the hold is not available to debits', async () => {
    const b = await buyer('4.00');
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'PENDING', total: 10, balance_paid_amount: 4, customer_id: b.id });
    // Held, not moved: no ledger row yet.
    expect(await wallet(b.id)).toEqual({
      balance: '4',
      held: '4',
      ledger: [expect.objectContaining({ type: 'ADJUSTMENT', amount: '4' })],
    });
    const got = await t.http.get(`/dev/v1/customers/${b.id}`).set(bearer(keyA));
    expect(got.body.data.wallet).toMatchObject({ balance: 4, available_balance: 0 });
    const refused = await debit(b.id, '0.01');
    expect([refused.status, refused.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
    // The order lists read back the same.
    const listed = await t.http.get('/dev/v1/orders').set(bearer(keyA));
    expect(listed.status).toBe(200);
    const mine = (listed.body.data as { id: string; balance_paid_amount: number }[]).find(
      (o) => o.id === res.body.data.id,
    );
    expect(mine?.balance_paid_amount).toBe(4);
  });

  test('without use_wallet_balance (or with false) the wallet is not touched', async () => {
    const b = await buyer('50.00');
    for (const body of [{}, { use_wallet_balance: false }]) {
      const res = await createOrder({ email: b.email, items: [{ product_id: service, quantity: 1 }], ...body });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ status: 'PENDING', balance_paid_amount: 0 });
    }
    expect(await wallet(b.id)).toMatchObject({ balance: '50', held: '0' });
  });

  test('an empty wallet holds nothing: the order is paid on the checkout as usual', async () => {
    const b = await buyer('0');
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'PENDING', balance_paid_amount: 0 });
    expect(await wallet(b.id)).toEqual({ balance: '0', held: '0', ledger: [] });
    // A new buyer (created by this order) has an empty wallet too.
    const fresh = await createOrder({
      email: 'brand-new@wallet.example',
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    expect(fresh.body.data).toMatchObject({ status: 'PENDING', balance_paid_amount: 0 });
  });

  test('a wallet in another currency than the order is 422 on use_wallet_balance; nothing is written', async () => {
    const b = await buyer('50.00');
    const count = async () =>
      Number((await sql<{ n: string }>`select count(*)::text as n from orders`.execute(t.db)).rows[0]!.n);
    const before = { orders: await count(), wallet: await wallet(b.id) };
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: euro, quantity: 1 }],
    });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([
      { field: 'use_wallet_balance', message: 'cannot be used: the wallet is in USD, the order in EUR' },
    ]);
    expect({ orders: await count(), wallet: await wallet(b.id) }).toEqual(before);
  });

  test('use_wallet_balance must be a boolean', async () => {
    const b = await buyer('5.00');
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: 'yes',
      items: [{ product_id: service, quantity: 1 }],
    });
    expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(await wallet(b.id)).toMatchObject({ balance: '5', held: '0' });
  });

  test("another shop's order for the same email uses that shop's customer, never this wallet", async () => {
    const b = await buyer('30.00');
    const other = (await t.seed(shopB, { products: [{ title: 'B', type: 'SERVICE', price: '10.00' }] })).products[0]!;
    const res = await createOrder(
      { email: b.email, use_wallet_balance: true, items: [{ product_id: other, quantity: 1 }] },
      keyB,
    );
    expect(res.status).toBe(201);
    expect(res.body.data.balance_paid_amount).toBe(0);
    expect(res.body.data.customer_id).not.toBe(b.id);
    expect(await wallet(b.id)).toMatchObject({ balance: '30', held: '0' });
  });
});

describe('a total the wallet covers entirely', () => {
  test('completes at once: delivered, gateway BALANCE, the ledger debit, events, nothing left held', async () => {
    const b = await buyer('25.00');
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: keys, quantity: 1 }],
    });
    expect(res.status).toBe(201);
    const o = res.body.data;
    expect(o).toMatchObject({
      status: 'COMPLETED',
      payment_status: 'PAID',
      gateway: 'BALANCE',
      total: 10,
      balance_paid_amount: 10,
    });
    expect(o.items[0].delivery_status).toBe('DELIVERED');
    expect(o.items[0].delivered_items.codes).toHaveLength(1);
    expect(await wallet(b.id)).toEqual({
      balance: '15',
      held: '0',
      ledger: [
        expect.objectContaining({ type: 'ADJUSTMENT', amount: '25' }),
        { type: 'ORDER_PAYMENT', amount: '-10', order_id: o.id, description: `Order ${o.uniqid}` },
      ],
    });
    expect(await attemptsOf(o.id)).toEqual([{ gateway: 'BALANCE', status: 'PAID', amount: '0' }]);
    for (const type of ['order:created', 'order:paid']) expect(await eventCount(type, o.uniqid)).toBe(1);
    const completed = await t.db.selectFrom('events').select('data').where('type', '=', 'order:completed').execute();
    expect(completed.filter((e) => (JSON.parse(e.data) as { id: string }).id === o.id)).toHaveLength(1);
    // Completing it again is refused and takes nothing more.
    const again = await complete(o.id);
    expect([again.status, again.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
    expect((await wallet(b.id)).balance).toBe('15');
  });

  test('a full refund of it goes back to the wallet entirely', async () => {
    const b = await buyer('10.00');
    const res = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    expect(res.body.data.status).toBe('COMPLETED');
    expect((await wallet(b.id)).balance).toBe('0');
    const r = await refund(res.body.data.id);
    expect(r.status).toBe(200);
    expect(r.body.data.message).toBe(
      "Refunded 10.00 USD (10.00 USD back to the buyer's wallet); the order is fully refunded.",
    );
    expect(await wallet(b.id)).toMatchObject({ balance: '10', held: '0' });
    expect((await wallet(b.id)).ledger.at(-1)).toEqual({
      type: 'ORDER_REFUND',
      amount: '10',
      order_id: res.body.data.id,
      description: `Refund of order ${res.body.data.uniqid}`,
    });
  });
});

describe('completion, void and refund of a partly wallet-paid order', () => {
  test('the checkout charges only what is due; paying captures the hold as one ledger debit', async () => {
    const b = await buyer('4.00');
    const created = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    const { id, uniqid } = created.body.data;
    const page = await request(t.app).get(`/invoice/${uniqid}`);
    expect(page.text).toMatch(/Paid from your wallet<\/td><td class="n" id="balance-paid">4\.00 USD/);
    expect(page.text).toMatch(/id="due">6\.00 USD/);
    const pay = await form(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
    expect(pay.status).toBe(303);
    const session = /sandbox\/checkout\/(sbx_[0-9a-f]{32})$/.exec(pay.headers.location ?? '')![1]!;
    expect((await request(t.app).get(`/sandbox/checkout/${session}`)).text).toContain('6.00 USD');
    expect(await attemptsOf(id)).toEqual([{ gateway: 'SANDBOX', status: 'PENDING', amount: '6' }]);
    expect((await form(`/sandbox/checkout/${session}/pay`)).status).toBe(303);
    const order = await t.db.selectFrom('orders').select(['status']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(order.status).toBe('COMPLETED');
    expect(await wallet(b.id)).toEqual({
      balance: '0',
      held: '0',
      ledger: [
        expect.objectContaining({ type: 'ADJUSTMENT', amount: '4' }),
        { type: 'ORDER_PAYMENT', amount: '-4', order_id: id, description: `Order ${uniqid}` },
      ],
    });
  });

  test('a manual completion captures the hold; the payment attempt records what the gateway took', async () => {
    const b = await buyer('3.00');
    const created = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    const res = await complete(created.body.data.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'COMPLETED', balance_paid_amount: 3, gateway: 'MANUAL' });
    expect(await attemptsOf(created.body.data.id)).toEqual([{ gateway: 'MANUAL', status: 'PAID', amount: '7' }]);
    expect(await wallet(b.id)).toMatchObject({ balance: '0', held: '0' });
  });

  test('voiding an expired order releases the hold; nothing was taken', async () => {
    const b = await buyer('4.00');
    const created = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    expect(await wallet(b.id)).toMatchObject({ balance: '4', held: '4' });
    clock.advance(31 * 60_000);
    const job = orderExpiryJob(t.db, { clock, logger: t.logger, checkoutBaseUrl: t.config.checkoutBaseUrl });
    expect(await job.runOnce()).toBeGreaterThanOrEqual(1);
    const row = await t.db
      .selectFrom('orders')
      .select(['status', 'balance_paid'])
      .where('id', '=', created.body.data.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('VOIDED');
    expect(await wallet(b.id)).toEqual({
      balance: '4',
      held: '0',
      ledger: [expect.objectContaining({ type: 'ADJUSTMENT', amount: '4' })],
    });
    // The balance is spendable again; a late completion is refused and takes nothing.
    const late = await complete(created.body.data.id);
    expect([late.status, late.body.error.code]).toEqual([400, 'ORDER_NOT_PENDING']);
    expect(await wallet(b.id)).toMatchObject({ balance: '4', held: '0' });
    expect((await debit(b.id, '4.00')).status).toBe(200);
  });

  test('refunds go back to the wallet first, up to what it paid; the rest is the gateway part', async () => {
    const b = await buyer('4.00');
    const created = await createOrder({
      email: b.email,
      use_wallet_balance: true,
      items: [{ product_id: service, quantity: 1 }],
    });
    const id = created.body.data.id as string;
    await complete(id);
    expect((await wallet(b.id)).balance).toBe('0');

    const first = await refund(id, '3.00');
    expect(first.body.data.message).toBe(
      "Refunded 3.00 USD (3.00 USD back to the buyer's wallet); 7.00 USD remains refundable.",
    );
    expect((await wallet(b.id)).balance).toBe('3');
    const second = await refund(id, '5.00');
    expect(second.body.data.message).toBe(
      "Refunded 5.00 USD (1.00 USD back to the buyer's wallet); 2.00 USD remains refundable.",
    );
    expect((await wallet(b.id)).balance).toBe('4');
    // Refused: more than remains. No ledger row.
    const before = await wallet(b.id);
    const over = await refund(id, '2.01');
    expect([over.status, over.body.error.code]).toEqual([400, 'REFUND_EXCEEDS_REMAINING']);
    expect(await wallet(b.id)).toEqual(before);
    const last = await refund(id);
    expect(last.body.data.message).toBe('Refunded 2.00 USD; the order is fully refunded.');
    const after = await wallet(b.id);
    expect(after.balance).toBe('4');
    expect(after.ledger.filter((l) => l.order_id === id)).toEqual([
      expect.objectContaining({ type: 'ORDER_PAYMENT', amount: '-4' }),
      expect.objectContaining({ type: 'ORDER_REFUND', amount: '3' }),
      expect.objectContaining({ type: 'ORDER_REFUND', amount: '1' }),
    ]);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('10 orders and 10 debits racing for one wallet of 25.00: never more held and taken than it has', async () => {
    const b = await buyer('25.00');
    const results = await Promise.all([
      ...Array.from({ length: 10 }, () =>
        createOrder({ email: b.email, use_wallet_balance: true, items: [{ product_id: service, quantity: 1 }] }),
      ),
      ...Array.from({ length: 10 }, () => debit(b.id, '1.00')),
    ]);
    const orders = results.slice(0, 10);
    const debits = results.slice(10);
    expect(orders.map((r) => (r.status === 201 ? 201 : JSON.stringify(r.body)))).toEqual(orders.map(() => 201));
    expect(debits.every((r) => r.status === 200 || r.body.error?.code === 'INSUFFICIENT_FUNDS')).toBe(true);
    const paidByWallet = orders.reduce((s, r) => s.plus(r.body.data.balance_paid_amount as number), new Decimal(0));
    const debited = debits.filter((r) => r.status === 200).length;
    // The wallet gave out exactly what it had: everything went to orders or debits.
    expect(paidByWallet.plus(debited).toFixed()).toBe('25');
    const state = await wallet(b.id);
    const completed = orders.filter((r) => r.body.data.status === 'COMPLETED');
    const pendingHeld = orders
      .filter((r) => r.body.data.status === 'PENDING')
      .reduce((s, r) => s.plus(r.body.data.balance_paid_amount as number), new Decimal(0));
    expect(completed.every((r) => r.body.data.balance_paid_amount === 10)).toBe(true);
    expect(state.held).toBe(pendingHeld.toFixed());
    expect(state.balance).toBe(pendingHeld.toFixed());
    console.log(
      `wallet order race: ${completed.length} orders paid wholly by the wallet, ${pendingHeld.toFixed()} held by pending orders, ${debited} debits of 1.00 accepted`,
    );
  });
});
