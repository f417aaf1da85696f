// Issue 15, part 1: the whole contract exercised end to end through Stoplight Prism as a validating proxy.
// The app listens on a real 127.0.0.1 port; two Prism proxies sit in front of it:
//  - `strict` (`--errors`, request validation on) carries the walk: valid requests, realistic data, every operation
//    of openapi.yaml in a sensible order (create, read, update, delete), with a few error answers (404 of another
//    shop's id, 409, 403) so the error envelopes are judged too;
//    `--errors` turns a response that breaks the contract into Prism's own 500 VIOLATIONS answer, so none slips by;
//  - `lenient` (`--validate-request false`, without `--errors`) carries the deliberately invalid requests (a 422 body,
//    a missing credential): the strict one would answer those itself (401/422), and we want the server's answer
//    judged. Without `--errors` Prism still forwards a request lacking the credential (with `--errors` it answers 401
//    even when request validation is off) and still validates the response: a violation is then a `sl-violations`
//    header entry located in `response…` and a `Violation: response…` log line, both counted.
// The test fails on any violation Prism reports (a `sl-violations` header, a problem answer of Prism's own, a
// "Violation:" or "Request terminated with error" line in its log) and on any operation of the contract that no
// answer of the server covered. A canary (answers the wrapper server breaks on purpose) proves that all three
// channels are read.
// It writes test-artifacts/prism-report.json: every exchange, the operations covered, Prism's log.
import * as admin from '../../src/ops/admin';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { newApp, pkce, redirectUri, basic } from '../helpers/oauth-apps';
import { freePort } from '../helpers/redis-server';
import { startTestApp, type TestApp } from '../helpers/test-app';
import { createTwoShops, type TenantShop } from '../helpers/two-shops';
import { contractOperations, operationMatcher } from './operation-index';
import { startPrism, type PrismProxy } from './prism';
import { ProxyClient, type Answer, type CallOptions } from './proxy-client';

jest.setTimeout(120_000);

const root = join(__dirname, '..', '..');
const operations = contractOperations();
const started = Date.now();

let t: TestApp;
let server: Server;
let strict: PrismProxy;
let lenient: PrismProxy;
let client: ProxyClient;
/** The canary's own recorder, so its deliberate violations stay out of the walk's count. */
let canary: ProxyClient;
/** What the canary requests get instead of the app's answer: each breaks the contract in its own way. */
const canaryAnswers = {
  /** A success whose body is not the declared one. */
  body: { status: 200, body: { data: { shop_id: 42 } } },
  /** An error that is not the error envelope. */
  envelope: { status: 404, body: { message: 'gone' } },
  /** A status the operation does not declare. */
  status: { status: 418, body: { error: { code: 'TEAPOT', message: 'short and stout' } } },
} as const;
/** How many violation lines each proxy had logged once the canary was through (the walk must add none). */
const canaryLogLines = new Map<string, number>();

let A: TenantShop;
let B: TenantShop;

/** Resolves once `count()` reached `atLeast` and then stayed the same for a while (Prism logs after answering). */
async function settled(count: () => number, atLeast: number, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const now = count();
    if (now !== last) [last, since] = [now, Date.now()];
    if (now >= atLeast && Date.now() - since >= 500) return now;
    if (Date.now() > deadline) throw new Error(`expected at least ${atLeast} log lines, saw ${now}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request through the proxy; fails the step (with the answer) when the status is not the expected one. */
async function call(expected: number, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const label = `${method} ${path}`;
  const res = await client.call(label, method, path, { key: A.key, ...options });
  const seen = client.exchanges.at(-1)!;
  if (res.status !== expected || !seen.fromServer) {
    const who = seen.fromServer ? 'the server' : `Prism (${seen.prismAnswer ?? 'not the server'})`;
    throw new Error(
      `${label}: expected ${expected} from the server, got ${res.status} from ${who}\n${res.text.slice(0, 2000)}`,
    );
  }
  return res;
}
const anonymous = { key: undefined } as const;

beforeAll(async () => {
  // Some two hundred requests from one IP and one shop: the rate limits are not what this file tests.
  t = await startTestApp({
    env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_PRO: '100000', RATE_LIMIT_ANONYMOUS: '100000' },
  });
  // The app, except for requests marked as the canary: those get an answer that breaks the contract, to prove that
  // Prism validates responses and that this file reads its verdict (a walk that could not see a violation is no test).
  server = createServer((req, res) => {
    const kind = req.headers['x-e2e-canary'];
    if (typeof kind === 'string' && kind in canaryAnswers) {
      const { status, body } = canaryAnswers[kind as keyof typeof canaryAnswers];
      res.writeHead(status, { 'Content-Type': 'application/json', 'X-Request-Id': `e2e-canary-${kind}` });
      res.end(JSON.stringify(body));
      return;
    }
    void t.app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const upstream = `http://127.0.0.1:${(server.address() as { port: number }).port}/dev/v1`;
  // Prism takes seconds to load the contract: let it start while the shops are seeded.
  const [shops, proxies] = await Promise.all([
    createTwoShops(t),
    Promise.all([
      freePort().then((port) => startPrism('strict', upstream, port, ['--errors'])),
      freePort().then((port) => startPrism('lenient', upstream, port, ['--validate-request', 'false'])),
    ]),
  ]);
  ({ a: A, b: B } = shops);
  [strict, lenient] = proxies;
  client = new ProxyClient(strict, lenient, operationMatcher(operations), '/dev/v1');
  canary = new ProxyClient(strict, lenient, operationMatcher(operations), '/dev/v1');
});

afterAll(async () => {
  await Promise.all([strict?.stop(), lenient?.stop()]);
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server?.closeAllConnections();
  await t?.close();
});

describe('the walk through the proxy', () => {
  test('canary: answers that break the contract are reported (and not counted)', async () => {
    const send = (kind: keyof typeof canaryAnswers, path: string, invalid = false) =>
      canary.call(`canary ${kind}`, 'GET', path, { key: A.key, headers: { 'X-E2E-Canary': kind }, invalid });
    // An error of the body (severity Error): with --errors Prism replaces the answer with its own problem.
    for (const [kind, path] of [
      ['body', '/me'],
      ['envelope', `/customers/${A.ids.customer}`],
    ] as const) {
      const replaced = await send(kind, path);
      expect(replaced.status).toBe(500);
      expect(replaced.body.type).toBe('https://stoplight.io/prism/errors#VIOLATIONS');
    }
    // An undeclared non-2xx status is only a warning: forwarded, with the sl-violations header.
    const teapot = await send('status', '/me');
    expect(teapot.status).toBe(418);
    // The lenient proxy forwards what it finds wrong, and says so in the header.
    const forwarded = await send('body', '/me', true);
    expect(forwarded.status).toBe(200);
    expect(forwarded.headers.get('sl-violations')).toContain('response');
    expect(canary.exchanges.map((e) => [e.fromServer, e.violations.map((v) => v.location.split('.')[0])])).toEqual([
      [false, expect.arrayContaining(['response'])],
      [false, expect.arrayContaining(['response'])],
      [true, ['response']],
      [true, expect.arrayContaining(['response'])],
    ]);
    // The logs say so too: two answers replaced and one warning on the strict proxy, at least one line on the other.
    canaryLogLines.set('strict', await settled(() => strict.violationLines().length, 3));
    canaryLogLines.set('lenient', await settled(() => lenient.violationLines().length, 1));
  });

  test('account and discovery', async () => {
    await call(200, 'GET', '/me');
    await call(200, 'GET', '/me/capabilities');
    await call(200, 'GET', '/.well-known/oauth-authorization-server', anonymous);
    // No credential: the server's 401 envelope (Prism would answer a missing credential itself).
    await call(401, 'GET', '/me', { ...anonymous, invalid: true });
    const reader = (await t.createKey(A.shopId, ['orders.read'], 'e2e reader')).key;
    await call(403, 'GET', '/products', { key: reader });
    // Test mode: the test clock of the shop's test twin; live mode has none.
    const testKey = (await admin.createApiKey(t.db, { shopId: A.shopId, scopes: ['*'], mode: 'test' })).key;
    const me = await call(200, 'GET', '/me', { key: testKey });
    expect(me.body.data).toMatchObject({ livemode: false, live_account_id: A.shopId });
    await call(200, 'GET', '/me/test-clock', { key: testKey });
    const moved = await call(200, 'POST', '/me/test-clock/advance', { key: testKey, json: { seconds: 60 } });
    expect(moved.body.data.advanced_seconds).toBe(60);
    await call(404, 'GET', '/me/test-clock');
    await call(404, 'POST', '/me/test-clock/advance', { json: { seconds: 60 } });
  });

  test('catalog: products, serials, variant fields, quantity deals, add-ons, coupons', async () => {
    const products = await call(200, 'GET', '/products?limit=10');
    expect(products.body.data.map((p: { id: string }) => p.id)).toContain(A.ids.product);
    const copy = await call(201, 'POST', `/products/${A.ids.product}/duplicate`);
    const copyId = copy.body.data.id as string;
    const claimed = await call(200, 'POST', `/products/${A.ids.serialProduct}/serials/claim`, { json: { amount: 1 } });
    // The oldest of the three seeded serials; the order below gets the next one.
    expect(claimed.body.data).toMatchObject({ claimed_count: 1, remaining_stock: 2 });
    expect(claimed.body.data.serials.map((x: { serial: string }) => x.serial)).toEqual(['TENANCY-0001']);
    // Variant fields on the copy, so the original keeps ordering without a choice.
    const field = await call(201, 'POST', `/products/${copyId}/variants/fields`, {
      json: { name: 'Size', sort_order: 0, options: [{ value: 'Small', price_adjustment: 0, sort_order: 0 }] },
    });
    await call(201, 'POST', `/products/${copyId}/variants/fields/${field.body.data.id}/options`, {
      json: { value: 'Large', price_adjustment: 5, sort_order: 1 },
    });
    await call(200, 'GET', `/products/${copyId}/variants/fields`);
    await call(200, 'PATCH', `/products/quantity-deals/${A.ids.quantityDeal}`, {
      json: {
        title: 'Volume discount',
        enabled: true,
        tiers: [{ min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: 10 }],
      },
    });
    await call(200, 'GET', '/products/addons');
    await call(200, 'GET', '/coupons');
    await call(200, 'GET', `/coupons/code/${A.ids.couponCode}`);
    // Errors: another shop's product, a coupon code nobody has, a claim of zero serials.
    await call(404, 'POST', `/products/${B.ids.product}/duplicate`);
    await call(404, 'GET', '/coupons/code/NOSUCHCODE');
    await call(422, 'POST', `/products/${A.ids.serialProduct}/serials/claim`, { json: { amount: 0 }, invalid: true });
  });

  test('orders: create, list, read one, complete with serial delivery, fulfil, refund, invoices', async () => {
    const service = await call(201, 'POST', '/orders', {
      json: {
        email: 'dora@example.com',
        title: 'Support plan',
        custom_fields: { discord: 'dora#1' },
        items: [{ product_id: A.ids.product, variant_id: A.ids.variant, quantity: 2 }],
      },
    });
    const keys = await call(201, 'POST', '/orders', {
      json: { email: 'ada@example.com', items: [{ product_id: A.ids.serialProduct, quantity: 1 }] },
    });
    await call(200, 'GET', '/orders?limit=5');
    await call(200, 'GET', `/orders/${service.body.data.id}`);
    const completed = await call(200, 'POST', `/orders/${keys.body.data.id}/complete`, {
      json: { note: 'Paid by bank transfer', suppress_emails: true },
    });
    expect(completed.body.data.status).toBe('COMPLETED');
    expect(JSON.stringify(completed.body.data)).toContain('TENANCY-0002');
    await call(200, 'POST', `/orders/${service.body.data.id}/fulfill`, {
      json: { notify_customer: false, note: 'Done by hand' },
    });
    await call(200, 'POST', `/orders/${A.ids.order}/items/${A.ids.orderItem}/fulfill`, {
      json: {
        message: 'Your onboarding call is booked.',
        links: [{ url: 'https://cal.example.com/x', label: 'Call' }],
      },
    });
    await call(200, 'POST', `/orders/${A.ids.order}/refund`, { json: { amount: '10.00', reason: 'Partial refund' } });
    await call(200, 'GET', '/invoices?limit=5');
    // A completed order with its delivered serial, read back as an order and as an invoice.
    await call(200, 'GET', `/orders/${keys.body.data.id}`);
    await call(200, 'GET', `/invoices/${keys.body.data.id}`);
    // Errors: another shop's order, an order that cannot be completed twice (ORDER_NOT_PENDING), an order without items.
    await call(404, 'POST', `/orders/${B.ids.pendingOrder}/complete`, { json: {} });
    await call(404, 'GET', `/orders/${B.ids.order}`);
    await call(404, 'GET', `/invoices/${B.ids.order}`);
    await call(400, 'POST', `/orders/${keys.body.data.id}/complete`, { json: {} });
    await call(422, 'POST', '/orders', { json: { email: 'ada@example.com', items: [] }, invalid: true });
  });

  test('payments and payment links', async () => {
    await t.seed(A.shopId, { gateways: [{ code: 'STRIPE', kind: 'HOSTED' }] });
    const payment = await call(201, 'POST', '/payments', {
      json: { title: 'Consulting hour', email: 'ada@example.com', value: 80, currency: 'USD', gateway: 'STRIPE' },
    });
    await call(200, 'GET', `/payments/${payment.body.data.uniqid}`);
    await call(404, 'GET', `/payments/${B.ids.payment}`);
    const link = await call(201, 'POST', '/payment-links', {
      json: { title: 'Tip jar', amount: 5, currency: 'USD', max_uses: 10 },
    });
    await call(200, 'POST', `/payment-links/${link.body.data.id}/toggle`);
    await call(404, 'POST', `/payment-links/${B.ids.paymentLink}/toggle`);
    await call(422, 'POST', '/payments', { json: { title: 'x', value: -1, currency: 'USD' }, invalid: true });
  });

  test('customers, wallets, blacklist, affiliates', async () => {
    await call(200, 'GET', '/customers?limit=10');
    await call(200, 'GET', `/customers/${A.ids.customer}`);
    await call(200, 'POST', `/customers/${A.ids.customer}/wallet/credit`, {
      json: { amount: '10.00', type: 'PROMO', description: 'Welcome credit' },
    });
    await call(200, 'POST', `/customers/${A.ids.customer}/wallet/debit`, {
      json: { amount: '4.00', type: 'PURCHASE', description: 'Sticker pack' },
    });
    await call(200, 'POST', `/customers/${A.ids.affiliate}/affiliate/convert-to-balance`, { json: { amount: 2 } });
    await call(200, 'GET', '/blacklist');
    await call(200, 'GET', '/affiliates/customers');
    await call(200, 'GET', `/affiliates/customers/${A.ids.affiliate}/performance`);
    await call(200, 'POST', `/affiliates/applications/${A.ids.affiliateApplication}/approve`);
    await call(404, 'GET', `/customers/${B.ids.customer}`);
    await call(422, 'GET', '/customers?limit=0', { invalid: true });
    await call(422, 'POST', `/customers/${A.ids.customer}/wallet/credit`, {
      json: { amount: 'ten', type: 'PROMO' },
      invalid: true,
    });
    await call(400, 'POST', `/customers/${A.ids.customer}/wallet/debit`, {
      json: { amount: '100000.00', type: 'PURCHASE' },
    });
  });

  test('subscriptions and support', async () => {
    await call(200, 'GET', '/subscriptions');
    await call(200, 'GET', `/subscriptions/${A.ids.subscription}/plan-options`);
    await call(200, 'PATCH', `/subscriptions/${A.ids.subscription}/custom-fields`, {
      json: { custom_fields: { discord: 'ada#1234' } },
    });
    await call(200, 'POST', `/subscriptions/${A.ids.subscription}/pause`, {
      json: { resume_at: Math.floor(Date.now() / 1000) + 30 * 86400, reason: 'Holiday' },
    });
    await call(404, 'POST', `/subscriptions/${B.ids.subscription}/pause`, { json: {} });
    await call(422, 'PATCH', `/subscriptions/${A.ids.subscription}/custom-fields`, { json: {}, invalid: true });
    await call(200, 'GET', '/disputes');
    await call(200, 'GET', '/reviews');
    await call(200, 'GET', '/tickets');
  });

  test('licenses: create, read, update, validate, delete', async () => {
    const seeded = await call(200, 'GET', `/licenses/${A.ids.license}`);
    const productId = seeded.body.data.product_id as string;
    const created = await call(201, 'POST', '/licenses', {
      json: {
        product_id: productId,
        key: 'E2E-LICENSE-0001',
        customer_email: 'ada@example.com',
        note: 'Issued by hand',
      },
    });
    const id = created.body.data.id as string;
    await call(200, 'GET', '/licenses?limit=10');
    await call(200, 'PATCH', `/licenses/${id}`, { json: { note: 'Renewed', hwid: 'HW-E2E-1' } });
    await call(200, 'POST', '/licenses/validate', {
      json: { key: 'E2E-LICENSE-0001', product_id: productId, hwid: 'HW-E2E-1' },
    });
    await call(200, 'DELETE', `/licenses/${id}`);
    await call(404, 'GET', `/licenses/${B.ids.license}`);
    await call(409, 'POST', '/licenses', { json: { product_id: productId, key: 'TENANCY-LICENSE-0001' } });
    await call(422, 'POST', '/licenses', { json: { key: 'NO-PRODUCT' }, invalid: true });
  });

  test('webhooks and events', async () => {
    const created = await call(201, 'POST', '/webhooks', {
      json: { url: 'https://hooks.example.com/e2e', events: ['order:paid'], description: 'e2e', enabled: true },
    });
    const id = created.body.data.id as string;
    await call(200, 'GET', '/webhooks');
    await call(200, 'PATCH', `/webhooks/${id}`, { json: { events: ['order:paid', 'order:refunded'] } });
    await call(200, 'POST', `/webhooks/${id}/rotate-secret`, { json: { expire_previous_in_seconds: 60 } });
    await call(202, 'POST', `/webhooks/${id}/test`);
    await call(200, 'GET', '/webhooks/logs');
    await call(202, 'POST', `/webhooks/logs/${A.ids.webhookLog}/retry`);
    await call(200, 'GET', '/events?limit=10');
    await call(200, 'GET', `/events/${A.ids.event}`);
    await call(200, 'DELETE', `/webhooks/${id}`);
    await call(404, 'DELETE', `/webhooks/${B.ids.webhook}`);
    await call(422, 'POST', '/webhooks', { json: { url: 'not a url', events: [] }, invalid: true });
  });

  test('themes: create, settings, document, draft, schema, preview, publish', async () => {
    await call(200, 'GET', '/themes');
    const created = await call(201, 'POST', '/themes/control/create', { json: { name: 'Autumn', base: 'default' } });
    const fresh = created.body.data.id as string;
    await call(200, 'GET', `/themes/${fresh}/control/settings`);
    await call(200, 'POST', `/themes/${fresh}/control/settings`, { json: { settings: { primary_color: '#1a73e8' } } });
    const theme = A.ids.theme;
    await call(200, 'GET', `/themes/${theme}/control/document`);
    await call(200, 'GET', `/themes/${theme}/control/document/draft`);
    await call(200, 'GET', `/themes/${theme}/control/document/schema`);
    await call(200, 'PUT', `/themes/${theme}/control/document`, {
      json: { expected_revision: 3, document: { sections: [{ type: 'hero', title: 'Welcome back' }] } },
    });
    const preview = await call(201, 'POST', `/themes/${theme}/control/preview`, { json: { revision: 4 } });
    await call(200, 'DELETE', `/themes/${theme}/control/preview/${preview.body.data.id}`);
    await call(200, 'POST', `/themes/${theme}/control/publish`, { json: { expected_revision: 4 } });
    // Errors: a stale revision, another shop's theme.
    await call(409, 'PUT', `/themes/${theme}/control/document`, {
      json: { expected_revision: 1, document: { sections: [] } },
    });
    await call(404, 'GET', `/themes/${B.ids.theme}/control/document`);
    await call(422, 'POST', '/themes/control/create', { json: { base: 'default' }, invalid: true });
  });

  test('store: branding, layout, domains, email marketing, messaging bots', async () => {
    await call(200, 'GET', '/store/branding');
    await call(200, 'PUT', '/store/branding', {
      json: {
        name: 'Ada Supplies',
        logo_url: 'https://cdn.example.com/ada/logo.png',
        favicon_url: 'https://cdn.example.com/ada/favicon.ico',
        primary_color: '#1a73e8',
        accent_color: '#ff6d00',
        support_email: 'support@example.com',
      },
    });
    await call(200, 'GET', '/store/layout');
    await call(200, 'PUT', '/store/layout', {
      json: {
        product_grid_columns: 4,
        show_search: true,
        show_categories: false,
        show_reviews: true,
        announcement: 'Free delivery this week',
        footer_links: [{ url: 'https://ada.example.com/faq', label: 'FAQ' }],
      },
    });
    await call(200, 'GET', '/store/domains/additional');
    // Additional domains are a paid feature: refused on the free plan, then added once the shop is on pro.
    await call(400, 'POST', '/store/domains/additional', { json: { domain: 'e2e-shop.example.com' } });
    await t.db.updateTable('shops').set({ plan: 'pro' }).where('id', '=', A.shopId).execute();
    await call(201, 'POST', '/store/domains/additional', { json: { domain: 'e2e-shop.example.com' } });
    await call(200, 'POST', `/store/domains/additional/${A.ids.domain}/verification`);
    await call(200, 'GET', '/email-marketing/settings');
    await call(200, 'PUT', `/telegram/bots/${A.ids.messagingBot}/users/bulk/notifications`, {
      json: { user_ids: ['123456789'], notifications: { order_paid: true, stock_low: false } },
    });
    await call(404, 'POST', `/store/domains/additional/${B.ids.domain}/verification`);
    await call(422, 'PUT', '/store/layout', { json: { product_grid_columns: 99 }, invalid: true });
  });

  test('analytics and security', async () => {
    await call(200, 'GET', '/analytics/reports');
    await call(202, 'POST', `/analytics/reports/${A.ids.report}/generate`, {
      json: { from: '2026-11-01T00:00:00Z', to: '2026-12-01T00:00:00Z', format: 'CSV' },
    });
    await call(200, 'GET', '/security/audit-trail?limit=10');
    await call(200, 'GET', `/security/session-trail/${A.ids.dashboardSession}`);
    await call(404, 'GET', `/security/session-trail/${B.ids.dashboardSession}`);
    await call(200, 'POST', `/security/sessions/${A.ids.dashboardSession}/revoke`);
    await call(404, 'POST', `/security/sessions/${B.ids.dashboardSession}/revoke`);
    await call(422, 'POST', `/analytics/reports/${A.ids.report}/generate`, {
      json: { from: '2026-11-01T00:00:00Z', to: '2026-12-01T00:00:00Z', format: 'DOCX' },
      invalid: true,
    });
  });

  test('resellers: program, tiers, invite, suspend, reinstate', async () => {
    await call(200, 'GET', '/reseller-program');
    const tiers = await call(200, 'GET', '/reseller-tiers');
    const tierId = tiers.body.data.tiers[0].id as string;
    await call(200, 'PATCH', '/reseller-program', {
      json: {
        enabled: true,
        enrollment_mode: 'MANUAL',
        application_message: 'Tell us about you.',
        default_tier_id: tierId,
      },
    });
    await call(200, 'GET', '/resellers');
    await call(200, 'GET', `/resellers/${A.ids.reseller}`);
    await call(200, 'POST', `/resellers/${A.ids.reseller}/reinstate`);
    await call(200, 'POST', `/resellers/${A.ids.reseller}/suspend`);
    await call(200, 'POST', '/resellers/invite', { json: { email: 'ada@example.com', tier_id: tierId } });
    await call(404, 'GET', `/resellers/${B.ids.reseller}`);
    await call(422, 'POST', '/resellers/invite', { json: { email: 'not an email', tier_id: tierId }, invalid: true });
  });

  test('OAuth: authorize page, approval, token, a call with the token, revocation', async () => {
    const app = await newApp(t, { scopes: 'orders.read products.read' });
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.id,
      redirect_uri: redirectUri,
      scope: 'orders.read',
      state: 'e2e',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    await call(200, 'GET', `/oauth/authorize?${query}`, { ...anonymous, headers: { Accept: 'text/html' } });
    const approved = await call(200, 'POST', '/oauth/authorize', {
      json: Object.fromEntries(query),
    });
    const code = new URL(approved.body.data.redirect_url as string).searchParams.get('code')!;
    const tokens = await call(200, 'POST', '/oauth/token', {
      ...anonymous,
      headers: { Authorization: basic(app.id, app.secret!) },
      form: { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier },
    });
    await call(200, 'GET', '/orders?limit=1', { key: tokens.body.access_token });
    await call(200, 'POST', '/oauth/revoke', {
      ...anonymous,
      headers: { Authorization: basic(app.id, app.secret!) },
      form: { token: tokens.body.refresh_token, token_type_hint: 'refresh_token' },
    });
    // The grant is revoked with its refresh token: the access token stops working at once.
    await call(401, 'GET', '/orders?limit=1', { key: tokens.body.access_token });
    // The code was used: the token endpoint's RFC 6749 error.
    await call(400, 'POST', '/oauth/token', {
      ...anonymous,
      headers: { Authorization: basic(app.id, app.secret!) },
      form: { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier },
    });
  });
});

test('Prism saw no violation, and every operation of the contract was answered by the server', () => {
  const exchanges = client.exchanges;
  const covered = new Set(exchanges.filter((e) => e.fromServer && e.operationId).map((e) => e.operationId!));
  const missing = operations.filter((o) => !covered.has(o.operationId)).map((o) => `${o.method} ${o.path}`);
  const violations = exchanges.flatMap((e) =>
    e.violations.map((v) => ({ request: e.label, status: e.status, proxy: e.proxy, ...v })),
  );
  // The log of the strict proxy must hold no violation at all; the lenient one only those of the invalid requests.
  const strictLog = strict.violationLines().slice(canaryLogLines.get('strict') ?? 0);
  // The lenient proxy logs the request violations of the deliberately invalid requests: only responses count there.
  const lenientResponseLog = lenient
    .violationLines()
    .slice(canaryLogLines.get('lenient') ?? 0)
    .filter((l) => !/Violation: request/.test(l));
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const summary = `prism proxy: ${exchanges.length} requests, ${covered.size} of ${operations.length} operations, ${
    violations.length + strictLog.length + lenientResponseLog.length
  } violations (${seconds} s)`;
  console.log(summary);

  const dir = join(root, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'prism-report.json'),
    `${JSON.stringify(
      {
        summary,
        database: process.env.DATABASE_URL ? 'postgresql' : 'embedded',
        operations: operations.length,
        covered: [...covered].sort(),
        missing,
        violations,
        canary: canary.exchanges,
        logViolations: { strict: strictLog, lenient: lenientResponseLog },
        exchanges,
        prismLog: { strict: strict.output(), lenient: lenient.output() },
      },
      null,
      2,
    )}\n`,
  );

  expect(canaryLogLines.size).toBe(2);
  // One upstream serves the whole contract: an operation on another server would need a proxy of its own.
  expect(operations.filter((o) => !o.path.startsWith('/dev/v1/')).map((o) => o.operationId)).toEqual([]);
  expect(exchanges.filter((e) => !e.operationId).map((e) => e.label)).toEqual([]);
  expect(violations).toEqual([]);
  expect(strictLog).toEqual([]);
  expect(lenientResponseLog).toEqual([]);
  expect(missing).toEqual([]);
  expect(covered.size).toBe(operations.length);
});
