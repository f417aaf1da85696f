// The HTTP edges below and around the operations: a declared body over the limit refused before it is sent, the
// parser's own refusals (400, 431, 408) in the error envelope, HEAD on GET routes, a request naming two callers, and
// the keep-alive and request timeouts, on a server built like the real one and on the real process itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { sql } from 'kysely';
import request from 'supertest';
import { ConfigError, loadConfig } from '../../src/config';
import { createHttpServer, type HttpServerConfig } from '../../src/http/client-error';
import { loadSpec } from '../../src/spec';
import { assertMatchesContract } from '../helpers/contract';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { exchange, type RawResponse } from '../helpers/raw-http';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../helpers/test-database';

const root = join(__dirname, '..', '..');
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The parser's answers never reach an operation (none lists them): they are checked against the envelope schema.
const spec = loadSpec() as unknown as { components: { schemas: Record<string, unknown> } };
const ajv = new Ajv2020({ strict: false, validateSchema: false });
addFormats(ajv);
ajv.addSchema(spec as object, 'spec');
const validateEnvelope = ajv.compile({ $ref: 'spec#/components/schemas/Error' });

let t: TestApp;
let key: string;
let serialProduct: string;
let server: Server;
let port: number;

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop({ plan: 'business' });
  key = (await t.createKey(shop, ['*'])).key;
  serialProduct = (
    await t.seed(shop, { products: [{ title: 'Keys', type: 'SERIALS', price: '1.00', serials: ['K-1', 'K-2'] }] })
  ).products[0]!;
  server = await listen(createHttpServer(t.app, t.config, t.logger));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await t.close();
});

function listen(s: Server): Promise<Server> {
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

const claimedCount = async () =>
  Number(
    (await sql<{ n: string }>`select count(*)::text as n from product_serials where status = 'claimed'`.execute(t.db))
      .rows[0]!.n,
  );

describe('a declared Content-Length over the 1 MiB limit', () => {
  const path = () => `/dev/v1/products/${serialProduct}/serials/claim`;

  test('is answered 413 before the body is sent, and the connection is closed', async () => {
    const before = await claimedCount();
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 5000000\r\n\r\n',
    );
    assertMatchesContract('post', path(), res);
    expect(res.status).toBe(413);
    expect((res.body as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.headers.connection).toBe('close');
    expect(res.closed).toBe(true);
    expect(await claimedCount()).toBe(before);
  });

  test('still answers an unauthenticated caller 401 first (the body is read only after authentication)', async () => {
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n`,
    );
    assertMatchesContract('post', path(), res);
    expect(res.status).toBe(401);
  });

  test('with Expect: 100-continue: 413 instead of 100 Continue, so the client never sends the body', async () => {
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 5000000\r\nExpect: 100-continue\r\n\r\n',
    );
    assertMatchesContract('post', path(), res);
    expect([res.continued, res.status, res.closed]).toEqual([false, 413, true]);
  });

  test('with Expect: 100-continue and no credential: 401 instead of 100 Continue', async () => {
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n` +
        'Expect: 100-continue\r\n\r\n',
    );
    assertMatchesContract('post', path(), res);
    expect([res.continued, res.status, res.closed]).toEqual([false, 401, true]);
  });

  test('with Expect: 100-continue within the limit: 100 Continue once the body is wanted, then the answer', async () => {
    const before = await claimedCount();
    const body = JSON.stringify({ amount: 1 });
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
      3000,
      body,
    );
    assertMatchesContract('post', path(), res);
    expect([res.continued, res.status]).toEqual([true, 200]);
    expect(await claimedCount()).toBe(before + 1);
  });

  test('a body within the limit is still read and served', async () => {
    const body = JSON.stringify({ amount: 1 });
    const res = await exchange(
      port,
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assertMatchesContract('post', path(), res);
    expect(res.status).toBe(200);
  });
});

describe("errors of Node's HTTP parser", () => {
  const expectEnvelope = (res: RawResponse, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(validateEnvelope(res.body)).toBe(true);
    expect((res.body as { error: { code: string } }).error.code).toBe(code);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
    expect(res.headers['x-request-id']).toMatch(uuid);
    expect(res.headers.connection).toBe('close');
    expect(res.closed).toBe(true);
  };

  test('headers over 16 KiB: 431 REQUEST_HEADER_FIELDS_TOO_LARGE in the envelope, with X-Request-Id', async () => {
    const res = await exchange(
      port,
      `GET /dev/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expectEnvelope(res, 431, 'REQUEST_HEADER_FIELDS_TOO_LARGE');
  });

  test('a malformed header line: 400 BAD_REQUEST in the envelope', async () => {
    const res = await exchange(port, 'GET /dev/v1/me HTTP/1.1\r\nHost: x\r\nThis is not a header\r\n\r\n');
    expectEnvelope(res, 400, 'BAD_REQUEST');
  });

  test('an invalid Content-Length: 400 BAD_REQUEST in the envelope', async () => {
    const res = await exchange(port, 'POST /dev/v1/me HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n');
    expectEnvelope(res, 400, 'BAD_REQUEST');
  });

  test('headers not complete within the headers timeout: 408 REQUEST_TIMEOUT in the envelope', async () => {
    const config: HttpServerConfig = {
      ...t.config,
      httpKeepAliveTimeoutMs: 500,
      httpHeadersTimeoutMs: 1000,
      httpRequestTimeoutMs: 1000,
    };
    const slow = await listen(createHttpServer(t.app, config, t.logger));
    try {
      const res = await exchange(
        (slow.address() as { port: number }).port,
        'GET /dev/v1/me HTTP/1.1\r\nHost: x\r\n',
        4000,
      );
      expectEnvelope(res, 408, 'REQUEST_TIMEOUT');
      expect(res.elapsedMs).toBeGreaterThanOrEqual(900);
    } finally {
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });
});

describe('HEAD', () => {
  /** Headers that differ between any two responses, whatever the method. */
  const perResponse = new Set(['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset']);
  const comparable = (headers: Record<string, string>) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => !perResponse.has(name)));

  test.each(['/dev/v1/products?limit=2', '/dev/v1/me', '/dev/v1/customers/cus_missing', '/dev/v1/coupons'])(
    'HEAD %s: the GET status and headers, no body',
    async (url) => {
      const get = await t.http.get(url).set(bearer(key));
      const head = await request(t.app).head(url).set(bearer(key));
      expect(head.status).toBe(get.status);
      expect(comparable(head.headers)).toEqual(comparable(get.headers));
      expect(head.text ?? '').toBe('');
      expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
    },
  );

  test('HEAD without a credential is the GET 401', async () => {
    const get = await t.http.get('/dev/v1/me');
    const head = await request(t.app).head('/dev/v1/me');
    expect(get.status).toBe(401);
    expect(head.status).toBe(401);
  });

  test('HEAD on a POST-only path: 405 with Allow, as GET there', async () => {
    const path = `/dev/v1/products/${serialProduct}/duplicate`;
    const get = await t.http.get(path).set(bearer(key));
    const head = await request(t.app).head(path).set(bearer(key));
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe('POST');
  });

  test('a 405 on a GET path names HEAD in Allow', async () => {
    const res = await t.http.delete('/dev/v1/me').set(bearer(key));
    expect(res.status).toBe(405);
    const allow = String(res.headers.allow).split(', ');
    expect(allow).toContain('GET');
    expect(allow[allow.indexOf('GET') + 1]).toBe('HEAD');
  });
});

describe('more than one Authorization header', () => {
  const get = (authorizations: string[]) =>
    exchange(
      port,
      `GET /dev/v1/me HTTP/1.1\r\nHost: x\r\n${authorizations.map((a) => `Authorization: ${a}\r\n`).join('')}` +
        'Connection: close\r\n\r\n',
    );

  test.each([
    ['valid, then invalid', () => [`Bearer ${key}`, 'Bearer mdk_invalid']],
    ['invalid, then valid', () => ['Bearer mdk_invalid', `Bearer ${key}`]],
    ['the same valid key twice', () => [`Bearer ${key}`, `Bearer ${key}`]],
  ])('%s: 401, whichever is valid', async (_name, headers) => {
    const res = await get(headers());
    assertMatchesContract('get', '/dev/v1/me', res);
    expect(res.status).toBe(401);
    expect((res.body as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringContaining('more than one Authorization header'),
    });
  });

  test('one valid header is served', async () => {
    const res = await get([`Bearer ${key}`]);
    assertMatchesContract('get', '/dev/v1/me', res);
    expect(res.status).toBe(200);
  });
});

describe('HTTP timeouts', () => {
  test('defaults: keep-alive 65 s (past a load balancer’s 60 s), headers 66 s, request 120 s', () => {
    const config = loadConfig({});
    expect(config.httpKeepAliveTimeoutMs).toBe(65_000);
    expect(config.httpHeadersTimeoutMs).toBe(66_000);
    expect(config.httpRequestTimeoutMs).toBe(120_000);
    const s = createHttpServer(() => undefined, config);
    expect([s.keepAliveTimeout, s.headersTimeout, s.requestTimeout]).toEqual([65_000, 66_000, 120_000]);
  });

  test('configurable, with the headers timeout kept above the keep-alive one', () => {
    const config = loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '75' });
    expect([config.httpKeepAliveTimeoutMs, config.httpHeadersTimeoutMs]).toEqual([75_000, 76_000]);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '70', HTTP_HEADERS_TIMEOUT_SECONDS: '70' })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_SECONDS: '90', HTTP_REQUEST_TIMEOUT_SECONDS: '80' })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: 'soon' })).toThrow(ConfigError);
  });
});

describe('the real server process', () => {
  let dir: string;
  let pg: TestDatabase | undefined;
  let child: ChildProcess | undefined;
  let base: { port: number; key: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mdapi-edges-'));
    if (process.env.DATABASE_URL) {
      pg = await createTestDatabase();
      await pg.db.destroy();
    }
    child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'src', 'server.ts')], {
      cwd: root,
      detached: true, // tsx runs the server in a child of its own: the group is killed at the end
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        SEED_DEMO: 'true',
        DATABASE_URL: pg?.url ?? '',
        DATA_DIR: join(dir, 'pglite'),
        REDIS_URL: '',
        HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '2',
        HTTP_HEADERS_TIMEOUT_SECONDS: '3',
        HTTP_REQUEST_TIMEOUT_SECONDS: '5',
      },
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const started = Date.now();
    let port: string | undefined;
    let demoKey: string | undefined;
    while (!(port && demoKey) && Date.now() - started < 60_000 && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 50));
      port = /listening on http:\/\/localhost:(\d+)/.exec(out)?.[1];
      demoKey = /(mdk_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
    }
    if (!port || !demoKey) throw new Error(`server did not start:\n${out}`);
    base = { port: Number(port), key: demoKey };
  }, 90_000);
  afterAll(async () => {
    if (child?.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    if (pg?.url) {
      const name = new URL(pg.url).pathname.slice(1);
      await withAdminClient(process.env.DATABASE_URL!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('announces its keep-alive timeout and enforces its headers and request timeouts', async () => {
    const ok = await exchange(
      base.port,
      `GET /dev/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${base.key}\r\n\r\n`,
    );
    assertMatchesContract('get', '/dev/v1/me', ok);
    expect(ok.status).toBe(200);
    expect(ok.headers['keep-alive']).toBe('timeout=2');

    const [headersLate, bodyLate] = await Promise.all([
      exchange(base.port, 'GET /dev/v1/me HTTP/1.1\r\nHost: x\r\n', 8000),
      // Headers complete, body never finished: only the request timeout (5 s), not the headers one (3 s), applies.
      exchange(
        base.port,
        `POST /dev/v1/products/prod_missing/duplicate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${base.key}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{',
        9000,
      ),
    ]);
    expect([headersLate.status, (headersLate.body as { error: { code: string } }).error.code]).toEqual([
      408,
      'REQUEST_TIMEOUT',
    ]);
    expect(headersLate.elapsedMs).toBeGreaterThanOrEqual(2900);
    expect(headersLate.elapsedMs).toBeLessThan(4900);
    expect([bodyLate.status, (bodyLate.body as { error: { code: string } }).error.code]).toEqual([
      408,
      'REQUEST_TIMEOUT',
    ]);
    expect(bodyLate.elapsedMs).toBeGreaterThanOrEqual(4900);
  }, 30_000);

  test('answers parser errors with the envelope', async () => {
    const res = await exchange(
      base.port,
      `GET /dev/v1/me HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(res.status).toBe(431);
    expect(validateEnvelope(res.body)).toBe(true);
    expect(res.headers['x-request-id']).toMatch(uuid);
  });
});
