// The shop's branding (PUT /store/branding) on its hosted pages (src/views/page-layout.ts): its name and colours are
// shown, a logo only when it is on this server's own origin, merchant text escaped, and colours that would be
// unreadable are made readable. Through HTTP, like a buyer's browser gets them.
import request from 'supertest';
import { contrast, inkOn, pageBrand, readableOnWhite } from '../../src/views/page-layout';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const publicUrl = 'https://pay.shop.test';
let t: TestApp;
let key: string;
let invoicePath: string;

const branding = (over: Record<string, unknown> = {}) => ({
  name: 'Northwind <b>Games</b>',
  logo_url: null,
  favicon_url: null,
  primary_color: '#0B6E4F',
  accent_color: '#F2A541',
  support_email: null,
  ...over,
});

async function brand(over: Record<string, unknown> = {}) {
  const res = await request(t.app).put('/dev/v1/store/branding').set(bearer(key)).send(branding(over));
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  t = await startTestApp({ env: { PUBLIC_URL: publicUrl } });
  const shopId = await t.createShop({ name: 'Northwind Games Ltd' });
  key = (await t.createKey(shopId, ['*'])).key;
  const productId = (await t.seed(shopId, { products: [{ title: 'Guide', type: 'SERVICE', price: '3.00' }] }))
    .products[0]!;
  const order = await request(t.app)
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: productId, quantity: 1 }] });
  expect(order.status).toBe(201);
  invoicePath = `/invoice/${order.body.data.uniqid}`;
});

afterAll(async () => {
  await t?.close();
});

test('a shop that never set its branding shows its own name and the default colours', async () => {
  const page = await request(t.app).get(invoicePath);
  expect(page.status).toBe(200);
  expect(page.text).toContain('<span class="name" id="shop-name">Northwind Games Ltd</span>');
  expect(page.text).toContain('--primary:#1a73e8');
  expect(page.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
});

test("the branding's name and colours reach the page, its name escaped", async () => {
  await brand();
  const page = await request(t.app).get(invoicePath);
  expect(page.text).toContain('id="shop-name">Northwind &lt;b&gt;Games&lt;/b&gt;</span>');
  expect(page.text).not.toContain('<b>Games</b>');
  expect(page.text).toContain('--primary:#0b6e4f;--on-primary:#ffffff;--accent:#f2a541');
  // The initial stands in for a logo.
  expect(page.text).toContain('<span class="mark" aria-hidden="true">N</span>');
});

test('a logo on another host is not rendered; one on this server is, under the same image policy', async () => {
  await brand({ logo_url: 'https://cdn.example.com/logo.png' });
  let page = await request(t.app).get(invoicePath);
  expect(page.text).not.toContain('<img');
  expect(page.text).not.toContain('cdn.example.com');
  expect(page.headers['content-security-policy']).toContain("img-src 'self'");

  await brand({ logo_url: `${publicUrl}/assets/logo.png` });
  page = await request(t.app).get(invoicePath);
  expect(page.text).toContain(`<img src="${publicUrl}/assets/logo.png" alt="" width="128" height="40">`);
  expect(page.headers['content-security-policy']).toContain("img-src 'self'");
  await brand();
});

test('a pale brand colour gets dark text on its buttons and a darker shade for links', async () => {
  await brand({ primary_color: '#FFE14D' });
  const page = await request(t.app).get(invoicePath);
  expect(page.text).toContain('--primary:#ffe14d;--on-primary:#000000');
  const link = /--link:(#[0-9a-f]{6})/.exec(page.text)![1]!;
  expect(contrast(link, '#ffffff')).toBeGreaterThanOrEqual(4.5);
  await brand();
});

test('contrast rules and the colour check of the layout', () => {
  for (const colour of ['#000000', '#ffffff', '#1a73e8', '#ff6d00', '#777777', '#767676', '#00ff00', '#ff0000'])
    expect(contrast(inkOn(colour), colour)).toBeGreaterThanOrEqual(4.5);
  expect(readableOnWhite('#1b1b1b')).toBe('#1b1b1b');
  // A stored colour that is not #rrggbb (an old row, a hand-edited one) never reaches the CSS.
  const fallback = pageBrand(
    { name: 'X', logo_url: 'javascript:alert(1)', primary_color: 'red;}body{display:none', accent_color: '#abc' },
    publicUrl,
  );
  expect(fallback).toEqual({ name: 'X', logoUrl: null, primary: '#1a73e8', accent: '#ff6d00' });
});
