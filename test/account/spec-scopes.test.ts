// Every scope name the specification shows exists and means something (issue 24, point 3):
//  - the table of the specification's Authentication section (docs/scopes.md, checked against the specification
//    itself when it is at hand) is parsed, not copied into this file, so it cannot drift;
//  - each of its scopes is accepted by the CLI's `key create` and `app create`, by an authorization request, is in
//    the OAuth metadata's `scopes_supported`, has a consent-page description, and is needed by at least one
//    operation of openapi.yaml (the operations it opens);
//  - `payments.read` opens GET /payments/{uniqid} (the Payment POST /payments made, as it is now) and nothing of
//    orders; `security.write` opens POST /security/sessions/{session_id}/revoke.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { insertOwnerAccount, insertOwnerSession, liveOwnerSessionByTokenHash } from '../../db/queries/owner-sessions';
import { hashPassword } from '../../src/auth/passwords';
import { scopeDescriptions } from '../../src/auth/scope-descriptions';
import { scopePattern } from '../../src/auth/scopes';
import { newId } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { loadSpec } from '../../src/spec';
import { inProcessCli } from '../helpers/cli';
import { rowCounts } from '../helpers/counts';
import { codeFor, exchange, newApp } from '../helpers/oauth-apps';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const root = join(__dirname, '..', '..');
const specPath = join(root, '..', 'shared', 'spec', 'merchant-developer-api.md');

/** The `| Group | Scopes |` table of a markdown text (the first one after "Scopes: format"). */
function scopeTable(markdown: string): string[] {
  const from = markdown.indexOf('| Group | Scopes |');
  if (from < 0) throw new Error('no "| Group | Scopes |" table');
  const lines = markdown.slice(from).split('\n');
  const end = lines.findIndex((l) => !l.startsWith('|'));
  return lines.slice(0, end === -1 ? undefined : end);
}

/** The scope names of the table: every backticked `resource.action` or `*` (the Resellers row also names routes). */
function scopesOf(table: string[]): string[] {
  const names = table.flatMap((line) => [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  return [...new Set(names.filter((n) => scopePattern.test(n)))];
}

const table = scopeTable(readFileSync(join(root, 'docs', 'scopes.md'), 'utf8'));
const specScopes = scopesOf(table);
const namedScopes = specScopes.filter((s) => s !== '*');

test('docs/scopes.md is the specification table, and names the scopes of all four groups', () => {
  if (existsSync(specPath)) expect(table).toEqual(scopeTable(readFileSync(specPath, 'utf8')));
  expect(table.map((l) => l.split('|')[1]!.trim())).toEqual([
    'Group',
    '---',
    'Commerce',
    'Customer and analytics',
    'Platform and security',
    'Resellers',
  ]);
  expect(specScopes).toEqual(expect.arrayContaining(['payments.read', 'security.write', 'resellers.write', '*']));
  expect(specScopes).toHaveLength(24);
});

let t: TestApp;
let shop: string;
let otherShop: string;
let admin: string;
let otherAdmin: string;

beforeAll(async () => {
  t = await startTestApp({
    clock: new ManualClock('2026-11-22T10:00:00Z'),
    env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000', CHECKOUT_BASE_URL: 'https://pay.example.com' },
  });
  shop = await t.createShop({ name: 'Scopes', mode: 'test' }); // its payments use SANDBOX: test mode only
  otherShop = await t.createShop({ name: 'Other' });
  admin = (await t.createKey(shop, ['*'])).key;
  otherAdmin = (await t.createKey(otherShop, ['*'])).key;
});
afterAll(() => t?.close());

describe('every scope the specification shows', () => {
  test('is needed by at least one operation of openapi.yaml (what it opens)', () => {
    const spec = loadSpec();
    const opened = new Map<string, string[]>();
    for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const requirement of op?.security ?? []) {
          for (const scopes of Object.values(requirement) as string[][]) {
            for (const s of scopes) opened.set(s, [...(opened.get(s) ?? []), `${method.toUpperCase()} ${path}`]);
          }
        }
      }
    }
    const openingNothing = namedScopes.filter((s) => !opened.has(s));
    expect(openingNothing).toEqual([]);
    // The oauth2 scheme lists each with what it opens.
    const declared = spec.components.securitySchemes.oauth2.flows.authorizationCode.scopes as Record<string, string>;
    for (const s of specScopes) expect(declared[s]).toEqual(expect.any(String));
    expect(declared['security.write']).not.toMatch(/reserved/i);
  });

  test('is accepted by the CLI: key create and app create, all at once', async () => {
    const cli = inProcessCli(t.database);
    const key = await cli('key', 'create', '--shop', shop, '--mode', 'test', '--scopes', specScopes.join(' '));
    expect(key.stderr).toBe('');
    expect(key.code).toBe(0);
    const app = await cli(
      'app',
      'create',
      '--name',
      'Every scope',
      '--redirect-uris',
      'https://app.example.com/oauth/callback',
      '--scopes',
      specScopes.join(' '),
    );
    expect(app.stderr).toBe('');
    expect(app.code).toBe(0);
    expect([...app.json.scopes].sort()).toEqual([...specScopes].sort());
    // One by one too, so a failure names the scope.
    for (const s of namedScopes) {
      const one = await cli('key', 'create', '--shop', shop, '--mode', 'test', '--scopes', s);
      expect([s, one.code, one.stderr]).toEqual([s, 0, '']);
    }
  });

  test('is in scopes_supported and has a consent-page description', async () => {
    const res = await t.http.get('/dev/v1/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body.scopes_supported).toEqual(expect.arrayContaining(specScopes));
    for (const s of specScopes) expect(scopeDescriptions[s]).toEqual(expect.any(String));
  });

  test('can be requested by an app, approved, and carried by the access token', async () => {
    const app = await newApp(t, { scopes: namedScopes.join(' ') });
    const code = await codeFor(t, admin, app, { scope: namedScopes.join(' ') });
    const tokens = await exchange(t, app, code);
    expect(tokens.scope.split(' ').sort()).toEqual([...namedScopes].sort());
    const me = await t.http.get('/dev/v1/me/capabilities').set(bearer(tokens.access_token));
    expect(me.status).toBe(200);
    expect([...me.body.data.scopes].sort()).toEqual([...namedScopes].sort());
  });
});

describe('payments.read: GET /payments/{uniqid}', () => {
  let paymentsRead: string;
  let ordersRead: string;
  let payer: string;

  beforeAll(async () => {
    paymentsRead = (await t.createKey(shop, ['payments.read'])).key;
    ordersRead = (await t.createKey(shop, ['orders.read', 'payments.write'])).key;
    payer = (await t.createKey(shop, ['payments.write'])).key;
  });

  const read = (uniqid: string, key = paymentsRead) => t.http.get(`/dev/v1/payments/${uniqid}`).set(bearer(key));
  const pay = (body: object) => t.http.post('/dev/v1/payments').set(bearer(payer)).send(body);

  test('answers the Payment POST /payments created, session included, and its state as it changes', async () => {
    const created = await pay({
      title: 'Hour',
      email: 'ada@example.com',
      value: 80.5,
      currency: 'USD',
      gateway: 'SANDBOX',
    });
    expect(created.status).toBe(201);
    expect(created.body.data.session_id).toEqual(expect.any(String));
    const res = await read(created.body.data.uniqid);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(created.body.data);

    // Paid: the same payment, PAID.
    const order = await t.db
      .selectFrom('orders')
      .select('id')
      .where('uniqid', '=', created.body.data.uniqid)
      .executeTakeFirstOrThrow();
    expect((await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(admin)).send({})).status).toBe(200);
    const paid = await read(created.body.data.uniqid);
    expect(paid.body.data).toEqual({ ...created.body.data, status: 'PAID' });
  });

  test('a payment without a forced session has no session fields', async () => {
    const created = await pay({ title: 'Tip', value: 5, currency: 'USD' });
    const res = await read(created.body.data.uniqid);
    expect(res.body.data).toEqual(created.body.data);
    expect(res.body.data).not.toHaveProperty('session_id');
  });

  test("an unknown uniqid, an order's uniqid and another shop's payment: 404 PAYMENT_NOT_FOUND", async () => {
    const foreign = await t.http
      .post('/dev/v1/payments')
      .set(bearer(otherAdmin))
      .send({ title: 'Theirs', value: 9, currency: 'USD' });
    expect(foreign.status).toBe(201);
    await t.seed(shop, { products: [{ title: 'Thing', type: 'SERVICE', price: '3.00' }] });
    const product = await t.db
      .selectFrom('products')
      .select('id')
      .where('shop_id', '=', shop)
      .executeTakeFirstOrThrow();
    const order = await t.http
      .post('/dev/v1/orders')
      .set(bearer(admin))
      .send({ email: 'ada@example.com', items: [{ product_id: product.id, quantity: 1 }] });
    expect(order.status).toBe(201);
    for (const uniqid of [foreign.body.data.uniqid, order.body.data.uniqid, '0195f3c1-a2b3-7c9d-8e4f-5a6b7c8d9e0f']) {
      const res = await read(uniqid);
      expect([res.status, res.body.error.code]).toEqual([404, 'PAYMENT_NOT_FOUND']);
    }
  });

  test('payments.read alone opens it and no order read; orders.read does not open it', async () => {
    const created = await pay({ title: 'Scoped', value: 7, currency: 'USD' });
    for (const path of ['/dev/v1/orders', '/dev/v1/invoices']) {
      const res = await t.http.get(path).set(bearer(paymentsRead));
      expect([path, res.status, res.body.error.code]).toEqual([path, 403, 'FORBIDDEN']);
    }
    const refused = await read(created.body.data.uniqid, ordersRead);
    expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(refused.body.error.message).toContain('payments.read');
    expect((await t.http.get('/dev/v1/orders').set(bearer(ordersRead))).status).toBe(200);
  });

  test('payments.read (with webhooks.read) opens the payment:created events, and only with it', async () => {
    const withIt = (await t.createKey(shop, ['webhooks.read', 'payments.read'])).key;
    const without = (await t.createKey(shop, ['webhooks.read'])).key;
    const list = (key: string) => t.http.get('/dev/v1/events?filters=type:payment:created&limit=100').set(bearer(key));
    const seen = await list(withIt);
    expect(seen.status).toBe(200);
    expect(seen.body.data.length).toBeGreaterThanOrEqual(3);
    expect((await list(without)).body.data).toEqual([]);
  });
});

describe('security.write: POST /security/sessions/{session_id}/revoke', () => {
  const token = 'c'.repeat(64);
  let session: string;
  let foreignSession: string;
  let writer: string;
  let reader: string;

  async function ownerSession(shopId: string, tokenHash: string): Promise<string> {
    const ownerId = newId('own');
    const id = newId('cs');
    const passwordHash = await hashPassword('an owner password');
    await t.db.transaction().execute(async (trx) => {
      await insertOwnerAccount(trx, shopId, {
        id: ownerId,
        email: `owner-${ownerId}@example.com`,
        password_hash: passwordHash,
      });
      await insertOwnerSession(trx, shopId, {
        id,
        owner_id: ownerId,
        token_hash: tokenHash,
        ip: '203.0.113.7',
        user_agent: 'Browser/1.0',
        expires_at: new Date(Date.parse('2026-11-22T10:00:00Z') + 8 * 3600_000),
      });
    });
    return id;
  }

  beforeAll(async () => {
    session = await ownerSession(shop, token);
    foreignSession = await ownerSession(otherShop, 'd'.repeat(64));
    writer = (await t.createKey(shop, ['security.write'])).key;
    reader = (await t.createKey(shop, ['security.read'])).key;
  });

  const revoke = (id: string, key = writer) => t.http.post(`/dev/v1/security/sessions/${id}/revoke`).set(bearer(key));
  const live = (hash: string) => liveOwnerSessionByTokenHash(t.db, hash, new Date('2026-11-22T10:00:00Z'));
  const endedAt = async (id: string) =>
    (await sql<{ ended_at: Date | null }>`select ended_at from owner_sessions where id = ${id}`.execute(t.db)).rows[0]!
      .ended_at;

  test('security.read cannot revoke; another shop cannot; nothing changes', async () => {
    const before = await rowCounts(t.db, ['audit_entries']);
    const refused = await revoke(session, reader);
    expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(refused.body.error.message).toContain('security.write');
    const foreign = await revoke(foreignSession);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'SESSION_NOT_FOUND']);
    expect(await endedAt(session)).toBeNull();
    expect(await endedAt(foreignSession)).toBeNull();
    expect(await live(token)).toBeDefined();
    // Each refusal is one audit entry (every write request is recorded), and that is all they wrote.
    expect((await rowCounts(t.db, ['audit_entries'])).audit_entries).toBe(before.audit_entries! + 2);
    const audit = await sql<{ status: number }>`select status from audit_entries
      where operation_id = 'revokeOwnerSession' order by status`.execute(t.db);
    expect(audit.rows.map((r) => r.status)).toEqual([403, 404]);
  });

  test('ends the session at once: its cookie no longer signs in; a second revocation changes nothing', async () => {
    const res = await revoke(session);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      session_id: session,
      started_at: expect.any(String),
      expires_at: '2026-11-22T18:00:00.000Z',
      ended_at: '2026-11-22T10:00:00.000Z',
      ip: '203.0.113.7',
      user_agent: 'Browser/1.0',
    });
    expect(await live(token)).toBeUndefined();
    const audit = await sql<{ operation_id: string; resource_id: string; status: number }>`
      select operation_id, resource_id, status from audit_entries
      where shop_id = ${shop} and operation_id = 'revokeOwnerSession' and status = 200`.execute(t.db);
    expect(audit.rows).toEqual([{ operation_id: 'revokeOwnerSession', resource_id: session, status: 200 }]);
    const again = await revoke(session);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
  });
});
