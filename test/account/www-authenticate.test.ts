// RFC 6750 challenges (issue 24, point 6): every 401 carries `WWW-Authenticate: Bearer realm=...` and tells three
// cases apart by its message and the challenge's error — no credential (no error), not a Bearer credential
// (invalid_request), an unknown, revoked, expired or malformed token (invalid_token, one message for all, so an answer
// never tells which keys exist); a 403 for a missing scope adds error="insufficient_scope" with the scope needed, a
// suspended shop's 403 has no challenge; the OAuth token endpoint keeps RFC 6749's own errors. Every response passes
// through the contract check (headers included), and a refused write is checked for what it did not write.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { revokeApiKey, setShopStatus } from '../../src/ops/admin';
import { ManualClock } from '../../src/platform/clock';
import { assertMatchesContract } from '../helpers/contract';
import { codeFor, exchange, newApp, tokenRequest } from '../helpers/oauth-apps';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;
let shop: string;
let fullKey: string;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shop = await t.createShop({ name: 'Challenge shop' });
  fullKey = (await t.createKey(shop, ['*'])).key;
});
afterAll(() => t.close());

const realm = 'Bearer realm="Merchant Developer API"';
const noCredential = 'No credential: send Authorization: Bearer <API key or access token>.';
const notBearer = 'The Authorization header is not a Bearer credential.';
const invalidToken = 'The credential is unknown, revoked or expired.';
const invalidRequestChallenge = `${realm}, error="invalid_request", error_description="${notBearer}"`;
const invalidTokenChallenge = `${realm}, error="invalid_token", error_description="${invalidToken}"`;

type Res = { status: number; headers: Record<string, unknown>; body: { error: { code: string; message: string } } };

function expect401(res: Res, challenge: string, message: string) {
  expect(res.status).toBe(401);
  expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message });
  expect(res.headers['www-authenticate']).toBe(challenge);
}

const me = (authorization?: string) => {
  const req = t.http.get('/dev/v1/me');
  return authorization === undefined ? req : req.set('Authorization', authorization);
};

describe('401: which of the three cases', () => {
  test('no Authorization header: the realm alone, no error attribute', async () => {
    expect401(await me(), realm, noCredential);
  });

  test('an empty Authorization header counts as none', async () => {
    expect401(await me(''), realm, noCredential);
  });

  test.each([
    ['another scheme (Basic)', () => `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['another scheme carrying a real key', () => `Basic ${fullKey}`],
    ['a bare token without a scheme', () => fullKey],
    ['Bearer with nothing after it', () => 'Bearer'],
    ['Bearer and a space', () => 'Bearer '],
    ['a token with characters no bearer token has', () => 'Bearer mdk_"quoted"'],
    ['two tokens', () => `Bearer ${fullKey} ${fullKey}`],
  ])('%s: invalid_request', async (_name, header) => {
    expect401(await me(header()), invalidRequestChallenge, notBearer);
  });

  test.each([
    ['a malformed token', () => 'Bearer not-a-key'],
    ['a key one character short', () => `Bearer ${fullKey.slice(0, -1)}`],
    ['an unknown, well-formed mdk_ key', () => `Bearer mdk_${'A'.repeat(43)}`],
    ['an unknown, well-formed mat_ token', () => `Bearer mat_${'B'.repeat(43)}`],
    ['the scheme in lower case, an unknown key', () => `bearer mdk_${'C'.repeat(43)}`],
  ])('%s: invalid_token', async (_name, header) => {
    expect401(await me(header()), invalidTokenChallenge, invalidToken);
  });

  test('a revoked key answers exactly as an unknown one', async () => {
    const { id, key } = await t.createKey(shop, ['*']);
    expect((await me(`Bearer ${key}`)).status).toBe(200);
    await revokeApiKey(t.db, id);
    const revoked = await me(`Bearer ${key}`);
    const unknown = await me(`Bearer mdk_${'D'.repeat(43)}`);
    expect401(revoked, invalidTokenChallenge, invalidToken);
    expect({ body: revoked.body.error.message, challenge: revoked.headers['www-authenticate'] }).toEqual({
      body: unknown.body.error.message,
      challenge: unknown.headers['www-authenticate'],
    });
  });

  test('an OAuth access token: expired, then revoked with its grant: invalid_token both times', async () => {
    const app = await newApp(t);
    const tokens = await exchange(t, app, await codeFor(t, fullKey, app, { scope: 'orders.read' }));
    expect((await me(`Bearer ${tokens.access_token}`)).status).toBe(200);
    clock.advance(3600_000);
    try {
      expect401(await me(`Bearer ${tokens.access_token}`), invalidTokenChallenge, invalidToken);
    } finally {
      clock.advance(-3600_000);
    }
    const revoke = await t.http
      .post('/dev/v1/oauth/revoke')
      .set('Authorization', `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`)
      .type('form')
      .send(new URLSearchParams({ token: tokens.refresh_token }).toString());
    expect(revoke.status).toBe(200);
    expect401(await me(`Bearer ${tokens.access_token}`), invalidTokenChallenge, invalidToken);
  });

  test('more than one Authorization header: invalid_request, with its own message', async () => {
    const server = http.createServer(t.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await new Promise<Res>((resolve, reject) => {
        const req = http.request(
          {
            port,
            host: '127.0.0.1',
            path: '/dev/v1/me',
            headers: ['Host', `127.0.0.1:${port}`, 'Authorization', `Bearer ${fullKey}`, 'Authorization', 'Basic x'],
          },
          (r) => {
            const chunks: Buffer[] = [];
            r.on('data', (c: Buffer) => chunks.push(c));
            r.on('end', () => {
              try {
                const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Res['body'];
                resolve({ status: r.statusCode!, headers: r.headers, body });
              } catch (err) {
                reject(err as Error);
              }
            });
          },
        );
        req.on('error', reject);
        req.end();
      });
      assertMatchesContract('get', '/dev/v1/me', res as never);
      const message = 'The request has more than one Authorization header; send exactly one credential.';
      expect401(res, `${realm}, error="invalid_request", error_description="${message}"`, message);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a write refused for its credential carries the challenge too, and writes nothing', async () => {
    const count = async () =>
      Number(
        (await sql<{ n: string }>`select count(*) as n from webhook_endpoints where shop_id = ${shop}`.execute(t.db))
          .rows[0]!.n,
      );
    const before = await count();
    const audit = Number(
      (await sql<{ n: string }>`select count(*) as n from audit_entries where shop_id = ${shop}`.execute(t.db)).rows[0]!
        .n,
    );
    const body = { url: 'https://hooks.example.com/x', events: ['order:paid'] };
    expect401(await t.http.post('/dev/v1/webhooks').send(body), realm, noCredential);
    expect401(
      await t.http.post('/dev/v1/webhooks').set('Authorization', 'Basic x').send(body),
      invalidRequestChallenge,
      notBearer,
    );
    expect401(
      await t.http
        .post('/dev/v1/webhooks')
        .set(bearer(`mdk_${'E'.repeat(43)}`))
        .send(body),
      invalidTokenChallenge,
      invalidToken,
    );
    expect(await count()).toBe(before);
    const auditAfter = Number(
      (await sql<{ n: string }>`select count(*) as n from audit_entries where shop_id = ${shop}`.execute(t.db)).rows[0]!
        .n,
    );
    expect(auditAfter).toBe(audit); // a 401 is not past authentication: no audit entry either
  });
});

describe('403', () => {
  test('a missing scope: insufficient_scope naming the scope needed, the FORBIDDEN envelope kept', async () => {
    const { key } = await t.createKey(shop, ['orders.read']);
    const res = await t.http.get('/dev/v1/products').set(bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'This operation needs the scope products.read.',
    });
    expect(res.headers['www-authenticate']).toBe(
      `${realm}, error="insufficient_scope", error_description="This operation needs the scope products.read.", scope="products.read"`,
    );
  });

  test('a write without its scope: the same, and nothing written', async () => {
    const { key } = await t.createKey(shop, ['webhooks.read']);
    const before = await sql<{ n: string }>`select count(*) as n from webhook_endpoints`.execute(t.db);
    const res = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://hooks.example.com/x', events: ['order:paid'] });
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toMatch(/error="insufficient_scope", .*scope="webhooks\.write"$/);
    const after = await sql<{ n: string }>`select count(*) as n from webhook_endpoints`.execute(t.db);
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });

  test('a suspended shop: 403 without a challenge (no scope would help)', async () => {
    const suspended = await t.createShop({ name: 'Suspended' });
    const { key } = await t.createKey(suspended, ['*']);
    await setShopStatus(t.db, suspended, 'suspended');
    const res = await t.http.get('/dev/v1/me').set(bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/suspended/);
    expect(res.headers['www-authenticate']).toBeUndefined();
  });
});

describe('the OAuth token endpoint keeps RFC 6749 errors', () => {
  test('a failed client authentication: invalid_client with a Basic challenge, no Bearer one', async () => {
    const app = await newApp(t);
    const res = await tokenRequest(
      t,
      { id: app.id, secret: 'mcs_wrong' },
      { grant_type: 'refresh_token', refresh_token: 'x' },
    );
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    expect(res.headers['www-authenticate']).toBe('Basic realm="oauth", charset="UTF-8"');
  });
});
