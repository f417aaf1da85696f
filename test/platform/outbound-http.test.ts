// sendOutbound (src/platform/outbound-http.ts) against real sockets on this machine: a local HTTP server listening on
// 127.0.0.1 and ::1 (same port) records every connection and request it gets. Each refused target is also tried with
// allowPrivateTargets: true and must then reach the server, so a refusal is not a test that passes because the
// target was unreachable anyway. Every socket connect made in this file is watched, and one to an outside address
// is cut before it leaves the machine (so a broken client fails these tests instead of calling 10.0.0.1).
import type * as dns from 'node:dns';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { isPublicAddress, sendOutbound, type OutboundOptions } from '../../src/platform/outbound-http';

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const received: Received[] = [];
let connections = 0;
let trickleClosed = 0; // responses of /trickle whose connection the client closed
const connectTargets: string[] = [];
// Hosts that stay on this machine: loopback literals (URL writes [::ffff:127.0.0.1] as [::ffff:7f00:1]), localhost,
// and the names whose look-up these tests inject.
const LOCAL_HOSTS = new Set([
  '127.0.0.1',
  '::1',
  '0.0.0.0',
  '::ffff:7f00:1',
  'localhost',
  'rebind.test',
  'slow.test',
  'nowhere.test',
]);
let port = 0;
const servers: http.Server[] = [];
const originalConnect = net.Socket.prototype.connect;

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    switch (req.url) {
      case '/ok':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
      case '/fail':
        return void res.writeHead(500).end('boom');
      case '/redirect':
        return void res.writeHead(302, { location: `http://127.0.0.1:${port}/target` }).end();
      case '/target':
        return void res.writeHead(200).end('followed');
      case '/echo':
        return void res.writeHead(200).end(JSON.stringify({ headers: req.headers, body }));
      case '/big': {
        res.writeHead(200, { 'content-length': String(1024 * 1024) });
        return void res.end(Buffer.alloc(1024 * 1024, 'a'));
      }
      case '/trickle':
        // 2000 bytes, then the response stays open for ever.
        res.on('close', () => trickleClosed++);
        res.writeHead(200);
        return void res.write(Buffer.alloc(2000, 'b'));
      case '/utf8':
        return void res.writeHead(200).end('é'.repeat(10));
      case '/hang':
        return; // never answers
      default:
        return void res.writeHead(404).end();
    }
  });
}

function listen(server: http.Server, host: string, p: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: p, ipv6Only: host === '::1' }, () => resolve((server.address() as AddressInfo).port));
  });
}

beforeAll(async () => {
  net.Socket.prototype.connect = function watchedConnect(this: net.Socket, ...args: unknown[]) {
    const first = Array.isArray(args[0]) ? args[0][0] : args[0];
    const host = typeof first === 'object' && first !== null ? String((first as { host?: string }).host) : '';
    connectTargets.push(host);
    if (!LOCAL_HOSTS.has(host)) {
      process.nextTick(() => this.destroy(new Error(`test blocked a connect to ${host}`)));
      return this;
    }
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
  for (const host of ['127.0.0.1', '::1']) {
    const server = http.createServer(handler);
    server.on('connection', () => connections++);
    servers.push(server);
    port = await listen(server, host, port);
  }
});

afterAll(async () => {
  net.Socket.prototype.connect = originalConnect;
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

beforeEach(() => {
  received.length = 0;
  connections = 0;
  trickleClosed = 0;
  connectTargets.length = 0;
});

const open: OutboundOptions = { allowPrivateTargets: true, timeoutMs: 3000, connectTimeoutMs: 2000 };
const guarded: OutboundOptions = { ...open, allowPrivateTargets: false };
const post = (url: string, headers: Record<string, string> = {}, body = '{"hello":"world"}') => ({
  url,
  headers,
  body,
});

// A name that resolves (only) to the given address, like a merchant's DNS pointing at us.
function lookupTo(...addresses: string[]): typeof dns.lookup {
  const fake = (
    _hostname: string,
    options: dns.LookupOptions,
    callback: (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void,
  ) => {
    const all = addresses.map((address) => ({ address, family: net.isIP(address) }));
    setImmediate(() => (options.all ? callback(null, all) : callback(null, all[0]!.address, all[0]!.family)));
  };
  return fake as unknown as typeof dns.lookup;
}

describe('answers', () => {
  test('a 2xx comes back with its status and body; the request is a POST with the body and default headers', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/ok`, { 'webhook-id': 'msg_1' }), open);
    expect(outcome).toEqual({ kind: 'response', status: 200, body: 'thanks', durationMs: expect.any(Number) });
    expect(Number.isInteger(outcome.durationMs)).toBe(true);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: 'POST', url: '/ok', body: '{"hello":"world"}' });
    expect(received[0]!.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'MerchantDeveloperAPI-Webhooks/1.0',
      'content-length': String(Buffer.byteLength('{"hello":"world"}')),
      'webhook-id': 'msg_1',
    });
  });

  test('given content-type and user-agent are kept; content-length is always the real byte length', async () => {
    const body = '{"name":"café"}';
    const headers = { 'Content-Type': 'text/plain', 'User-Agent': 'custom/2', 'Content-Length': '1' };
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/echo`, headers, body), open);
    expect(outcome.kind).toBe('response');
    expect(received[0]!.headers).toMatchObject({
      'content-type': 'text/plain',
      'user-agent': 'custom/2',
      'content-length': String(Buffer.byteLength(body)),
    });
    expect(received[0]!.body).toBe(body);
  });

  test('a 500 is a response, not an error', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/fail`), open);
    expect(outcome).toMatchObject({ kind: 'response', status: 500, body: 'boom' });
  });

  test('a 302 is returned as is: the redirect to 127.0.0.1 is not followed', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/redirect`), open);
    expect(outcome).toMatchObject({ kind: 'response', status: 302 });
    expect(received.map((r) => r.url)).toEqual(['/redirect']);
  });

  test('only maxBodyBytes of a 1 MiB body are kept', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/big`), { ...open, maxBodyBytes: 1000 });
    expect(outcome).toMatchObject({ kind: 'response', status: 200, body: 'a'.repeat(1000) });
  });

  test('the default cap is 4096 bytes', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/big`), open);
    expect(outcome.kind === 'response' && outcome.body).toBe('a'.repeat(4096));
  });

  test('once maxBodyBytes are in, the rest is not waited for (the body never ends here)', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/trickle`), { ...open, maxBodyBytes: 1000 });
    expect(outcome).toMatchObject({ kind: 'response', status: 200, body: 'b'.repeat(1000) });
    expect(outcome.durationMs).toBeLessThan(1000);
    // and the connection is closed rather than left open to the end of the body
    for (let i = 0; i < 50 && trickleClosed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(trickleClosed).toBe(1);
  });

  test('the body is cut on bytes and a trailing partial character is dropped', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/utf8`), { ...open, maxBodyBytes: 5 });
    expect(outcome).toMatchObject({ kind: 'response', body: 'éé' });
  });
});

describe('failures are outcomes', () => {
  test('a server that never answers: TIMEOUT after timeoutMs', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/hang`), { ...open, timeoutMs: 300 });
    expect(outcome).toMatchObject({ kind: 'error', code: 'TIMEOUT' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
    expect(outcome.durationMs).toBeLessThan(1500);
    expect(received).toHaveLength(1); // it did arrive; only the answer is missing
  });

  test('the total timeout also covers reading the kept body', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/trickle`), { ...open, timeoutMs: 300 });
    expect(outcome).toMatchObject({ kind: 'error', code: 'TIMEOUT' });
  });

  test('a closed port: CONNECTION_REFUSED', async () => {
    const probe = net.createServer();
    const closedPort = await new Promise<number>((r) =>
      probe.listen(0, '127.0.0.1', () => r((probe.address() as AddressInfo).port)),
    );
    await new Promise((r) => probe.close(r));
    const outcome = await sendOutbound(post(`http://127.0.0.1:${closedPort}/`), open);
    expect(outcome).toMatchObject({ kind: 'error', code: 'CONNECTION_REFUSED' });
  });

  test('a name that never resolves: CONNECT_TIMEOUT after connectTimeoutMs', async () => {
    const never = (() => undefined) as unknown as typeof dns.lookup;
    const outcome = await sendOutbound(post(`http://slow.test:${port}/ok`), {
      ...open,
      connectTimeoutMs: 200,
      timeoutMs: 3000,
      lookup: never,
    });
    expect(outcome).toMatchObject({ kind: 'error', code: 'CONNECT_TIMEOUT' });
    expect(outcome.durationMs).toBeLessThan(1500);
  });

  test('a name that does not exist: DNS_FAILURE', async () => {
    const missing = ((_h: string, _o: unknown, cb: (e: Error) => void) =>
      setImmediate(() =>
        cb(
          Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' }),
        ),
      )) as unknown as typeof dns.lookup;
    const outcome = await sendOutbound(post('http://nowhere.test/'), { ...guarded, lookup: missing });
    expect(outcome).toMatchObject({ kind: 'error', code: 'DNS_FAILURE' });
  });

  test('https to a server that speaks plain http: TLS_ERROR', async () => {
    const outcome = await sendOutbound(post(`https://127.0.0.1:${port}/ok`), open);
    expect(outcome).toMatchObject({ kind: 'error', code: 'TLS_ERROR' });
  });

  test('a header value with a line break is refused, not thrown', async () => {
    const outcome = await sendOutbound(post(`http://127.0.0.1:${port}/ok`, { 'x-evil': 'a\r\nx-injected: 1' }), open);
    expect(outcome.kind).toBe('refused');
    expect(connections).toBe(0);
  });
});

describe('targets refused by policy (allowPrivateTargets: false)', () => {
  // [url, words the reason must contain, reachable here when private targets are allowed]
  const cases: [string, string, boolean][] = [
    ['http://127.0.0.1:PORT/ok', '127.0.0.1 is a loopback address', true],
    ['http://[::1]:PORT/ok', '::1 is a loopback address', true],
    ['http://[::ffff:127.0.0.1]:PORT/ok', 'loopback', true],
    ['http://0.0.0.0:PORT/ok', '0.0.0.0 is an unspecified address', true],
    ['http://localhost:PORT/ok', 'loopback', true],
    ['http://10.0.0.1:PORT/ok', '10.0.0.1 is a private address', false],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address', false],
    ['https://10.0.0.1/', 'private', false],
  ];

  test.each(cases)('%s is refused before any connection', async (template, reason) => {
    const outcome = await sendOutbound(post(template.replace('PORT', String(port))), guarded);
    expect(outcome).toMatchObject({ kind: 'refused', reason: expect.stringContaining(reason) });
    expect(received).toHaveLength(0);
    expect(connections).toBe(0);
    expect(connectTargets.filter((h) => h !== 'localhost')).toEqual([]);
  });

  test.each(cases.filter(([, , reachable]) => reachable))(
    'control: %s does reach the local server when private targets are allowed',
    async (template) => {
      const outcome = await sendOutbound(post(template.replace('PORT', String(port))), open);
      expect(outcome).toMatchObject({ kind: 'response', status: 200 });
      expect(received).toHaveLength(1);
    },
  );

  test('a name whose look-up returns 127.0.0.1 is refused from the look-up, and nothing reaches the server', async () => {
    const url = `http://rebind.test:${port}/ok`;
    const outcome = await sendOutbound(post(url), { ...guarded, lookup: lookupTo('127.0.0.1') });
    expect(outcome).toMatchObject({
      kind: 'refused',
      code: 'PRIVATE_TARGET_REFUSED',
      reason: 'rebind.test resolves to 127.0.0.1, a loopback address',
    });
    expect(received).toHaveLength(0);
    expect(connections).toBe(0);

    const control = await sendOutbound(post(url), { ...open, lookup: lookupTo('127.0.0.1') });
    expect(control).toMatchObject({ kind: 'response', status: 200 });
    expect(received).toHaveLength(1);
  });

  test('a name resolving to a public and a private address is refused', async () => {
    const outcome = await sendOutbound(post(`http://rebind.test:${port}/ok`), {
      ...guarded,
      lookup: lookupTo('93.184.216.34', '127.0.0.1'),
    });
    expect(outcome).toMatchObject({ kind: 'refused', reason: expect.stringContaining('127.0.0.1') });
    expect(connections).toBe(0);
  });

  test.each([
    ['ftp://127.0.0.1/file', 'ftp:'],
    ['javascript:alert(1)', 'javascript:'],
    ['file:///etc/passwd', 'file:'],
    ['not a url', 'not a valid URL'],
    ['http://user:secret@example.com/', 'credentials'],
  ])('%s is refused whatever allowPrivateTargets says', async (url, reason) => {
    for (const options of [guarded, open]) {
      const outcome = await sendOutbound(post(url), options);
      expect(outcome).toMatchObject({ kind: 'refused', reason: expect.stringContaining(reason) });
    }
    expect(connectTargets).toEqual([]);
  });
});

describe('isPublicAddress', () => {
  test.each([
    ['8.8.8.8', true],
    ['93.184.216.34', true],
    ['1.1.1.1', true],
    ['2606:4700::1111', true],
    ['::ffff:8.8.8.8', true],
    ['127.0.0.1', false],
    ['127.255.0.9', false],
    ['10.0.0.1', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['0.1.2.3', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['240.0.0.1', false],
    ['192.0.2.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd12:3456::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:169.254.169.254', false],
    ['64:ff9b::7f00:1', false],
    ['2002:7f00:1::1', false],
    ['2001:db8::1', false],
    ['::2', false],
    ['example.com', false],
    ['', false],
  ])('%s -> %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});
