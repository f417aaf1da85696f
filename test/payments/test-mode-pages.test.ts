// Issue 26: every hosted page of a test shop (checkout, payment link, the sandbox gateway's page, theme preview) and
// every mail it queues carries the TEST MODE banner; a live shop's page or mail never does, and is what it was before.
import request from 'supertest';
import { queueMail } from '../../src/mail/queue';
import { mailDraft, renderMail, type ReceiptData } from '../../src/mail/templates';
import { systemClock } from '../../src/platform/clock';
import { TEST_MODE_NOTICE } from '../../src/views/test-mode';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
const modes = ['live', 'test'] as const;
type Mode = (typeof modes)[number];
const shops = {} as Record<Mode, { id: string; key: string; productId: string }>;

const page = (path: string) => request(t.app).get(path);
const post = (path: string, form: Record<string, string> = {}) => request(t.app).post(path).type('form').send(form);
/** The path of an absolute URL the app gave (its PUBLIC_URL is http://api.test). */
const pathOf = (url: string) => new URL(url).pathname;

const banner = 'id="test-mode-banner"';

function expectBanner(html: string, mode: Mode) {
  if (mode === 'test') {
    expect(html).toContain(banner);
    expect(html).toContain('role="status"');
    expect(html).toContain('TEST MODE — no real money moves');
    // At the very top of the body: the first thing read.
    expect(html).toMatch(/<body[^>]*>\s*<div class="test-mode-banner"/);
  } else {
    expect(html).not.toContain(banner);
    expect(html).not.toContain('TEST MODE');
  }
}

beforeAll(async () => {
  t = await startTestApp();
  for (const mode of modes) {
    const id = await t.createShop({ name: `${mode} pages shop`, mode });
    const { key } = await t.createKey(id, ['*']);
    const productId = (
      await t.seed(id, {
        products: [{ title: 'Game key', type: 'SERIALS', price: '4.99', serials: [`${mode}-KEY-1`, `${mode}-KEY-2`] }],
      })
    ).products[0]!;
    shops[mode] = { id, key, productId };
  }
});
afterAll(() => t.close());

async function createOrder(mode: Mode): Promise<string> {
  const res = await request(t.app)
    .post('/dev/v1/orders')
    .set(bearer(shops[mode].key))
    .send({ email: `${mode}@example.com`, items: [{ product_id: shops[mode].productId, quantity: 1 }] });
  expect(res.status).toBe(201);
  return res.body.data.uniqid as string;
}

describe.each(modes)('a %s shop', (mode) => {
  test('its checkout page', async () => {
    const uniqid = await createOrder(mode);
    const res = await page(`/invoice/${uniqid}`);
    expect(res.status).toBe(200);
    expectBanner(res.text, mode);
    // SANDBOX is offered to the test shop only.
    if (mode === 'test') expect(res.text).toContain('Pay with SANDBOX');
    else expect(res.text).not.toContain('SANDBOX');
  });

  test('its payment link page', async () => {
    const link = await request(t.app)
      .post('/dev/v1/payment-links')
      .set(bearer(shops[mode].key))
      .send({ title: 'Banner link', amount: 10, currency: 'USD' });
    expect(link.status).toBe(201);
    const res = await page(pathOf(link.body.data.url));
    expect(res.status).toBe(200);
    expect(res.text).toContain('<h1>Banner link</h1>');
    expectBanner(res.text, mode);
  });

  test('its theme preview', async () => {
    const created = await request(t.app)
      .post('/dev/v1/themes/control/create')
      .set(bearer(shops[mode].key))
      .send({ name: 'Banner theme', base: 'starlight' });
    expect(created.status).toBe(201);
    const session = await request(t.app)
      .post(`/dev/v1/themes/${created.body.data.id}/control/preview`)
      .set(bearer(shops[mode].key))
      .send({});
    expect(session.status).toBe(201);
    const res = await page(pathOf(session.body.data.url));
    expect(res.status).toBe(200);
    expect(res.text).toContain('class="preview-bar"');
    expectBanner(res.text, mode);
  });

  test('a receipt it queues', async () => {
    const receipt: ReceiptData = {
      shopName: 'Banner shop',
      uniqid: 'u-1',
      items: [{ title: 'Game key', quantity: 1, price: '4.99' }],
      total: '4.99',
      currency: 'USD',
    };
    const id = await t.db
      .transaction()
      .execute((trx) =>
        queueMail(trx, shops[mode].id, mailDraft('b@example.com', 'receipt', receipt), systemClock.now()),
      );
    const row = await t.db
      .selectFrom('outbound_emails')
      .selectAll()
      .where('shop_id', '=', shops[mode].id)
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const plain = renderMail('receipt', receipt as unknown as Record<string, unknown>);
    if (mode === 'live') {
      // Exactly as rendered before test mode existed.
      expect({ subject: row.subject, html: row.html, text: row.text }).toEqual(plain);
    } else {
      expect(row.subject).toBe(`[TEST MODE] ${plain.subject}`);
      expect(row.text).toBe(`${TEST_MODE_NOTICE}\n\n${plain.text}`);
      expectBanner(row.html, mode);
      expect(row.html).toContain(`<title>[TEST MODE] ${plain.subject}`);
    }
  });
});

test("a test shop's sandbox page carries the banner, and the receipt and delivery mails of the payment say TEST MODE", async () => {
  const uniqid = await createOrder('test');
  const started = await post(`/invoice/${uniqid}/pay`, { gateway: 'SANDBOX' });
  expect(started.status).toBe(303);
  const sandboxPath = pathOf(String(started.headers.location));
  expect(sandboxPath).toMatch(/^\/sandbox\/checkout\/sbx_/);
  const sandbox = await page(sandboxPath);
  expect(sandbox.status).toBe(200);
  expect(sandbox.text).toContain('SANDBOX gateway');
  expectBanner(sandbox.text, 'test');

  expect((await post(`${sandboxPath}/pay`)).status).toBe(303);
  // The invoice once paid (the buyer's receipt page) still says test mode, with the serial.
  const paid = await page(`/invoice/${uniqid}`);
  expect(paid.text).toContain('COMPLETED');
  expect(paid.text).toContain('test-KEY-');
  expectBanner(paid.text, 'test');

  const mails = await t.db
    .selectFrom('outbound_emails')
    .select(['template', 'subject', 'text'])
    .where('shop_id', '=', shops.test.id)
    .where('to_address', '=', 'test@example.com')
    .execute();
  expect(mails.length).toBeGreaterThan(0);
  expect(mails.map((m) => m.template)).toContain('receipt');
  for (const mail of mails) {
    expect(mail.subject.startsWith('[TEST MODE] ')).toBe(true);
    expect(mail.text.startsWith(TEST_MODE_NOTICE)).toBe(true);
  }
});
