// The docs' large bodies (Scalar's bundle, the contract as JSON and YAML) are sent brotli- or gzip-compressed as the
// client accepts, decompress to exactly the uncompressed bytes, carry an ETag per coding that a conditional request
// turns into a 304, and go uncompressed to a client that asks for no coding. Read over a real socket with node:http,
// which (unlike supertest) hands over the bytes as sent.
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { preferredCoding } from '../../src/http/precompressed';
import { specJson, specText } from '../../src/spec';
import { startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let server: Server;
let port: number;
let bundlePath: string;

beforeAll(async () => {
  t = await startTestApp();
  server = createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  const docs = await get('/docs');
  bundlePath = /<script src="(\/docs\/scalar-[\d.]+\/standalone\.js)">/.exec(docs.body.toString())![1]!;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await t.close();
});

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const bodies = () => [
  {
    name: '/openapi.json',
    path: '/openapi.json',
    bytes: Buffer.from(specJson()),
    type: 'application/json; charset=utf-8',
    cache: 'no-cache',
  },
  {
    name: '/openapi.yaml',
    path: '/openapi.yaml',
    bytes: Buffer.from(specText()),
    type: 'application/yaml; charset=utf-8',
    cache: 'no-cache',
  },
  {
    name: 'the Scalar bundle',
    path: bundlePath,
    bytes: readFileSync(
      join(dirname(dirname(require.resolve('@scalar/api-reference'))), 'dist', 'browser', 'standalone.js'),
    ),
    type: 'text/javascript; charset=utf-8',
    cache: 'public, max-age=31536000, immutable',
  },
];

const decoders = { br: brotliDecompressSync, gzip: gunzipSync };

describe.each(['/openapi.json', '/openapi.yaml', 'the Scalar bundle'])('%s', (name) => {
  const body = () => bodies().find((b) => b.name === name)!;

  test.each(['br', 'gzip'] as const)(
    'Accept-Encoding: %s: compressed, and decompresses to the same bytes',
    async (coding) => {
      const { path, bytes, type, cache } = body();
      const res = await get(path, { 'Accept-Encoding': coding });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe(coding);
      expect(res.headers['content-type']).toBe(type);
      expect(res.headers['cache-control']).toBe(cache);
      expect(res.headers.vary).toMatch(/\bAccept-Encoding\b/);
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(res.body.length).toBeLessThan(bytes.length / 3);
      expect(decoders[coding](res.body).equals(bytes)).toBe(true);
      // The same bytes again (kept, not compressed per request), with the same validator.
      const again = await get(path, { 'Accept-Encoding': coding });
      expect(again.body.equals(res.body)).toBe(true);
      expect(again.headers.etag).toBe(res.headers.etag);
    },
  );

  test('no Accept-Encoding: the bytes as they are', async () => {
    const { path, bytes } = body();
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary).toMatch(/\bAccept-Encoding\b/);
    expect(Number(res.headers['content-length'])).toBe(bytes.length);
    expect(res.body.equals(bytes)).toBe(true);
  });

  test("a conditional request with the representation's ETag: 304, no body; another coding's ETag: 200", async () => {
    const { path } = body();
    const tags: Record<string, string> = {};
    for (const coding of ['br', 'gzip', 'identity']) {
      const first = await get(path, { 'Accept-Encoding': coding });
      tags[coding] = first.headers.etag!;
      expect(tags[coding]).toMatch(/^"[\w-]+"$/);
      const revalidated = await get(path, { 'Accept-Encoding': coding, 'If-None-Match': tags[coding]! });
      expect(revalidated.status).toBe(304);
      expect(revalidated.body.length).toBe(0);
      expect(revalidated.headers.etag).toBe(tags[coding]);
    }
    expect(new Set(Object.values(tags)).size).toBe(3);
    const other = await get(path, { 'Accept-Encoding': 'br', 'If-None-Match': tags.gzip! });
    expect([other.status, other.headers['content-encoding']]).toEqual([200, 'br']);
  });

  test('HEAD: the headers of the GET, no body', async () => {
    const { path } = body();
    const [getRes, head] = [
      await get(path, { 'Accept-Encoding': 'br' }),
      await get(path, { 'Accept-Encoding': 'br' }, 'HEAD'),
    ];
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(getRes.headers['content-length']);
    expect(head.headers.etag).toBe(getRes.headers.etag);
  });
});

test('a browser (gzip, deflate, br, zstd) gets brotli', async () => {
  const res = await get('/openapi.json', { 'Accept-Encoding': 'gzip, deflate, br, zstd' });
  expect(res.headers['content-encoding']).toBe('br');
});

test('API responses are not compressed', async () => {
  const res = await get('/dev/v1/me', { 'Accept-Encoding': 'br, gzip' });
  expect(res.status).toBe(401);
  expect(res.headers['content-encoding']).toBeUndefined();
  expect(JSON.parse(res.body.toString()).error.code).toBe('UNAUTHORIZED');
});

test.each([
  [undefined, 'identity'],
  ['', 'identity'],
  ['br', 'br'],
  ['gzip', 'gzip'],
  ['gzip, deflate, br, zstd', 'br'],
  ['br;q=0.5, gzip', 'gzip'],
  ['BR;Q=0.9, gzip;q=0.8', 'br'],
  ['gzip;q=0, br;q=0', 'identity'],
  ['deflate', 'identity'],
  ['*', 'br'],
  ['*;q=0.5, br;q=0', 'gzip'],
  ['identity', 'identity'],
  ['identity;q=1, br;q=0.5', 'identity'],
  ['br;q=garbage, gzip', 'gzip'],
])('Accept-Encoding %p: %s', (header, coding) => {
  expect(preferredCoding(header)).toBe(coding);
});
