// An order of a SERIALS product and a serial claim on it take their locks in one order: the product first, then
// serials. A claim locks the product (FOR UPDATE), then the oldest available serials; an order holds the product's
// key (products.holdSerialProducts) before it reserves serials, then locks the product to recount its stock. Were
// the order to reserve serials first, it would hold serials the claim waits for while it waits for the claim's
// product lock: a deadlock PostgreSQL breaks after a second. Real PostgreSQL: it takes two connections.
import { sql } from 'kysely';
import { ManualClock } from '../../src/platform/clock';
import { startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-29T12:00:00.000Z'));
let t: TestApp;
let shop: string;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  shop = await t.createShop();
  ({ key } = await t.createKey(shop, ['*']));
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

/** Backends of this database (other than the caller's) waiting for a lock. */
async function lockWaiters(): Promise<number> {
  const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`.execute(t.db);
  return Number(rows[0]!.n);
}

pgOnly('an order waiting for a claim holds none of the product’s serials', async () => {
  const [product] = (
    await t.seed(shop, {
      products: [{ title: 'Keys', type: 'SERIALS', price: '5.00', serials: ['K-1', 'K-2', 'K-3'] }],
    })
  ).products;
  let answer: Promise<{ status: number; body: { data?: { items: { id: string }[] } } }> | undefined;
  await t.db.transaction().execute(async (claim) => {
    // A claim's first step (claimSerials: productByIdForUpdate), held while the order arrives.
    await sql`select id from products where shop_id = ${shop} and id = ${product!} for update`.execute(claim);
    answer = t.http
      .post('/dev/v1/orders')
      .set('authorization', `Bearer ${key}`)
      .send({ email: 'keys@example.com', items: [{ product_id: product!, quantity: 1 }] })
      .then((r) => r);
    let waiting = 0;
    for (let i = 0; i < 100 && waiting === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      waiting = await lockWaiters();
    }
    expect(waiting).toBe(1);
    // The claim's next step: the oldest available serials, FOR UPDATE. Were the order holding one, the claim would
    // wait for an order that waits for it; here NOWAIT says whether any is held.
    const free = await t.db.transaction().execute(
      async (probe) =>
        (
          await sql<{ id: string }>`select id from product_serials
            where shop_id = ${shop} and product_id = ${product!} and status = 'available' for update nowait`.execute(
            probe,
          )
        ).rows,
    );
    expect(free).toHaveLength(3);
  });
  const created = await answer!;
  expect(created.status).toBe(201);
  const reserved = await sql<{ n: string }>`select count(*) as n from product_serials
    where shop_id = ${shop} and product_id = ${product!} and status = 'reserved'`.execute(t.db);
  expect(Number(reserved.rows[0]!.n)).toBe(1);
});
