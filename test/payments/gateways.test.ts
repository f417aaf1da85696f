// Gateways: a new live shop offers no SANDBOX, its test twin does (and a live shop is refused it); capabilities list the active gateways; requireActiveGateway and the
// session adapters; the operator actions behind `gateway set|list`, `tax set`, `coupon create`; and the fixture
// sections gateways, tax, coupons, product files and dynamic_webhook.
import { couponByCode, couponProductIds } from '../../db/queries/coupons';
import { gatewaysOfShop } from '../../db/queries/gateways';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { adapterFor, requireActiveGateway, sandboxGatewayCode } from '../../src/domain/payments/gateways';
import { ApiError } from '../../src/errors';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const capabilities = async (shopId: string) => {
  const { key } = await t.createKey(shopId, ['orders.read']);
  const res = await t.http.get('/dev/v1/me/capabilities').set(bearer(key));
  expect(res.status).toBe(200);
  return res.body.data.enabledPaymentMethods as string[];
};

test('a new live shop offers no SANDBOX; its test twin has an active SANDBOX session gateway, and capabilities list it', async () => {
  const twin = await t.createShop({ mode: 'test' });
  const live = (await shopById(t.db, twin))!.live_shop_id!;
  expect(await shopById(t.db, live)).toMatchObject({ livemode: true });
  expect(await gatewaysOfShop(t.db, live)).toEqual([]);
  expect(await capabilities(live)).toEqual([]);
  const gateways = await gatewaysOfShop(t.db, twin);
  expect(gateways.map((g) => [g.code, g.kind, g.active, g.coins])).toEqual([['SANDBOX', 'SESSION', true, []]]);
  expect(await capabilities(twin)).toEqual(['SANDBOX']);
});

test('gateway set --code SANDBOX on a live shop is refused and writes nothing; its test twin takes it', async () => {
  const live = await t.createShop();
  const before = await rowCounts(t.db, ['gateways', 'shops']);
  for (const input of [
    { shopId: live, code: 'SANDBOX', kind: 'SESSION' },
    { shopId: live, code: 'sandbox', kind: 'HOSTED', inactive: true },
  ]) {
    await expect(admin.setGateway(t.db, input)).rejects.toThrow(
      new admin.AdminError("The SANDBOX gateway exists only in test mode: use the shop's test mode (--mode test)."),
    );
  }
  expect(await rowCounts(t.db, ['gateways', 'shops'])).toEqual(before);
  expect(await admin.listGateways(t.db, live)).toEqual([]);
  const twin = (await admin.shopForMode(t.db, live, 'test')).id;
  await admin.setGateway(t.db, { shopId: twin, code: 'SANDBOX', kind: 'SESSION', inactive: true });
  expect(await admin.listGateways(t.db, twin)).toEqual([
    { code: 'SANDBOX', kind: 'SESSION', active: false, coins: [] },
  ]);
});

test('capabilities list the active gateways in the order they were added, not inactive ones or other shops’', async () => {
  const shop = await t.createShop({ mode: 'test' }); // a test shop: its SANDBOX came first
  const other = await t.createShop();
  await admin.setGateway(t.db, { shopId: shop, code: 'stripe', kind: 'hosted' });
  await admin.setGateway(t.db, { shopId: shop, code: 'PAYPAL', kind: 'HOSTED', inactive: true });
  await admin.setGateway(t.db, { shopId: shop, code: 'CRYPTO', kind: 'CRYPTO', coins: 'btc, eth,BTC' });
  await admin.setGateway(t.db, { shopId: other, code: 'OTHER', kind: 'HOSTED' });
  expect(await capabilities(shop)).toEqual(['SANDBOX', 'STRIPE', 'CRYPTO']);
  expect(await admin.listGateways(t.db, shop)).toEqual([
    { code: 'CRYPTO', kind: 'CRYPTO', active: true, coins: ['BTC', 'ETH'] },
    { code: 'PAYPAL', kind: 'HOSTED', active: false, coins: [] },
    { code: 'SANDBOX', kind: 'SESSION', active: true, coins: [] },
    { code: 'STRIPE', kind: 'HOSTED', active: true, coins: [] },
  ]);
  // Setting again replaces kind, coins and the active flag.
  await admin.setGateway(t.db, { shopId: shop, code: 'SANDBOX', kind: 'SESSION', inactive: true });
  await admin.setGateway(t.db, { shopId: shop, code: 'PAYPAL', kind: 'HOSTED' });
  expect(await capabilities(shop)).toEqual(['STRIPE', 'PAYPAL', 'CRYPTO']);
});

test('gateway set refuses bad input and changes nothing', async () => {
  const shop = await t.createShop();
  const before = await rowCounts(t.db, ['gateways']);
  for (const input of [
    { shopId: shop, code: 'BAD-CODE', kind: 'HOSTED' },
    { shopId: shop, code: 'X', kind: 'CARD' },
    { shopId: shop, code: 'X' },
    { shopId: shop, code: 'X', kind: 'HOSTED', coins: 'BTC' },
    { shopId: shop, code: 'X', kind: 'CRYPTO', coins: 'B-T-C' },
    { shopId: 'shop_nope', code: 'X', kind: 'HOSTED' },
  ]) {
    await expect(admin.setGateway(t.db, input)).rejects.toThrow(admin.AdminError);
  }
  await expect(admin.listGateways(t.db, 'shop_nope')).rejects.toThrow('No shop');
  expect(await rowCounts(t.db, ['gateways'])).toEqual(before);
});

test('requireActiveGateway finds only an active gateway of the shop; adapters exist for SANDBOX only', async () => {
  const shop = await t.createShop({ mode: 'test' });
  const other = await t.createShop({ mode: 'test' });
  await admin.setGateway(t.db, { shopId: shop, code: 'OFF', kind: 'HOSTED', inactive: true });
  await admin.setGateway(t.db, { shopId: shop, code: 'ACME', kind: 'SESSION' });
  await admin.setGateway(t.db, { shopId: other, code: 'THEIRS', kind: 'HOSTED' });
  const sandbox = await requireActiveGateway(t.db, shop, sandboxGatewayCode);
  expect(sandbox).toMatchObject({ shop_id: shop, code: 'SANDBOX', kind: 'SESSION', active: true });
  for (const code of ['OFF', 'THEIRS', 'NOPE']) {
    const err = await requireActiveGateway(t.db, shop, code).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'GATEWAY_NOT_AVAILABLE', status: 400 });
  }
  const session = adapterFor(sandbox, 'https://api.example.com').startSession({
    shopId: shop,
    orderUniqid: 'u',
    amount: '1.00',
    currency: 'USD',
    returnUrl: 'https://pay.example.com/invoice/u',
  });
  expect(session.sessionId).toMatch(/^sbx_[0-9a-f]{32}$/);
  expect(session.checkoutUrl).toBe(`https://api.example.com/sandbox/checkout/${session.sessionId}`);
  const acme = await requireActiveGateway(t.db, shop, 'ACME');
  expect(() => adapterFor(acme, 'https://api.example.com')).toThrow(
    expect.objectContaining({ code: 'GATEWAY_NOT_AVAILABLE' }),
  );
  // A HOSTED gateway named SANDBOX is no sandbox session.
  await admin.setGateway(t.db, { shopId: other, code: 'SANDBOX', kind: 'HOSTED' });
  const hosted = await requireActiveGateway(t.db, other, 'SANDBOX');
  expect(() => adapterFor(hosted, 'https://api.example.com')).toThrow(ApiError);
});

test('tax set stores the rate and whether it is included; bad rates are refused', async () => {
  const shop = await t.createShop();
  expect(await admin.setTax(t.db, { shopId: shop, rate: '20', inclusive: true })).toEqual({
    shop_id: shop,
    rate: '20',
    inclusive: true,
  });
  expect(await shopById(t.db, shop)).toMatchObject({ tax_rate: '20.0000', tax_inclusive: true });
  await admin.setTax(t.db, { shopId: shop, rate: '7.125', inclusive: false });
  for (const rate of ['101', '-1', '7.12345', 'abc', '']) {
    await expect(admin.setTax(t.db, { shopId: shop, rate, inclusive: true })).rejects.toThrow(admin.AdminError);
  }
  await expect(admin.setTax(t.db, { shopId: 'shop_nope', rate: '5', inclusive: false })).rejects.toThrow('No shop');
  expect(await shopById(t.db, shop)).toMatchObject({ tax_rate: '7.1250', tax_inclusive: false });
});

test('coupon create: codes lower-cased, FIXED in a currency, limited to products of the shop', async () => {
  const shop = await t.createShop({ currency: 'EUR' });
  const other = await t.createShop();
  const { products } = await t.seed(shop, {
    products: [
      { title: 'P1', price: '1.00' },
      { title: 'P2', price: '2.00' },
    ],
  });
  const foreign = (await t.seed(other, { products: [{ title: 'X', price: '1.00' }] })).products[0]!;
  const pct = await admin.createCoupon(t.db, {
    shopId: shop,
    code: 'SAVE10',
    type: 'percentage',
    value: '10',
    maxUses: '3',
    expires: '2030-01-01T00:00:00Z',
    products: `${products[0]},${products[1]}`,
  });
  expect(pct).toMatchObject({
    code: 'save10',
    type: 'PERCENTAGE',
    value: '10',
    currency: null,
    max_uses: 3,
    expires_at: '2030-01-01T00:00:00.000Z',
  });
  const found = await couponByCode(t.db, shop, 'Save10');
  expect(found?.id).toBe(pct.id);
  expect(await couponProductIds(t.db, shop, pct.id)).toEqual([...products].sort());
  expect(await couponByCode(t.db, other, 'save10')).toBeUndefined();

  const fixed = await admin.createCoupon(t.db, { shopId: shop, code: 'five', type: 'FIXED', value: '5.50' });
  expect(fixed).toMatchObject({ type: 'FIXED', currency: 'EUR', value: '5.5', max_uses: null, products: [] });
  expect(await couponProductIds(t.db, shop, fixed.id)).toEqual([]);

  const before = await rowCounts(t.db, ['coupons', 'coupon_products']);
  for (const input of [
    { code: 'save10', type: 'FIXED', value: '1' }, // exists (case-insensitive)
    { code: 'SAVE10', type: 'PERCENTAGE', value: '1' },
    { code: 'bad code', type: 'FIXED', value: '1' },
    { code: 'x1', type: 'OFF', value: '1' },
    { code: 'x2', type: 'PERCENTAGE', value: '101' },
    { code: 'x3', type: 'PERCENTAGE', value: '5', currency: 'USD' },
    { code: 'x4', type: 'FIXED', value: '1.234' },
    { code: 'x5', type: 'FIXED', value: '0' },
    { code: 'x6', type: 'FIXED', value: '1', maxUses: '0' },
    { code: 'x7', type: 'FIXED', value: '1', expires: 'soon' },
    { code: 'x8', type: 'FIXED', value: '1', products: foreign },
  ]) {
    await expect(admin.createCoupon(t.db, { shopId: shop, ...input })).rejects.toThrow(admin.AdminError);
  }
  expect(await rowCounts(t.db, ['coupons', 'coupon_products'])).toEqual(before);
});

test('fixtures: gateways, tax, coupons, product files and dynamic_webhook, in one transaction', async () => {
  const shop = await t.createShop({ currency: 'USD', mode: 'test' }); // SANDBOX in fixtures: test mode only
  const created = await t.seed(shop, {
    gateways: [
      { code: 'CRYPTO', kind: 'CRYPTO', coins: ['BTC'] },
      { code: 'SANDBOX', kind: 'SESSION', active: false },
    ],
    tax: { rate: '19', inclusive: true },
    products: [
      {
        title: 'Assets',
        type: 'FILE',
        price: '9.00',
        files: [
          { filename: 'readme.txt', content: 'hello' },
          { filename: 'data.csv', content_type: 'text/csv', content: 'a,b\n1,2\n' },
        ],
      },
      { title: 'Callback', type: 'DYNAMIC', price: '3.00', dynamic_webhook: 'https://seller.example.com/deliver' },
    ],
    coupons: [
      { code: 'WELCOME', type: 'PERCENTAGE', value: '15', products: ['Assets'] },
      { code: 'flat', type: 'FIXED', value: '2', max_uses: 10, uses: 2, expires_at: '2030-01-01T00:00:00Z' },
    ],
  });
  expect(created.gateways).toEqual(['CRYPTO', 'SANDBOX']);
  expect(created.coupons).toHaveLength(2);
  expect(created.attachments).toHaveLength(2);
  expect(await capabilities(shop)).toEqual(['CRYPTO']);
  expect(await shopById(t.db, shop)).toMatchObject({ tax_rate: '19.0000', tax_inclusive: true });
  const [assets, callback] = created.products as [string, string];
  const files = await t.db
    .selectFrom('product_files as pf')
    .innerJoin('attachments as a', 'a.id', 'pf.attachment_id')
    .select(['a.filename', 'a.content_type', 'a.content', 'a.shop_id'])
    .where('pf.product_id', '=', assets)
    .orderBy('a.filename')
    .execute();
  expect(files.map((f) => [f.filename, f.content_type, Buffer.from(f.content).toString('utf8'), f.shop_id])).toEqual([
    ['data.csv', 'text/csv', 'a,b\n1,2\n', shop],
    ['readme.txt', 'text/plain', 'hello', shop],
  ]);
  const dynamic = await t.db
    .selectFrom('products')
    .select('dynamic_webhook')
    .where('id', '=', callback)
    .executeTakeFirstOrThrow();
  expect(dynamic.dynamic_webhook).toBe('https://seller.example.com/deliver');
  const welcome = await couponByCode(t.db, shop, 'welcome');
  expect(welcome).toMatchObject({ code: 'welcome', type: 'PERCENTAGE', currency: null, uses: 0, max_uses: null });
  expect(await couponProductIds(t.db, shop, welcome!.id)).toEqual([assets]);
  const flat = await couponByCode(t.db, shop, 'FLAT');
  expect(flat).toMatchObject({ currency: 'USD', uses: 2, max_uses: 10 });
  expect(flat?.expires_at?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
});

test('fixtures: invalid gateway, tax, coupon and file sections are refused before anything is written', () => {
  const bad: unknown[] = [
    { gateways: [{ code: 'x', kind: 'HOSTED' }] },
    { gateways: [{ code: 'X', kind: 'HOSTED', coins: ['BTC'] }] },
    {
      gateways: [
        { code: 'X', kind: 'HOSTED' },
        { code: 'X', kind: 'CRYPTO' },
      ],
    },
    { tax: { rate: '120' } },
    { tax: { inclusive: true } },
    { coupons: [{ code: 'A', type: 'PERCENTAGE', value: '150' }] },
    { coupons: [{ code: 'A', type: 'PERCENTAGE', value: '5', currency: 'USD' }] },
    { coupons: [{ code: 'A', type: 'FIXED', value: '0' }] },
    { coupons: [{ code: 'A', type: 'FIXED', value: '1', max_uses: 1, uses: 2 }] },
    {
      coupons: [
        { code: 'A', type: 'FIXED', value: '1' },
        { code: 'a', type: 'FIXED', value: '2' },
      ],
    },
    { coupons: [{ code: 'A', type: 'FIXED', value: '1', products: ['Missing'] }] },
    { products: [{ title: 'S', price: '1', files: [{ filename: 'a', content: 'x' }] }] },
    { products: [{ title: 'S', type: 'SERVICE', price: '1', dynamic_webhook: 'https://x.example.com' }] },
    { products: [{ title: 'D', type: 'DYNAMIC', price: '1', dynamic_webhook: 'ftp://x.example.com' }] },
  ];
  for (const fixtures of bad) expect(() => parseFixtures(fixtures, new Date())).toThrow(FixtureError);
});
