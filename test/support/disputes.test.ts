// Disputes: the SANDBOX gateway opens one on a paid order (its payment page's button, `cli dispute open`, a fixture),
// the order becomes DISPUTED and cannot be refunded, completed or fulfilled while it is open; the gateway decides it
// (WON / CLOSED: the order's status comes back; LOST: what remains is refunded). Every refusal writes nothing (no
// dispute, no order change, no event). GET /disputes pages, filters, and never shows another shop's disputes.
// On real PostgreSQL: a dispute racing a refund of the same order never both win; two opens at once make one.
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import request from 'supertest';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import type { OrderRow, OrderStatus } from '../../db/tables';
import { AdminError } from '../../src/ops/admin';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { closeSandboxDispute, openSandboxDispute } from '../../src/ops/support-admin';
import { ApiError } from '../../src/errors';
import { newId, newUniqid } from '../../src/ids';
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
let productA: string;

const page = (path: string) => request(t.app).get(path);
const post = (path: string, form: Record<string, string> = {}) => request(t.app).post(path).type('form').send(form);

beforeAll(async () => {
  t = await startTestApp({ clock });
  // Test-mode shops: their orders are paid through SANDBOX, which only test mode offers.
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', mode: 'test' },
    b: { name: 'B', mode: 'test' },
  }));
  productA = (await t.seed(shopA, { products: [{ title: 'Consulting', type: 'SERVICE', price: '12.50' }] }))
    .products[0]!;
});
afterAll(() => t.close());

interface SeedOrder {
  total?: string;
  status?: OrderStatus;
  gateway?: string | null;
  refunded?: string;
  balancePaid?: string;
}

/** A paid order of one SERVICE line, written through the query layer (paid through SANDBOX by default). */
async function seedOrder(shopId: string, o: SeedOrder = {}): Promise<OrderRow> {
  const total = o.total ?? '10.00';
  const status = o.status ?? 'COMPLETED';
  const paid = status !== 'PENDING' && status !== 'VOIDED';
  return t.db.transaction().execute(async (trx) => {
    const order = await insertOrder(trx, shopId, {
      id: newId('ord'),
      uniqid: newUniqid(),
      kind: 'ORDER',
      customer_email: 'buyer@example.com',
      currency: 'USD',
      status,
      payment_status: !paid
        ? 'PENDING'
        : status === 'COMPLETED' || status === 'DISPUTED'
          ? 'PAID'
          : (status as 'PARTIALLY_REFUNDED' | 'REFUNDED'),
      gateway: o.gateway === undefined ? 'SANDBOX' : o.gateway,
      subtotal: total,
      total,
      refunded: o.refunded ?? '0',
      balance_paid: o.balancePaid ?? '0',
      is_developer_invoice: false,
      completed_at: paid ? clock.now() : null,
      created_at: clock.now(),
      updated_at: clock.now(),
    });
    await insertOrderItems(trx, shopId, [
      {
        id: newId('item'),
        order_id: order.id,
        position: 0,
        product_title: 'Consulting',
        product_type: 'SERVICE',
        quantity: 1,
        unit_price: total,
        total,
      },
    ]);
    return order;
  });
}

/** An order created over the API and paid on the SANDBOX gateway's page; returns it with its session id. */
async function paidThroughSandbox(): Promise<{ id: string; uniqid: string; sessionId: string }> {
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(keyA))
    .send({ email: 'payer@example.com', items: [{ product_id: productA, quantity: 1 }] });
  expect(created.status).toBe(201);
  const { id, uniqid } = created.body.data as { id: string; uniqid: string };
  const started = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
  expect(started.status).toBe(303);
  const sessionId = /\/sandbox\/checkout\/(sbx_[0-9a-f]{32})$/.exec(started.headers.location ?? '')![1]!;
  expect((await post(`/sandbox/checkout/${sessionId}/pay`)).status).toBe(303);
  expect((await orderRow(id)).status).toBe('COMPLETED');
  return { id, uniqid, sessionId };
}

async function orderRow(id: string) {
  return t.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Everything opening or closing a dispute may change, for one order. */
async function state(orderId: string) {
  const order = await orderRow(orderId);
  const disputes = await t.db
    .selectFrom('disputes')
    .select(['id', 'status', 'amount', 'closed_at'])
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const refunds = await t.db
    .selectFrom('refunds')
    .select(['amount', 'reason'])
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .execute();
  const events = await sql<{ type: string; data: string }>`select type, data from events
    where shop_id = ${order.shop_id} and (data::jsonb ->> 'order_id' = ${orderId} or data::jsonb ->> 'uniqid' = ${order.uniqid})
    order by created_at, id`.execute(t.db);
  return {
    status: order.status,
    payment_status: order.payment_status,
    refunded: new Decimal(order.refunded).toFixed(),
    updated_at: order.updated_at.toISOString(),
    disputes: disputes.map((d) => ({ ...d, amount: new Decimal(d.amount).toFixed() })),
    refunds: refunds.map((r) => ({ amount: new Decimal(r.amount).toFixed(), reason: r.reason })),
    events: events.rows.map((e) => ({ type: e.type, data: JSON.parse(e.data) as Record<string, unknown> })),
  };
}

async function disputeCount(): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from disputes`.execute(t.db);
  return Number(r.rows[0]!.n);
}

const listDisputes = (query = '', key = keyA) => t.http.get(`/dev/v1/disputes${query}`).set(bearer(key));

/** The error a CLI function refused with (its code and message), or a failure when it did not refuse. */
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

describe('the SANDBOX gateway page', () => {
  test('a paid session opens a dispute: the order is DISPUTED, the dispute listed, dispute:opened sent', async () => {
    const { id, uniqid, sessionId } = await paidThroughSandbox();
    const before = await page(`/sandbox/checkout/${sessionId}`);
    expect(before.status).toBe(200);
    expect(before.text).toContain(`action="/sandbox/checkout/${sessionId}/dispute"`);
    expect(before.text).toContain('>Open dispute</button>');

    clock.set('2026-11-22T11:00:00Z');
    const res = await post(`/sandbox/checkout/${sessionId}/dispute`, { reason: 'FRAUDULENT' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`http://api.test/sandbox/checkout/${sessionId}`);

    const after = await state(id);
    expect(after.status).toBe('DISPUTED');
    expect(after.payment_status).toBe('PAID');
    expect(after.disputes).toEqual([
      { id: expect.stringMatching(/^dsp_/), status: 'OPEN', amount: '12.5', closed_at: null },
    ]);
    const created = Date.parse('2026-11-22T11:00:00Z') / 1000;
    const listed = await listDisputes(`?filters=order_id:${id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      {
        id: after.disputes[0]!.id,
        order_id: id,
        order_uniqid: uniqid,
        gateway: 'SANDBOX',
        reason: 'FRAUDULENT',
        status: 'OPEN',
        amount: 12.5,
        currency: 'USD',
        customer_email: 'payer@example.com',
        evidence_due_by: created + 7 * 86400,
        created_at: created,
        updated_at: created,
      },
    ]);
    // The event's payload is the Dispute object itself (the contract's `dispute:opened` body).
    expect(after.events.filter((e) => e.type === 'dispute:opened').map((e) => e.data)).toEqual(listed.body.data);

    // The page now offers the decisions instead; the invoice shows the status.
    const disputedPage = await page(`/sandbox/checkout/${sessionId}`);
    expect(disputedPage.text).toContain(`action="/sandbox/checkout/${sessionId}/dispute/close"`);
    expect(disputedPage.text).toContain('value="LOST"');
    expect(disputedPage.text).not.toContain('>Open dispute</button>');
    expect((await page(`/invoice/${uniqid}`)).text).toContain('<span class="status" id="status">DISPUTED</span>');

    // Won: the order is COMPLETED again, nothing refunded, dispute:closed with the WON dispute.
    clock.set('2026-11-22T12:00:00Z');
    expect((await post(`/sandbox/checkout/${sessionId}/dispute/close`, { outcome: 'won' })).status).toBe(303);
    const won = await state(id);
    expect(won).toMatchObject({ status: 'COMPLETED', payment_status: 'PAID', refunded: '0', refunds: [] });
    expect(won.disputes[0]).toMatchObject({ status: 'WON', closed_at: new Date('2026-11-22T12:00:00Z') });
    const closed = won.events.filter((e) => e.type === 'dispute:closed').map((e) => e.data);
    expect(closed).toEqual([{ ...listed.body.data[0], status: 'WON', updated_at: created + 3600 }]);
    expect((await listDisputes(`?filters=order_id:${id}`)).body.data[0].status).toBe('WON');
  });

  test('refusals on the page change nothing: unpaid or unknown session, bad reason or outcome, nothing open', async () => {
    const { id, sessionId } = await paidThroughSandbox();
    const before = await state(id);
    // Nothing open yet: closing is refused.
    const noOpen = await post(`/sandbox/checkout/${sessionId}/dispute/close`, { outcome: 'WON' });
    expect(noOpen.status).toBe(409);
    expect(noOpen.text).toContain('The order has no open dispute to close.');
    const badReason = await post(`/sandbox/checkout/${sessionId}/dispute`, { reason: 'BORED' });
    expect(badReason.status).toBe(422);
    expect((await post('/sandbox/checkout/sbx_00000000000000000000000000000000/dispute')).status).toBe(404);
    expect(await state(id)).toEqual(before);

    // A session that was not paid (a second, abandoned one of another invoice).
    const created = await t.http
      .post('/dev/v1/orders')
      .set(bearer(keyA))
      .send({ email: 'abandon@example.com', items: [{ product_id: productA, quantity: 1 }] });
    const started = await post(`/invoice/${created.body.data.uniqid}/pay`, { gateway: 'SANDBOX' });
    const unpaid = /(sbx_[0-9a-f]{32})$/.exec(started.headers.location ?? '')![1]!;
    const pendingBefore = await state(created.body.data.id);
    const res = await post(`/sandbox/checkout/${unpaid}/dispute`, { reason: 'GENERAL' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Only a paid session can be disputed.');
    expect((await page(`/sandbox/checkout/${unpaid}`)).text).not.toContain('Open dispute');
    expect(await state(created.body.data.id)).toEqual(pendingBefore);

    // A bad outcome on an open dispute leaves it open.
    expect((await post(`/sandbox/checkout/${sessionId}/dispute`)).status).toBe(303);
    const open = await state(id);
    expect(open.disputes).toHaveLength(1);
    expect(open.disputes[0]!.status).toBe('OPEN');
    expect((await post(`/sandbox/checkout/${sessionId}/dispute/close`, { outcome: 'MAYBE' })).status).toBe(422);
    expect((await post(`/sandbox/checkout/${sessionId}/dispute/close`)).status).toBe(422);
    expect(await state(id)).toEqual(open);
    // The reason defaults to GENERAL.
    expect((await listDisputes(`?filters=order_id:${id}`)).body.data[0].reason).toBe('GENERAL');
  });
});

describe('an open dispute holds the order', () => {
  test('refund (ORDER_NOT_REFUNDABLE), completion, item fulfillment and a second dispute are refused; nothing changes', async () => {
    const order = await seedOrder(shopA);
    await openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id, reason: 'product_not_received' });
    const before = await state(order.id);
    expect(before.status).toBe('DISPUTED');
    expect(before.disputes).toHaveLength(1);

    const refund = await t.http.post(`/dev/v1/orders/${order.id}/refund`).set(bearer(keyA)).send({ amount: '1.00' });
    expect(refund.status).toBe(400);
    expect(refund.body.error.code).toBe('ORDER_NOT_REFUNDABLE');
    expect(refund.body.error.message).toContain('cannot be refunded while its dispute is open');
    const full = await t.http.post(`/dev/v1/orders/${order.id}/refund`).set(bearer(keyA));
    expect(full.body.error.code).toBe('ORDER_NOT_REFUNDABLE');

    const complete = await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(keyA)).send({});
    expect(complete.status).toBe(400);
    expect(complete.body.error.code).toBe('ORDER_NOT_PENDING');

    const item = await t.db.selectFrom('order_items').select('id').where('order_id', '=', order.id).executeTakeFirst();
    const fulfil = await t.http
      .post(`/dev/v1/orders/${order.id}/items/${item!.id}/fulfill`)
      .set(bearer(keyA))
      .send({ message: 'here you go' });
    expect(fulfil.status).toBe(400);
    expect(fulfil.body.error.code).toBe('ORDER_NOT_COMPLETED');

    const again = await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id }));
    expect(again).toEqual({
      code: 'CONFLICT',
      message: `The order already has an open dispute (${before.disputes[0]!.id}).`,
    });
    expect(await state(order.id)).toEqual(before);
  });

  test('a PARTIALLY_REFUNDED order disputes what remains and goes back to PARTIALLY_REFUNDED when CLOSED', async () => {
    const order = await seedOrder(shopA, { total: '10.00', status: 'PARTIALLY_REFUNDED', refunded: '3.33' });
    const dispute = await openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id });
    expect(JSON.stringify(dispute.amount)).toBe('6.67');
    expect((await state(order.id)).status).toBe('DISPUTED');
    const closed = await closeSandboxDispute(t.operator, { shopId: shopA, disputeId: dispute.id, outcome: 'closed' });
    expect(closed.status).toBe('CLOSED');
    const after = await state(order.id);
    expect(after).toMatchObject({
      status: 'PARTIALLY_REFUNDED',
      payment_status: 'PARTIALLY_REFUNDED',
      refunded: '3.33',
    });
    expect(after.refunds).toEqual([]);
    // Deciding it again is refused and changes nothing.
    const twice = await refusal(
      closeSandboxDispute(t.operator, { shopId: shopA, disputeId: dispute.id, outcome: 'LOST' }),
    );
    expect(twice).toEqual({ code: 'CONFLICT', message: `The dispute ${dispute.id} is already decided (CLOSED).` });
    expect(await state(order.id)).toEqual(after);
    // A new dispute may follow a decided one.
    const second = await openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id, reason: 'DUPLICATE' });
    expect(second.status).toBe('OPEN');
    expect((await state(order.id)).disputes).toHaveLength(2);
  });

  test('LOST refunds everything that remains: a chargeback refund, order:refunded, the order REFUNDED', async () => {
    const order = await seedOrder(shopA, { total: '10.00', status: 'PARTIALLY_REFUNDED', refunded: '4.00' });
    const dispute = await openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id, reason: 'FRAUDULENT' });
    const lost = await closeSandboxDispute(t.operator, { shopId: shopA, disputeId: dispute.id, outcome: 'LOST' });
    expect(lost.status).toBe('LOST');
    const after = await state(order.id);
    expect(after).toMatchObject({ status: 'REFUNDED', payment_status: 'REFUNDED', refunded: '10' });
    expect(after.refunds).toEqual([{ amount: '6', reason: `Chargeback: dispute ${dispute.id} lost` }]);
    // dispute:closed first, then the refund it caused.
    expect(after.events.map((e) => e.type)).toEqual(['dispute:opened', 'dispute:closed', 'order:refunded']);
    expect(after.events[2]!.data).toEqual({
      uniqid: order.uniqid,
      amount: '6.00',
      currency: 'USD',
      reason: `Chargeback: dispute ${dispute.id} lost`,
      fully_refunded: true,
    });
    // Nothing remains: neither a refund nor a new dispute.
    expect((await t.http.post(`/dev/v1/orders/${order.id}/refund`).set(bearer(keyA))).body.error.code).toBe(
      'ORDER_NOT_REFUNDABLE',
    );
    expect((await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id }))).code).toBe(
      'ORDER_NOT_COMPLETED',
    );
  });

  test('the gateway disputes only its own part of a wallet-paid order', async () => {
    // 10.00, of which the wallet paid 4.00 and a refund of 5.00 gave the wallet its 4.00 and the gateway 1.00 back.
    const order = await seedOrder(shopA, {
      total: '10.00',
      status: 'PARTIALLY_REFUNDED',
      refunded: '5.00',
      balancePaid: '4.00',
    });
    const dispute = await openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id });
    expect(JSON.stringify(dispute.amount)).toBe('5');
    // All paid from the wallet: the gateway holds nothing to dispute.
    const walletOnly = await seedOrder(shopA, { total: '10.00', balancePaid: '10.00' });
    const before = await state(walletOnly.id);
    expect(await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: walletOnly.id }))).toEqual({
      code: 'ORDER_NOT_COMPLETED',
      message: 'Nothing the gateway took remains paid on this order: nothing to dispute.',
    });
    expect(await state(walletOnly.id)).toEqual(before);
  });
});

describe('refusals of the gateway (CLI) write nothing', () => {
  test.each([
    [
      'PENDING',
      'ORDER_NOT_COMPLETED',
      'The order is PENDING; only a COMPLETED or PARTIALLY_REFUNDED order can be disputed.',
    ],
    [
      'REFUNDED',
      'ORDER_NOT_COMPLETED',
      'The order is REFUNDED; only a COMPLETED or PARTIALLY_REFUNDED order can be disputed.',
    ],
    [
      'VOIDED',
      'ORDER_NOT_COMPLETED',
      'The order is VOIDED; only a COMPLETED or PARTIALLY_REFUNDED order can be disputed.',
    ],
  ] as const)('a %s order: %s', async (status, code, message) => {
    const order = await seedOrder(shopA, { status, refunded: status === 'REFUNDED' ? '10.00' : '0' });
    const before = await state(order.id);
    const count = await disputeCount();
    expect(await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id }))).toEqual({
      code,
      message,
    });
    expect(await state(order.id)).toEqual(before);
    expect(await disputeCount()).toBe(count);
  });

  test('another gateway, an unknown or another shop order, a bad reason, an unknown shop or dispute', async () => {
    const stripe = await seedOrder(shopA, { gateway: 'STRIPE' });
    const manual = await seedOrder(shopA, { gateway: 'MANUAL' });
    const ofB = await seedOrder(shopB);
    const mine = await seedOrder(shopA);
    const states = async () => Promise.all([stripe, manual, ofB, mine].map((o) => state(o.id)));
    const before = await states();
    const count = await disputeCount();

    expect(await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: stripe.id }))).toEqual({
      code: 'GATEWAY_NOT_AVAILABLE',
      message: 'The order was paid through STRIPE; only that gateway can dispute it, not SANDBOX.',
    });
    expect((await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: manual.id }))).code).toBe(
      'GATEWAY_NOT_AVAILABLE',
    );
    // Another shop's order is not found, like a missing one.
    expect((await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: ofB.id }))).code).toBe(
      'INVOICE_NOT_FOUND',
    );
    expect((await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: 'ord_missing' }))).code).toBe(
      'INVOICE_NOT_FOUND',
    );
    expect(await refusal(openSandboxDispute(t.operator, { shopId: shopA, orderId: mine.id, reason: 'bored' }))).toEqual(
      {
        code: 'ADMIN',
        message:
          '--reason must be one of FRAUDULENT, PRODUCT_NOT_RECEIVED, PRODUCT_UNACCEPTABLE, DUPLICATE, SUBSCRIPTION_CANCELED, CREDIT_NOT_PROCESSED, GENERAL',
      },
    );
    expect(await refusal(openSandboxDispute(t.operator, { shopId: 'shop_missing', orderId: mine.id }))).toEqual({
      code: 'ADMIN',
      message: 'No shop with id shop_missing',
    });
    expect(
      (await refusal(closeSandboxDispute(t.operator, { shopId: shopA, disputeId: 'dsp_missing', outcome: 'WON' })))
        .code,
    ).toBe('NOT_FOUND');
    // Another shop's dispute is not found either.
    const dB = await openSandboxDispute(t.operator, { shopId: shopB, orderId: ofB.id });
    const afterB = await state(ofB.id);
    expect(
      (await refusal(closeSandboxDispute(t.operator, { shopId: shopA, disputeId: dB.id, outcome: 'WON' }))).code,
    ).toBe('NOT_FOUND');
    expect(await state(ofB.id)).toEqual(afterB);
    expect(await disputeCount()).toBe(count + 1);
    const after = await states();
    expect([after[0], after[1], after[3]]).toEqual([before[0], before[1], before[3]]);
  });
});

describe('GET /disputes', () => {
  let shopC: string;
  let keyC: string;
  const ids: string[] = [];
  beforeAll(async () => {
    shopC = await t.createShop({ name: 'C', mode: 'test' });
    keyC = (await t.createKey(shopC, ['disputes.read'])).key;
    for (const [i, reason] of (['FRAUDULENT', 'DUPLICATE', 'FRAUDULENT'] as const).entries()) {
      clock.set(`2026-11-23T0${i}:00:00Z`);
      const order = await seedOrder(shopC);
      ids.push((await openSandboxDispute(t.operator, { shopId: shopC, orderId: order.id, reason })).id);
    }
    await closeSandboxDispute(t.operator, { shopId: shopC, disputeId: ids[0]!, outcome: 'WON' });
  });

  test('newest first, a cursor walk, filters; another shop sees none of them', async () => {
    const first = await listDisputes('?limit=2', keyC);
    expect(first.status).toBe(200);
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.pagination.has_more).toBe(true);
    const second = await listDisputes(`?limit=2&cursor=${first.body.pagination.next_cursor}`, keyC);
    expect(second.body.data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    expect(second.body.pagination).toEqual({ next_cursor: null, has_more: false });

    expect((await listDisputes('?filters=status:OPEN', keyC)).body.data.map((d: { id: string }) => d.id)).toEqual([
      ids[2],
      ids[1],
    ]);
    expect(
      (await listDisputes('?filters=reason:FRAUDULENT,status:WON', keyC)).body.data.map((d: { id: string }) => d.id),
    ).toEqual([ids[0]]);
    // The cursor is bound to its filters.
    const filtered = await listDisputes('?limit=1&filters=status:OPEN', keyC);
    const mismatch = await listDisputes(`?limit=1&cursor=${filtered.body.pagination.next_cursor}`, keyC);
    expect(mismatch.status).toBe(422);

    // Other shops: none of C's disputes, whatever the filter.
    for (const key of [keyA, keyB]) {
      const all: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await listDisputes(`?limit=100${cursor ? `&cursor=${cursor}` : ''}`, key);
        expect(res.status).toBe(200);
        all.push(...res.body.data.map((d: { id: string }) => d.id));
        cursor = res.body.pagination.next_cursor;
      } while (cursor);
      expect(all.filter((id) => ids.includes(id))).toEqual([]);
      expect(
        (
          await listDisputes(
            `?filters=order_id:${(await t.db.selectFrom('disputes').select('order_id').where('id', '=', ids[0]!).executeTakeFirstOrThrow()).order_id}`,
            key,
          )
        ).body.data,
      ).toEqual([]);
    }
  });

  test('bad filters are 422; the scope is disputes.read', async () => {
    for (const q of [
      '?filters=status:LOSTISH',
      '?filters=amount:5',
      '?filters=order_id:a b',
      '?limit=0',
      '?limit=101',
    ]) {
      const res = await listDisputes(q, keyC);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    const other = (await t.createKey(shopC, ['orders.read'])).key;
    const res = await listDisputes('', other);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });
});

describe('fixtures', () => {
  test('disputes are opened (and decided) by the order gateway, with their events; a bad one writes nothing', async () => {
    const open = await seedOrder(shopA);
    const won = await seedOrder(shopA);
    const stripe = await seedOrder(shopA, { gateway: 'STRIPE' });
    const seeded = await t.seed(shopA, {
      disputes: [
        { order_id: open.id, reason: 'FRAUDULENT' },
        { order_id: won.id, status: 'WON' },
        { order_id: stripe.id, gateway: 'STRIPE', reason: 'DUPLICATE', status: 'LOST' },
      ],
    });
    expect(seeded.disputes).toHaveLength(3);
    expect((await state(open.id)).status).toBe('DISPUTED');
    expect((await state(won.id)).status).toBe('COMPLETED');
    const lost = await state(stripe.id);
    expect(lost.status).toBe('REFUNDED');
    expect(lost.events.map((e) => e.type)).toEqual(['dispute:opened', 'dispute:closed', 'order:refunded']);
    expect((await state(won.id)).events.map((e) => e.type)).toEqual(['dispute:opened', 'dispute:closed']);

    // One refusal anywhere rolls the whole file back: no product, no dispute, no event.
    const fresh = await seedOrder(shopA);
    const before = await state(fresh.id);
    const count = await disputeCount();
    const products = await t.db.selectFrom('products').select('id').where('shop_id', '=', shopA).execute();
    await expect(
      t.seed(shopA, {
        products: [{ title: 'Rolled back', price: '1.00' }],
        disputes: [{ order_id: fresh.id }, { order_id: stripe.id, gateway: 'STRIPE' }],
      }),
    ).rejects.toThrow(
      new FixtureError(
        'The fixture file is not valid: /disputes/1 The order is REFUNDED; only a COMPLETED or PARTIALLY_REFUNDED order can be disputed.',
      ),
    );
    // Two open disputes of one order: the file is refused before anything is written (`cli seed` validates first),
    // and the seed itself refuses it too.
    const twice = { disputes: [{ order_id: fresh.id }, { order_id: fresh.id }] };
    expect(() => parseFixtures(twice, new Date())).toThrow(
      '/disputes/1/order_id already has an open dispute in /disputes/0',
    );
    await expect(t.seed(shopA, twice)).rejects.toThrow(`/disputes/1 The order already has an open dispute (`);
    expect(() => parseFixtures({ disputes: [{ order_id: fresh.id, status: 'PENDING' }] }, new Date())).toThrow(
      FixtureError,
    );
    expect(() => parseFixtures({ disputes: [{ order_id: 'not an id' }] }, new Date())).toThrow(FixtureError);
    expect(() => parseFixtures({ disputes: [{ order_id: fresh.id, reason: 'BORED' }] }, new Date())).toThrow(
      FixtureError,
    );
    // A decided dispute may be followed by another of the same order.
    expect(() =>
      parseFixtures({ disputes: [{ order_id: fresh.id, status: 'WON' }, { order_id: fresh.id }] }, new Date()),
    ).not.toThrow();
    expect(await state(fresh.id)).toEqual(before);
    expect(await disputeCount()).toBe(count);
    expect(await t.db.selectFrom('products').select('id').where('shop_id', '=', shopA).execute()).toEqual(products);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('a dispute and a full refund of the same order at once: exactly one of them, 10 rounds', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 10; round++) {
      const { id, sessionId } = await paidThroughSandbox();
      const [dispute, refund] = await Promise.all([
        post(`/sandbox/checkout/${sessionId}/dispute`, { reason: 'FRAUDULENT' }),
        t.http.post(`/dev/v1/orders/${id}/refund`).set(bearer(keyA)),
      ]);
      const after = await state(id);
      if (dispute.status === 303) {
        expect(refund.status).toBe(400);
        expect(refund.body.error.code).toBe('ORDER_NOT_REFUNDABLE');
        expect(after).toMatchObject({ status: 'DISPUTED', refunded: '0', refunds: [] });
        expect(after.disputes).toHaveLength(1);
        outcomes.push('dispute');
      } else {
        expect(dispute.status).toBe(400);
        expect(refund.status).toBe(200);
        expect(after).toMatchObject({ status: 'REFUNDED', refunded: '12.5', disputes: [] });
        expect(after.refunds).toHaveLength(1);
        outcomes.push('refund');
      }
      expect(after.events.filter((e) => e.type === 'dispute:opened').length + after.refunds.length).toBe(1);
    }
    console.log(
      `dispute vs refund, 10 rounds: ${outcomes.filter((o) => o === 'dispute').length} disputes won, ${outcomes.filter((o) => o === 'refund').length} refunds won`,
    );
  });

  pgOnly('two (and ten) opens of one order at once: one dispute, one event, the others 409', async () => {
    const { id, sessionId } = await paidThroughSandbox();
    const two = await Promise.all([
      post(`/sandbox/checkout/${sessionId}/dispute`, { reason: 'GENERAL' }),
      post(`/sandbox/checkout/${sessionId}/dispute`, { reason: 'DUPLICATE' }),
    ]);
    expect(two.map((r) => r.status).sort()).toEqual([303, 409]);
    const after = await state(id);
    expect(after.status).toBe('DISPUTED');
    expect(after.disputes).toHaveLength(1);
    expect(after.events.filter((e) => e.type === 'dispute:opened')).toHaveLength(1);

    const order = await seedOrder(shopA);
    const ten = await Promise.allSettled(
      Array.from({ length: 10 }, () => openSandboxDispute(t.operator, { shopId: shopA, orderId: order.id })),
    );
    expect(ten.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const reasons = ten.flatMap((r) => (r.status === 'rejected' ? [(r.reason as ApiError).code] : []));
    expect(reasons).toEqual(Array(9).fill('CONFLICT'));
    expect((await state(order.id)).disputes).toHaveLength(1);
    console.log(`two opens: statuses ${two.map((r) => r.status).join(', ')}; ten opens: 1 dispute, 9 CONFLICT`);
  });
});

test('every dispute:opened, dispute:closed and order:refunded event written here matches its documented payload', async () => {
  const types = ['dispute:opened', 'dispute:closed', 'order:refunded'];
  const checked = (await assertEventPayloads(t.db, shopA, types)) + (await assertEventPayloads(t.db, shopB, types));
  expect(checked).toBeGreaterThan(10);
});
