// The statements one request sends to PostgreSQL, counted on the driver (test/helpers/round-trips.ts): each is a
// round trip the request waits for, so their number is the floor of its latency and a cost every order pays.
// PostgreSQL only (the embedded database has no network between the server and it).
import { recordStatements } from '../helpers/round-trips';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { ManualClock } from '../../src/platform/clock';

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
const clock = new ManualClock(new Date('2026-11-26T12:00:00Z'));
let t: TestApp;
let shop: string;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  shop = await t.createShop({ plan: 'business' });
  key = (await t.createKey(shop, ['*'])).key;
});
afterAll(() => t.close());

async function statementsOf(send: () => PromiseLike<{ status: number }>, status: number): Promise<string[]> {
  const recording = recordStatements();
  const res = await send();
  const texts = recording.stop();
  expect(res.status).toBe(status);
  return texts;
}

pgOnly(
  'POST /orders of one line of counted stock for a returning buyer: at most 7 round trips, the stock taken last',
  async () => {
    const [p] = (await t.seed(shop, { products: [{ title: 'Svc', type: 'SERVICE', price: '5.00', stock: 100 }] }))
      .products;
    await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://hooks.example.com/a', events: ['order:created'] });
    const order = () =>
      t.http
        .post('/dev/v1/orders')
        .set(bearer(key))
        .send({ email: 'returning@example.com', items: [{ product_id: p, quantity: 1 }] });
    await order(); // the buyer's first order creates the customer
    const texts = await statementsOf(order, 201);
    if (texts.length > 7)
      console.log(texts.map((s, i) => `${i + 1}. ${s.replace(/\s+/g, ' ').slice(0, 160)}`).join('\n'));
    expect(texts.length).toBeLessThanOrEqual(7);
    // The product's row is held from the flush's statement (its events, audit entry and the stock update) to commit.
    const taking = texts.filter((s) => /update "products" set "stock"/.test(s));
    expect(taking).toHaveLength(1);
    expect(texts.indexOf(taking[0]!)).toBe(texts.length - 2);
    expect(taking[0]).toMatch(/insert into "events"/);
    expect(texts[texts.length - 1]).toBe('commit');
  },
);
