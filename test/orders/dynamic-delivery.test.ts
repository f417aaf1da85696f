// Dynamic delivery: a completed order's DYNAMIC line item is sent, signed (verified with the `standardwebhooks`
// package, written by others), to the product's `dynamic_webhook` by the worker, after commit, and the answer
// decides the item: pending (fulfilled later through the API), delivered content (event and mail), or, once the
// retries run out on an injected clock, FAILED. A rolled-back completion queues nothing.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import type { DynamicDeliveryRow, OrderItemRow } from '../../db/tables';
import { queueDynamicDelivery } from '../../src/domain/orders/dynamic-delivery';
import { revealDynamicSecret } from '../../src/ops/admin';
import { newId, newUniqid } from '../../src/ids';
import { clockAhead, ManualClock } from '../../src/platform/clock';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { loadSecretBox } from '../../src/platform/secret-box';
import { dynamicDeliveryJob, parseDynamicAnswer } from '../../src/worker/dynamic-delivery';
import { MAX_ATTEMPTS, retrySchedule } from '../../src/worker/webhook-delivery';
import type { Job } from '../../src/worker/worker';
import { countWhere } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

interface Request {
  headers: IncomingMessage['headers'];
  body: string;
}

/** The merchant's server on 127.0.0.1: records each request and answers with `reply`. */
class MerchantServer {
  readonly requests: Request[] = [];
  reply: (res: ServerResponse) => void = (res) => res.writeHead(200).end('{"status":"pending"}');
  private server: Server | undefined;
  port = 0;

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        this.requests.push({ headers: req.headers, body });
        this.reply(res);
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/deliver`;
  }
}

const json = (status: number, body: unknown) => (res: ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

let t: TestApp;
let clock: ManualClock;
let shop: string;
let key: string;
let merchant: MerchantServer;
let job: Job;

beforeAll(async () => {
  clock = new ManualClock(Date.now()); // standardwebhooks refuses timestamps 5 minutes away from the real time
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  shop = await t.createShop({ name: 'Dyn Shop' });
  ({ key } = await t.createKey(shop, ['orders.read', 'orders.write', 'products.read', 'products.write']));
  job = dynamicDeliveryJob(t.db, {
    clock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, undefined),
    allowPrivateTargets: true,
    timeoutMs: 2000,
    random: () => 0.5, // no jitter: the schedule is checked exactly
  });
});

afterAll(async () => {
  await t.close();
});

beforeEach(async () => {
  clock.set(Date.now());
  // Each test sees only its own requests: one left retrying by an earlier test is not sent to this one's server.
  await sql`delete from dynamic_deliveries`.execute(t.db);
  merchant = new MerchantServer();
  await merchant.listen();
});

afterEach(async () => {
  await merchant.close();
});

/** A completed order of one DYNAMIC item, its delivery queued in the same transaction, as the completion does. */
async function completedOrder(
  options: { url?: string; shopId?: string; rollBack?: boolean } = {},
): Promise<{ orderId: string; uniqid: string; item: OrderItemRow }> {
  const shopId = options.shopId ?? shop;
  const orderId = newId('ord');
  const uniqid = newUniqid();
  const now = clock.now();
  let item: OrderItemRow | undefined;
  const work = t.db.transaction().execute(async (trx) => {
    await insertOrder(trx, shopId, {
      id: orderId,
      uniqid,
      kind: 'ORDER',
      customer_email: 'buyer@example.com',
      currency: 'USD',
      status: 'COMPLETED',
      payment_status: 'PAID',
      subtotal: '10',
      total: '10',
      is_developer_invoice: false,
      completed_at: now,
      created_at: now,
      updated_at: now,
    });
    [item] = await insertOrderItems(trx, shopId, [
      {
        id: newId('item'),
        order_id: orderId,
        position: 0,
        product_title: 'Game key',
        product_type: 'DYNAMIC',
        quantity: 2,
        unit_price: '5',
        total: '10',
        custom_fields: JSON.stringify({ username: 'neo' }),
        delivery_instructions: 'Check your inbox',
        created_at: now,
      },
    ]);
    await queueDynamicDelivery(shopWrite(trx, shopId, new Effects(), clock), {
      orderUniqid: uniqid,
      orderId,
      item: item!,
      url: options.url ?? merchant.url,
      customerEmail: 'buyer@example.com',
    });
    if (options.rollBack) throw new Error('completion failed after queueing');
  });
  if (options.rollBack) await expect(work).rejects.toThrow('completion failed after queueing');
  else await work;
  return { orderId, uniqid, item: item! };
}

async function itemRow(id: string): Promise<OrderItemRow> {
  return t.db.selectFrom('order_items').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function deliveryOf(itemId: string): Promise<DynamicDeliveryRow> {
  return t.db
    .selectFrom('dynamic_deliveries')
    .selectAll()
    .where('order_item_id', '=', itemId)
    .executeTakeFirstOrThrow();
}

async function eventsOf(uniqid: string) {
  const { rows } = await sql<{ type: string; data: string }>`
    select type, data from events where shop_id = ${shop} and data::jsonb ->> 'uniqid' = ${uniqid}`.execute(t.db);
  return rows.map((r) => ({ type: r.type, data: JSON.parse(r.data) as Record<string, unknown> }));
}

async function mailsTo(uniqid: string) {
  return t.db
    .selectFrom('outbound_emails')
    .select(['to_address', 'template', 'subject', 'text'])
    .where('shop_id', '=', shop)
    .where('subject', 'like', `%${uniqid}%`)
    .execute();
}

const verify = (secret: string, r: Request) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

describe('the request', () => {
  test('is signed with the shop secret (standardwebhooks verifies it) and carries the line item', async () => {
    const { uniqid, item } = await completedOrder();
    expect(await job.runOnce()).toBe(1);
    expect(merchant.requests).toHaveLength(1);
    const request = merchant.requests[0]!;
    const { secret } = await revealDynamicSecret(t.operator, shop);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const delivery = await deliveryOf(item.id);
    expect(request.headers['webhook-id']).toBe(delivery.id);
    expect(verify(secret, request)).toEqual({
      event: 'order:dynamic_delivery',
      data: {
        uniqid,
        line_item_id: item.id,
        product_id: null,
        variant_id: null,
        product_title: 'Game key',
        variant_title: null,
        quantity: 2,
        customer_email: 'buyer@example.com',
        custom_fields: { username: 'neo' },
        delivery_instructions: 'Check your inbox',
      },
    });
    // Stored sealed, never in clear; asking again gives the same secret.
    const stored = await t.db
      .selectFrom('dynamic_delivery_secrets')
      .select('secret')
      .where('shop_id', '=', shop)
      .executeTakeFirstOrThrow();
    expect(Buffer.from(stored.secret).toString('latin1')).not.toContain(secret.slice(6));
    expect((await revealDynamicSecret(t.operator, shop)).secret).toBe(secret);
  });

  test("a test shop's clock advanced 35 days: signed on real time, so standardwebhooks still verifies it", async () => {
    const testShop = await t.createShop({ mode: 'test', name: 'Dyn Test Shop' });
    const testKey = (await t.createKey(testShop, ['*'])).key;
    const moved = await t.http
      .post('/dev/v1/me/test-clock/advance')
      .set(bearer(testKey))
      .send({ seconds: 35 * 86_400 });
    expect(moved.status).toBe(200);
    const { uniqid } = await completedOrder({ shopId: testShop });
    // The worker's pass over the shop, on its clock (src/worker/worker.ts).
    expect(await job.runOnce({ shopId: testShop, clock: clockAhead(clock, 35 * 86_400_000) })).toBe(1);
    expect(merchant.requests).toHaveLength(1);
    const request = merchant.requests[0]!;
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300);
    const { secret } = await revealDynamicSecret(t.operator, testShop);
    expect(verify(secret, request)).toMatchObject({ event: 'order:dynamic_delivery', data: { uniqid } });
  });

  test('each shop signs with its own secret', async () => {
    const other = await t.createShop({ name: 'Other' });
    await completedOrder({ shopId: other });
    await job.runOnce();
    const request = merchant.requests[0]!;
    const mine = (await revealDynamicSecret(t.operator, shop)).secret;
    const theirs = (await revealDynamicSecret(t.operator, other)).secret;
    expect(theirs).not.toBe(mine);
    expect(() => verify(mine, request)).toThrow();
    expect(verify(theirs, request)).toMatchObject({ event: 'order:dynamic_delivery' });
  });

  test('is never sent inside the completing transaction: a rolled-back completion queues nothing', async () => {
    const before = await t.db
      .selectFrom('dynamic_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    const { orderId } = await completedOrder({ rollBack: true });
    expect(await countWhere(t.db, 'orders', 'id', orderId)).toBe(0);
    const after = await t.db
      .selectFrom('dynamic_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
    expect(await job.runOnce()).toBe(0);
    expect(merchant.requests).toHaveLength(0);
  });
});

describe('the answer', () => {
  test('{ "status": "pending" }: the item awaits fulfillment, then the merchant fulfils it through the API', async () => {
    const { orderId, uniqid, item } = await completedOrder();
    expect((await itemRow(item.id)).delivery_status).toBe('PENDING');
    merchant.reply = json(200, { status: 'pending' });
    await job.runOnce();
    expect((await itemRow(item.id)).delivery_status).toBe('AWAITING_FULFILLMENT');
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, last_error: null });
    expect(await eventsOf(uniqid)).toEqual([]);
    expect(await mailsTo(uniqid)).toEqual([]);
    // Settled: never sent again.
    clock.advance(24 * 3_600_000);
    expect(await job.runOnce()).toBe(0);
    expect(merchant.requests).toHaveLength(1);

    const res = await t.http
      .post(`/dev/v1/orders/${orderId}/items/${item.id}/fulfill`)
      .set(bearer(key))
      .send({ codes: ['LATER-1'] });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ line_item_id: item.id, delivery_status: 'DELIVERED' });
    expect((await itemRow(item.id)).delivery_status).toBe('DELIVERED');
  });

  test('content: the item is DELIVERED now, order:item_delivered is emitted and the buyer is mailed', async () => {
    const { uniqid, item } = await completedOrder();
    const content = {
      message: 'Enjoy the game',
      codes: ['AAAA-BBBB', 'CCCC-DDDD'],
      links: [{ url: 'https://cdn.example.com/manual.pdf', label: 'Manual' }],
    };
    merchant.reply = json(201, content);
    clock.advance(1234);
    const now = clock.now();
    await job.runOnce();
    const row = await itemRow(item.id);
    expect(row).toMatchObject({ delivery_status: 'DELIVERED', delivered_items: content });
    expect(row.delivered_at?.toISOString()).toBe(now.toISOString());
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(await eventsOf(uniqid)).toEqual([
      {
        type: 'order:item_delivered',
        data: {
          uniqid,
          fulfillment: {
            line_item_id: item.id,
            delivery_status: 'DELIVERED',
            delivered_at: now.toISOString(),
            delivered_items: content,
          },
        },
      },
    ]);
    const mails = await mailsTo(uniqid);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to_address: 'buyer@example.com', template: 'delivery' });
    expect(mails[0]!.subject).toContain('Dyn Shop');
    for (const line of ['Enjoy the game', 'AAAA-BBBB', 'CCCC-DDDD', 'Manual: https://cdn.example.com/manual.pdf'])
      expect(mails[0]!.text).toContain(line);
  });

  test('an unusable body is retried, the item untouched; a usable one on the retry delivers it', async () => {
    const { uniqid, item } = await completedOrder();
    merchant.reply = json(200, { links: [{ url: 'javascript:alert(1)', label: 'x' }] });
    await job.runOnce();
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'RETRYING', attempts: 1 });
    expect((await deliveryOf(item.id)).last_error).toMatch(/unusable answer \(200\).*http\(s\)/);
    expect((await itemRow(item.id)).delivery_status).toBe('PENDING');
    expect(await eventsOf(uniqid)).toEqual([]);
    expect(await mailsTo(uniqid)).toEqual([]);

    clock.advance(retrySchedule[0]! - 1);
    expect(await job.runOnce()).toBe(0);
    clock.advance(1);
    merchant.reply = json(200, { codes: ['OK-1'] });
    expect(await job.runOnce()).toBe(1);
    expect(await itemRow(item.id)).toMatchObject({
      delivery_status: 'DELIVERED',
      delivered_items: { codes: ['OK-1'] },
    });
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, last_error: null });
    expect(merchant.requests[1]!.headers['webhook-id']).toBe(merchant.requests[0]!.headers['webhook-id']);
    expect(merchant.requests[1]!.body).toBe(merchant.requests[0]!.body);
  });

  test('an item the merchant fulfilled meanwhile keeps that delivery', async () => {
    const { uniqid, item } = await completedOrder();
    const earlier = new Date(clock.now().getTime() - 1000);
    await t.db
      .updateTable('order_items')
      .set({ delivery_status: 'DELIVERED', delivered_at: earlier, delivered_items: JSON.stringify({ codes: ['MAN'] }) })
      .where('id', '=', item.id)
      .execute();
    merchant.reply = json(200, { codes: ['AUTO'] });
    await job.runOnce();
    expect(await itemRow(item.id)).toMatchObject({ delivery_status: 'DELIVERED', delivered_items: { codes: ['MAN'] } });
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await eventsOf(uniqid)).toEqual([]);
  });

  test('a server that stays down: retried on the schedule, then the item and the delivery are FAILED', async () => {
    const { uniqid, item } = await completedOrder();
    await merchant.close(); // connections to its port are refused from now on
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect(await job.runOnce()).toBe(1);
      const delivery = await deliveryOf(item.id);
      expect(delivery.attempts).toBe(attempt);
      expect(delivery.last_error).toMatch(/^CONNECTION_REFUSED/);
      if (attempt < MAX_ATTEMPTS) {
        expect(delivery.status).toBe('RETRYING');
        expect((await itemRow(item.id)).delivery_status).toBe('PENDING');
        const wait = retrySchedule[attempt - 1]!;
        expect(delivery.next_attempt_at!.getTime() - clock.now().getTime()).toBe(wait);
        clock.advance(wait - 1);
        expect(await job.runOnce()).toBe(0);
        clock.advance(1);
      }
    }
    expect(await deliveryOf(item.id)).toMatchObject({
      status: 'FAILED',
      attempts: MAX_ATTEMPTS,
      next_attempt_at: null,
    });
    expect((await itemRow(item.id)).delivery_status).toBe('FAILED');
    clock.advance(30 * 24 * 3_600_000);
    expect(await job.runOnce()).toBe(0);
    expect(await eventsOf(uniqid)).toEqual([]);
    expect(await mailsTo(uniqid)).toEqual([]);
  });

  test('a 5xx and a time-out are failed attempts too', async () => {
    const { item } = await completedOrder();
    merchant.reply = json(503, { error: 'busy' });
    await job.runOnce();
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'RETRYING', last_error: 'status 503: {"error":"busy"}' });
    clock.advance(retrySchedule[0]!);
    merchant.reply = () => undefined; // never answers
    const slow = dynamicDeliveryJob(t.db, {
      clock,
      logger: t.logger,
      secrets: await loadSecretBox(t.db, undefined),
      allowPrivateTargets: true,
      timeoutMs: 300,
      random: () => 0.5,
    });
    await slow.runOnce();
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'RETRYING', attempts: 2 });
    expect((await deliveryOf(item.id)).last_error).toMatch(/^TIMEOUT/);
    expect((await itemRow(item.id)).delivery_status).toBe('PENDING');
  });

  test('a private target is refused unless the deployment allows it', async () => {
    const { item } = await completedOrder();
    const strict = dynamicDeliveryJob(t.db, {
      clock,
      logger: t.logger,
      secrets: await loadSecretBox(t.db, undefined),
      allowPrivateTargets: false,
      random: () => 0.5,
    });
    await strict.runOnce();
    expect(merchant.requests).toHaveLength(0);
    expect(await deliveryOf(item.id)).toMatchObject({ status: 'RETRYING' });
    expect((await deliveryOf(item.id)).last_error).toMatch(/^refused/);
  });
});

describe('through the API', () => {
  test('an order of a DYNAMIC product created and completed over HTTP is delivered by the worker', async () => {
    const product = (await t.seed(shop, { products: [{ title: 'Server slot', type: 'DYNAMIC', price: '7.50' }] }))
      .products[0]!;
    // Not writable through the API yet: the fixture sets the target directly.
    await t.db.updateTable('products').set({ dynamic_webhook: merchant.url }).where('id', '=', product).execute();
    const created = await t.http
      .post('/dev/v1/orders')
      .set(bearer(key))
      .send({ email: 'Slot@Example.com', items: [{ product_id: product, quantity: 1, delivery_instructions: 'EU' }] });
    expect(created.status).toBe(201);
    const { id, uniqid } = created.body.data as { id: string; uniqid: string };
    const itemId = created.body.data.items[0].id as string;
    expect(await job.runOnce()).toBe(0); // nothing is queued before the order completes

    const completed = await t.http.post(`/dev/v1/orders/${id}/complete`).set(bearer(key)).send({});
    expect(completed.status).toBe(200);
    expect(completed.body.data.items[0].delivery_status).toBe('PENDING');
    expect(merchant.requests).toHaveLength(0); // not sent inside the request

    merchant.reply = json(200, { codes: ['SLOT-42'] });
    expect(await job.runOnce()).toBe(1);
    const { secret } = await revealDynamicSecret(t.operator, shop);
    expect(verify(secret, merchant.requests[0]!)).toMatchObject({
      event: 'order:dynamic_delivery',
      data: {
        uniqid,
        line_item_id: itemId,
        product_id: product,
        quantity: 1,
        customer_email: 'slot@example.com',
        delivery_instructions: 'EU',
      },
    });
    expect(await itemRow(itemId)).toMatchObject({
      delivery_status: 'DELIVERED',
      delivered_items: { codes: ['SLOT-42'] },
    });
    expect((await eventsOf(uniqid)).map((e) => e.type)).toContain('order:item_delivered');
    const delivery = (await mailsTo(uniqid)).filter((m) => m.template === 'delivery');
    expect(delivery).toHaveLength(1);
    expect(delivery[0]).toMatchObject({ to_address: 'slot@example.com' });
    expect(delivery[0]!.text).toContain('SLOT-42');
  });
});

describe('parseDynamicAnswer', () => {
  test.each([
    ['not json', /not JSON/],
    ['[1]', /not a JSON object/],
    ['{}', /at least one of/],
    ['{"status":"pending","codes":["a"]}', /unknown key "status"/],
    ['{"files":[{"attachment_id":"att_1"}]}', /unknown key "files"/],
    ['{"message":""}', /message/],
    ['{"codes":[]}', /codes/],
    ['{"codes":[""]}', /codes/],
    ['{"links":[{"url":"ftp://x.example","label":"x"}]}', /http\(s\)/],
    ['{"links":[{"url":"https://x.example","label":""}]}', /label/],
    ['{"links":[{"url":"https://x.example","label":"x","extra":1}]}', /only url and label/],
  ])('%s is unusable', (body, reason) => {
    const answer = parseDynamicAnswer(body);
    expect(answer.kind).toBe('unusable');
    expect(answer.kind === 'unusable' && answer.reason).toMatch(reason);
  });

  test('pending and content', () => {
    expect(parseDynamicAnswer('{"status":"pending"}')).toEqual({ kind: 'pending' });
    expect(parseDynamicAnswer('{"message":"hi","links":[{"url":"http://a.example/x","label":"A"}]}')).toEqual({
      kind: 'content',
      content: { message: 'hi', links: [{ url: 'http://a.example/x', label: 'A' }] },
    });
  });
});
