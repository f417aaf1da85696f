// `product:stock_low` (src/domain/catalog/stock-warnings.ts): sent once when an order or a serial claim takes a product's
// stock from above its `quantity_warning` to at or below it, never again on later sales below the level, never
// for a refused or rolled-back change, never for `quantity_warning` 0 or unlimited stock, and never across shops.
// Every stored payload is checked against the contract's webhook schema.
import { sql } from 'kysely';
import { botNotificationsOfShop } from '../../db/queries/bot-notifications';
import { addBotUserAsOperator, createBotAsOperator } from '../../src/ops/marketing-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';
import { assertEventPayloads } from '../helpers/webhook-payloads';

let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA, shopB, keyA, keyB } = await shopPair(t));
});
afterAll(() => t.close());

const serials = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** A product seeded in the shop; its id. */
async function product(shopId: string, fixture: Record<string, unknown>): Promise<string> {
  return (await t.seed(shopId, { products: [{ title: 'P', price: '10.00', ...fixture } as never] })).products[0]!;
}

const order = (productId: string, quantity: number, key = keyA, extra: Record<string, unknown> = {}) =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: productId, quantity }], ...extra });

const claim = (productId: string, amount: number, key = keyA) =>
  t.http.post(`/dev/v1/products/${productId}/serials/claim`).set(bearer(key)).send({ amount });

/** The shop's stock_low events about the product, oldest first, each payload checked against the contract. */
async function warnings(shopId: string, productId: string) {
  await assertEventPayloads(t.db, shopId, ['product:stock_low']);
  const rows = await t.db
    .selectFrom('events')
    .select(['id', 'data'])
    .where('shop_id', '=', shopId)
    .where('type', '=', 'product:stock_low')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows
    .map((r) => ({ id: r.id, data: JSON.parse(r.data) as { product_id: string } & Record<string, unknown> }))
    .filter((e) => e.data.product_id === productId);
}

const stockOf = async (id: string) =>
  (await t.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock;

const eventCount = async () =>
  Number((await sql<{ n: string }>`select count(*)::text as n from events`.execute(t.db)).rows[0]!.n);

describe('orders', () => {
  test('W+1: nothing; W: exactly one event with the documented payload; below W: no second one', async () => {
    // 10 serials, warning at 3.
    const p = await product(shopA, {
      title: 'Pro License',
      type: 'SERIALS',
      serials: serials(10, 'K'),
      quantity_warning: 3,
    });
    const twin = await product(shopB, {
      title: 'Pro License',
      type: 'SERIALS',
      serials: serials(10, 'K'),
      quantity_warning: 3,
    });
    const endpoint = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(keyA))
      .send({ url: 'https://hooks.example.com/stock', events: ['product:stock_low'] });
    expect(endpoint.status).toBe(201);
    // A Telegram bot: user 111 has the stock_low switch on, 222 off.
    const token = '7000000009:AAHk3vQ9xLmN2pR5sT8uW1yZ4bC7dE0fG3h';
    const bot = (await createBotAsOperator(t.operator, { shopId: shopA, username: 'stock_alerts_bot', token })).id;
    const on = (await addBotUserAsOperator(t.operator, { shopId: shopA, botId: bot, telegramId: '111' })).id;
    await addBotUserAsOperator(t.operator, { shopId: shopA, botId: bot, telegramId: '222', off: 'stock_low' });

    expect((await order(p, 6)).status).toBe(201); // 10 -> 4 = W+1
    expect(await stockOf(p)).toBe(4);
    expect(await warnings(shopA, p)).toEqual([]);

    const crossing = await order(p, 1); // 4 -> 3 = W
    expect(crossing.status).toBe(201);
    const events = await warnings(shopA, p);
    expect(events.map((e) => e.data)).toEqual([{ product_id: p, title: 'Pro License', stock: 3, quantity_warning: 3 }]);
    // Through the outbox like every event: the subscribed endpoint has a delivery of it.
    const deliveries = await t.db
      .selectFrom('webhook_deliveries')
      .select('event_id')
      .where('endpoint_id', '=', endpoint.body.data.id)
      .execute();
    expect(deliveries.map((d) => d.event_id)).toEqual([events[0]!.id]);
    // And the `stock_low` switch of the bot notifications: one message, to the user whose switch is on.
    const messages = (await botNotificationsOfShop(t.db, shopA)).filter((n) => n.event_type === 'product:stock_low');
    expect(messages.map((n) => [n.event_id, n.bot_user_id, n.text])).toEqual([
      [events[0]!.id, on, `Low stock: Pro License (${p}) has 3 left`],
    ]);

    expect((await order(p, 1)).status).toBe(201); // 3 -> 2: below W, already warned
    expect((await order(p, 2)).status).toBe(201); // 2 -> 0
    expect(await stockOf(p)).toBe(0);
    expect(await warnings(shopA, p)).toHaveLength(1);
    expect(
      (await botNotificationsOfShop(t.db, shopA)).filter((n) => n.event_type === 'product:stock_low'),
    ).toHaveLength(1);

    // The other shop's twin (same title, serials, warning) was never touched.
    expect(await stockOf(twin)).toBe(10);
    expect(await warnings(shopB, twin)).toEqual([]);
    expect(await warnings(shopB, p)).toEqual([]);
  });

  test('one order jumping from far above to below W warns once, with the stock after the order', async () => {
    const p = await product(shopA, { title: 'Counted', type: 'SERVICE', stock: 20, quantity_warning: 5 });
    const res = await t.http
      .post('/dev/v1/orders')
      .set(bearer(keyA))
      .send({
        email: 'two-lines@example.com',
        items: [
          { product_id: p, quantity: 10 },
          { product_id: p, quantity: 8 },
        ],
      });
    expect(res.status).toBe(201);
    expect((await warnings(shopA, p)).map((e) => e.data)).toEqual([
      { product_id: p, title: 'Counted', stock: 2, quantity_warning: 5 },
    ]);
  });

  test('a refused order emits nothing and takes nothing', async () => {
    const p = await product(shopA, {
      title: 'Refused',
      type: 'SERIALS',
      serials: serials(4, 'R'),
      quantity_warning: 2,
    });
    const events = await eventCount();
    const tooMany = await order(p, 5); // out of stock
    expect([tooMany.status, tooMany.body.error.code]).toEqual([400, 'OUT_OF_STOCK']);
    const invalid = await order(p, 2, keyA, { email: 'not an email' }); // would cross, but is invalid
    expect(invalid.status).toBe(422);
    expect(await eventCount()).toBe(events);
    expect(await stockOf(p)).toBe(4);
    expect(await warnings(shopA, p)).toEqual([]);
  });

  test('a change rolled back after the crossing line emits nothing', async () => {
    // Line 0 takes `crossing` from 3 to 1 (W = 1); line 1 then finds too few serials of `short`: all rolled back.
    const crossing = await product(shopA, {
      title: 'Crosses',
      type: 'SERIALS',
      serials: serials(3, 'C'),
      quantity_warning: 1,
    });
    const short = await product(shopA, { title: 'Short', type: 'SERIALS', serials: serials(1, 'S') });
    const events = await eventCount();
    const res = await t.http
      .post('/dev/v1/orders')
      .set(bearer(keyA))
      .send({
        email: 'rollback@example.com',
        items: [
          { product_id: crossing, quantity: 2 },
          { product_id: short, quantity: 2 },
        ],
      });
    expect([res.status, res.body.error.code]).toEqual([400, 'OUT_OF_STOCK']);
    expect(await eventCount()).toBe(events);
    expect(await stockOf(crossing)).toBe(3);
    // The same crossing alone then warns.
    expect((await order(crossing, 2)).status).toBe(201);
    expect((await warnings(shopA, crossing)).map((e) => e.data.stock)).toEqual([1]);
  });

  test('stock raised above W again re-arms the warning: the next crossing warns again', async () => {
    const p = await product(shopA, { title: 'Rearm', type: 'SERVICE', stock: 5, quantity_warning: 2 });
    expect((await order(p, 3)).status).toBe(201); // 5 -> 2: warns
    // Stock raised above W again (as an expiry or a restock would), then a new sale crosses once more.
    await t.db.updateTable('products').set({ stock: 4 }).where('id', '=', p).execute();
    expect((await order(p, 1)).status).toBe(201); // 4 -> 3: above W
    expect((await order(p, 2)).status).toBe(201); // 3 -> 1: crosses again
    expect((await warnings(shopA, p)).map((e) => e.data.stock)).toEqual([2, 1]);
  });

  test('quantity_warning 0 and unlimited stock never warn', async () => {
    const off = await product(shopA, { title: 'Off', type: 'SERIALS', serials: serials(2, 'O') });
    const unlimited = await product(shopA, { title: 'Unlimited', type: 'SERVICE', quantity_warning: 5 });
    expect((await order(off, 2)).status).toBe(201); // 2 -> 0
    expect((await order(unlimited, 3)).status).toBe(201);
    expect(await stockOf(off)).toBe(0);
    expect(await stockOf(unlimited)).toBe(-1);
    expect(await warnings(shopA, off)).toEqual([]);
    expect(await warnings(shopA, unlimited)).toEqual([]);
  });

  test("another shop's orders never warn about this shop's product", async () => {
    const p = await product(shopA, { title: 'Mine', type: 'SERVICE', stock: 3, quantity_warning: 2 });
    const res = await order(p, 2, keyB); // shop B cannot see A's product
    expect([res.status, res.body.error.code]).toEqual([404, 'PRODUCT_NOT_FOUND']);
    expect(await stockOf(p)).toBe(3);
    expect(await warnings(shopA, p)).toEqual([]);
    expect(await warnings(shopB, p)).toEqual([]);
  });
});

describe('serial claims', () => {
  test('a claim crossing W warns once; a refused claim emits nothing', async () => {
    const p = await product(shopA, {
      title: 'Claimed',
      type: 'SERIALS',
      serials: serials(6, 'CL'),
      quantity_warning: 2,
    });
    expect((await claim(p, 3)).status).toBe(200); // 6 -> 3
    expect(await warnings(shopA, p)).toEqual([]);
    const events = await eventCount();
    const refused = await claim(p, 4); // only 3 left
    expect([refused.status, refused.body.error.code]).toEqual([400, 'OUT_OF_STOCK']);
    expect(await eventCount()).toBe(events);
    expect((await claim(p, 1)).status).toBe(200); // 3 -> 2 = W
    expect((await claim(p, 2)).status).toBe(200); // 2 -> 0
    expect((await warnings(shopA, p)).map((e) => e.data)).toEqual([
      { product_id: p, title: 'Claimed', stock: 2, quantity_warning: 2 },
    ]);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('8 buyers race across the warning level: exactly one warning, with the stock it crossed to', async () => {
    // 6 serials, W = 4: the second sale crosses (5 -> 4); whoever makes it, one event, stock 4.
    const p = await product(shopA, { title: 'Race', type: 'SERIALS', serials: serials(6, 'RA'), quantity_warning: 4 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.http
          .post('/dev/v1/orders')
          .set(bearer(keyA))
          .send({ email: `racer${i}@example.com`, items: [{ product_id: p, quantity: 1 }] }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(6);
    expect(results.filter((r) => r.status === 400).map((r) => r.body.error.code)).toEqual([
      'OUT_OF_STOCK',
      'OUT_OF_STOCK',
    ]);
    expect(await stockOf(p)).toBe(0);
    expect((await warnings(shopA, p)).map((e) => e.data.stock)).toEqual([4]);
  });
});
