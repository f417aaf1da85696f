// The hosted checkout (/invoice/:uniqid) and the SANDBOX gateway's page (/sandbox/checkout/:sessionId): what a
// buyer sees in each state, that buyer- and merchant-written text is escaped, that only an active gateway of the
// shop starts a session, and that paying completes an invoice exactly once however many sessions are paid.
import request from 'supertest';
import { sql } from 'kysely';
import { insertOrder, insertOrderItems } from '../../db/queries/orders';
import type { OrderStatus } from '../../db/tables';
import { newId, newUniqid } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { attemptsOfOrder, eventCount } from '../helpers/order-rows';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock('2026-11-22T10:00:00Z');
let t: TestApp;
let shopA: string;
let shopB: string;
let keyA: string;
let productA: string;
let attachmentA: string;
let attachmentB: string;

const page = (path: string) => request(t.app).get(path);
const post = (path: string, form: Record<string, string> = {}) => request(t.app).post(path).type('form').send(form);

async function addAttachment(shopId: string, filename: string, content: string): Promise<string> {
  const id = newId('att');
  await t.db
    .insertInto('attachments')
    .values({ id, shop_id: shopId, filename, content_type: 'text/plain', content: Buffer.from(content) })
    .execute();
  return id;
}

interface SeedOrder {
  shopId?: string;
  status?: OrderStatus;
  title?: string | null;
  items?: { title: string; variant?: string; quantity: number; unit: string; delivered?: Record<string, unknown> }[];
}

/** An invoice written directly, for the states the API reaches only through other flows (voided, delivered). */
async function seedOrder(input: SeedOrder = {}): Promise<{ id: string; uniqid: string }> {
  const shopId = input.shopId ?? shopA;
  const items = input.items ?? [{ title: 'Game key', quantity: 2, unit: '12.5' }];
  const subtotal = items.reduce((s, i) => s + Number(i.unit) * 100 * i.quantity, 0) / 100;
  const id = newId('ord');
  const uniqid = newUniqid();
  const status = input.status ?? 'PENDING';
  await t.db.transaction().execute(async (trx) => {
    await insertOrder(trx, shopId, {
      id,
      uniqid,
      kind: 'ORDER',
      currency: 'USD',
      status,
      payment_status: status === 'COMPLETED' ? 'PAID' : 'PENDING',
      subtotal: subtotal.toFixed(2),
      discount: '0',
      tax: '1.25',
      total: (subtotal + 1.25).toFixed(2),
      is_developer_invoice: true,
      developer_title: input.title === undefined ? 'Order #7' : input.title,
      customer_email: 'buyer@example.com',
      completed_at: status === 'COMPLETED' ? clock.now() : null,
    });
    await insertOrderItems(
      trx,
      shopId,
      items.map((item, position) => ({
        id: newId('item'),
        order_id: id,
        position,
        product_title: item.title,
        product_type: 'SERIALS' as const,
        variant_title: item.variant ?? null,
        quantity: item.quantity,
        unit_price: item.unit,
        total: ((Number(item.unit) * 100 * item.quantity) / 100).toFixed(2),
        delivery_status: item.delivered ? ('DELIVERED' as const) : ('PENDING' as const),
        delivered_at: item.delivered ? clock.now() : null,
        delivered_items: item.delivered ? JSON.stringify(item.delivered) : null,
      })),
    );
  });
  return { id, uniqid };
}

async function orderRow(id: string) {
  return t.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
const attempts = (orderId: string) => attemptsOfOrder(t.db, orderId);
const eventsOf = (type: string, uniqid: string) => eventCount(t.db, type, uniqid);
async function mailCount(): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from outbound_emails`.execute(t.db);
  return Number(r.rows[0]!.n);
}

/** The session id the pay button led to. */
async function startSandbox(uniqid: string): Promise<string> {
  const res = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
  expect(res.status).toBe(303);
  const m = /^http:\/\/api\.test\/sandbox\/checkout\/(sbx_[0-9a-f]{32})$/.exec(res.headers.location ?? '');
  expect(m).not.toBeNull();
  return m![1]!;
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  // A pays through SANDBOX, which only test mode offers: a test-mode shop. B is a live shop.
  shopA = await t.createShop({ name: 'Ada & <Co>', mode: 'test' });
  shopB = await t.createShop({ name: 'Other shop' });
  keyA = (await t.createKey(shopA, ['*'])).key;
  const serials = Array.from({ length: 10 }, (_, i) => `SER-${String(i).padStart(3, '0')}`);
  productA = (
    await t.seed(shopA, {
      products: [{ title: 'Serial game', type: 'SERIALS', price: '4.99', serials }],
      gateways: [
        { code: 'SANDBOX', kind: 'SESSION' },
        { code: 'STRIPE', kind: 'HOSTED' },
        { code: 'PAYPAL', kind: 'HOSTED', active: false },
      ],
    })
  ).products[0]!;
  await t.seed(shopB, { gateways: [{ code: 'CRYPTO', kind: 'CRYPTO', coins: ['BTC'] }] });
  attachmentA = await addAttachment(shopA, 'manual.txt', 'read me');
  attachmentB = await addAttachment(shopB, 'secret.txt', 'not yours');
});
afterAll(() => t.close());

describe('the invoice page', () => {
  test('an unknown invoice is a 404 page', async () => {
    const res = await page(`/invoice/${newUniqid()}`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Invoice not found');
  });

  test('a pending invoice shows the shop, its items and amounts, and one button per active gateway', async () => {
    const { uniqid } = await seedOrder({
      items: [
        { title: 'Game key', variant: 'EU', quantity: 2, unit: '12.5' },
        { title: 'Soundtrack', quantity: 1, unit: '3' },
      ],
    });
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.text).toContain('Ada &amp; &lt;Co&gt;');
    expect(res.text).toContain('Order #7');
    expect(res.text).toContain('Game key <small>(EU)</small>');
    expect(res.text).toContain('12.50 USD');
    expect(res.text).toContain('25.00 USD');
    expect(res.text).toContain('28.00 USD'); // subtotal
    expect(res.text).toContain('1.25 USD'); // tax
    expect(res.text).toContain('29.25 USD'); // total
    expect(res.text).toContain('PENDING');
    expect(res.text).toContain('Pay with SANDBOX');
    expect(res.text).toContain('Pay with STRIPE');
    expect(res.text).not.toContain('PAYPAL'); // inactive
    expect(res.text).toContain(`action="/invoice/${uniqid}/pay"`);
  });

  test('merchant- and buyer-written text is escaped, never markup', async () => {
    const { uniqid } = await seedOrder({
      title: '<script>alert(1)</script>',
      items: [
        {
          title: '<img src=x onerror=alert(2)>',
          variant: '"><script>alert(3)</script>',
          quantity: 1,
          unit: '1',
        },
      ],
    });
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/<script/i);
    expect(res.text).not.toContain('<img');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.text).toContain('&lt;img src=x onerror=alert(2)&gt;');
    expect(res.text).toContain('&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;');
  });

  test('an invoice without a title is named by a short reference, its full uniqid below in small type', async () => {
    const { uniqid } = await seedOrder({ title: null });
    await t.db.updateTable('orders').set({ created_at: clock.now() }).where('uniqid', '=', uniqid).execute();
    const text = (await page(`/invoice/${uniqid}`)).text;
    const reference = `Order ${uniqid.slice(0, 8).toUpperCase()}`;
    expect(text).toContain(`<h1>${reference}</h1>`);
    // The line below the heading says what the heading does not (the uniqid, the day), not the reference again.
    const subtitle = /<p class="order-id">([\s\S]*?)<\/p>/.exec(text)?.[1];
    expect(subtitle).toBe(`Invoice <span class="id" id="uniqid">${uniqid}</span> · issued 22 November 2026`);
    expect(text.split(reference)).toHaveLength(3); // the <title> and the heading
  });

  test('a titled invoice keeps its short reference below the title', async () => {
    const { uniqid } = await seedOrder({ title: 'Launch offer' });
    const text = (await page(`/invoice/${uniqid}`)).text;
    expect(text).toContain('<h1>Launch offer</h1>');
    expect(/<p class="order-id">([\s\S]*?)<\/p>/.exec(text)?.[1]).toMatch(
      new RegExp(`^Order ${uniqid.slice(0, 8).toUpperCase()} · Invoice <span`),
    );
  });

  test('a pending invoice of a shop with no payment method says so once, without "choose below"', async () => {
    const shopId = await t.createShop({ name: 'No gateways yet' });
    const { uniqid } = await seedOrder({ shopId });
    await t.db
      .updateTable('orders')
      .set({ expires_at: new Date('2026-11-22T11:00:00Z') })
      .where('uniqid', '=', uniqid)
      .execute();
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('Choose how to pay');
    expect(res.text).not.toContain('Pay with');
    expect(res.text.match(/cannot take payments|no payment method/g)).toEqual(['cannot take payments']);
    expect(res.text).toContain('it stays open until 22 November 2026, 11:00 UTC');
  });

  test('a voided invoice says it expired and offers no payment', async () => {
    const { id, uniqid } = await seedOrder({ status: 'VOIDED' });
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('expired');
    expect(res.text).not.toContain('Pay with');
    const pay = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
    expect(pay.status).toBe(400);
    expect(await attempts(id)).toEqual([]);
    expect((await orderRow(id)).gateway).toBeNull();
  });

  test('a completed invoice shows each item’s delivery, escaped, and links only web addresses', async () => {
    const { uniqid } = await seedOrder({
      status: 'COMPLETED',
      items: [
        {
          title: 'Game key',
          quantity: 1,
          unit: '5',
          delivered: {
            message: 'Thanks! <b>enjoy</b>',
            serials: ['KEY-<1>', 'KEY-2'],
            links: ['https://example.com/dl?a=1&b=2', 'javascript:alert(1)'],
            files: [{ attachment_id: attachmentA, filename: 'manual<1>.txt' }],
          },
        },
        { title: 'Service', quantity: 1, unit: '2' },
      ],
    });
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('COMPLETED');
    expect(res.text).not.toContain('Pay with');
    expect(res.text).toContain('Thanks! &lt;b&gt;enjoy&lt;/b&gt;');
    expect(res.text).toContain('<code>KEY-&lt;1&gt;</code>');
    expect(res.text).toContain('<code>KEY-2</code>');
    expect(res.text).toContain('<a href="https://example.com/dl?a=1&amp;b=2"');
    expect(res.text).not.toContain('href="javascript:');
    expect(res.text).toContain(`href="/invoice/${uniqid}/files/${attachmentA}"`);
    expect(res.text).toContain('manual&lt;1&gt;.txt');
    // The second item has nothing delivered yet.
    expect(res.text).toMatch(/Service<\/h3><p>Delivery: <span class="status">pending/);
  });
});

describe('delivered files', () => {
  test('a file delivered on the invoice downloads; anything else is 404', async () => {
    const delivered = await seedOrder({
      status: 'COMPLETED',
      items: [{ title: 'Ebook', quantity: 1, unit: '5', delivered: { files: [attachmentA] } }],
    });
    const res = await page(`/invoice/${delivered.uniqid}/files/${attachmentA}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="?manual\.txt"?$/);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe('read me');

    // The same attachment, not delivered on this invoice (pending item), or another shop's attachment id.
    const pending = await seedOrder({ status: 'PENDING' });
    expect((await page(`/invoice/${pending.uniqid}/files/${attachmentA}`)).status).toBe(404);
    const foreign = await seedOrder({
      status: 'COMPLETED',
      items: [{ title: 'Ebook', quantity: 1, unit: '5', delivered: { files: [attachmentB] } }],
    });
    const other = await page(`/invoice/${foreign.uniqid}/files/${attachmentB}`);
    expect(other.status).toBe(404);
    expect(other.text).not.toContain('not yours');
    expect((await page(`/invoice/${newUniqid()}/files/${attachmentA}`)).status).toBe(404);
  });
});

describe('starting a payment', () => {
  test('SANDBOX: a session, a PENDING attempt of the total, the gateway on the order, a redirect to its page', async () => {
    const { id, uniqid } = await seedOrder();
    clock.set('2026-11-22T11:00:00Z');
    const sessionId = await startSandbox(uniqid);
    const [attempt, ...more] = await attempts(id);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({
      shop_id: shopA,
      gateway: 'SANDBOX',
      session_id: sessionId,
      status: 'PENDING',
      paid_at: null,
    });
    expect(attempt!.id).toMatch(/^pay_/);
    expect(Number(attempt!.amount)).toBe(26.25);
    expect(attempt!.created_at.toISOString()).toBe('2026-11-22T11:00:00.000Z');
    const order = await orderRow(id);
    expect(order.gateway).toBe('SANDBOX');
    expect(order.status).toBe('PENDING');

    const sandbox = await page(`/sandbox/checkout/${sessionId}`);
    expect(sandbox.status).toBe(200);
    expect(sandbox.text).toContain('26.25 USD');
    expect(sandbox.text).toContain('>Pay</button>');
    expect(sandbox.text).toContain('>Fail payment</button>');
    expect(sandbox.text).toContain(`action="/sandbox/checkout/${sessionId}/pay"`);
  });

  test('a gateway the shop lacks, has switched off, or that is another shop’s is refused: 400, nothing written', async () => {
    const { id, uniqid } = await seedOrder();
    for (const gateway of ['PAYPAL', 'CRYPTO', 'NOPE', '']) {
      const res = await post(`/invoice/${uniqid}/pay`, { gateway });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('not available');
    }
    expect(await attempts(id)).toEqual([]);
    expect((await orderRow(id)).gateway).toBeNull();
  });

  test('a live shop never offers SANDBOX: paying its invoice with SANDBOX is refused, nothing written', async () => {
    const { id, uniqid } = await seedOrder({ shopId: shopB });
    const res = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('not available');
    expect(await attempts(id)).toEqual([]);
    expect((await orderRow(id)).gateway).toBeNull();
  });

  test('a gateway with no local integration answers a page saying so: 400, nothing written', async () => {
    const { id, uniqid } = await seedOrder();
    const res = await post(`/invoice/${uniqid}/pay`, { gateway: 'STRIPE' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('STRIPE has no integration on this server');
    expect(await attempts(id)).toEqual([]);
    expect((await orderRow(id)).gateway).toBeNull();
  });

  test('unknown invoice or session: 404 pages', async () => {
    expect((await post(`/invoice/${newUniqid()}/pay`, { gateway: 'SANDBOX' })).status).toBe(404);
    expect((await page('/sandbox/checkout/sbx_00000000000000000000000000000000')).status).toBe(404);
    expect((await post('/sandbox/checkout/sbx_00000000000000000000000000000000/pay')).status).toBe(404);
    expect((await post('/sandbox/checkout/sbx_00000000000000000000000000000000/fail')).status).toBe(404);
  });
});

describe('settling a sandbox session', () => {
  test('a failed payment leaves the invoice PENDING and payable, and nothing is emitted', async () => {
    const { id, uniqid } = await seedOrder();
    const sessionId = await startSandbox(uniqid);
    const mailBefore = await mailCount();
    const res = await post(`/sandbox/checkout/${sessionId}/fail`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`http://api.test/invoice/${uniqid}`);
    expect((await attempts(id)).map((a) => a.status)).toEqual(['FAILED']);
    const order = await orderRow(id);
    expect(order.status).toBe('PENDING');
    expect(order.payment_status).toBe('PENDING');
    expect(await eventsOf('order:paid', uniqid)).toBe(0);
    expect(await mailCount()).toBe(mailBefore);
    const invoice = await page(`/invoice/${uniqid}`);
    expect(invoice.text).toContain('did not go through');
    expect(invoice.text).toContain('Pay with SANDBOX');
    // A settled session stays settled: paying it now changes nothing.
    expect((await post(`/sandbox/checkout/${sessionId}/pay`)).status).toBe(303);
    expect((await attempts(id)).map((a) => a.status)).toEqual(['FAILED']);
    expect((await orderRow(id)).status).toBe('PENDING');
    const sandbox = await page(`/sandbox/checkout/${sessionId}`);
    expect(sandbox.text).toContain('This session is failed');
    expect(sandbox.text).not.toContain('>Pay</button>');
  });
});

/** Creates an order through the API (1 unit of the serial product); its id and uniqid. */
async function apiOrder(): Promise<{ id: string; uniqid: string }> {
  const res = await request(t.app)
    .post('/dev/v1/orders')
    .set(bearer(keyA))
    .send({ email: 'buyer@example.com', title: 'Checkout test', items: [{ product_id: productA, quantity: 1 }] });
  expect(res.status).toBe(201);
  return { id: res.body.data.id, uniqid: res.body.data.uniqid };
}

describe('paying through the sandbox', () => {
  test('pay completes the invoice once: a second click and a late payment on an older session complete nothing', async () => {
    const { id, uniqid } = await apiOrder();
    const older = await startSandbox(uniqid);
    const newer = await startSandbox(uniqid);
    clock.set('2026-11-22T12:00:00Z');

    const res = await post(`/sandbox/checkout/${newer}/pay`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`http://api.test/invoice/${uniqid}`);
    const order = await orderRow(id);
    expect(order.status).toBe('COMPLETED');
    expect(order.gateway).toBe('SANDBOX');
    expect(await eventsOf('order:paid', uniqid)).toBe(1);
    const mailAfterPay = await mailCount();
    const invoice = await page(`/invoice/${uniqid}`);
    expect(invoice.text).toContain('COMPLETED');
    expect(invoice.text).toMatch(/<code>SER-\d{3}<\/code>/);
    expect(invoice.text).not.toContain('Pay with');

    // The same session paid again (a double click, a replayed callback).
    expect((await post(`/sandbox/checkout/${newer}/pay`)).status).toBe(303);
    // The older session, still open in another tab, paid late.
    clock.set('2026-11-22T12:05:00Z');
    expect((await post(`/sandbox/checkout/${older}/pay`)).status).toBe(303);

    const byStatus = Object.fromEntries((await attempts(id)).map((a) => [a.session_id, [a.status, a.paid_at]]));
    expect(byStatus[newer]).toEqual(['PAID', new Date('2026-11-22T12:00:00Z')]);
    expect(byStatus[older]).toEqual(['PAID', new Date('2026-11-22T12:05:00Z')]);
    expect(await eventsOf('order:paid', uniqid)).toBe(1);
    expect(await mailCount()).toBe(mailAfterPay);
    const after = await orderRow(id);
    expect(after.completed_at).toEqual(order.completed_at);
    expect(after.status).toBe('COMPLETED');
  });

  test('after paying, the invoice cannot start another session', async () => {
    const { id, uniqid } = await apiOrder();
    await post(`/sandbox/checkout/${await startSandbox(uniqid)}/pay`);
    const res = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
    expect(res.status).toBe(400);
    expect(await attempts(id)).toHaveLength(1);
  });

  (process.env.DATABASE_URL ? test : test.skip)(
    'two sessions paid at the same moment complete the invoice once',
    async () => {
      const { id, uniqid } = await apiOrder();
      const sessions = [await startSandbox(uniqid), await startSandbox(uniqid), await startSandbox(uniqid)];
      const results = await Promise.all(sessions.map((s) => post(`/sandbox/checkout/${s}/pay`)));
      expect(results.map((r) => r.status)).toEqual([303, 303, 303]);
      expect((await attempts(id)).map((a) => a.status)).toEqual(['PAID', 'PAID', 'PAID']);
      expect(await eventsOf('order:paid', uniqid)).toBe(1);
      expect((await orderRow(id)).status).toBe('COMPLETED');
    },
  );
});

describe('an invoice created without a buyer email', () => {
  async function anonymousPayment(): Promise<{ id: string; uniqid: string }> {
    const res = await t.http
      .post('/dev/v1/payments')
      .set(bearer(keyA))
      .send({ title: 'Tip jar', value: 3.5, currency: 'USD' });
    expect(res.status).toBe(201);
    const row = await t.db
      .selectFrom('orders')
      .select(['id', 'uniqid'])
      .where('uniqid', '=', res.body.data.uniqid)
      .executeTakeFirstOrThrow();
    return row;
  }
  const customers = async () =>
    Number((await sql<{ n: string }>`select count(*)::text as n from customers`.execute(t.db)).rows[0]!.n);

  test('asks for the email on the checkout, and refuses to start a payment without one', async () => {
    const { id, uniqid } = await anonymousPayment();
    const page1 = await page(`/invoice/${uniqid}`);
    expect(page1.text).toContain('name="email"');
    const before = await customers();
    await t.seed(shopA, { blacklist: [{ type: 'EMAIL', value: 'blocked@example.com' }] } as never);
    const blocked = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX', email: 'blocked@example.com' });
    expect(blocked.status).toBe(400);
    expect(blocked.text).toContain('does not accept orders from this buyer');
    for (const form of [{ gateway: 'SANDBOX' }, { gateway: 'SANDBOX', email: 'not an email' }] as Record<
      string,
      string
    >[]) {
      const res = await post(`/invoice/${uniqid}/pay`, form);
      expect(res.status).toBe(400);
      expect(res.text).toContain('Enter the email');
    }
    expect(await attempts(id)).toHaveLength(0);
    expect(await customers()).toBe(before);
    expect((await orderRow(id)).customer_email).toBeNull();
  });

  test('the email given becomes the buyer: customer, receipt and order:paid carry it', async () => {
    const { id, uniqid } = await anonymousPayment();
    const started = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX', email: 'Tipper@Example.com' });
    expect(started.status).toBe(303);
    const order = await orderRow(id);
    expect(order.customer_email).toBe('tipper@example.com');
    expect(order.customer_id).toMatch(/^cus_/);
    const session = /\/sandbox\/checkout\/(sbx_[0-9a-f]{32})$/.exec(String(started.headers.location))![1]!;
    expect((await post(`/sandbox/checkout/${session}/pay`)).status).toBe(303);
    const paid = await sql<{ email: string }>`select data::jsonb ->> 'customer_email' as email from events
      where type = 'order:paid' and data::jsonb ->> 'uniqid' = ${uniqid}`.execute(t.db);
    expect(paid.rows).toEqual([{ email: 'tipper@example.com' }]);
    // Once it has a buyer the page no longer asks.
    expect((await page(`/invoice/${uniqid}`)).text).not.toContain('name="email"');
  });
});
