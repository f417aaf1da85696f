// A client generated from openapi.yaml (openapi-typescript `paths` + openapi-fetch), with no hand edits, calls the
// live server for the implemented operations. The results are typed from the contract (this file is type-checked by
// `npm run typecheck`), and every response is also checked against the contract.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../../src/generated/api-types';
import { assertMatchesContract } from '../helpers/contract';
import { startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let server: Server;
let baseUrl: string;
let key: string;
let productIds: string[];

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop({ name: 'Client Shop', currency: 'EUR' });
  key = (await t.createKey(shop, ['*'], 'generated client')).key;
  ({ products: productIds } = await t.seed(shop, {
    products: [
      { title: 'Starter', price: '9.99', variants: [{ title: 'Monthly', price: '9.99' }] },
      { title: 'Pro', price: '19.50' },
    ],
  }));
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dev/v1`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await t?.close();
});

/** Checks every response of the client against openapi.yaml, like the supertest client of test-app. */
const contract: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    const url = new URL(request.url);
    assertMatchesContract(request.method, url.pathname + url.search, {
      status: response.status,
      headers,
      body: text && headers['content-type']?.startsWith('application/json') ? JSON.parse(text) : undefined,
      text,
    });
    return response;
  },
};

function client(credential = key) {
  const c = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${credential}` } });
  c.use(contract);
  return c;
}

test('getAccount: GET /me', async () => {
  const { data, error, response } = await client().GET('/me');
  expect(error).toBeUndefined();
  expect(response.status).toBe(200);
  const account = data!.data;
  expect(account.name).toBe('Client Shop');
  expect(account.currency).toBe('EUR');
  expect(typeof account.created_at).toBe('number');
});

test('getCapabilities: GET /me/capabilities', async () => {
  const { data } = await client().GET('/me/capabilities');
  const caps = data!.data;
  expect(caps.full_access).toBe(true);
  expect(caps.scopes).toEqual(['*']);
  expect(caps.credential.kind).toBe('api_key');
  expect(caps.credential.client).toBeNull();
});

test('listProducts: GET /products with typed query parameters', async () => {
  const { data } = await client().GET('/products', { params: { query: { limit: 1, include_variants: true } } });
  expect(data!.data).toHaveLength(1);
  expect(data!.pagination.has_more).toBe(true);
  const cursor = data!.pagination.next_cursor;
  expect(typeof cursor).toBe('string');
  const next = await client().GET('/products', {
    params: { query: { limit: 1, cursor: cursor!, include_variants: true } },
  });
  const titles = [data!.data[0]!.title, next.data!.data[0]!.title].sort();
  expect(titles).toEqual(['Pro', 'Starter']);
  const starter = [data!.data[0]!, next.data!.data[0]!].find((p) => p.title === 'Starter')!;
  expect(starter.variants[0]!.price).toBe(9.99);
});

test('duplicateProduct: POST /products/{id}/duplicate', async () => {
  const id = productIds[0]!;
  const { data, response } = await client().POST('/products/{id}/duplicate', { params: { path: { id } } });
  expect(response.status).toBe(201);
  const copy = data!.data;
  expect(copy.id).not.toBe(id);
  expect(copy.title).toBe('Starter');
  expect(copy.created_at).toBeGreaterThan(0);
});

test('typed errors: an unknown product is 404 PRODUCT_NOT_FOUND', async () => {
  const { data, error, response } = await client().POST('/products/{id}/duplicate', {
    params: { path: { id: 'prod_missing' } },
  });
  expect(data).toBeUndefined();
  expect(response.status).toBe(404);
  expect(error!.error.code).toBe('PRODUCT_NOT_FOUND');
});

test('typed errors: a credential without the scope is 403 FORBIDDEN', async () => {
  const shop = await t.createShop({ name: 'Other' });
  const limited = (await t.createKey(shop, ['orders.read'])).key;
  const { error, response } = await client(limited).GET('/products');
  expect(response.status).toBe(403);
  expect(error!.error.code).toBe('FORBIDDEN');
});

test('getOrder and getInvoice: an order read back by id, typed as the Order the creation returned', async () => {
  const created = await client().POST('/orders', {
    body: { email: 'ada@example.com', items: [{ product_id: productIds[1]!, quantity: 2 }] },
  });
  expect(created.response.status).toBe(201);
  const id = created.data!.data.id;
  const order = await client().GET('/orders/{id}', { params: { path: { id } } });
  const invoice = await client().GET('/invoices/{id}', { params: { path: { id } } });
  expect(order.data!.data).toEqual(created.data!.data);
  expect(invoice.data!.data).toEqual(created.data!.data);
  expect(order.data!.data.total).toBe(39);
  const missing = await client().GET('/orders/{id}', { params: { path: { id: 'ord_missing' } } });
  expect(missing.response.status).toBe(404);
  expect(missing.error!.error.code).toBe('INVOICE_NOT_FOUND');
});
