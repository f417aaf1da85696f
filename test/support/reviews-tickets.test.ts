// Reviews and support tickets come from the storefront (outside this API): the command line and fixtures create
// them, reviews only for a real COMPLETED order of the shop and one of its products, tickets only for a real
// customer of the shop (and an order of theirs), each with its event through the outbox. Every refusal writes
// nothing (no row, no event). GET /reviews and GET /tickets page, filter and sort as documented, and never show
// another shop's rows.
import { sql } from 'kysely';
import type { Response } from 'supertest';
import { AdminError } from '../../src/ops/admin';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { createStorefrontReview, createStorefrontTicket, openSandboxDispute } from '../../src/ops/support-admin';
import { ApiError } from '../../src/errors';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';
import { assertEventPayloads } from '../helpers/webhook-payloads';

jest.setTimeout(120_000);

const clock = new ManualClock('2026-11-22T10:00:00Z');
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let game: string;
let guide: string;
let productB: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { name: 'A' }, b: { name: 'B' } }));
  [game, guide] = (
    await t.seed(shopA, {
      products: [
        { title: 'Game', type: 'SERVICE', price: '20.00' },
        { title: 'Guide', type: 'SERVICE', price: '5.00' },
      ],
      customers: [{ email: 'ada@example.com' }, { email: 'bob@example.com' }],
    })
  ).products as [string, string];
  productB = (
    await t.seed(shopB, {
      products: [{ title: 'B game', type: 'SERVICE', price: '1.00' }],
      customers: [{ email: 'carol@example.com' }],
    })
  ).products[0]!;
});
afterAll(() => t.close());

/** An order placed and (by default) completed over the API. */
async function order(
  email: string,
  products: string[],
  options: { complete?: boolean; key?: string } = {},
): Promise<{ id: string; uniqid: string }> {
  const key = options.key ?? keyA;
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email, items: products.map((product_id) => ({ product_id, quantity: 1 })) });
  expect(created.status).toBe(201);
  if (options.complete !== false) {
    const done = await t.http
      .post(`/dev/v1/orders/${created.body.data.id}/complete`)
      .set(bearer(key))
      .send({ suppress_emails: true });
    expect(done.status).toBe(200);
  }
  return { id: created.body.data.id, uniqid: created.body.data.uniqid };
}

/** Rows and events reviews and tickets write: what a refusal must leave as it was. */
async function written() {
  const count = async (q: ReturnType<typeof sql<{ n: string }>>) => Number((await q.execute(t.db)).rows[0]!.n);
  return {
    reviews: await count(sql<{ n: string }>`select count(*)::text as n from reviews`),
    tickets: await count(sql<{ n: string }>`select count(*)::text as n from tickets`),
    messages: await count(sql<{ n: string }>`select count(*)::text as n from ticket_messages`),
    events: await count(
      sql<{ n: string }>`select count(*)::text as n from events where type in ('review:created', 'ticket:created')`,
    ),
  };
}

async function eventsOf(type: string, id: string): Promise<unknown[]> {
  const r = await sql<{
    data: string;
  }>`select data from events where type = ${type} and data::jsonb ->> 'id' = ${id}`.execute(t.db);
  return r.rows.map((row) => JSON.parse(row.data) as unknown);
}

/** The refusal of a CLI function: its code (ADMIN for an option error) and message. */
async function refusal(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message };
    if (err instanceof AdminError) return { code: 'ADMIN', message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

/** Every id of a cursor walk of a list. */
async function walk(path: string, key: string, limit = 2): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const res: Response = await t.http
      .get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
      .set(bearer(key));
    expect(res.status).toBe(200);
    ids.push(...res.body.data.map((r: { id: string }) => r.id));
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
  } while (cursor);
  return ids;
}

const review = (input: Partial<Parameters<typeof createStorefrontReview>[1]>) =>
  createStorefrontReview(t.operator, { shopId: shopA, orderId: '', rating: '5', ...input });
const ticket = (input: Partial<Parameters<typeof createStorefrontTicket>[1]>) =>
  createStorefrontTicket(t.operator, {
    shopId: shopA,
    email: 'ada@example.com',
    subject: 'Where is my key?',
    message: 'I paid an hour ago.',
    ...input,
  });

describe('reviews', () => {
  test('a review of a completed one-product order: its product, its buyer, review:created, listed', async () => {
    const o = await order('Ada@Example.com', [game]);
    const before = await written();
    const created = await review({ orderId: o.id, rating: '4', message: 'Fun, a bit short.' });
    expect(created).toEqual({
      id: expect.stringMatching(/^rev_[0-9a-f]{32}$/),
      order_id: o.id,
      product_id: game,
      customer_email: 'ada@example.com',
      rating: 4,
      message: 'Fun, a bit short.',
      reply: null,
      replied_at: null,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    const listed = await t.http.get(`/dev/v1/reviews?filters=order_id:${o.id}`).set(bearer(keyA));
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([created]);
    expect(await eventsOf('review:created', created.id)).toEqual([created]);
    expect(await written()).toEqual({ ...before, reviews: before.reviews + 1, events: before.events + 1 });
    // Once per product of an order.
    const again = await refusal(review({ orderId: o.id, rating: '1' }));
    expect(again).toEqual({ code: 'CONFLICT', message: `The order's product ${game} is already reviewed.` });
    expect(await written()).toEqual({ ...before, reviews: before.reviews + 1, events: before.events + 1 });
  });

  test('an order of several products: the product is required and must be one of its lines; each once', async () => {
    const o = await order('bob@example.com', [game, guide]);
    const before = await written();
    expect(await refusal(review({ orderId: o.id }))).toEqual({
      code: 'ADMIN',
      message: `--product is required: the order has several products (${[game, guide].join(', ')})`,
    });
    expect(await refusal(review({ orderId: o.id, productId: productB }))).toEqual({
      code: 'PRODUCT_NOT_FOUND',
      message: `The order has no line of product ${productB}.`,
    });
    expect(await written()).toEqual(before);
    const one = await review({ orderId: o.id, productId: guide, rating: '2' });
    const two = await review({ orderId: o.id, productId: game, rating: '5' });
    expect([one.product_id, two.product_id]).toEqual([guide, game]);
    expect((await refusal(review({ orderId: o.id, productId: guide }))).code).toBe('CONFLICT');
    expect(await written()).toEqual({ ...before, reviews: before.reviews + 2, events: before.events + 2 });
  });

  test('only a COMPLETED order of the shop: pending, refunded, disputed, unknown and another shop order refused', async () => {
    const pending = await order('ada@example.com', [game], { complete: false });
    const refunded = await order('ada@example.com', [game]);
    expect(
      (await t.http.post(`/dev/v1/orders/${refunded.id}/refund`).set(bearer(keyA)).send({ amount: '1.00' })).status,
    ).toBe(200);
    const ofB = await order('carol@example.com', [productB], { key: keyB });
    const before = await written();
    expect(await refusal(review({ orderId: pending.id }))).toEqual({
      code: 'ORDER_NOT_COMPLETED',
      message: 'The order is PENDING; only a COMPLETED order (paid and not refunded or disputed) can be reviewed.',
    });
    expect((await refusal(review({ orderId: refunded.id }))).message).toContain('The order is PARTIALLY_REFUNDED');
    expect((await refusal(review({ orderId: ofB.id }))).code).toBe('INVOICE_NOT_FOUND');
    expect((await refusal(review({ orderId: 'ord_missing' }))).code).toBe('INVOICE_NOT_FOUND');
    expect(await refusal(review({ shopId: 'shop_missing', orderId: pending.id }))).toEqual({
      code: 'ADMIN',
      message: 'No shop with id shop_missing',
    });
    // A disputed order (a fixture imports a SANDBOX payment's dispute).
    const disputed = await t.db
      .updateTable('orders')
      .set({ gateway: 'SANDBOX' })
      .where('id', '=', (await order('ada@example.com', [game])).id)
      .returning('id')
      .executeTakeFirstOrThrow();
    await openSandboxDispute(t.operator, { shopId: shopA, orderId: disputed.id });
    expect((await refusal(review({ orderId: disputed.id }))).message).toContain('The order is DISPUTED');
    expect(await written()).toEqual(before);
  });

  test.each([
    ['0', '--rating must be a whole number from 1 to 5'],
    ['6', '--rating must be a whole number from 1 to 5'],
    ['4.5', '--rating must be a whole number from 1 to 5'],
    ['five', '--rating must be a whole number from 1 to 5'],
  ])('rating %s is refused: %s', async (rating, message) => {
    const o = await order('ada@example.com', [guide]);
    const before = await written();
    expect(await refusal(review({ orderId: o.id, rating }))).toEqual({ code: 'ADMIN', message });
    expect(await refusal(review({ orderId: o.id, message: 'x'.repeat(5001) }))).toEqual({
      code: 'ADMIN',
      message: '--message must be 1 to 5000 characters',
    });
    expect(await written()).toEqual(before);
  });

  test('a generic payment (no products) is reviewed once, with no product', async () => {
    const [customer] = (await t.seed(shopA, { customers: [{ email: 'payer@example.com', total_spent: '9.00' }] }))
      .customers;
    const payment = await t.db
      .selectFrom('orders')
      .select('id')
      .where('customer_id', '=', customer!)
      .executeTakeFirstOrThrow();
    const r = await review({ orderId: payment.id, rating: '3' });
    expect(r).toMatchObject({ product_id: null, customer_email: 'payer@example.com', rating: 3 });
    expect(await refusal(review({ orderId: payment.id }))).toEqual({
      code: 'CONFLICT',
      message: 'The order is already reviewed.',
    });
  });

  test('GET /reviews: newest first, a cursor walk, filters; another shop sees none; bad filters 422', async () => {
    const shopC = await t.createShop({ name: 'C' });
    const keyC = (await t.createKey(shopC, ['reviews.read'])).key;
    const keyCAll = (await t.createKey(shopC, ['*'])).key;
    const [p1, p2] = (
      await t.seed(shopC, {
        products: [
          { title: 'One', type: 'SERVICE', price: '1.00' },
          { title: 'Two', type: 'SERVICE', price: '2.00' },
        ],
      })
    ).products as [string, string];
    const ids: string[] = [];
    const orders: string[] = [];
    for (const [i, [product, rating]] of (
      [
        [p1, '5'],
        [p2, '3'],
        [p1, '5'],
      ] as const
    ).entries()) {
      clock.set(`2026-11-23T0${i}:00:00Z`);
      const o = await order(`c${i}@example.com`, [product], { key: keyCAll });
      orders.push(o.id);
      ids.push((await createStorefrontReview(t.operator, { shopId: shopC, orderId: o.id, rating })).id);
    }
    expect(await walk('/dev/v1/reviews', keyC)).toEqual([...ids].reverse());
    expect(await walk('/dev/v1/reviews?filters=rating:5', keyC, 1)).toEqual([ids[2], ids[0]]);
    expect(await walk(`/dev/v1/reviews?filters=product_id:${p2}`, keyC)).toEqual([ids[1]]);
    expect(await walk(`/dev/v1/reviews?filters=order_id:${orders[0]},rating:5`, keyC)).toEqual([ids[0]]);
    for (const key of [keyA, keyB]) {
      const seen = await walk('/dev/v1/reviews', key, 100);
      expect(seen.filter((id) => ids.includes(id))).toEqual([]);
      expect(await walk(`/dev/v1/reviews?filters=product_id:${p1}`, key)).toEqual([]);
    }
    for (const q of ['?filters=rating:6', '?filters=rating:x', '?filters=message:hi', '?sorts=-rating']) {
      const res = await t.http.get(`/dev/v1/reviews${q}`).set(bearer(keyC));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    const noScope = (await t.createKey(shopC, ['tickets.read'])).key;
    expect((await t.http.get('/dev/v1/reviews').set(bearer(noScope))).status).toBe(403);
  });
});

describe('tickets', () => {
  test('a customer opens a ticket: OPEN, NORMAL, one message, ticket:created, listed', async () => {
    clock.set('2026-11-24T10:00:00Z');
    const before = await written();
    const created = await ticket({ email: 'ADA@example.com' });
    expect(created).toEqual({
      id: expect.stringMatching(/^tkt_[0-9a-f]{32}$/),
      subject: 'Where is my key?',
      customer_email: 'ada@example.com',
      order_id: null,
      status: 'OPEN',
      priority: 'NORMAL',
      message_count: 1,
      last_message_at: expect.any(Number),
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    const messages = await t.db.selectFrom('ticket_messages').selectAll().where('ticket_id', '=', created.id).execute();
    expect(messages.map((m) => [m.author, m.body])).toEqual([['BUYER', 'I paid an hour ago.']]);
    expect(await eventsOf('ticket:created', created.id)).toEqual([created]);
    expect(await written()).toEqual({
      ...before,
      tickets: before.tickets + 1,
      messages: before.messages + 1,
      events: before.events + 1,
    });
    const listed = await t.http.get('/dev/v1/tickets?filters=customer_email:Ada@Example.com').set(bearer(keyA));
    expect(listed.body.data.map((x: { id: string }) => x.id)).toContain(created.id);
  });

  test('about an order of that customer; refusals (unknown customer, another shop, wrong order, bad fields) write nothing', async () => {
    const adas = await order('ada@example.com', [guide], { complete: false });
    const bobs = await order('bob@example.com', [guide]);
    const withOrder = await ticket({ orderId: adas.id, priority: 'high' });
    expect(withOrder).toMatchObject({ order_id: adas.id, priority: 'HIGH', customer_email: 'ada@example.com' });

    const before = await written();
    expect(await refusal(ticket({ orderId: bobs.id }))).toEqual({
      code: 'ADMIN',
      message: '--order is not an order of the customer ada@example.com',
    });
    expect((await refusal(ticket({ orderId: 'ord_missing' }))).code).toBe('INVOICE_NOT_FOUND');
    expect(await refusal(ticket({ email: 'nobody@example.com' }))).toEqual({
      code: 'CUSTOMER_NOT_FOUND',
      message: 'No customer with the email nobody@example.com in this shop.',
    });
    // carol is a customer of shop B only.
    expect((await refusal(ticket({ email: 'carol@example.com' }))).code).toBe('CUSTOMER_NOT_FOUND');
    expect(await refusal(ticket({ subject: '   ' }))).toEqual({
      code: 'ADMIN',
      message: '--subject must be 1 to 200 characters',
    });
    expect((await refusal(ticket({ subject: 's'.repeat(201) }))).code).toBe('ADMIN');
    expect((await refusal(ticket({ message: 'm'.repeat(5001) }))).message).toBe(
      '--message must be 1 to 5000 characters',
    );
    expect((await refusal(ticket({ priority: 'urgent' }))).message).toBe('--priority must be one of LOW, NORMAL, HIGH');
    expect((await refusal(ticket({ shopId: 'shop_missing' }))).message).toBe('No shop with id shop_missing');
    expect(await written()).toEqual(before);
  });

  test('GET /tickets: most recent message first or by creation, filters, cursor; another shop sees none', async () => {
    const shopC = await t.createShop({ name: 'C tickets' });
    const keyC = (await t.createKey(shopC, ['tickets.read'])).key;
    await t.seed(shopC, { customers: [{ email: 'x@example.com' }, { email: 'y@example.com' }] });
    const ids: string[] = [];
    for (const [i, [email, priority]] of (
      [
        ['x@example.com', 'LOW'],
        ['y@example.com', 'HIGH'],
        ['x@example.com', 'HIGH'],
      ] as const
    ).entries()) {
      ids.push(
        (
          await createStorefrontTicket(t.operator, {
            shopId: shopC,
            email,
            subject: `Ticket ${i}`,
            message: 'Help',
            priority,
          })
        ).id,
      );
    }
    const newest = [...ids].reverse();
    expect(await walk('/dev/v1/tickets', keyC)).toEqual(newest);
    expect(await walk('/dev/v1/tickets?sorts=created_at', keyC)).toEqual(ids);
    expect(await walk('/dev/v1/tickets?sorts=-last_message_at&filters=priority:HIGH', keyC, 1)).toEqual([
      ids[2],
      ids[1],
    ]);
    expect(await walk('/dev/v1/tickets?filters=customer_email:x@example.com,status:OPEN', keyC)).toEqual([
      ids[2],
      ids[0],
    ]);
    expect(await walk('/dev/v1/tickets?filters=status:CLOSED', keyC)).toEqual([]);
    for (const key of [keyA, keyB]) {
      expect((await walk('/dev/v1/tickets', key, 100)).filter((id) => ids.includes(id))).toEqual([]);
      expect(await walk('/dev/v1/tickets?filters=customer_email:x@example.com', key)).toEqual([]);
    }
    for (const q of [
      '?filters=status:NEW',
      '?filters=priority:low',
      '?filters=customer_email:nope',
      '?sorts=subject',
    ]) {
      const res = await t.http.get(`/dev/v1/tickets${q}`).set(bearer(keyC));
      expect(res.status).toBe(422);
    }
    const first = await t.http.get('/dev/v1/tickets?limit=1').set(bearer(keyC));
    const wrongSort = await t.http
      .get(`/dev/v1/tickets?limit=1&sorts=created_at&cursor=${first.body.pagination.next_cursor}`)
      .set(bearer(keyC));
    expect(wrongSort.status).toBe(422);
    expect(
      (await t.http.get('/dev/v1/tickets').set(bearer((await t.createKey(shopC, ['reviews.read'])).key))).status,
    ).toBe(403);
  });
});

describe('fixtures', () => {
  test('reviews and tickets of real orders and customers, with their events; a reply; one refusal rolls back all', async () => {
    const o = await order('bob@example.com', [game, guide]);
    const before = await written();
    const seeded = await t.seed(shopA, {
      customers: [{ email: 'dora@example.com' }],
      reviews: [
        { order_id: o.id, product_id: game, rating: 5, message: 'Great', reply: 'Thank you!' },
        { order_id: o.id, product_id: guide, rating: 2 },
      ],
      tickets: [
        { email: 'dora@example.com', subject: 'Refund?', message: 'Can I?', priority: 'LOW', status: 'PENDING' },
        { email: 'bob@example.com', subject: 'About my order', message: 'Hi', order_id: o.id },
      ],
    });
    expect(seeded.reviews).toHaveLength(2);
    expect(seeded.tickets).toHaveLength(2);
    expect(await written()).toEqual({
      reviews: before.reviews + 2,
      tickets: before.tickets + 2,
      messages: before.messages + 2,
      events: before.events + 4,
    });
    const reviews = await t.http.get(`/dev/v1/reviews?filters=order_id:${o.id}`).set(bearer(keyA));
    const replied = reviews.body.data.find((r: { id: string }) => r.id === seeded.reviews[0]);
    expect(replied).toMatchObject({ rating: 5, message: 'Great', reply: 'Thank you!', replied_at: expect.any(Number) });
    const tickets = await t.http.get('/dev/v1/tickets?filters=customer_email:dora@example.com').set(bearer(keyA));
    expect(tickets.body.data).toEqual([
      expect.objectContaining({ id: seeded.tickets[0], status: 'PENDING', priority: 'LOW', message_count: 1 }),
    ]);

    // Any refusal: nothing of the file is written (customers, reviews, tickets, events).
    const pending = await order('ada@example.com', [game], { complete: false });
    const customers = await t.db.selectFrom('customers').select('id').where('shop_id', '=', shopA).execute();
    const now = await written();
    for (const [file, message] of [
      [
        {
          customers: [{ email: 'eve@example.com' }],
          tickets: [{ email: 'eve@example.com', subject: 's', message: 'm' }],
          reviews: [{ order_id: pending.id, rating: 4 }],
        },
        '/reviews/0 The order is PENDING',
      ],
      [
        {
          customers: [{ email: 'eve@example.com' }],
          tickets: [{ email: 'nobody@example.com', subject: 's', message: 'm' }],
        },
        '/tickets/0 No customer with the email nobody@example.com in this shop.',
      ],
      [
        { reviews: [{ order_id: o.id, product_id: game, rating: 3 }] },
        `/reviews/0 The order's product ${game} is already reviewed.`,
      ],
      [
        { tickets: [{ email: 'bob@example.com', subject: 's', message: 'm', order_id: pending.id }] },
        '/tickets/0 order_id is not an order of the customer bob@example.com',
      ],
    ] as const) {
      await expect(t.seed(shopA, file as never)).rejects.toThrow(FixtureError);
      await expect(t.seed(shopA, file as never)).rejects.toThrow(message);
    }
    expect(await written()).toEqual(now);
    expect(await t.db.selectFrom('customers').select('id').where('shop_id', '=', shopA).execute()).toEqual(customers);

    // The file's shape is checked before anything is written.
    for (const bad of [
      { reviews: [{ order_id: o.id, rating: 6 }] },
      { reviews: [{ order_id: o.id }] },
      { reviews: [{ order_id: o.id, rating: 3, message: '' }] },
      { tickets: [{ email: 'not-an-email', subject: 's', message: 'm' }] },
      { tickets: [{ email: 'bob@example.com', subject: 's'.repeat(201), message: 'm' }] },
      { tickets: [{ email: 'bob@example.com', subject: 's', message: 'm', priority: 'URGENT' }] },
      { tickets: [{ email: 'bob@example.com', subject: '   ', message: 'm' }] },
    ]) {
      expect(() => parseFixtures(bad, new Date())).toThrow(FixtureError);
    }
  });
});

test('every review:created and ticket:created event written here matches its documented payload', async () => {
  expect(await assertEventPayloads(t.db, shopA, ['review:created', 'ticket:created'])).toBeGreaterThan(8);
});
