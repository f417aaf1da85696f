// The unit of work every state-changing operation runs through (src/platform/unit-of-work.ts): effects commit with
// the change or not at all, serialization failures and deadlocks are retried a bounded number of times, the statement
// timeout answers 503, PostgreSQL's refusals become the documented envelope (src/http/database-errors.ts), and reads
// cannot write. Handlers are replaced through the app's `handlers` option to force each case.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import * as productQueries from '../../db/queries/products';
import { duplicateProduct } from '../../src/domain/catalog/products';
import { NotFoundError } from '../../src/errors';
import type { OperationHandler } from '../../src/http/handler';
import type { EffectSink } from '../../src/platform/unit-of-work';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const onPostgres = Boolean(process.env.DATABASE_URL);
const postgresOnly = onPostgres ? test : test.skip;

interface Recorded {
  kind: string;
  operation_id: string;
  shop_id: string | null;
  payload: string;
}

/** A sink that writes each effect as a row of test_effects: what a real outbox would do, in the same transaction. */
const recordingSink: EffectSink = {
  kinds: ['events', 'mail', 'audit'],
  async write(trx, pending, origin) {
    for (const [kind, list] of Object.entries(pending)) {
      for (const item of list as unknown[]) {
        await sql`insert into test_effects (kind, operation_id, shop_id, payload)
          values (${kind}, ${origin.operationId}, ${origin.shopId ?? null}, ${JSON.stringify(item)})`.execute(trx);
      }
    }
  },
  async rejected(trx, origin, error) {
    await sql`insert into test_effects (kind, operation_id, shop_id, payload)
      values ('rejected', ${origin.operationId}, ${origin.shopId ?? null}, ${error.code})`.execute(trx);
  },
};

async function effects(db: Kysely<Database>): Promise<Recorded[]> {
  const r = await sql<Recorded>`select kind, operation_id, shop_id, payload from test_effects order by id`.execute(db);
  return r.rows;
}

async function prepare(t: TestApp) {
  await sql`create table if not exists test_effects (id serial primary key, kind text not null,
    operation_id text not null, shop_id text, payload text not null)`.execute(t.db);
  const shop = await t.createShop({ name: 'Writer' });
  const { key } = await t.createKey(shop, ['*']);
  const seeded = await t.seed(shop, {
    products: [
      { title: 'One', slug: 'one', price: '1.00' },
      { title: 'Two', slug: 'two', price: '2.00' },
    ],
  });
  return { shop, key, p1: seeded.products[0]!, p2: seeded.products[1]! };
}

const tables = ['products', 'product_variants', 'customers'] as const;

describe('effects commit with the change, or not at all', () => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof prepare>>;
  const fail = new Set<string>();
  beforeAll(async () => {
    t = await startTestApp({
      effectSinks: [recordingSink],
      handlers: {
        duplicateProduct: (async ({ write, params, effects: fx }) => {
          const copy = await duplicateProduct(write, params.id);
          fx.emit('product:created', { id: copy.id });
          fx.mail({ to: 'owner@example.com', template: 'product-created', data: { id: copy.id } });
          fx.audit({ action: 'duplicate', resourceType: 'product', resourceId: copy.id });
          if (fail.has('business')) throw new NotFoundError('PRODUCT_NOT_FOUND', 'Gone while we looked.');
          if (fail.has('crash')) throw new Error('the handler crashed after writing');
          return { status: 201, data: copy };
        }) as OperationHandler<'duplicateProduct'>,
      },
    });
    s = await prepare(t);
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    fail.clear();
    await sql`delete from test_effects`.execute(t.db);
  });

  test('a successful write commits its events, mail and audit lines in its transaction', async () => {
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key));
    expect(res.status).toBe(201);
    const rows = await effects(t.db);
    expect(rows.map((r) => r.kind)).toEqual(['events', 'mail', 'audit']);
    expect(rows.every((r) => r.operation_id === 'duplicateProduct' && r.shop_id === s.shop)).toBe(true);
    expect(JSON.parse(rows[0]!.payload)).toEqual({ type: 'product:created', data: { id: res.body.data.id } });
  });

  test('a business rejection rolls back the change and its effects; the refusal itself is recorded', async () => {
    fail.add('business');
    const before = await rowCounts(t.db, [...tables]);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('PRODUCT_NOT_FOUND');
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
    expect(await effects(t.db)).toEqual([
      { kind: 'rejected', operation_id: 'duplicateProduct', shop_id: s.shop, payload: 'PRODUCT_NOT_FOUND' },
    ]);
  });

  test('a crash after writing leaves neither the change nor any effect', async () => {
    fail.add('crash');
    const before = await rowCounts(t.db, [...tables]);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key));
    expect(res.status).toBe(500);
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
    expect(await effects(t.db)).toEqual([]);
  });
});

test('an effect no sink takes refuses the whole write instead of losing it', async () => {
  const t = await startTestApp({
    handlers: {
      duplicateProduct: (async ({ write, params, effects: fx }) => {
        const copy = await duplicateProduct(write, params.id);
        fx.emit('product:created', { id: copy.id });
        return { status: 201, data: copy };
      }) as OperationHandler<'duplicateProduct'>,
    },
    effectSinks: [], // no outbox registered: the event has nowhere to go
  });
  try {
    const s = await prepare(t);
    const before = await rowCounts(t.db, [...tables]);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key));
    expect(res.status).toBe(500);
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
  } finally {
    await t.close();
  }
});

describe('serialization failures and deadlocks are retried, a bounded number of times', () => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof prepare>>;
  let attempts = 0;
  let failFirst = 0;
  const waits: number[] = [];
  beforeAll(async () => {
    t = await startTestApp({
      sleep: async (ms) => {
        waits.push(ms);
      },
      handlers: {
        duplicateProduct: (async ({ write, params }) => {
          attempts++;
          const copy = await duplicateProduct(write, params.id);
          // What pg raises when PostgreSQL aborts the transaction: after the insert, so a retry must not keep it.
          if (attempts <= failFirst) {
            throw Object.assign(new Error('could not serialize access due to concurrent update'), {
              code: attempts % 2 ? '40001' : '40P01',
              severity: 'ERROR',
            });
          }
          return { status: 201, data: copy };
        }) as OperationHandler<'duplicateProduct'>,
      },
    });
    s = await prepare(t);
  });
  afterAll(() => t.close());
  beforeEach(() => {
    attempts = 0;
    waits.length = 0;
  });

  test('two collisions, then success: one copy is written, after three attempts', async () => {
    failFirst = 2;
    const before = await rowCounts(t.db, ['products']);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key)).set('Idempotency-Key', 'r1');
    expect(res.status).toBe(201);
    expect(res.headers['idempotency-status']).toBe('created');
    expect(attempts).toBe(3);
    expect(waits).toHaveLength(2);
    expect((await rowCounts(t.db, ['products'])).products).toBe(before.products! + 1);
  });

  test('collisions past the retries: 409 CONCURRENT_UPDATE with Retry-After, nothing written, key free', async () => {
    failFirst = 100;
    const before = await rowCounts(t.db, [...tables]);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key)).set('Idempotency-Key', 'r2');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONCURRENT_UPDATE');
    expect(res.headers['retry-after']).toBe('1');
    expect(attempts).toBe(4); // the first try and three retries
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
    // A transient answer is not stored: the same key runs the request again.
    failFirst = 0;
    attempts = 0;
    const again = await t.http
      .post(`/dev/v1/products/${s.p1}/duplicate`)
      .set(bearer(s.key))
      .set('Idempotency-Key', 'r2');
    expect(again.status).toBe(201);
    expect(again.headers['idempotency-status']).toBe('created');
    expect(attempts).toBe(1);
  });
});

postgresOnly('a real deadlock between two requests is retried: both succeed, one copy each', async () => {
  let attempts = 0;
  let s!: Awaited<ReturnType<typeof prepare>>;
  const t = await startTestApp({
    handlers: {
      duplicateProduct: (async ({ db, auth, params, write }) => {
        attempts++;
        const [first, second] = params.id === s.p1 ? [s.p1, s.p2] : [s.p2, s.p1];
        await productQueries.productByIdForUpdate(db, auth.shop.id, first);
        await sql`select pg_sleep(0.3)`.execute(db); // both now hold their first row
        await productQueries.productByIdForUpdate(db, auth.shop.id, second);
        return { status: 201, data: await duplicateProduct(write, params.id) };
      }) as OperationHandler<'duplicateProduct'>,
    },
  });
  try {
    s = await prepare(t);
    const before = (await rowCounts(t.db, ['products'])).products;
    const [a, b] = await Promise.all([
      t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key)),
      t.http.post(`/dev/v1/products/${s.p2}/duplicate`).set(bearer(s.key)),
    ]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(attempts).toBe(3); // PostgreSQL chose one victim; it ran again
    expect((await rowCounts(t.db, ['products'])).products).toBe(before! + 2);
  } finally {
    await t.close();
  }
});

postgresOnly('a statement past the statement timeout is cancelled: 503 with Retry-After, nothing written', async () => {
  const t = await startTestApp({
    env: { STATEMENT_TIMEOUT_MS: '300', PUBLIC_URL: 'http://api.test', REDIS_URL: process.env.REDIS_URL },
    handlers: {
      duplicateProduct: (async ({ db, params, write }) => {
        const copy = await duplicateProduct(write, params.id);
        await sql`select pg_sleep(3)`.execute(db);
        return { status: 201, data: copy };
      }) as OperationHandler<'duplicateProduct'>,
    },
  });
  try {
    const s = await prepare(t);
    const before = await rowCounts(t.db, [...tables]);
    const started = Date.now();
    const res = await t.http.post(`/dev/v1/products/${s.p1}/duplicate`).set(bearer(s.key));
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
    // The timeout is the write path's (SET LOCAL): it does not leak to the pool's next use.
    const r = await sql<{ t: string }>`select current_setting('statement_timeout') as t`.execute(t.db);
    expect(r.rows[0]!.t).not.toBe('300ms');
  } finally {
    await t.close();
  }
});

describe("PostgreSQL's refusals become the documented envelope, and change nothing", () => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof prepare>>;
  let other: { shop: string; product: string };
  let action: (trx: Transaction<Database>, shopId: string) => Promise<unknown>;
  beforeAll(async () => {
    t = await startTestApp({
      handlers: {
        claimProductSerials: (async ({ db, auth }) => {
          await action(db, auth.shop.id);
          return { data: { claimed_count: 0, remaining_stock: 0, serials: [] } };
        }) as OperationHandler<'claimProductSerials'>,
      },
    });
    s = await prepare(t);
    const shop = await t.createShop({ name: 'Other' });
    other = { shop, product: (await t.seed(shop, { products: [{ title: 'Theirs', price: '3.00' }] })).products[0]! };
  });
  afterAll(() => t.close());

  async function attempt() {
    const before = await rowCounts(t.db, [...tables]);
    const res = await t.http.post(`/dev/v1/products/${s.p1}/serials/claim`).set(bearer(s.key)).send({ amount: 1 });
    expect(await rowCounts(t.db, [...tables])).toEqual(before);
    return res;
  }

  const variant = (productId: string) => ({
    id: `var_${Math.random().toString(36).slice(2)}`,
    product_id: productId,
    title: 'V',
    price: '1',
    price_display: '1',
    stock: -1,
    sort_priority: 0,
  });

  test('unique violation: 409 CONFLICT naming the field', async () => {
    action = async (trx, shopId) => {
      const source = (await productQueries.productById(trx, shopId, s.p1))!;
      const { created_at: _c, updated_at: _u, shop_id: _s, ...fields } = source;
      await productQueries.insertVariants(trx, shopId, [variant(s.p1)]); // written first, must be rolled back
      await productQueries.insertProduct(trx, shopId, {
        ...fields,
        id: 'prod_clash',
        uniqid: '0195f3c1-a2b3-7c9d-8e4f-5a6b7c8d9e0f',
        description_tabs: '[]',
        custom_fields: '[]',
      });
    };
    const res = await attempt();
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({
      code: 'CONFLICT',
      message: 'A product with this slug already exists in this shop.',
      details: [{ field: 'slug', message: 'is already taken' }],
    });
  });

  test('a reference into another shop: the composite foreign key refuses it, 422 on the field', async () => {
    action = (trx, shopId) => productQueries.insertVariants(trx, shopId, [variant(other.product)]);
    const res = await attempt();
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'product_id', message: 'does not exist in this shop' }]);
    // The other shop's product is untouched, and no variant points at it.
    const r = await sql<{ n: string }>`select count(*)::text as n from product_variants
      where product_id = ${other.product}`.execute(t.db);
    expect(r.rows[0]!.n).toBe('0');
  });

  test.each([
    ['an impossible date', sql`select '2026-02-30T00:00:00Z'::timestamptz`, 'a date or time is not valid'],
    ['a number out of range', sql`select 1e15::numeric(20, 8)`, 'a number is out of the range this field accepts'],
    ['text that is not a number', sql`select 'ten'::integer`, 'a value does not have the form its field needs'],
  ])('%s (class 22): 422 with a detail', async (_name, query, message) => {
    action = async (trx, shopId) => {
      await productQueries.setProductStock(trx, shopId, s.p1, 7);
      await query.execute(trx);
    };
    const res = await attempt();
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'request', message }] });
    expect((await productQueries.productById(t.db, s.shop, s.p1))!.stock).toBe(-1);
  });
});

test('reads cannot write: a write from a read operation is refused before it reaches the database', async () => {
  const t = await startTestApp({
    handlers: {
      getAccount: (async ({ db }) => {
        await (db as unknown as Kysely<Database>)
          .insertInto('shops')
          .values({ id: 'shop_sneaky', name: 'Sneaky', plan: 'free', currency: 'USD' })
          .execute();
        return { data: {} };
      }) as OperationHandler<'getAccount'>,
    },
  });
  try {
    const shop = await t.createShop();
    const { key } = await t.createKey(shop, ['*']);
    const before = await rowCounts(t.db, ['shops']);
    const res = await t.http.get('/dev/v1/me').set(bearer(key));
    expect(res.status).toBe(500);
    expect(await rowCounts(t.db, ['shops'])).toEqual(before);
    expect(t.logs.some((l) => JSON.stringify(l).includes('a read operation attempted a write'))).toBe(true);
  } finally {
    await t.close();
  }
});
