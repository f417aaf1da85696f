// Why a webhook attempt failed, in the delivery log (issue 24, point 5): `error: { code, message }` on every failed
// attempt of GET /webhooks/logs, null while queued and when delivered. Each case runs the delivery worker as
// test/webhooks/webhooks.test.ts does, against a real socket on this machine: a stopped receiver, one that never answers,
// a private target while those are refused, a name that cannot resolve (the injected resolver answers `.invalid`
// names as RFC 6761 says resolvers do, so no look-up leaves the machine), a self-signed HTTPS receiver, a 500 and a
// success. No message holds the URL's query, the signature or the endpoint's secret. The contract's code enum, the
// worker's list and the database's check agree, and migration 0026 gives rows written before it their code.
import { execFileSync } from 'node:child_process';
import * as dns from 'node:dns';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import * as m0026 from '../../db/migrations/0026_webhook_attempt_errors';
import { ManualClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { loadSecretBox } from '../../src/platform/secret-box';
import { loadSpec } from '../../src/spec';
import { attemptErrorCodes, webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import type { Job } from '../../src/worker/worker';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let clock: ManualClock;
let shop: string;
let key: string;

interface LogEntry {
  id: string;
  event_id: string;
  status: string;
  attempt: number;
  url: string;
  response_status: number | null;
  response_body: string | null;
  duration_ms: number | null;
  error: { code: string; message: string } | null;
}

const servers: Server[] = [];
const received: IncomingMessage['headers'][] = [];

/** A local receiver answering as told; every request it gets is recorded. */
async function receiver(
  answer: (res: ServerResponse) => void,
  make: () => Server = () => createServer(),
): Promise<number> {
  const server = make();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      received.push(req.headers);
      answer(res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A port nothing listens on: bound once, then closed. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

// RFC 6761 §6.4: resolvers answer every `.invalid` name with NXDOMAIN. Node reports that as getaddrinfo ENOTFOUND,
// built here the same way so that the look-up never leaves the machine; any other name is resolved for real.
const offlineLookup = ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
  if (hostname.endsWith('.invalid')) {
    const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
      errno: -3008,
      syscall: 'getaddrinfo',
      hostname,
    });
    setImmediate(() => callback(err));
    return;
  }
  dns.lookup(hostname, options, callback as never);
}) as unknown as typeof dns.lookup;

function job(options: { allowPrivateTargets?: boolean; timeoutMs?: number } = {}): Promise<Job> {
  return loadSecretBox(t.db, undefined).then((secrets) =>
    webhookDeliveryJob(t.db, {
      clock,
      logger: t.logger,
      secrets,
      allowPrivateTargets: options.allowPrivateTargets ?? true,
      timeoutMs: options.timeoutMs ?? 2000,
      random: () => 0.5,
      lookup: offlineLookup,
    }),
  );
}

/** Registers an endpoint for `url`, emits one event to it, runs one worker round; returns the endpoint's secret. */
async function deliverOnce(
  url: string,
  options: Parameters<typeof job>[0] = {},
): Promise<{ secret: string; entry: LogEntry }> {
  const created = await t.http
    .post('/dev/v1/webhooks')
    .set(bearer(key))
    .send({ url, events: ['order:paid'] });
  expect(created.status).toBe(201);
  const { id, secret } = created.body.data as { id: string; secret: string };
  await t.db.transaction().execute((trx) => emitEvent(trx, shop, 'order:paid', { n: 1 }, { clock }));
  expect(await (await job(options)).runOnce()).toBe(1);
  const logs = await t.http.get(`/dev/v1/webhooks/logs?webhook_id=${id}&per_page=100`).set(bearer(key));
  expect(logs.status).toBe(200);
  const entries = logs.body.data.items as LogEntry[];
  // The attempt made, and the retry it queued (PENDING, no error yet).
  expect(entries.map((e) => [e.attempt, e.status])).toEqual(
    entries.length === 1
      ? [[1, 'SUCCEEDED']]
      : [
          [2, 'PENDING'],
          [1, 'RETRYING'],
        ],
  );
  if (entries.length === 2) expect(entries[0]!.error).toBeNull();
  return { secret, entry: entries.at(-1)! };
}

/** No message may carry the URL's query, the signature, or the endpoint's secret. */
function expectNoSecretIn(entry: LogEntry, secret: string) {
  const text = JSON.stringify(entry.error);
  expect(text).not.toContain('s3cr3t-token');
  expect(text).not.toContain(secret);
  expect(text).not.toContain(secret.replace(/^whsec_/, ''));
  expect(text).not.toMatch(/v1,[A-Za-z0-9+/=]{20,}/);
}

beforeAll(async () => {
  clock = new ManualClock(Date.now());
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  shop = await t.createShop();
  ({ key } = await t.createKey(shop, ['webhooks.read', 'webhooks.write']));
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await t.close();
});

beforeEach(async () => {
  received.length = 0;
  // Each test's event goes to its own endpoint only: earlier ones stop receiving (their queued attempts wait).
  await sql`update webhook_endpoints set enabled = false where shop_id = ${shop}`.execute(t.db);
});

describe('a failed attempt says why', () => {
  test('a stopped receiver: CONNECTION_REFUSED, naming the address', async () => {
    const port = await closedPort();
    const { secret, entry } = await deliverOnce(`http://127.0.0.1:${port}/hooks?token=s3cr3t-token`);
    expect(entry).toMatchObject({
      status: 'RETRYING',
      response_status: null,
      response_body: null,
      error: { code: 'CONNECTION_REFUSED', message: `connection refused by 127.0.0.1:${port} (ECONNREFUSED)` },
    });
    expectNoSecretIn(entry, secret);
  });

  test('a receiver that never answers: TIMEOUT after the timeout, in seconds', async () => {
    const port = await receiver(() => undefined);
    const { secret, entry } = await deliverOnce(`http://127.0.0.1:${port}/hooks?token=s3cr3t-token`, {
      timeoutMs: 300,
    });
    expect(received).toHaveLength(1); // it arrived; the answer did not
    expect(entry).toMatchObject({
      status: 'RETRYING',
      response_status: null,
      error: { code: 'TIMEOUT', message: `no complete answer from 127.0.0.1:${port} within 0.3 s` },
    });
    expect(entry.duration_ms).toBeGreaterThanOrEqual(290);
    expectNoSecretIn(entry, secret);
  });

  test('a private target while those are refused: PRIVATE_TARGET_REFUSED, and nothing was sent', async () => {
    const port = await receiver((res) => res.writeHead(204).end());
    const { entry } = await deliverOnce(`http://localhost:${port}/hooks`, { allowPrivateTargets: false });
    expect(received).toHaveLength(0);
    expect(entry).toMatchObject({ status: 'RETRYING', response_status: null });
    expect(entry.error).toEqual({
      code: 'PRIVATE_TARGET_REFUSED',
      message: expect.stringMatching(
        /^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address; private targets are not allowed$/,
      ),
    });
  });

  test('a name that cannot resolve: DNS_FAILURE', async () => {
    const { entry } = await deliverOnce('https://hooks.shop-that-never-was.invalid/webhooks');
    expect(entry).toMatchObject({
      status: 'RETRYING',
      response_status: null,
      error: {
        code: 'DNS_FAILURE',
        message: 'the name hooks.shop-that-never-was.invalid does not resolve (ENOTFOUND)',
      },
    });
  });

  test('a self-signed HTTPS receiver: TLS_ERROR, and the request never reached it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'whtls-'));
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ]),
        { stdio: 'ignore' },
      );
      const tls = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
      const port = await receiver(
        (res) => res.writeHead(204).end(),
        () => createHttpsServer(tls),
      );
      const { secret, entry } = await deliverOnce(`https://127.0.0.1:${port}/hooks?token=s3cr3t-token`);
      expect(received).toHaveLength(0);
      expect(entry).toMatchObject({
        status: 'RETRYING',
        response_status: null,
        error: {
          code: 'TLS_ERROR',
          message: `TLS with 127.0.0.1:${port} failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`,
        },
      });
      expectNoSecretIn(entry, secret);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a 500: the status and body kept, and HTTP_ERROR saying so', async () => {
    const port = await receiver((res) => res.writeHead(500).end('boom'));
    const { entry } = await deliverOnce(`http://127.0.0.1:${port}/hooks`);
    expect(entry).toMatchObject({
      status: 'RETRYING',
      response_status: 500,
      response_body: 'boom',
      error: {
        code: 'HTTP_ERROR',
        message: 'the endpoint answered 500 Internal Server Error; only a 2xx counts as delivered',
      },
    });
  });

  test('a success: error null', async () => {
    const port = await receiver((res) => res.writeHead(200).end('ok'));
    const { entry } = await deliverOnce(`http://127.0.0.1:${port}/hooks`);
    expect(entry).toMatchObject({ status: 'SUCCEEDED', response_status: 200, response_body: 'ok', error: null });
  });

  test('a retry that succeeds after a failure: the failed attempt keeps its error, the delivered one has none', async () => {
    let fail = true;
    const port = await receiver((res) => (fail ? res.writeHead(503).end() : res.writeHead(204).end()));
    const { entry } = await deliverOnce(`http://127.0.0.1:${port}/hooks`);
    expect(entry.error).toMatchObject({ code: 'HTTP_ERROR' });
    fail = false;
    clock.advance(5_000);
    expect(await (await job()).runOnce()).toBe(1);
    const logs = await t.http.get(`/dev/v1/webhooks/logs?per_page=100`).set(bearer(key));
    const attempts = (logs.body.data.items as LogEntry[]).filter((e) => e.event_id === entry.event_id);
    expect(attempts.map((a) => [a.attempt, a.status, a.error?.code ?? null])).toEqual([
      [2, 'SUCCEEDED', null],
      [1, 'RETRYING', 'HTTP_ERROR'],
    ]);
  });
});

describe('one list of codes', () => {
  test('the contract enumerates exactly the codes the worker can write', () => {
    const spec = loadSpec() as unknown as {
      components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
    };
    expect(spec.components.schemas.WebhookAttemptError!.properties.code!.enum).toEqual([...attemptErrorCodes]);
  });

  test('the database takes each of them with a message, and refuses another code or a code alone', async () => {
    const { rows } = await sql<{ id: string }>`select id from webhook_attempts where shop_id = ${shop} limit 1`.execute(
      t.db,
    );
    const id = rows[0]!.id;
    const setError = (code: string | null, message: string | null) =>
      t.db.transaction().execute(async (trx) => {
        await sql`update webhook_attempts set error_code = ${code}, error = ${message} where id = ${id}`.execute(trx);
        throw new Error('rolled back');
      });
    for (const code of attemptErrorCodes) await expect(setError(code, 'why')).rejects.toThrow('rolled back');
    await expect(setError('EXPLODED', 'why')).rejects.toThrow(/webhook_attempts_error_code_check/);
    await expect(setError('TIMEOUT', null)).rejects.toThrow(/webhook_attempts_error_pair/);
    await expect(setError(null, 'why')).rejects.toThrow(/webhook_attempts_error_pair/);
  });
});

describe('migration 0026', () => {
  test('gives the attempts logged before it their code, from the text they hold', async () => {
    const db = t.db as unknown as Kysely<unknown>;
    const { rows } = await sql<{ id: string }>`select id from webhook_attempts where shop_id = ${shop}
      order by id limit 10`.execute(t.db);
    expect(rows.length).toBeGreaterThanOrEqual(10);
    const ids = rows.map((r) => r.id);
    // What the worker wrote before: the client's code and Node's message, "refused: …", "redirect (…)", or no
    // text at all for a non-2xx answer.
    const legacy: [string, number | null, string | null][] = [
      ['RETRYING', null, 'CONNECTION_REFUSED: connect ECONNREFUSED 127.0.0.1:4010'],
      ['RETRYING', null, 'TIMEOUT: no complete answer within 10000 ms'],
      ['FAILED', null, 'CONNECT_TIMEOUT: not connected within 5000 ms'],
      ['RETRYING', null, 'DNS: getaddrinfo ENOTFOUND hooks.example.invalid'],
      ['RETRYING', null, 'TLS: self-signed certificate'],
      ['RETRYING', null, 'NETWORK: read ECONNRESET'],
      ['RETRYING', null, 'refused: localhost resolves to 127.0.0.1 is a loopback address'],
      ['RETRYING', null, 'refused: the ftp: scheme is not allowed; only http and https are'],
      ['RETRYING', 302, 'redirect (302) not followed'],
      ['FAILED', 503, null],
    ];
    await m0026.down(db);
    try {
      for (const [i, [status, responseStatus, error]] of legacy.entries()) {
        await sql`update webhook_attempts set status = ${status}, response_status = ${responseStatus},
          error = ${error} where id = ${ids[i]!}`.execute(t.db);
      }
    } finally {
      await m0026.up(db);
    }
    const after = await sql<{ id: string; error_code: string; error: string }>`select id, error_code, error
      from webhook_attempts where id in (${sql.join(ids)})`.execute(t.db);
    const byId = new Map(after.rows.map((r) => [r.id, [r.error_code, r.error]]));
    expect(ids.map((id) => byId.get(id))).toEqual([
      ['CONNECTION_REFUSED', 'connect ECONNREFUSED 127.0.0.1:4010'],
      ['TIMEOUT', 'no complete answer within 10000 ms'],
      ['CONNECT_TIMEOUT', 'not connected within 5000 ms'],
      ['DNS_FAILURE', 'getaddrinfo ENOTFOUND hooks.example.invalid'],
      ['TLS_ERROR', 'self-signed certificate'],
      ['NETWORK_ERROR', 'read ECONNRESET'],
      ['PRIVATE_TARGET_REFUSED', 'refused: localhost resolves to 127.0.0.1 is a loopback address'],
      ['INVALID_TARGET', 'refused: the ftp: scheme is not allowed; only http and https are'],
      ['HTTP_ERROR', 'redirect (302) not followed'],
      ['HTTP_ERROR', 'the endpoint answered 503; only a 2xx counts as delivered'],
    ]);
    // And the API shows them.
    const logs = await t.http.get('/dev/v1/webhooks/logs?per_page=100').set(bearer(key));
    expect(logs.status).toBe(200);
  });
});
