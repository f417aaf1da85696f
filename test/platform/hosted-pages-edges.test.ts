// The hosted pages outside /dev/v1 (checkout, payment links, the sandbox gateway, theme previews, report downloads)
// take ids in their paths from anyone. A path whose %-escapes do not decode is a 400, an id that cannot be one (not a
// UUID where the column is uuid, NUL, overlong) is the same 404 a missing id gets, answered before any SQL; never a
// 500, never logged as an error, nothing written. Each URL of issue 24 point 1 is here as it was reported.
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createHttpServer } from '../../src/http/client-error';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import type { Database } from '../../db/tables';

let t: TestApp;
let key: string;
let linkUniqid: string;

const watched: (keyof Database)[] = [
  'orders',
  'order_items',
  'payment_attempts',
  'customers',
  'events',
  'outbound_emails',
  'audit_entries',
  'disputes',
];

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['*'])).key;
  const link = await t.http
    .post('/dev/v1/payment-links')
    .set(bearer(key))
    .send({ title: 'Edge link', amount: 10, currency: 'USD' });
  if (link.status !== 201) throw new Error(`payment link: ${link.status} ${link.text}`);
  linkUniqid = (link.body as { data: { uniqid: string } }).data.uniqid;
});
afterAll(() => t.close());

type Method = 'get' | 'post' | 'delete';
const send = (method: Method, path: string) => {
  const agent = request(t.app);
  return agent[method](path).ok(() => true);
};

/** The log lines of one request (by its id) at error level: a client's bad URL is never one. */
const errorsLoggedFor = (requestId: string) =>
  t.logs.filter((l) => l.request_id === requestId && (l.level === 'error' || l.level === 'crit'));

async function expectRefused(method: Method, path: string, status: number, title: string, form?: object) {
  const before = await rowCounts(t.db, watched);
  const req = send(method, path);
  const res = await (form ? req.type('form').send(form) : req);
  expect({ path, status: res.status }).toEqual({ path, status });
  const requestId = String(res.headers['x-request-id'] ?? '');
  expect(requestId).not.toBe('');
  expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
  expect(res.text).toContain(`<h1>${title}</h1>`);
  expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  expect(res.headers['cache-control']).toBe('no-store');
  expect(errorsLoggedFor(requestId)).toEqual([]);
  expect(await rowCounts(t.db, watched)).toEqual(before);
  return res;
}

describe('each URL of the issue: a 404 or 400 page, not a 500', () => {
  // PostgreSQL: invalid input syntax for type uuid.
  test.each([
    ['get', '/invoice/nope', 'Invoice not found'],
    ['post', '/invoice/x/pay', 'Invoice not found'],
    ['get', '/invoice/x/files/y', 'Invoice not found'],
  ] as const)('%s %s -> 404', async (method, path, title) => {
    await expectRefused(method, path, 404, title);
  });

  // URIError: failed to decode param.
  test.each([
    ['get', '/link/%ff'],
    ['get', '/invoice/%ff'],
    ['delete', '/link/%ff'],
    ['get', '/theme-preview/%ff'],
    ['get', '/sandbox/checkout/%ff'],
  ] as const)('%s %s -> 400', async (method, path) => {
    await expectRefused(method, path, 400, 'Bad request');
  });

  test('GET /analytics-reports/%ff/download -> 400 in the error envelope the download link answers in', async () => {
    const res = await send('get', '/analytics-reports/%ff/download');
    expect(res.status).toBe(400);
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.body.error).toMatchObject({ code: 'BAD_REQUEST', doc_url: 'http://api.test/docs/errors#BAD_REQUEST' });
    expect(errorsLoggedFor(String(res.headers['x-request-id']))).toEqual([]);
  });

  // invalid byte sequence for encoding "UTF8": 0x00.
  test.each([
    ['get', '/invoice/%00', 'Invoice not found'],
    ['get', '/sandbox/checkout/%00', 'Session not found'],
    ['post', '/sandbox/checkout/%00/pay', 'Session not found'],
  ] as const)('%s %s -> 404', async (method, path, title) => {
    await expectRefused(method, path, 404, title);
  });
});

describe('an id that cannot be one is the same page as a missing one', () => {
  test.each([
    ['/invoice/', '00000000-0000-4000-8000-000000000000', ['nope', '%00', 'x'.repeat(10_000), '%E2%82%AC', "1'or'1"]],
    ['/link/', '00000000-0000-4000-8000-000000000000', ['nope', '%00', 'x'.repeat(10_000), '%C3%A9%20x']],
    ['/sandbox/checkout/', 'sbx_00000000000000000000000000000000', ['nope', 'sbx_%00', 's'.repeat(10_000)]],
    ['/theme-preview/', 'A'.repeat(43), ['nope', '%00', 'A'.repeat(10_000)]],
  ])('%s', async (prefix, missing, impossible) => {
    const reference = await send('get', `${prefix}${missing}`);
    expect(reference.status).toBe(404);
    for (const id of impossible) {
      const res = await send('get', `${prefix}${id}`);
      expect({ id: id.slice(0, 40), status: res.status, text: res.text }).toEqual({
        id: id.slice(0, 40),
        status: 404,
        text: reference.text,
      });
    }
  });

  test('a file of an invoice: an impossible attachment id is "File not found", before any look-up', async () => {
    const order = await t.http
      .post('/dev/v1/payments')
      .set(bearer(key))
      .send({ title: 'Edge invoice', value: 5, currency: 'USD' });
    expect(order.status).toBe(201);
    const uniqid = (order.body as { data: { uniqid: string } }).data.uniqid;
    await expectRefused('get', `/invoice/${uniqid}/files/att_${'0'.repeat(32)}`, 404, 'File not found');
    await expectRefused('get', `/invoice/${uniqid}/files/%00`, 404, 'File not found');
    await expectRefused('get', `/invoice/${uniqid}/files/${'f'.repeat(10_000)}`, 404, 'File not found');
  });
});

describe('the forms of the pages', () => {
  test('a NUL in a form field is a 400 page, and no order is created', async () => {
    await expectRefused('post', `/link/${linkUniqid}`, 400, 'Bad request', { email: 'a\u0000b@example.com' });
  });

  test('a form over the size limit is a 413 page, not a 500', async () => {
    // A link's form carries a choice per variant field too: its limit is 16 kB.
    await expectRefused('post', `/link/${linkUniqid}`, 413, 'Request too large', { email: 'x'.repeat(17_000) });
  });

  test('the same form without the NUL creates the order (the refusal above was the NUL)', async () => {
    const res = await send('post', `/link/${linkUniqid}`).type('form').send({ email: 'ab@example.com' });
    expect(res.status).toBe(303);
  });
});

test('the API under /dev/v1 still answers its envelope for bad percent-encoding and NUL', async () => {
  for (const path of ['/dev/v1/orders/%ff', '/dev/v1/orders/%E0%A4%A', '/dev/v1/invoices/%']) {
    const res = await t.http.get(path).set(bearer(key));
    expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' });
  }
  // A NUL decodes: it reaches GET /orders/{id} and GET /invoices/{id}, whose ids (OrderId, as for completing or
  // refunding) are letters, digits, '_' and '-' only.
  for (const path of ['/dev/v1/orders/%00', '/dev/v1/invoices/%00', '/dev/v1/orders/%00/complete']) {
    const method = path.endsWith('/complete') ? 'post' : 'get';
    const res = await t.http[method](path).set(bearer(key));
    expect({
      path,
      status: res.status,
      code: res.body.error?.code,
      field: res.body.error?.details?.[0]?.field,
    }).toEqual({
      path,
      status: 422,
      code: 'VALIDATION_ERROR',
      field: 'path.id',
    });
  }
});

test('a refused page request is logged once, at info, with its reason and never its path', async () => {
  const res = await send('get', '/invoice/%00');
  const requestId = String(res.headers['x-request-id']);
  const lines = t.logs.filter((l) => l.request_id === requestId && l.message === 'page request refused');
  expect(lines).toEqual([
    expect.objectContaining({
      level: 'info',
      method: 'GET',
      status: 404,
      param: 'uniqid',
      reason: 'the path parameter cannot be an id',
    }),
  ]);
  expect(JSON.stringify(lines)).not.toContain('/invoice/');
});

// Found by test/fuzz/hosted-routes-fuzz.test.ts: a raw (not %-escaped) Latin-1 byte in the path is refused by
// Node's HTTP parser, whose 400 carried a body even for HEAD; the client then failed to parse the answer at all.
test("HEAD with a raw non-ASCII byte in the path: the parser's 400, with no body", async () => {
  const server: Server = createHttpServer(t.app, t.config, t.logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const answer = (method: string) =>
      new Promise<{ status: number; body: string; id: unknown }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path: '/invoice/caf\u00e9' }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, id: res.headers['x-request-id'] }));
        });
        req.on('error', reject);
        req.end();
      });
    const head = await answer('HEAD');
    expect(head).toEqual({ status: 400, body: '', id: expect.any(String) });
    const get = await answer('GET');
    expect(get.status).toBe(400);
    expect(JSON.parse(get.body).error.code).toBe('BAD_REQUEST');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
