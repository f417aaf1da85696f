// What the write path itself costs in round trips (src/platform/unit-of-work.ts): `begin` with the statement
// timeout, one statement for the whole flush (the events with their deliveries to every subscribed endpoint, the
// mail, the audit entry), and `commit`, whatever the effects. Counted on the driver (test/helpers/round-trips.ts),
// on PostgreSQL; what the flush writes is checked on both databases.
import { sql } from 'kysely';
import { takeStock } from '../../db/queries/products';
import type { EventRow } from '../../db/tables';
import { mailSink } from '../../src/mail/queue';
import { mailDraft, type ReceiptData } from '../../src/mail/templates';
import { newId } from '../../src/ids';
import { auditSink } from '../../src/platform/audit';
import { ManualClock } from '../../src/platform/clock';
import { eventsSink, writeEvent, type EventConsumer } from '../../src/platform/events';
import { UnitOfWork, type EffectSink, type WriteOrigin } from '../../src/platform/unit-of-work';
import { recordStatements } from '../helpers/round-trips';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const onPostgres = Boolean(process.env.DATABASE_URL);
const postgresOnly = onPostgres ? test : test.skip;
const clock = new ManualClock(new Date('2026-11-26T12:00:00Z'));
/** A UUIDv7 with a prefix, as src/ids.ts newId makes them: version 7, variant 10. */
const uuidv7Id = (prefix: string) => new RegExp(`^${prefix}_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$`);

let t: TestApp;
const heard: { shopId: string; event: EventRow; data: unknown }[] = [];
const hear: EventConsumer = {
  after: {
    types: ['order:paid', 'order:completed', 'webhook:test'],
    hear: async (_trx, shopId, event, data) => {
      heard.push({ shopId, event, data });
    },
  },
};
let uow: UnitOfWork;

interface Shop {
  id: string;
  keyId: string;
  /** The endpoints subscribed to order:paid, by id. */
  subscribed: string[];
}
const shops: Partial<Record<'live' | 'test', Shop>> = {};

async function shopWithEndpoints(mode: 'live' | 'test'): Promise<Shop> {
  const id = await t.createShop({ mode });
  const { id: keyId, key } = await t.createKey(id, ['*']);
  const endpoint = async (events: string[]) => {
    const res = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://hooks.example.com/x', events });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const subscribed = [await endpoint(['order:paid']), await endpoint(['*'])];
  await endpoint(['order:refunded']);
  return { id, keyId, subscribed: subscribed.sort() };
}

function origin(shop: Shop): WriteOrigin {
  return {
    shopId: shop.id,
    credentialId: shop.keyId,
    operationId: 'createOrder',
    requestId: newId('req'),
    status: 201,
    request: {
      method: 'POST',
      path: '/dev/v1/orders',
      pathParams: {},
      ip: '127.0.0.1',
      userAgent: 'jest',
      credentialKind: 'api_key',
    },
  };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  uow = new UnitOfWork(t.db, { clock, sinks: [eventsSink([hear], clock), mailSink(clock), auditSink()] });
  shops.live = await shopWithEndpoints('live');
  shops.test = await shopWithEndpoints('test');
});
afterAll(() => t.close());
beforeEach(() => {
  heard.length = 0;
});

async function rowsOfEvent(eventId: string) {
  const deliveries = await t.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('id')
    .execute();
  const attempts = await t.db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('id')
    .execute();
  return { deliveries, attempts };
}

postgresOnly(
  'a write with an event to two endpoints and its audit entry: begin, its work, one flush, commit',
  async () => {
    const shop = shops.live!;
    const o = origin(shop);
    const recording = recordStatements();
    await uow.run(o, async (trx, fx) => {
      await sql`select 1 as work`.execute(trx);
      fx.emit('order:paid', { uniqid: 'u-1' });
    });
    const texts = recording.stop();
    expect(texts).toHaveLength(4);
    expect(texts[0]).toMatch(/^begin; set local statement_timeout = \d+$/);
    expect(texts[1]).toBe('select 1 as work');
    expect(texts[2]).toMatch(/^with "new_events" as /);
    expect(texts[3]).toBe('commit');
    expect(heard).toHaveLength(1);
    const { event } = heard[0]!;
    const { deliveries, attempts } = await rowsOfEvent(event.id);
    expect(deliveries.map((d) => d.endpoint_id)).toEqual(shop.subscribed);
    expect(attempts).toHaveLength(2);
    const audit = await t.db.selectFrom('audit_entries').selectAll().where('request_id', '=', o.requestId).execute();
    expect(audit).toHaveLength(1);
  },
);

postgresOnly('mail in the same write adds no round trip; a write with no effect to record sends no flush', async () => {
  const shop = shops.live!;
  let recording = recordStatements();
  await uow.run(origin(shop), async (_trx, fx) => {
    fx.emit('order:paid', { uniqid: 'u-2' });
    fx.emit('order:paid', { uniqid: 'u-3' });
    fx.mail(mailDraft('buyer@example.com', 'receipt', receipt));
  });
  expect(recording.stop()).toHaveLength(3);
  recording = recordStatements();
  await uow.run({ ...origin(shop), credentialId: undefined }, async () => undefined);
  expect(recording.stop()).toEqual([expect.stringMatching(/^begin; set local/), 'commit']);
});

postgresOnly(
  "only the unit of work's own transaction begins with the timeout: not another, not one it opens inside",
  async () => {
    const statementTimeout = async () =>
      (await sql<{ t: string }>`select current_setting('statement_timeout') as t`.execute(t.db)).rows[0]!.t;
    const before = await statementTimeout();
    const recording = recordStatements();
    await t.db.transaction().execute(async (trx) => {
      await sql`select 1 as outside`.execute(trx);
    });
    await uow.run({ ...origin(shops.live!), credentialId: undefined }, async () => {
      await t.db.transaction().execute(async (trx) => {
        await sql`select 1 as nested`.execute(trx);
      });
    });
    expect(recording.stop()).toEqual([
      'begin',
      'select 1 as outside',
      'commit',
      expect.stringMatching(/^begin; set local statement_timeout = \d+$/),
      'begin',
      'select 1 as nested',
      'commit',
      'commit',
    ]);
    // SET LOCAL: gone with the transaction, the pool's next use has the server's setting.
    expect(await statementTimeout()).toBe(before);
  },
);

const receipt: ReceiptData = {
  shopName: 'Flush Shop',
  uniqid: '0b6f3c52-8a0e-4d55-9d1b-2f64f3e0c9a1',
  items: [{ title: 'Thing', quantity: 1, price: '1.00' }],
  total: '1.00',
  currency: 'USD',
};

describe.each(['live', 'test'] as const)('the flush of a %s shop writes', (mode) => {
  test('the events, each with a delivery and its PENDING first attempt per subscribed endpoint, heard in order', async () => {
    const shop = shops[mode]!;
    const before = { whd: newId('whd'), whl: newId('whl') };
    const o = origin(shop);
    await uow.run(o, async (_trx, fx) => {
      fx.emit('order:paid', { uniqid: 'u-a', total: 12.5 });
      fx.emit('order:paid', { uniqid: 'u-b' });
      fx.emit('order:completed', { uniqid: 'u-c' });
    });
    const after = { whd: newId('whd'), whl: newId('whl') };
    expect(heard.map((h) => h.data)).toEqual([{ uniqid: 'u-a', total: 12.5 }, { uniqid: 'u-b' }, { uniqid: 'u-c' }]);
    expect(heard.map((h) => h.event.type)).toEqual(['order:paid', 'order:paid', 'order:completed']);
    for (const { shopId, event } of heard) {
      expect(shopId).toBe(shop.id);
      expect(event).toMatchObject({ shop_id: shop.id, livemode: mode === 'live', created_at: clock.now() });
      expect(event.id).toMatch(uuidv7Id('evt'));
    }
    const ids: string[] = [];
    for (const { event } of heard) {
      const { deliveries, attempts } = await rowsOfEvent(event.id);
      // order:completed reaches only the `*` endpoint.
      const expected = event.type === 'order:paid' ? shop.subscribed : [shop.subscribed[1]!];
      expect(deliveries.map((d) => d.endpoint_id).sort()).toEqual([...expected].sort());
      expect(attempts).toHaveLength(deliveries.length);
      for (const d of deliveries) {
        const attempt = attempts.find((a) => a.delivery_id === d.id)!;
        expect(d).toMatchObject({
          shop_id: shop.id,
          status: 'PENDING',
          attempts: 0,
          next_attempt_at: clock.now(),
          pending_attempt_id: attempt.id,
          created_at: clock.now(),
          updated_at: clock.now(),
        });
        expect(attempt).toMatchObject({
          shop_id: shop.id,
          endpoint_id: d.endpoint_id,
          event_type: event.type,
          url: 'https://hooks.example.com/x',
          attempt: 1,
          status: 'PENDING',
          response_status: null,
          error: null,
          next_retry_at: clock.now(),
          created_at: clock.now(),
        });
        expect(d.id).toMatch(uuidv7Id('whd'));
        expect(attempt.id).toMatch(uuidv7Id('whl'));
        expect(d.id > before.whd && d.id < after.whd).toBe(true);
        expect(attempt.id > before.whl && attempt.id < after.whl).toBe(true);
      }
      // Time-ordered as they were queued: by event, then by endpoint.
      ids.push(...[...deliveries].sort((a, b) => a.endpoint_id.localeCompare(b.endpoint_id)).map((d) => d.id));
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const audit = await t.db.selectFrom('audit_entries').selectAll().where('request_id', '=', o.requestId).execute();
    expect(audit).toEqual([expect.objectContaining({ shop_id: shop.id, operation_id: 'createOrder', status: 201 })]);
  });

  test('the mail, marked as test mode exactly when the shop is a test shop', async () => {
    const shop = shops[mode]!;
    await uow.run(origin(shop), async (_trx, fx) => {
      fx.mail(mailDraft(`${mode}@example.com`, 'receipt', receipt));
    });
    const [row] = await t.db
      .selectFrom('outbound_emails')
      .selectAll()
      .where('to_address', '=', `${mode}@example.com`)
      .execute();
    expect(row!.id).toMatch(uuidv7Id('eml'));
    expect(row!.subject.startsWith('[TEST MODE] ')).toBe(mode === 'test');
    expect(row!.text.includes('TEST MODE')).toBe(mode === 'test');
    expect(row!.html.includes('TEST MODE')).toBe(mode === 'test');
  });

  test('nothing of a write that is rolled back: no event, delivery, attempt, mail or audit entry', async () => {
    const shop = shops[mode]!;
    const o = origin(shop);
    const count = async () =>
      Promise.all(
        (['events', 'webhook_deliveries', 'webhook_attempts', 'outbound_emails', 'audit_entries'] as const).map(
          async (table) =>
            (
              await t.db
                .selectFrom(table)
                .select((eb) => eb.fn.countAll<string>().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
        ),
      );
    const before = await count();
    // A sink after the others that fails once the flush's statement has run: everything it wrote goes back.
    const failing: EffectSink = {
      kinds: [],
      write(_trx, _pending, _origin, batch) {
        batch.add({ steps: [] }, async () => {
          throw new Error('failed after the flush');
        });
      },
    };
    const failingUow = new UnitOfWork(t.db, {
      clock,
      sinks: [eventsSink([hear], clock), mailSink(clock), auditSink(), failing],
    });
    await expect(
      failingUow.run(o, async (_trx, fx) => {
        fx.emit('order:paid', { uniqid: 'u-x' });
        fx.mail(mailDraft('x@example.com', 'receipt', receipt));
      }),
    ).rejects.toThrow('failed after the flush');
    expect(heard).toHaveLength(1); // the flush ran, and its consumers heard the event
    expect(await count()).toEqual(before);
  });
});

describe('a before-commit write (a counted stock taken as late as the write allows)', () => {
  async function stocked(shop: Shop, stock: number) {
    const [id] = (await t.seed(shop.id, { products: [{ title: 'Stocked', type: 'SERVICE', price: '1.00', stock }] }))
      .products;
    return id!;
  }
  const stockOf = async (id: string) =>
    (await t.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock;
  const auditOf = (requestId: string) =>
    t.db.selectFrom('audit_entries').select('id').where('request_id', '=', requestId).execute();
  const eventsOf = async (shop: Shop, type: string) =>
    t.db.selectFrom('events').select('data').where('shop_id', '=', shop.id).where('type', '=', type).execute();

  postgresOnly('rides the flush statement when no consumer needs its events read back: still one flush', async () => {
    const shop = shops.live!;
    const product = await stocked(shop, 5);
    const o = origin(shop);
    const got: unknown[] = [];
    const recording = recordStatements();
    await uow.run(o, async (trx, fx) => {
      // order:created is heard by no `after` consumer here: the statement need not read the events back.
      fx.emit('order:created', { uniqid: 'u-late' });
      fx.beforeCommit(takeStock(shop.id, { productId: product, variantId: null }, 2, 'taken'), async (rows) => {
        got.push(...rows);
      });
    });
    const texts = recording.stop();
    expect(texts).toHaveLength(3);
    expect(texts[1]).toMatch(/^with "new_events" as .*"taken" as \(update "products"/s);
    expect(texts[2]).toBe('commit');
    expect(got).toEqual([{ id: product, title: 'Stocked', stock: 3, quantity_warning: 0 }]);
    expect(await stockOf(product)).toBe(3);
    expect(await auditOf(o.requestId)).toHaveLength(1);
  });

  test('what its `then` queues is written by one more statement; the request is audited once', async () => {
    const shop = shops.live!;
    const product = await stocked(shop, 5);
    const o = origin(shop);
    const recording = recordStatements();
    await uow.run(o, async (trx, fx) => {
      fx.emit('order:paid', { uniqid: 'u-then' });
      fx.beforeCommit(takeStock(shop.id, { productId: product, variantId: null }, 1, 'taken'), async (rows) => {
        fx.emit('order:completed', { uniqid: 'u-then', left: (rows[0] as { stock: number }).stock });
      });
    });
    const texts = recording.stop();
    // order:paid is heard after its statement, so the flush reads its events back and the stock is taken by the
    // statement after it, still the last of the write's own; then the queued event's statement, and commit.
    if (onPostgres)
      expect(texts.map((x) => x.slice(0, 24))).toEqual([
        expect.stringMatching(/^begin/),
        expect.stringMatching(/^with "new_events"/),
        expect.stringMatching(/^with "taken" as \(update /),
        expect.stringMatching(/^with "new_events"/),
        'commit',
      ]);
    expect((await eventsOf(shop, 'order:completed')).map((e) => JSON.parse(e.data))).toContainEqual({
      uniqid: 'u-then',
      left: 4,
    });
    // Heard in order: the flush's event, then the one its before-commit write queued.
    expect(heard.map((h) => h.event.type)).toEqual(['order:paid', 'order:completed']);
    const { deliveries } = await rowsOfEvent(heard[1]!.event.id);
    const everything = await t.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('shop_id', '=', shop.id)
      .where(sql<boolean>`events = array['*']::text[]`)
      .execute();
    expect(deliveries.map((d) => d.endpoint_id)).toEqual(everything.map((e) => e.id));
    expect(await auditOf(o.requestId)).toHaveLength(1);
  });

  test('its `then` refusing the write rolls back everything, the stock included', async () => {
    const shop = shops.live!;
    const product = await stocked(shop, 1);
    const o = origin(shop);
    await expect(
      uow.run(o, async (trx, fx) => {
        fx.emit('order:paid', { uniqid: 'u-refused' });
        fx.mail(mailDraft('refused@example.com', 'receipt', receipt));
        fx.beforeCommit(takeStock(shop.id, { productId: product, variantId: null }, 1, 'taken'), async () => {
          throw new Error('refused after the stock was taken');
        });
      }),
    ).rejects.toThrow('refused after the stock was taken');
    expect(await stockOf(product)).toBe(1);
    const written = await t.db
      .selectFrom('events')
      .select('id')
      .where('shop_id', '=', shop.id)
      .where('data', 'like', '%u-refused%')
      .execute();
    expect(written).toEqual([]);
    const mail = await t.db.selectFrom('outbound_emails').select('id').where('to_address', '=', 'refused@example.com');
    expect(await mail.execute()).toEqual([]);
    expect(await auditOf(o.requestId)).toEqual([]);
  });
});

test('an event written outside a unit of work, to one endpoint only (a test event): its attempt is answered', async () => {
  const shop = shops.live!;
  const refunds = (
    await t.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'url'])
      .where('shop_id', '=', shop.id)
      .where('id', 'not in', shop.subscribed)
      .execute()
  )[0]!;
  const { event, attemptIds } = await t.db
    .transaction()
    .execute((trx) =>
      writeEvent(trx, shop.id, 'webhook:test', { n: 1 }, { consumers: [hear], clock, endpoint: refunds }),
    );
  expect(heard).toEqual([]); // no consumer hears a test event
  expect(event).toMatchObject({ type: 'webhook:test', livemode: true, data: '{"n":1}' });
  const { deliveries, attempts } = await rowsOfEvent(event.id);
  expect(deliveries.map((d) => d.endpoint_id)).toEqual([refunds.id]);
  expect(attempts.map((a) => a.id)).toEqual(attemptIds);
});
