// POST /orders/{id}/items/{itemId}/fulfill: each content field delivered, stored (merged with what was there) and
// announced; the buyer's mail unless asked not to; every refusal (bad links, another shop's files, an order not
// completed, an unknown item) writes nothing: no item change, no event, no mail.
import { sql } from 'kysely';
import { insertAttachment } from '../../db/queries/attachments';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import type { OrderItemRow, OrderRow, OrderStatus } from '../../db/tables';
import { newId, newUniqid } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let fileA: string;
let fileB: string;

const seededAt = new Date('2026-11-01T00:00:00Z');

beforeAll(async () => {
  clock = new ManualClock('2026-11-22T00:00:00Z');
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { scopes: ['orders.write'] } }));
  const attach = (shopId: string, filename: string) =>
    t.db.transaction().execute(async (trx) => {
      const row = await insertAttachment(trx, shopId, {
        id: newId('att'),
        filename,
        content_type: 'application/pdf',
        content: Buffer.from('%PDF-1.4'),
      });
      return row.id;
    });
  fileA = await attach(shopA, 'manual-a.pdf');
  fileB = await attach(shopB, 'manual-b.pdf');
});
afterAll(() => t.close());

interface Seeded {
  order: OrderRow;
  items: OrderItemRow[];
}

/** A completed (by default) order of two items, written through the query layer. */
async function seedOrder(
  shopId: string,
  o: { status?: OrderStatus; email?: string | null; deliveredItems?: Record<string, unknown> } = {},
): Promise<Seeded> {
  const status = o.status ?? 'COMPLETED';
  return t.db.transaction().execute(async (trx) => {
    const order = await insertOrder(trx, shopId, {
      id: newId('ord'),
      uniqid: newUniqid(),
      kind: 'ORDER',
      customer_email: o.email === undefined ? 'buyer@example.com' : o.email,
      currency: 'USD',
      status,
      payment_status:
        status === 'COMPLETED'
          ? 'PAID'
          : status === 'PENDING'
            ? 'PENDING'
            : status === 'VOIDED'
              ? 'CANCELLED'
              : status === 'PARTIALLY_REFUNDED'
                ? 'PARTIALLY_REFUNDED'
                : 'REFUNDED',
      subtotal: '30.00',
      total: '30.00',
      is_developer_invoice: true,
      created_at: seededAt,
      updated_at: seededAt,
    });
    const item = (position: number, title: string, variant: string | null) => ({
      id: newId('item'),
      order_id: order.id,
      position,
      product_title: title,
      product_type: 'DYNAMIC' as const,
      variant_title: variant,
      quantity: 1,
      unit_price: '15.00',
      total: '15.00',
      delivery_status: 'AWAITING_FULFILLMENT' as const,
      ...(position === 0 && o.deliveredItems ? { delivered_items: JSON.stringify(o.deliveredItems) } : {}),
    });
    const items = await insertOrderItems(trx, shopId, [item(0, 'Game Key', 'Steam'), item(1, 'Setup Service', null)]);
    return { order, items };
  });
}

const fulfill = (orderId: string, itemId: string, body: unknown, key = keyA) =>
  t.http
    .post(`/dev/v1/orders/${orderId}/items/${itemId}/fulfill`)
    .set(bearer(key))
    .send(body as object);

/** What a delivery may change: the items, the order's updated_at, its events and the mail queue. */
async function state(s: Seeded) {
  const items = await t.db
    .selectFrom('order_items')
    .select(['id', 'delivery_status', 'delivered_at', 'delivered_items'])
    .where('order_id', '=', s.order.id)
    .orderBy('position')
    .execute();
  const order = await t.db
    .selectFrom('orders')
    .select(['updated_at', 'status'])
    .where('id', '=', s.order.id)
    .executeTakeFirstOrThrow();
  const events = await sql<{ data: string }>`select data from events
    where type = 'order:item_delivered' order by created_at, id`.execute(t.db);
  const mail = await t.db
    .selectFrom('outbound_emails')
    .select(['shop_id', 'to_address', 'template', 'subject', 'text'])
    .where('text', 'like', `%${s.order.uniqid}%`)
    .orderBy('id')
    .execute();
  return {
    items: items.map((i) => ({ ...i, delivered_at: i.delivered_at?.toISOString() ?? null })),
    order: { ...order, updated_at: order.updated_at.toISOString() },
    events: events.rows
      .map((e) => JSON.parse(e.data) as { uniqid: string; fulfillment: unknown })
      .filter((e) => e.uniqid === s.order.uniqid),
    mail,
  };
}

test('a message: the item DELIVERED at the clock, the answer, the event, the mail to the buyer', async () => {
  const s = await seedOrder(shopA);
  const [item, other] = s.items;
  clock.set('2026-11-22T03:10:00Z');
  const res = await fulfill(s.order.id, item!.id, { message: 'Your key: ABC-123' });
  expect(res.status).toBe(200);
  const expected = {
    line_item_id: item!.id,
    delivery_status: 'DELIVERED',
    delivered_at: '2026-11-22T03:10:00.000Z',
    delivered_items: { message: 'Your key: ABC-123' },
  };
  expect(res.body).toEqual({ data: expected });
  const after = await state(s);
  expect(after.items[0]).toEqual({
    id: item!.id,
    delivery_status: 'DELIVERED',
    delivered_at: '2026-11-22T03:10:00.000Z',
    delivered_items: { message: 'Your key: ABC-123' },
  });
  // The other item is not touched.
  expect(after.items[1]).toMatchObject({ id: other!.id, delivery_status: 'AWAITING_FULFILLMENT', delivered_at: null });
  expect(after.order).toEqual({ status: 'COMPLETED', updated_at: '2026-11-22T03:10:00.000Z' });
  expect(after.events).toEqual([{ uniqid: s.order.uniqid, fulfillment: expected }]);
  expect(after.mail).toHaveLength(1);
  expect(after.mail[0]).toMatchObject({
    shop_id: shopA,
    to_address: 'buyer@example.com',
    template: 'delivery',
    subject: `Your delivery from Shop A (order ${s.order.uniqid})`,
  });
  expect(after.mail[0]!.text).toContain('Game Key (Steam):');
  expect(after.mail[0]!.text).toContain('  Your key: ABC-123');
});

test('codes, links and files each deliver; each key sent replaces that key, the others are kept', async () => {
  const s = await seedOrder(shopA, { deliveredItems: { note: 'from the dynamic callback' } });
  const item = s.items[0]!;
  const codes = await fulfill(s.order.id, item.id, { codes: ['AAA-111', 'BBB-222'] });
  expect(codes.status).toBe(200);
  expect(codes.body.data.delivered_items).toEqual({ codes: ['AAA-111', 'BBB-222'] });

  const links = [
    { url: 'https://cdn.example.com/dl/1', label: 'Download' },
    { url: 'http://mirror.example.com/dl/1', label: 'Mirror' },
  ];
  const linked = await fulfill(s.order.id, item.id, { links });
  expect(linked.body.data.delivered_items).toEqual({ links });

  const filed = await fulfill(s.order.id, item.id, { files: [{ attachment_id: fileA }], codes: ['CCC-333'] });
  expect(filed.status).toBe(200);
  expect(filed.body.data.delivered_items).toEqual({ codes: ['CCC-333'], files: [{ attachment_id: fileA }] });

  const after = await state(s);
  expect(after.items[0]!.delivered_items).toEqual({
    note: 'from the dynamic callback',
    codes: ['CCC-333'],
    links,
    files: [{ attachment_id: fileA }],
  });
  expect(after.events.map((e) => (e.fulfillment as { delivered_items: unknown }).delivered_items)).toEqual([
    { codes: ['AAA-111', 'BBB-222'] },
    { links },
    { codes: ['CCC-333'], files: [{ attachment_id: fileA }] },
  ]);
  expect(after.mail).toHaveLength(3);
  expect(after.mail[0]!.text).toContain('  AAA-111\n  BBB-222');
  expect(after.mail[1]!.text).toContain('  Download: https://cdn.example.com/dl/1');
  expect(after.mail[2]!.text).toContain('  File: manual-a.pdf');
});

test('links that are not http(s): 422, nothing written', async () => {
  const s = await seedOrder(shopA);
  const before = await state(s);
  for (const url of ['ftp://example.com/file', 'javascript:alert(1)', 'mailto:a@example.com', 'example.com/x']) {
    const res = await fulfill(s.order.id, s.items[0]!.id, { links: [{ url, label: 'Get it' }] });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  }
  expect(await state(s)).toEqual(before);
});

test('files of another shop (or of none): 422 on files[i].attachment_id, nothing written', async () => {
  const s = await seedOrder(shopA);
  const before = await state(s);
  const res = await fulfill(s.order.id, s.items[0]!.id, {
    message: 'Here you go',
    files: [{ attachment_id: fileA }, { attachment_id: fileB }, { attachment_id: 'att_missing' }],
  });
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([
    { field: 'files[1].attachment_id', message: 'is not an attachment of this shop' },
    { field: 'files[2].attachment_id', message: 'is not an attachment of this shop' },
  ]);
  expect(await state(s)).toEqual(before);
});

test('an order not completed: 400 ORDER_NOT_COMPLETED, nothing written; PARTIALLY_REFUNDED may deliver', async () => {
  for (const status of ['PENDING', 'VOIDED', 'REFUNDED'] as const) {
    const s = await seedOrder(shopA, { status });
    const before = await state(s);
    const res = await fulfill(s.order.id, s.items[0]!.id, { message: 'Too early' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ORDER_NOT_COMPLETED');
    expect(await state(s)).toEqual(before);
  }
  const partly = await seedOrder(shopA, { status: 'PARTIALLY_REFUNDED' });
  expect((await fulfill(partly.order.id, partly.items[1]!.id, { message: 'Still yours' })).status).toBe(200);
});

test('notify_customer false, or no buyer email: no mail, the event still written', async () => {
  const quiet = await seedOrder(shopA);
  const res = await fulfill(quiet.order.id, quiet.items[0]!.id, { codes: ['Q-1'], notify_customer: false });
  expect(res.status).toBe(200);
  let after = await state(quiet);
  expect(after.mail).toEqual([]);
  expect(after.events).toHaveLength(1);
  expect(after.items[0]!.delivery_status).toBe('DELIVERED');

  const noEmail = await seedOrder(shopA, { email: null });
  const mailBefore = await t.db.selectFrom('outbound_emails').select('id').execute();
  expect((await fulfill(noEmail.order.id, noEmail.items[0]!.id, { message: 'No one to mail' })).status).toBe(200);
  expect(await t.db.selectFrom('outbound_emails').select('id').execute()).toHaveLength(mailBefore.length);
  after = await state(noEmail);
  expect(after.events).toHaveLength(1);
});

test('unknown item, an item of another order, another shop: 404, nothing written', async () => {
  const s = await seedOrder(shopA);
  const other = await seedOrder(shopA);
  const before = [await state(s), await state(other)];
  const missingItem = await fulfill(s.order.id, 'item_00000000000000000000000000000000', { message: 'x' });
  expect(missingItem.status).toBe(404);
  expect(missingItem.body.error.code).toBe('ORDER_ITEM_NOT_FOUND');
  const foreignItem = await fulfill(s.order.id, other.items[0]!.id, { message: 'x' });
  expect(foreignItem.status).toBe(404);
  expect(foreignItem.body.error.code).toBe('ORDER_ITEM_NOT_FOUND');
  const otherShop = await fulfill(s.order.id, s.items[0]!.id, { message: 'x' }, keyB);
  expect(otherShop.status).toBe(404);
  expect(otherShop.body.error.code).toBe('INVOICE_NOT_FOUND');
  const noOrder = await fulfill('ord_00000000000000000000000000000000', s.items[0]!.id, { message: 'x' });
  expect(noOrder.body.error.code).toBe('INVOICE_NOT_FOUND');
  expect([await state(s), await state(other)]).toEqual(before);
});

test('a body without content (only notify_customer, or empty): 422, nothing written', async () => {
  const s = await seedOrder(shopA);
  const before = await state(s);
  for (const body of [{}, { notify_customer: true }, { codes: [] }]) {
    const res = await fulfill(s.order.id, s.items[0]!.id, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  }
  expect(await state(s)).toEqual(before);
});

test('an Idempotency-Key replays the same answer: one delivery, one event, one mail', async () => {
  const s = await seedOrder(shopA);
  clock.set('2026-11-22T05:00:00Z');
  const send = () =>
    t.http
      .post(`/dev/v1/orders/${s.order.id}/items/${s.items[0]!.id}/fulfill`)
      .set(bearer(keyA))
      .set('Idempotency-Key', `fulfill-${s.items[0]!.id}`)
      .send({ codes: ['ONCE-1'] });
  const first = await send();
  clock.advance(60_000);
  const second = await send();
  expect(first.status).toBe(200);
  expect(second.status).toBe(200);
  expect(second.body).toEqual(first.body);
  expect(second.body.data.delivered_at).toBe('2026-11-22T05:00:00.000Z');
  expect(second.headers['idempotency-status']).toBe('cached');
  const after = await state(s);
  expect(after.events).toHaveLength(1);
  expect(after.mail).toHaveLength(1);
  expect(after.items[0]!.delivered_at).toBe('2026-11-22T05:00:00.000Z');
});

test('through the API: an order created and completed over HTTP has its item delivered by hand', async () => {
  const product = (await t.seed(shopA, { products: [{ title: 'Custom Artwork', type: 'SERVICE', price: '40.00' }] }))
    .products[0]!;
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(keyA))
    .send({ email: 'artwork@example.com', items: [{ product_id: product, quantity: 1 }] });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const itemId = created.body.data.items[0].id as string;
  // Not completed yet: refused.
  expect((await fulfill(id, itemId, { message: 'Too early' })).body.error.code).toBe('ORDER_NOT_COMPLETED');
  const completed = await t.http
    .post(`/dev/v1/orders/${id}/complete`)
    .set(bearer(keyA))
    .send({ suppress_emails: true });
  expect(completed.status).toBe(200);
  clock.set('2026-11-22T09:00:00Z');
  const res = await fulfill(id, itemId, {
    message: 'Your artwork is ready',
    links: [{ url: 'https://cdn.example.com/art.png', label: 'Artwork' }],
    files: [{ attachment_id: fileA }],
  });
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ line_item_id: itemId, delivery_status: 'DELIVERED' });
  const mail = await t.db
    .selectFrom('outbound_emails')
    .select(['to_address', 'template', 'text'])
    .where('to_address', '=', 'artwork@example.com')
    .execute();
  expect(mail).toEqual([
    expect.objectContaining({
      template: 'delivery',
      text: expect.stringContaining('Artwork: https://cdn.example.com/art.png'),
    }),
  ]);
});
