// The round trips of POST /orders/{id}/complete with serials, counted by the hook on pg's Client#query
// (test/helpers/round-trips.ts): an upper bound that may only go down, and a count that does not grow with the
// order's lines. The completion's own statements: the order locked with its shop's name, the lines read with their
// products and their reserved serials claimed, the lines' deliveries written with the payment attempt and the order
// marked complete; around them the credential, `begin` with the statement timeout, one flush (events with their
// deliveries and bot notifications, mail, audit) and `commit`. Counting needs a PostgreSQL driver: on the embedded database the tests are skipped.
import { statementsSent } from '../helpers/round-trips';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let t: TestApp;
let shop: string;
let key: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ shopA: shop, keyA: key } = await shopPair(t));
  // The key's first use stamps last_used_at (once a minute, in the background): done here, not in a counted request.
  expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
});
afterAll(() => t.close());

async function pendingOrder(lines: number): Promise<string> {
  const { products } = await t.seed(shop, {
    products: Array.from({ length: lines }, (_, i) => ({
      title: `Key ${lines}-${i}`,
      price: '5.00',
      type: 'SERIALS' as const,
      serials: [`S-${lines}-${i}-A`, `S-${lines}-${i}-B`],
    })),
  });
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: products.map((id) => ({ product_id: id, quantity: 1 })) });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

async function statementsOfCompletion(orderId: string): Promise<number> {
  const before = statementsSent();
  const res = await t.http.post(`/dev/v1/orders/${orderId}/complete`).set(bearer(key)).send({});
  const sent = statementsSent() - before;
  expect(res.status).toBe(200);
  expect(res.body.data.items.every((i: { delivery_status: string }) => i.delivery_status === 'DELIVERED')).toBe(true);
  return sent;
}

pgOnly('a completion with a serial sends at most 7 statements, however many serial lines it has', async () => {
  const one = await statementsOfCompletion(await pendingOrder(1));
  const three = await statementsOfCompletion(await pendingOrder(3));
  // 3 of the completion's own; the rest is the write path's (credential, begin, flush, commit).
  expect(one).toBeLessThanOrEqual(7);
  expect(three).toBe(one);
});
