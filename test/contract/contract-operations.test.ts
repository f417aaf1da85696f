// Walks docs/operations.tsv (the specification's operation list, a copy kept in the repository so a clone anywhere
// passes) and checks, for every operation, that the contract has it (operationId, the scope in its security
// requirement) and that the server enforces it: no credential -> 401, a credential without the scope -> 403 (before
// validation, so even an empty body gets 403), and, for operations still mapped to notImplemented, the right scope and
// a valid request (the spec's own request example) -> 501 NOT_IMPLEMENTED. Every response also goes through the
// contract validator of test-app.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { handlers, notImplemented } from '../../handlers';
import { operations } from '../../src/generated/operations';
import { loadSpec } from '../../src/spec';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const tsvPath = join(__dirname, '..', '..', 'docs', 'operations.tsv');
const rows = readFileSync(tsvPath, 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#') && !l.startsWith('method\t'))
  .map((l) => {
    const [method, path, rawScope, area] = l.split('\t') as [string, string, string, string];
    return { method, path, scope: rawScope.replace(/[[\]]/g, ''), area };
  });

const spec = loadSpec();
const opOf = (method: string, path: string) => spec.paths[path]?.[method.toLowerCase()];
const isPublic = (scope: string) => scope === 'browser' || scope === 'client';

/** A request URL with placeholder path ids (valid per the parameter schemas) and the required query parameters. */
function urlOf(path: string, op: any): string {
  const filled = path
    .replace(/\{uniqid\}/g, '0195f3c1-a2b3-7c9d-8e4f-5a6b7c8d9e0f')
    .replace(/\{[^}]+\}/g, 'obj_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f');
  const query = new URLSearchParams();
  for (const p of op?.parameters ?? []) {
    const param = p.$ref ? spec.components.parameters[(p.$ref as string).split('/').pop()!] : p;
    if (param.in === 'query' && param.required)
      query.set(param.name, String(param.example ?? param.schema?.enum?.[0] ?? sampleQuery(param.name)));
  }
  const qs = query.toString();
  return `/dev/v1${filled}${qs ? `?${qs}` : ''}`;
}
function sampleQuery(name: string): string {
  return { client_id: 'app_demo', redirect_uri: 'https://app.example.com/oauth/callback' }[name] ?? 'x';
}

let t: TestApp;
let shop: string;
let noScopeKey: string;
beforeAll(async () => {
  // About 250 requests from one IP and one shop: lift the rate limits, which are not what this file tests.
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shop = await t.createShop({ name: 'Contract walk' });
  noScopeKey = (await t.createKey(shop, ['unrelated.read'])).key;
});
afterAll(() => t?.close());

test('operations.tsv lists the 85 operations of the specification', () => {
  expect(rows).toHaveLength(85);
});

describe.each(rows.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_name, row) => {
  const op = opOf(row.method, row.path);
  const send = (credential?: string, withBody = true) => {
    let req = t.http[row.method.toLowerCase() as 'get'](urlOf(row.path, op));
    if (credential) req = req.set(bearer(credential));
    const example = op?.requestBody?.content?.['application/json']?.example;
    if (withBody && example !== undefined) req = req.send(example);
    return req;
  };

  test('is in the contract with an operationId, its tag and its scope', () => {
    expect(op).toBeDefined();
    expect(op.operationId).toMatch(/^[a-z][a-zA-Z0-9]+$/);
    expect(op.tags).toEqual([row.area]);
    if (isPublic(row.scope)) expect(op.security).toEqual([]);
    else if (row.scope === '-') expect(op.security).toEqual([{ bearerAuth: [] }, { oauth2: [] }]);
    else expect(op.security).toEqual([{ bearerAuth: [row.scope] }, { oauth2: [row.scope] }]);
    expect(op.responses['501']).toBeDefined();
  });

  if (!isPublic(row.scope)) {
    test('without a credential: 401 UNAUTHORIZED', async () => {
      const res = await send(undefined, false);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    });
  }

  if (!isPublic(row.scope) && row.scope !== '-') {
    test(`with a credential lacking ${row.scope}: 403 FORBIDDEN`, async () => {
      const res = await send(noScopeKey, false);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(res.body.error.message).toContain(row.scope);
    });
  }

  const implemented = op && (handlers as Record<string, unknown>)[op.operationId] !== notImplemented;
  if (!implemented) {
    test('with the right scope and a valid request: 501 NOT_IMPLEMENTED', async () => {
      const credential = isPublic(row.scope)
        ? undefined
        : (await t.createKey(shop, [row.scope === '-' ? '*' : row.scope])).key;
      const res = await send(credential);
      expect(res.status).toBe(501);
      expect(res.body.error.code).toBe('NOT_IMPLEMENTED');
    });
  }
});

// Operations the contract adds beyond the specification's list (decided here, so not in operations.tsv): each is
// checked the same way, from its own operation table entry (src/generated/operations.ts).
const listed = new Set(rows.map((r) => `${r.method.toUpperCase()} ${r.path}`));
const addedAll = Object.entries(operations)
  .filter(([, o]) => !listed.has(`${o.method.toUpperCase()} ${o.path}`))
  .map(([operationId, o]) => ({ operationId, method: o.method.toUpperCase(), path: o.path, scope: o.scopes[0] }));

// OAuth 2.0 endpoints a standard client needs (issue 13): token revocation (RFC 7009) and the authorization-server
// metadata (RFC 8414). Public (`security: []`): the client authenticates itself in the body or with HTTP Basic.
const addedPublic = ['getOAuthServerMetadata', 'revokeOAuthToken'];

test('the operations added beyond operations.tsv are exactly the known ones', () => {
  expect(addedAll.map((a) => a.operationId).sort()).toEqual([
    // Test mode (issue 26): the test clock of a test shop.
    'advanceTestClock',
    'createWebhook',
    'getEvent',
    // Issue 36: one order or invoice by id (the lists' Order object).
    'getInvoice',
    'getOAuthServerMetadata',
    'getOrder',
    'getPayment',
    'getTestClock',
    'listEvents',
    'revokeOAuthToken',
    'revokeOwnerSession',
    'updateWebhook',
  ]);
});

test.each(addedPublic)('%s (added) is public, implemented, and declares 501', (operationId) => {
  const a = addedAll.find((x) => x.operationId === operationId)!;
  const op = opOf(a.method, a.path);
  expect(op.security).toEqual([]);
  expect(op.responses['501']).toBeDefined();
  expect((handlers as Record<string, unknown>)[operationId]).not.toBe(notImplemented);
});

const added = addedAll.filter((a) => !addedPublic.includes(a.operationId));
describe.each(added.map((a) => [`${a.method} ${a.path} (${a.operationId}, added)`, a] as const))('%s', (_name, a) => {
  const op = opOf(a.method, a.path);
  const send = (credential?: string, withBody = true) => {
    let req = t.http[a.method.toLowerCase() as 'get'](urlOf(a.path, op));
    if (credential) req = req.set(bearer(credential));
    const example = op?.requestBody?.content?.['application/json']?.example;
    if (withBody && example !== undefined) req = req.send(example);
    return req;
  };

  // An operation any valid credential may call (GET /me/test-clock, like GET /me) has no scope to lack.
  const scopes = a.scope === undefined ? [] : [a.scope];
  test('has at most one scope, required by both schemes, and declares 501', () => {
    expect(op.security).toEqual([{ bearerAuth: scopes }, { oauth2: scopes }]);
    expect(op.responses['501']).toBeDefined();
  });
  test('without a credential: 401 UNAUTHORIZED', async () => {
    const res = await send(undefined, false);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });
  if (a.scope !== undefined)
    test(`with a credential lacking ${a.scope}: 403 FORBIDDEN`, async () => {
      const res = await send(noScopeKey, false);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(res.body.error.message).toContain(a.scope!);
    });
  if ((handlers as Record<string, unknown>)[a.operationId] === notImplemented) {
    test('with the right scope and a valid request: 501 NOT_IMPLEMENTED', async () => {
      const res = await send((await t.createKey(shop, scopes.length ? scopes : ['*'])).key);
      expect(res.status).toBe(501);
      expect(res.body.error.code).toBe('NOT_IMPLEMENTED');
    });
  }
});
