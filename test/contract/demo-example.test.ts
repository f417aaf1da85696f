// The createOrder request example of openapi.yaml is what a newcomer sends first, from the README or the reference's
// "try it": it must work on the demo shop the first start creates (its test mode, where SANDBOX is), with only the
// product id swapped for one of the demo's, and not only match its schema (spec-examples.test.ts checks that).
import * as admin from '../../src/ops/admin';
import { loadSpec } from '../../src/spec';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

interface CreateOrderExample {
  gateway?: string;
  items: { product_id: string; quantity: number }[];
}

function createOrderExample(): CreateOrderExample {
  const paths = loadSpec().paths as Record<string, Record<string, { operationId?: string; requestBody?: unknown }>>;
  const op = Object.values(paths)
    .flatMap((item) => Object.values(item))
    .find((o) => o.operationId === 'createOrder')!;
  const body = op.requestBody as { content: { 'application/json': { example: CreateOrderExample } } };
  return structuredClone(body.content['application/json'].example);
}

test("createOrder's example creates an order on the demo shop's test mode, with the gateway it names", async () => {
  const demo = await admin.createDemo(t.operator);
  const example = createOrderExample();
  const gameKey = demo.test_products[admin.demoFixtures.products!.findIndex((p) => p.title === 'Game Key')]!;
  const body = { ...example, items: example.items.map((item) => ({ ...item, product_id: gameKey })) };

  const res = await t.http.post('/dev/v1/orders').set(bearer(demo.test_key)).send(body);
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({
    status: 'PENDING',
    gateway: example.gateway,
    customer_email: 'ada@example.com',
  });
});
