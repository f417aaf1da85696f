// A LIVE shop takes a payment in headless Chromium through each payment provider's fake and refunds it (issue 37):
// an order made with a live key, our hosted checkout (/invoice/<uniqid>) offering every connected gateway, the
// provider's hosted page, Pay, and back through our return route to the invoice, which shows it paid with its serial.
// The fakes' webhooks are held the whole time, so what settles the invoice is the return route alone; released
// afterwards they are answered 2xx and a worker drain changes nothing. Then a partial and a full refund through
// POST /orders/{id}/refund reach the provider. Screenshots land in test-artifacts/live-<provider>.png.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Decimal from 'decimal.js';
import { sql } from 'kysely';
import type { BrowserContext } from 'playwright-core';
import { createBtcpayProvider } from '../../src/integrations/btcpay';
import type { ProviderCode } from '../../src/integrations/gateway-provider';
import { createPayPalProvider } from '../../src/integrations/paypal';
import { createStripeProvider } from '../../src/integrations/stripe';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { systemClock } from '../../src/platform/clock';
import { createWorker } from '../../src/worker';
import type { Worker } from '../../src/worker/worker';
import { createBtcpayFake, type BtcpayFake } from '../fakes/btcpay';
import { startPayPalFake, type PayPalFake } from '../fakes/paypal/fake';
import type { ProviderFake } from '../fakes/provider-fake';
import { startStripeFake, type StripeFake } from '../fakes/stripe';
import { chromiumTest, haveChromium, launchChromium, type Chromium } from '../helpers/chromium';
import { snapshotTables } from '../helpers/db-snapshot';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const browserTest = chromiumTest('live browser test');
const artifacts = join(__dirname, '..', '..', 'test-artifacts');
const providers = [createStripeProvider(), createPayPalProvider(), createBtcpayProvider()];
const serials = ['LIVE-0001', 'LIVE-0002', 'LIVE-0003', 'LIVE-0004', 'LIVE-0005', 'LIVE-0006'];

let stripe: StripeFake;
let paypal: PayPalFake;
let btcpay: BtcpayFake;
let t: TestApp;
let server: Server;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext;
let worker: Worker;
let shop: string;
let key: string;
let product: string;

/** What differs between the providers: its fake, the fields `gateway connect` takes, where its hosted page is. */
interface Case {
  code: ProviderCode;
  fake: () => ProviderFake;
  fields: (credentials: Record<string, string>) => Record<string, string>;
  hostedPage: () => string;
}

const cases: Case[] = [
  {
    code: 'STRIPE',
    fake: () => stripe,
    fields: (c) => ({ secret_key: c.STRIPE_SECRET_KEY!, webhook_secret: c.STRIPE_WEBHOOK_SECRET! }),
    hostedPage: () => `${stripe.baseUrl}/pay/`,
  },
  {
    code: 'PAYPAL',
    fake: () => paypal,
    fields: (c) => ({
      client_id: c.PAYPAL_CLIENT_ID!,
      client_secret: c.PAYPAL_CLIENT_SECRET!,
      webhook_id: c.PAYPAL_WEBHOOK_ID!,
    }),
    // The live approval page: PayPal's sandbox one lives under /sandbox.
    hostedPage: () => `${paypal.liveBaseUrl}/checkoutnow?token=`,
  },
  {
    code: 'BTCPAY',
    fake: () => btcpay,
    fields: (c) => ({
      url: c.BTCPAY_URL!,
      api_key: c.BTCPAY_API_KEY!,
      store_id: c.BTCPAY_STORE_ID!,
      webhook_secret: c.BTCPAY_WEBHOOK_SECRET!,
    }),
    hostedPage: () => `${btcpay.baseUrl}/i/`,
  },
];

beforeAll(async () => {
  if (!haveChromium) return;
  [stripe, paypal, btcpay] = await Promise.all([
    startStripeFake({ webhookRetryDelayMs: 20 }),
    startPayPalFake({ webhookRetryDelayMs: 20 }),
    createBtcpayFake(),
  ]);
  // The port first: the providers send the buyer back to this server's public address.
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({
    gatewayProviders: providers,
    env: { PUBLIC_URL: base, GATEWAY_BASE_URLS: `STRIPE=${stripe.baseUrl},${paypal.gatewayBaseUrls}` },
  });
  server.on('request', t.app);
  worker = await createWorker(t.db, t.config, t.logger, systemClock, providers);

  shop = await t.createShop({ name: 'Live Browser Shop', mode: 'live', currency: 'USD' });
  key = (await t.createKey(shop, ['*'])).key;
  expect(key).not.toMatch(/^mdk_test_/);
  for (const c of cases) {
    const credentials = c
      .fake()
      .createAccount({ livemode: true, webhookUrl: `${base}/webhooks/gateways/${c.code.toLowerCase()}/${shop}` });
    const connection = await connectShopGateway(
      t.db,
      t.config,
      systemClock,
      { shopId: shop, code: c.code, fields: c.fields(credentials) },
      providers,
    );
    expect(connection).toMatchObject({ gateway: c.code, mode: 'live' });
  }
  product = (await t.seed(shop, { products: [{ title: 'Game Key', type: 'SERIALS', price: '9.99', serials }] }))
    .products[0]!;
  chrome = await launchChromium();
  browser = chrome.browser;
}, 120_000);

afterAll(async () => {
  await chrome?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await Promise.all([stripe?.close(), paypal?.close(), btcpay?.close()]);
  await t?.close();
});

const orderOf = (uniqid: string) =>
  t.db.selectFrom('orders').selectAll().where('uniqid', '=', uniqid).executeTakeFirstOrThrow();

async function paidEvents(uniqid: string): Promise<number> {
  const r = await sql<{ n: string }>`select count(*)::text as n from events
    where shop_id = ${shop} and type = 'order:paid' and data::jsonb ->> 'uniqid' = ${uniqid}`.execute(t.db);
  return Number(r.rows[0]!.n);
}

/** Waits until every webhook the fake built has been answered 2xx (or 10 s pass: the caller's expect says which). */
async function webhooksAnswered(fake: ProviderFake): Promise<void> {
  const done = () =>
    fake.webhooks().every((h) => h.sends.length > 0 && h.sends.at(-1)! >= 200 && h.sends.at(-1)! < 300);
  for (const deadline = Date.now() + 10_000; !done() && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 25));
}

/**
 * The invoice paid exactly once: COMPLETED, one order:paid event, one PAID attempt on the provider's session, one
 * serial claimed by its one line and delivered on it, and the receipt and delivery mails (the serial in the latter).
 */
async function expectPaidOnce(uniqid: string, code: ProviderCode, sessionId: string, email: string): Promise<string> {
  const order = await orderOf(uniqid);
  expect(order).toMatchObject({ status: 'COMPLETED', gateway: code });
  expect(await paidEvents(uniqid)).toBe(1);
  const attempts = await t.db.selectFrom('payment_attempts').selectAll().where('order_id', '=', order.id).execute();
  expect(attempts.map((a) => [a.gateway, a.session_id, a.status, a.flag])).toEqual([[code, sessionId, 'PAID', null]]);
  expect(new Decimal(attempts[0]!.paid_amount!).equals('9.99')).toBe(true);

  const items = await t.db.selectFrom('order_items').selectAll().where('order_id', '=', order.id).execute();
  expect(items.map((i) => i.delivery_status)).toEqual(['DELIVERED']);
  const delivered = JSON.stringify(items[0]!.delivered_items);
  const given = serials.filter((s) => delivered.includes(s));
  expect(given).toHaveLength(1);
  const claimed = await t.db
    .selectFrom('product_serials')
    .select(['serial', 'status'])
    .where('order_item_id', '=', items[0]!.id)
    .execute();
  expect(claimed).toEqual([{ serial: given[0], status: 'claimed' }]);

  const mails = await t.db
    .selectFrom('outbound_emails')
    .select(['template', 'text'])
    .where('shop_id', '=', shop)
    .where('to_address', '=', email)
    .orderBy('template')
    .execute();
  expect(mails.map((m) => m.template)).toEqual(['delivery', 'receipt']);
  expect(mails[0]!.text).toContain(given[0]);
  return given[0]!;
}

describe.each(cases)('$code', (c) => {
  browserTest(
    'a live shop: order -> our checkout -> hosted page -> paid -> webhooks -> COMPLETED with one serial; refunded',
    async () => {
      const fake = c.fake();
      const email = `buyer-${c.code.toLowerCase()}@example.com`;
      const created = await t.http
        .post('/dev/v1/orders')
        .set(bearer(key))
        .send({ email, items: [{ product_id: product, quantity: 1 }] });
      expect(created.status).toBe(201);
      const { id: orderId, uniqid } = created.body.data as { id: string; uniqid: string };
      const webhooksBefore = fake.webhooks().length;
      fake.holdWebhooks(true);

      const tab = await browser.newPage();
      await tab.goto(`${base}/invoice/${uniqid}`);
      expect(await tab.textContent('#status')).toBe('PENDING');
      // A live invoice: every connected provider offered, no sandbox, no test-mode banner.
      const offered = await tab.locator('button[name="gateway"]').evaluateAll((b) => b.map((x) => x.textContent));
      expect(offered.sort()).toEqual(['Pay with BTCPAY', 'Pay with PAYPAL', 'Pay with STRIPE']);
      expect(await tab.textContent('body')).not.toMatch(/TEST MODE/i);

      await Promise.all([
        tab.waitForURL((u) => u.href.startsWith(c.hostedPage())),
        tab.click(`text=Pay with ${c.code}`),
      ]);
      const hosted = (await tab.textContent('body'))!;
      expect(hosted).toContain('9.99 USD');
      expect(hosted).not.toMatch(/TEST MODE|SANDBOX/);
      const order = await orderOf(uniqid);
      const [attempt] = await t.db
        .selectFrom('payment_attempts')
        .selectAll()
        .where('order_id', '=', order.id)
        .execute();
      const sessionId = attempt!.session_id!;
      expect(fake.session(sessionId)).toMatchObject({ state: 'open', amount: '9.99', livemode: true });

      await Promise.all([tab.waitForURL(`${base}/invoice/${uniqid}`), tab.click('button:text-is("Pay")')]);
      expect(await tab.textContent('#status')).toBe('COMPLETED');
      mkdirSync(artifacts, { recursive: true });
      await tab.screenshot({ path: join(artifacts, `live-${c.code.toLowerCase()}.png`), fullPage: true });
      const page = (await tab.textContent('body'))!;
      await tab.close();

      // Settled by the return route alone: no webhook has reached us yet.
      expect(
        fake
          .webhooks()
          .slice(webhooksBefore)
          .every((h) => h.sends.length === 0),
      ).toBe(true);
      expect(fake.session(sessionId)!.state).toBe('paid');
      const serial = await expectPaidOnce(uniqid, c.code, sessionId, email);
      expect(page).toContain(serial);
      // The completion's own mail and events go out now, so that what follows is the webhooks' doing alone.
      await worker.drain();

      // The held webhooks arrive and are accepted; the worker applies them and nothing changes.
      fake.holdWebhooks(false);
      await webhooksAnswered(fake);
      const sent = fake.webhooks().slice(webhooksBefore);
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.map((h) => [h.type, h.sends.at(-1)])).toEqual(sent.map((h) => [h.type, 200]));
      // What a drain may change: the received webhooks become processed. Nothing else.
      const skipTables = (table: string) => table === 'gateway_events';
      const before = await snapshotTables(t.db, { skipTables });
      await worker.drain();
      expect(await snapshotTables(t.db, { skipTables })).toEqual(before);
      expect(await worker.drain()).toBe(0);
      await expectPaidOnce(uniqid, c.code, sessionId, email);

      // Refunded through the API, partly then the rest; the provider holds both refunds, we record each once.
      const paymentRef = fake.session(sessionId)!.paymentRef!;
      expect(fake.refunds(paymentRef)).toEqual([]);
      const refund = (body: Record<string, string>, idem: string) =>
        t.http.post(`/dev/v1/orders/${orderId}/refund`).set(bearer(key)).set('Idempotency-Key', idem).send(body);
      expect((await refund({ amount: '4.00' }, `${c.code}-r1`)).status).toBe(200);
      expect((await orderOf(uniqid)).status).toBe('PARTIALLY_REFUNDED');
      expect((await refund({}, `${c.code}-r2`)).status).toBe(200);
      expect((await orderOf(uniqid)).status).toBe('REFUNDED');
      // The refunds' own webhooks (Stripe, PayPal) come back and are recognised as ours.
      await webhooksAnswered(fake);
      await worker.drain();

      const atProvider = fake.refunds(paymentRef);
      expect(atProvider.map((r) => [new Decimal(r.amount).toFixed(2), r.currency])).toEqual([
        ['4.00', 'USD'],
        ['5.99', 'USD'],
      ]);
      const ours = await t.db
        .selectFrom('refunds')
        .select(['amount', 'gateway', 'provider_refund_id', 'attempt_id'])
        .where('order_id', '=', order.id)
        .execute();
      expect(
        ours
          .map((r) => [new Decimal(r.amount).toFixed(2), r.gateway, r.provider_refund_id, r.attempt_id])
          .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      ).toEqual(atProvider.map((r) => [new Decimal(r.amount).toFixed(2), c.code, r.providerRefundId, attempt!.id]));
      expect(await paidEvents(uniqid)).toBe(1);
      expect(fake.violations).toEqual([]);
    },
    60_000,
  );
});
