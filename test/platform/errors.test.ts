// The error envelope everywhere: request ids, validation details, 404/405/413/415, malformed JSON, and a clean 500.
import request from 'supertest';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { rowCounts } from '../helpers/counts';

let t: TestApp;
let key: string;
let productId: string;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['*'])).key;
  productId = (await t.seed(shop, { products: [{ title: 'Thing', price: '5.00' }] })).products[0]!;
});
afterAll(() => t.close());

describe('X-Request-Id', () => {
  test('a valid caller value is echoed, on success and on error', async () => {
    const ok = await t.http.get('/dev/v1/me').set(bearer(key)).set('X-Request-Id', 'trace-123:abc');
    expect(ok.headers['x-request-id']).toBe('trace-123:abc');
    const err = await t.http.get('/dev/v1/me').set('X-Request-Id', 'trace-401');
    expect(err.status).toBe(401);
    expect(err.headers['x-request-id']).toBe('trace-401');
  });
  test('absent: a UUID is generated', async () => {
    const res = await t.http.get('/dev/v1/me').set(bearer(key));
    expect(res.headers['x-request-id']).toMatch(uuid);
  });
  test.each([
    ['too long', 'x'.repeat(129)],
    ['a space', 'has space'],
    ['non-ASCII', 'caf\u00e9'],
  ])('invalid (%s): replaced by a UUID', async (_why, value) => {
    const res = await t.http
      .get('/dev/v1/me')
      .set(bearer(key))
      .set('X-Request-Id', Buffer.from(value, 'utf8').toString('latin1'));
    expect(res.headers['x-request-id']).toMatch(uuid);
  });
  test('128 characters is still valid', async () => {
    const value = 'r'.repeat(128);
    expect((await t.http.get('/dev/v1/me').set(bearer(key)).set('X-Request-Id', value)).headers['x-request-id']).toBe(
      value,
    );
  });
  test('the access log line has the request id, operation, status and shop', async () => {
    await t.http.get('/dev/v1/me').set(bearer(key)).set('X-Request-Id', 'log-check-1');
    const line = t.logs.find((l) => l.request_id === 'log-check-1' && l.message === 'request');
    expect(line).toMatchObject({
      method: 'GET',
      operation_id: 'getAccount',
      route: 'GET /dev/v1/me',
      status: 200,
      shop_id: expect.any(String),
    });
    expect(typeof line?.duration_ms).toBe('number');
  });
});

describe('422 VALIDATION_ERROR', () => {
  test.each([
    ['limit=0', 'query.limit'],
    ['limit=101', 'query.limit'],
    ['limit=abc', 'query.limit'],
    ['include_variants=maybe', 'query.include_variants'],
  ])('%s -> a detail on %s', async (query, field) => {
    const res = await t.http.get(`/dev/v1/products?${query}`).set(bearer(key));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });
  test('malformed JSON: a detail on the body, nothing written', async () => {
    const before = await rowCounts(t.db, ['products', 'product_variants']);
    const res = await t.http
      .post(`/dev/v1/products/${productId}/duplicate`)
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send('{"a":');
    expect(res.status).toBe(422);
    expect(res.body.error.details[0].field).toBe('body');
    expect(await rowCounts(t.db, ['products', 'product_variants'])).toEqual(before);
  });
  test('a body on an operation that takes none: 422, nothing written', async () => {
    const before = await rowCounts(t.db, ['products']);
    const res = await t.http
      .post(`/dev/v1/products/${productId}/duplicate`)
      .set(bearer(key))
      .send({ unexpected: true });
    expect(res.status).toBe(422);
    expect(await rowCounts(t.db, ['products'])).toEqual(before);
  });
});

describe('routing and bodies', () => {
  test('unknown route: 404 NOT_FOUND', async () => {
    const res = await t.http.get('/dev/v1/no-such-thing').set(bearer(key));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  });
  test('wrong method: 405 with Allow', async () => {
    const res = await t.http.delete('/dev/v1/me').set(bearer(key));
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toBe('GET, HEAD');
  });
  test('a body over 1 MiB: 413, nothing written', async () => {
    const before = await rowCounts(t.db, ['products']);
    const res = await t.http
      .post(`/dev/v1/products/${productId}/duplicate`)
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await rowCounts(t.db, ['products'])).toEqual(before);
  });
  test('an unsupported media type: 415, nothing written', async () => {
    const before = await rowCounts(t.db, ['products']);
    const res = await t.http
      .post(`/dev/v1/products/${productId}/duplicate`)
      .set(bearer(key))
      .set('Content-Type', 'application/xml')
      .send('<a/>');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(await rowCounts(t.db, ['products'])).toEqual(before);
  });
});

describe('500 INTERNAL_ERROR', () => {
  test('an unexpected exception leaks nothing and is logged with the request id', async () => {
    const broken = await startTestApp({
      handlers: {
        getAccount: async () => {
          throw new Error('relation "secret_table" does not exist at SELECT password FROM secret_table');
        },
      },
    });
    try {
      const shop = await broken.createShop();
      const { key: k } = await broken.createKey(shop, ['*']);
      const res = await broken.http.get('/dev/v1/me').set(bearer(k)).set('X-Request-Id', 'boom-1');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        error: {
          code: 'INTERNAL_ERROR',
          message: 'The server failed to process the request.',
          doc_url: 'http://api.test/docs/errors#INTERNAL_ERROR',
        },
      });
      expect(res.text).not.toMatch(/secret_table|SELECT|stack|at /);
      const logged = broken.logs.find((l) => l.message === 'unhandled error' && l.request_id === 'boom-1');
      expect(JSON.stringify(logged)).toContain('secret_table');
    } finally {
      await broken.close();
    }
  });
});

describe('published contract and docs', () => {
  test('/openapi.yaml, /openapi.json, /docs, /docs/errors and the doc_url targets', async () => {
    const yaml = await t.http.get('/openapi.yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.text).toContain('version: 1.0.0');
    const json = await t.http.get('/openapi.json');
    expect(json.body.openapi).toMatch(/^3\.1/);
    const docs = await t.http.get('/docs');
    expect(docs.text).not.toMatch(/https?:\/\//); // nothing loaded from another host
    expect(docs.headers['content-security-policy']).toContain("default-src 'none'");
    const bundle = /<script src="(\/docs\/scalar-[\d.]+\/standalone\.js)">/.exec(docs.text)?.[1];
    expect(bundle).toBeDefined();
    // A page's asset, not an API answer: plain supertest, no contract check.
    const scalar = await request(t.app).head(bundle!);
    expect(scalar.status).toBe(200);
    expect(scalar.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    // Another version's address is not ours to answer.
    expect((await t.http.get('/docs/scalar-0.0.0/standalone.js')).status).toBe(404);
    const start = await t.http.get('/docs/reference.js');
    expect(start.text).toContain('"withDefaultFonts":false');
    expect(start.text).toContain('"proxyUrl":""');
    const errors = await t.http.get('/docs/errors');
    for (const code of ['UNAUTHORIZED', 'VALIDATION_ERROR', 'PRODUCT_NOT_FOUND'])
      expect(errors.text).toContain(`id="${code}"`);
    expect(errors.text).toContain('<code>details</code>');
    expect(errors.text).not.toContain('`');
  });
  test('/favicon.ico and /favicon.svg are icons, cached for a day; every docs page links the SVG', async () => {
    const ico = await t.http.get('/favicon.ico').buffer(true);
    expect([ico.status, ico.headers['content-type'], ico.headers['cache-control']]).toEqual([
      200,
      'image/x-icon',
      'public, max-age=86400',
    ]);
    // An ICO directory of one image, a PNG.
    const body = ico.body as Buffer;
    expect([body.readUInt16LE(2), body.readUInt16LE(4)]).toEqual([1, 1]);
    expect(body.subarray(body.readUInt32LE(18), body.readUInt32LE(18) + 4).toString('latin1')).toBe('\x89PNG');
    const svg = await t.http.get('/favicon.svg').buffer(true);
    expect([svg.status, svg.headers['content-type']]).toEqual([200, 'image/svg+xml; charset=utf-8']);
    for (const page of ['/docs', '/docs/errors'])
      expect((await t.http.get(page)).text).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  });
  test('/healthz and /readyz', async () => {
    expect((await t.http.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.database).toBe('up');
  });
});
