// Regression tests for defects found in review: each request that used to answer wrongly (500, 401, a body over
// the limit accepted, a conflict missed) and what it must do instead.
import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import { sql } from 'kysely';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { openPostgres } from '../../db/database';
import { bearer, contractClient, memoryLogger, startTestApp, type TestApp } from '../helpers/test-app';
import { rowCounts } from '../helpers/counts';
import { systemClock } from '../../src/platform/clock';

let t: TestApp;
let shop: string;
let key: string;
let serialProduct: string;
let plainProduct: string;

beforeAll(async () => {
  t = await startTestApp();
  shop = await t.createShop();
  key = (await t.createKey(shop, ['*'])).key;
  const seeded = await t.seed(shop, {
    products: [
      { title: 'Keys', type: 'SERIALS', price: '1.00', serials: ['A-1', 'A-2', 'A-3'] },
      { title: 'Copy me', slug: 'copy-me', price: '2.00', variants: [{ title: 'V', price: '2.00' }] },
    ],
    customers: [{ email: 'c1@example.com' }, { email: 'c2@example.com' }, { email: 'c3@example.com' }],
  });
  [serialProduct, plainProduct] = seeded.products as [string, string];
});
afterAll(() => t.close());

const claimedCount = async () =>
  Number(
    (await sql<{ n: string }>`select count(*)::text as n from product_serials where status = 'claimed'`.execute(t.db))
      .rows[0]!.n,
  );

test('concurrent duplicates of one product all succeed with distinct slugs (no 500 on the slug constraint)', async () => {
  const results = await Promise.all(
    Array.from({ length: 6 }, () => t.http.post(`/dev/v1/products/${plainProduct}/duplicate`).set(bearer(key))),
  );
  expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201]);
  const slugs = results.map((r) => r.body.data.slug as string);
  expect(new Set(slugs).size).toBe(6);
  expect(slugs.sort()).toEqual([
    'copy-me-copy',
    'copy-me-copy-2',
    'copy-me-copy-3',
    'copy-me-copy-4',
    'copy-me-copy-5',
    'copy-me-copy-6',
  ]);
});

test('a malformed percent-escape in the path is 404, not a 500, and logs no error', async () => {
  const res = await t.http.get('/dev/v1/customers/%ZZ').set(bearer(key));
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('NOT_FOUND');
  expect(t.logs.filter((l) => l.level === 'error')).toEqual([]);
});

test('a multipart body over 1 MiB is 413 like any other body, and claims nothing', async () => {
  const before = await claimedCount();
  let req = t.http.post(`/dev/v1/products/${serialProduct}/serials/claim`).set(bearer(key)).field('amount', '1');
  for (let i = 0; i < 3; i++) req = req.field(`pad${i}`, 'x'.repeat(500 * 1024));
  const res = await req;
  expect(res.status).toBe(413);
  expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  expect(await claimedCount()).toBe(before);
});

test('a multipart field named __proto__ is an unknown field (422), not a prototype that hides the body', async () => {
  const before = await claimedCount();
  const res = await t.http
    .post(`/dev/v1/products/${serialProduct}/serials/claim`)
    .set(bearer(key))
    .set('Idempotency-Key', 'proto-1')
    .field('__proto__', '{"amount":1}');
  expect(res.status).toBe(422);
  expect(await claimedCount()).toBe(before);
});

test('timestamp filters keep microseconds', async () => {
  // One microsecond apart, all within the same millisecond: a filter cut to milliseconds would match all three.
  for (const [email, at] of [
    ['c1@example.com', '2026-11-20T10:00:00.123455Z'],
    ['c2@example.com', '2026-11-20T10:00:00.123456Z'],
    ['c3@example.com', '2026-11-20T10:00:00.123457Z'],
  ]) {
    await sql`update customers set created_at = ${at}::timestamptz where shop_id = ${shop} and email = ${email}`.execute(
      t.db,
    );
  }
  const after = await t.http
    .get(
      `/dev/v1/customers?filters=created_after:${encodeURIComponent('2026-11-20T10:00:00.123456Z')}&sorts=created_at`,
    )
    .set(bearer(key));
  expect(after.status).toBe(200);
  expect(after.body.data.map((c: { email: string }) => c.email)).toEqual(['c2@example.com', 'c3@example.com']);
  const before = await t.http
    .get(`/dev/v1/customers?filters=created_before:${encodeURIComponent('2026-11-20T10:00:00.123456Z')}`)
    .set(bearer(key));
  expect(before.body.data.map((c: { email: string }) => c.email)).toEqual(['c1@example.com']);
});

test('seeding more serials than one INSERT can bind (11,000) works', async () => {
  const serials = Array.from({ length: 11_000 }, (_, i) => `BULK-${i}`);
  const created = await t.seed(shop, { products: [{ title: 'Bulk', type: 'SERIALS', price: '1.00', serials }] });
  const n = await sql<{
    n: string;
  }>`select count(*)::text as n from product_serials where product_id = ${created.products[0]!}`.execute(t.db);
  expect(Number(n.rows[0]!.n)).toBe(11_000);
});

/** A TCP relay to PostgreSQL that the test can cut, as if the database went away. */
async function relayTo(port: number): Promise<{ port: number; cut: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createTcpServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    cut: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

(process.env.DATABASE_URL ? test : test.skip)(
  'database unreachable: 503 SERVICE_UNAVAILABLE with Retry-After, never a 401',
  async () => {
    const url = new URL(t.database.url!);
    const relay = await relayTo(Number(url.port || 5432));
    url.host = `127.0.0.1:${relay.port}`;
    const handle = openPostgres(url.toString(), { max: 2 });
    const app = await createApp({
      clock: systemClock,
      db: handle.db,
      config: loadConfig({ PUBLIC_URL: 'http://api.test' }),
      logger: memoryLogger().logger,
    });
    const http = contractClient(app);
    try {
      expect((await http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
      await relay.cut();
      const res = await http.get('/dev/v1/me').set(bearer(key));
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect((await http.get('/readyz')).status).toBe(503);
    } finally {
      await handle.close().catch(() => undefined);
    }
  },
);

test('rejected requests above wrote nothing unexpected', async () => {
  const counts = await rowCounts(t.db, ['customers']);
  expect(counts.customers).toBe(3);
});
