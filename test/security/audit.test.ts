// The audit trail (issue 9, point 9; src/platform/audit.ts): every state-changing request that got past
// authentication writes exactly one entry, accepted (in its own transaction, with its status), refused by a
// business rule or rejected by validation (in a transaction of its own, surviving the rollback), and an idempotent
// replay too; reads, 401 and 429 write none; no entry holds a credential, a header other than the user agent, or
// anything the request body or query said. GET /security/audit-trail lists a shop's entries newest first, with a
// cursor and filters, and only its own. Each request carries an X-Request-Id of its own, so its entries are found
// by it.
import { sql } from 'kysely';
import { insertCredential } from '../../db/queries/credentials';
import { handlers } from '../../handlers';
import { generateCredential } from '../../src/auth/credentials';
import { setShopStatus } from '../../src/ops/admin';
import { ApiError } from '../../src/errors';
import type { OperationHandler } from '../../src/http/handler';
import { newId } from '../../src/ids';
import { actionOf, auditedOperations, auditSink } from '../../src/platform/audit';
import { loadSpec } from '../../src/spec';
import { rowCounts } from '../helpers/counts';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

/** Set to make the next duplicateProduct refuse after it wrote its copy (a business rule that fails late). */
let failAfterWriting: ApiError | undefined;

let t: TestApp;

interface Shop {
  shop: string;
  /** `*` key, named. */
  key: string;
  keyId: string;
  /** products.read only: no write scope. */
  readerKey: string;
  readerKeyId: string;
  /** products.write only: may write, may not read the trail. */
  writerKey: string;
  product: string;
  serialProduct: string;
}

let A: Shop;
let B: Shop;
/** Every credential string made here, to prove none reaches an entry. */
const secrets: string[] = [];

async function makeShop(label: string, plan: 'free' | 'pro' = 'free'): Promise<Shop> {
  const shop = await t.createShop({ name: `Audit ${label}`, plan });
  const full = await t.createKey(shop, ['*'], `audit ${label}`);
  const reader = await t.createKey(shop, ['products.read']);
  const writer = await t.createKey(shop, ['products.write']);
  secrets.push(full.key, reader.key, writer.key);
  const seeded = await t.seed(shop, {
    products: [
      { title: 'Service', slug: 'service', price: '10.00' },
      { title: 'Keys', slug: 'keys', type: 'SERIALS', price: '1.00', serials: ['AUD-1', 'AUD-2'] },
    ],
  });
  return {
    shop,
    key: full.key,
    keyId: full.id,
    readerKey: reader.key,
    readerKeyId: reader.id,
    writerKey: writer.key,
    product: seeded.products[0]!,
    serialProduct: seeded.products[1]!,
  };
}

beforeAll(async () => {
  t = await startTestApp({
    effectSinks: [auditSink()],
    env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_PRO: '3' },
    handlers: {
      duplicateProduct: (async (ctx) => {
        const result = await handlers.duplicateProduct(ctx);
        const fail = failAfterWriting;
        failAfterWriting = undefined;
        if (fail) throw fail;
        return result;
      }) as OperationHandler<'duplicateProduct'>,
    },
  });
  A = await makeShop('A');
  B = await makeShop('B');
});
afterAll(() => t?.close());

let counter = 0;
const requestId = (label: string) => `audit-${label}-${++counter}`;

interface EntryRow {
  id: string;
  shop_id: string;
  occurred_at: string;
  credential_id: string | null;
  credential_kind: string;
  operation_id: string;
  method: string;
  path: string;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  path_params: Record<string, string>;
  status: number;
  error_code: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string;
}

/** The entries written for one request (by its X-Request-Id). */
async function entriesOf(id: string): Promise<EntryRow[]> {
  const r = await sql<EntryRow>`select *, to_char(occurred_at at time zone 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at
    from audit_entries where request_id = ${id} order by audit_entries.occurred_at, id`.execute(t.db);
  return r.rows;
}

async function onlyEntryOf(id: string): Promise<EntryRow> {
  const rows = await entriesOf(id);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

const totalEntries = async () => (await rowCounts(t.db, ['audit_entries'])).audit_entries!;

function post(path: string, key: string, id: string) {
  return t.http.post(`/dev/v1${path}`).set(bearer(key)).set('X-Request-Id', id);
}

describe('one entry per write request', () => {
  test('an accepted write: its status, operation, resource, credential and request facts', async () => {
    const id = requestId('accepted');
    const res = await post(`/products/${A.product}/duplicate`, A.key, id).set('User-Agent', 'audit-test/1.0');
    expect(res.status).toBe(201);
    const entry = await onlyEntryOf(id);
    expect(entry).toEqual({
      id: expect.stringMatching(/^aud_/),
      shop_id: A.shop,
      occurred_at: expect.any(String),
      credential_id: A.keyId,
      credential_kind: 'api_key',
      operation_id: 'duplicateProduct',
      method: 'POST',
      path: `/dev/v1/products/${A.product}/duplicate`,
      action: 'products.duplicate',
      resource_type: 'product',
      resource_id: A.product,
      path_params: { id: A.product },
      status: 201,
      error_code: null,
      ip: expect.stringMatching(/127\.0\.0\.1|::1/),
      user_agent: 'audit-test/1.0',
      request_id: id,
      // An API request is no consent-page session and no owner's act (those are test/account/oauth-consent.test.ts's).
      owner_id: null,
      session_id: null,
    });
  });

  test('refused by a business rule: a 404 and a 400, one entry each with its status and error code', async () => {
    const missing = requestId('missing');
    const res = await post(`/products/prod_00000000000000000000000000000000/duplicate`, A.key, missing);
    expect(res.status).toBe(404);
    expect(await onlyEntryOf(missing)).toMatchObject({
      operation_id: 'duplicateProduct',
      resource_id: 'prod_00000000000000000000000000000000',
      status: 404,
      error_code: 'PRODUCT_NOT_FOUND',
      credential_id: A.keyId,
    });

    const tooMany = requestId('out-of-stock');
    const claim = await post(`/products/${A.serialProduct}/serials/claim`, A.key, tooMany).send({ amount: 3 });
    expect(claim.status).toBe(400);
    expect(claim.body.error.code).toBe('OUT_OF_STOCK');
    expect(await onlyEntryOf(tooMany)).toMatchObject({
      operation_id: 'claimProductSerials',
      action: 'products.claim_serials',
      resource_type: 'product',
      resource_id: A.serialProduct,
      status: 400,
      error_code: 'OUT_OF_STOCK',
    });
  });

  test('rejected by validation: the schema (422), the body reader (415 and 422), one entry each', async () => {
    const cases: [string, (id: string) => ReturnType<typeof post>, number, string][] = [
      [
        'schema',
        (id) => post(`/products/${A.serialProduct}/serials/claim`, A.key, id).send({ amount: 'many' }),
        422,
        'VALIDATION_ERROR',
      ],
      [
        'media type',
        (id) =>
          post(`/products/${A.serialProduct}/serials/claim`, A.key, id)
            .set('Content-Type', 'application/xml')
            .send('<amount>1</amount>'),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        'a body where none is taken',
        (id) => post(`/products/${A.product}/duplicate`, A.key, id).send({ title: 'x' }),
        422,
        'VALIDATION_ERROR',
      ],
    ];
    for (const [label, send, status, code] of cases) {
      const before = await rowCounts(t.db, ['products', 'product_serials']);
      const id = requestId(label.replace(/ /g, '-'));
      const res = await send(id);
      expect({ label, status: res.status }).toEqual({ label, status });
      expect(await onlyEntryOf(id)).toMatchObject({ status, error_code: code, credential_id: A.keyId });
      expect(await rowCounts(t.db, ['products', 'product_serials'])).toEqual(before);
    }
  });

  test('refused for want of a scope (403), and for a suspended shop (403): one entry each', async () => {
    const id = requestId('scope');
    const res = await post(`/products/${A.product}/duplicate`, A.readerKey, id);
    expect(res.status).toBe(403);
    expect(await onlyEntryOf(id)).toMatchObject({
      operation_id: 'duplicateProduct',
      credential_id: A.readerKeyId,
      status: 403,
      error_code: 'FORBIDDEN',
      resource_id: A.product,
    });

    const suspended = await makeShop('suspended');
    await setShopStatus(t.db, suspended.shop, 'suspended');
    const sid = requestId('suspended');
    const refused = await post(`/products/${suspended.product}/duplicate`, suspended.key, sid);
    expect(refused.status).toBe(403);
    expect(await onlyEntryOf(sid)).toMatchObject({ shop_id: suspended.shop, status: 403, error_code: 'FORBIDDEN' });
  });

  test('a write refused after it wrote: the change is rolled back, its entry stays', async () => {
    const before = await rowCounts(t.db, ['products', 'product_variants']);
    failAfterWriting = new ApiError('CONFLICT', 'Refused after the copy was written.');
    const id = requestId('rolled-back');
    const res = await post(`/products/${A.product}/duplicate`, A.key, id);
    expect(res.status).toBe(409);
    expect(await rowCounts(t.db, ['products', 'product_variants'])).toEqual(before);
    expect(await onlyEntryOf(id)).toMatchObject({
      operation_id: 'duplicateProduct',
      status: 409,
      error_code: 'CONFLICT',
    });
  });

  test('an idempotent replay is a request too: one entry each, with the replayed status', async () => {
    const before = await rowCounts(t.db, ['products']);
    const [first, replay] = [requestId('idem-first'), requestId('idem-replay')];
    const a = await post(`/products/${A.product}/duplicate`, A.key, first).set('Idempotency-Key', `audit-${first}`);
    const b = await post(`/products/${A.product}/duplicate`, A.key, replay).set('Idempotency-Key', `audit-${first}`);
    expect([a.status, a.headers['idempotency-status']]).toEqual([201, 'created']);
    expect([b.status, b.headers['idempotency-status']]).toEqual([201, 'cached']);
    expect((await rowCounts(t.db, ['products'])).products).toBe(before.products! + 1);
    expect(await onlyEntryOf(first)).toMatchObject({ status: 201 });
    expect(await onlyEntryOf(replay)).toMatchObject({ status: 201, operation_id: 'duplicateProduct' });

    // A stored refusal replays as a refusal, recorded again.
    const [miss, missAgain] = [requestId('idem-404'), requestId('idem-404-replay')];
    const path = '/products/prod_00000000000000000000000000000001/duplicate';
    expect((await post(path, A.key, miss).set('Idempotency-Key', `audit-${miss}`)).status).toBe(404);
    const again = await post(path, A.key, missAgain).set('Idempotency-Key', `audit-${miss}`);
    expect([again.status, again.headers['idempotency-status']]).toEqual([404, 'cached']);
    expect(await onlyEntryOf(miss)).toMatchObject({ status: 404, error_code: 'PRODUCT_NOT_FOUND' });
    expect(await onlyEntryOf(missAgain)).toMatchObject({ status: 404 });
  });

  test('an OAuth access token is recorded as one', async () => {
    const { token, hash, displayPrefix } = generateCredential('oauth_access_token');
    secrets.push(token);
    const credential = await insertCredential(t.db, {
      id: newId('key'),
      shop_id: A.shop,
      kind: 'oauth_access_token',
      name: 'an app',
      token_hash: hash,
      display_prefix: displayPrefix,
      scopes: ['products.write'],
    });
    const id = requestId('oauth');
    expect((await post(`/products/${A.product}/duplicate`, token, id)).status).toBe(201);
    expect(await onlyEntryOf(id)).toMatchObject({
      credential_id: credential.id,
      credential_kind: 'oauth_access_token',
    });
  });

  test('none for reads, for 401 (not past authentication) or for 429 (rate limited)', async () => {
    const before = await totalEntries();
    const reads = [
      t.http.get('/dev/v1/products').set(bearer(A.key)),
      t.http.get(`/dev/v1/customers`).set(bearer(A.key)),
      t.http.get('/dev/v1/me').set(bearer(A.key)),
      t.http.get('/dev/v1/security/audit-trail').set(bearer(A.key)),
      t.http.get('/dev/v1/products').set(bearer(A.writerKey)), // a read refused (403): still a read
    ];
    for (const r of reads) expect([200, 403]).toContain((await r).status);
    const unknownKey = `mdk_${'A'.repeat(43)}`;
    expect((await post(`/products/${A.product}/duplicate`, unknownKey, requestId('401'))).status).toBe(401);
    expect((await post(`/products/${A.product}/duplicate`, 'garbage', requestId('401'))).status).toBe(401);
    expect(await totalEntries()).toBe(before);

    // A `pro` shop may make 3 requests here (RATE_LIMIT_PRO): the fourth is refused with 429, unrecorded.
    const limited = await makeShop('limited', 'pro');
    const ids = [1, 2, 3, 4].map((i) => requestId(`limited-${i}`));
    const statuses: number[] = [];
    for (const id of ids) statuses.push((await post(`/products/${limited.product}/duplicate`, limited.key, id)).status);
    expect(statuses).toEqual([201, 201, 201, 429]);
    expect((await Promise.all(ids.map(entriesOf))).map((rows) => rows.length)).toEqual([1, 1, 1, 0]);
  });
});

describe('no secret in any entry', () => {
  test('no credential, Authorization value, header, query or body value the requests sent', async () => {
    const bodySentinel = 'BODY-SENTINEL-7f3a';
    const sentinels = [bodySentinel, 'HEADER-SENTINEL-91c2', 'QUERY-SENTINEL-5d0e'];
    // What a request says, in every place it can say it, accepted and refused alike.
    await post(`/products/${A.serialProduct}/serials/claim`, A.key, requestId('sentinel-body')).send({
      amount: 1,
      note: bodySentinel,
    });
    await post(`/products/${A.product}/duplicate`, A.key, requestId('sentinel-body-2')).send({ title: bodySentinel });
    await post(`/products/${A.product}/duplicate?x=${sentinels[2]}`, A.key, requestId('sentinel-query'));
    await post(`/products/${A.product}/duplicate`, A.key, requestId('sentinel-header')).set('X-Note', sentinels[1]!);
    await post(`/products/${A.serialProduct}/serials/claim`, A.key, requestId('sentinel-ok'))
      .set('Idempotency-Key', bodySentinel)
      .send({ amount: 1 });

    const rows = await sql<{ text: string }>`select to_jsonb(r)::text as text from audit_entries r`.execute(t.db);
    expect(rows.rows.length).toBeGreaterThan(10);
    const forbidden = [...secrets, 'Bearer', ...sentinels];
    const leaks = rows.rows.flatMap((r) => forbidden.filter((s) => r.text.includes(s)).map((s) => `${s}: ${r.text}`));
    expect(leaks).toEqual([]);
    // Not vacuous: what an entry does hold is there.
    expect(rows.rows.some((r) => r.text.includes(A.serialProduct))).toBe(true);
  });
});

describe('GET /security/audit-trail', () => {
  /** Shop A's entries as the database orders them newest first. */
  async function newestFirst(shopId: string): Promise<EntryRow[]> {
    const r = await sql<EntryRow>`select *, to_char(occurred_at at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at
      from audit_entries where shop_id = ${shopId} order by audit_entries.occurred_at desc, id desc`.execute(t.db);
    return r.rows;
  }

  async function listAll(key: string, query = ''): Promise<{ ids: string[]; pages: number; text: string }> {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let text = '';
    do {
      const qs = new URLSearchParams(query);
      qs.set('limit', '4');
      if (cursor) qs.set('cursor', cursor);
      const res = await t.http.get(`/dev/v1/security/audit-trail?${qs}`).set(bearer(key));
      expect(res.status).toBe(200);
      text += res.text;
      ids.push(...(res.body.data as { id: string }[]).map((e) => e.id));
      cursor = res.body.pagination.next_cursor;
      pages++;
    } while (cursor);
    return { ids, pages, text };
  }

  beforeAll(async () => {
    // Shop B writes too, so that its list is not empty by accident.
    expect((await post(`/products/${B.product}/duplicate`, B.key, requestId('b-accepted'))).status).toBe(201);
    expect((await post(`/products/${B.product}/duplicate`, B.readerKey, requestId('b-scope'))).status).toBe(403);
  });

  test('an entry as the contract describes it', async () => {
    const id = requestId('view');
    await post(`/products/${A.product}/duplicate`, A.key, id).set('User-Agent', 'audit-view/2');
    const row = await onlyEntryOf(id);
    const res = await t.http.get('/dev/v1/security/audit-trail?limit=1').set(bearer(A.key));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        id: row.id,
        occurred_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
        actor: { type: 'API_KEY', id: A.keyId, name: 'audit A' },
        operation_id: 'duplicateProduct',
        action: 'products.duplicate',
        resource_type: 'product',
        resource_id: A.product,
        status: 201,
        ip: row.ip,
        user_agent: 'audit-view/2',
        request_id: id,
        session_id: null,
      },
    ]);
    expect(Date.parse(res.body.data[0].occurred_at)).toBe(Date.parse(row.occurred_at.slice(0, 23) + 'Z'));
  });

  test('newest first, every entry once across the pages of a cursor; nothing secret in them', async () => {
    const expected = (await newestFirst(A.shop)).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(10);
    const { ids, pages, text } = await listAll(A.key);
    expect(ids).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 4));
    for (const s of [...secrets, 'Bearer']) expect(text).not.toContain(s);
  });

  test('shop B sees its own entries and none of shop A’s', async () => {
    const expected = (await newestFirst(B.shop)).map((e) => e.id);
    expect(expected.length).toBeGreaterThanOrEqual(2);
    const { ids } = await listAll(B.key);
    expect(ids).toEqual(expected);
    const ofA = new Set((await newestFirst(A.shop)).map((e) => e.id));
    expect(ids.filter((id) => ofA.has(id))).toEqual([]);
  });

  test('filters: operation, status, credential, time range, and several at once', async () => {
    const all = await newestFirst(A.shop);
    const expectIds = async (filters: string, keep: (e: EntryRow) => boolean) => {
      const expected = all.filter(keep).map((e) => e.id);
      expect({ filters, some: expected.length > 0 }).toEqual({ filters, some: true });
      expect({ filters, ids: (await listAll(A.key, `filters=${encodeURIComponent(filters)}`)).ids }).toEqual({
        filters,
        ids: expected,
      });
    };
    await expectIds('operation_id:claimProductSerials', (e) => e.operation_id === 'claimProductSerials');
    await expectIds('status:404', (e) => e.status === 404);
    await expectIds('status:403', (e) => e.status === 403);
    await expectIds(`credential_id:${A.readerKeyId}`, (e) => e.credential_id === A.readerKeyId);
    const middle = all[Math.floor(all.length / 2)]!.occurred_at;
    await expectIds(`occurred_after:${middle}`, (e) => e.occurred_at >= middle);
    await expectIds(`occurred_before:${middle}`, (e) => e.occurred_at < middle);
    await expectIds(
      `operation_id:duplicateProduct,status:201,credential_id:${A.keyId},occurred_before:${middle}`,
      (e) =>
        e.operation_id === 'duplicateProduct' &&
        e.status === 201 &&
        e.credential_id === A.keyId &&
        e.occurred_at < middle,
    );
    const bad = await t.http.get('/dev/v1/security/audit-trail?filters=status:often').set(bearer(A.key));
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].field).toBe('query.filters');
  });

  test('needs security.read: 403 without it', async () => {
    const res = await t.http.get('/dev/v1/security/audit-trail').set(bearer(A.writerKey));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    const reader = await t.createKey(A.shop, ['security.read']);
    secrets.push(reader.key);
    expect((await t.http.get('/dev/v1/security/audit-trail').set(bearer(reader.key))).status).toBe(200);
  });
});

describe('what an entry says of each operation (worked out once from the contract)', () => {
  test('action and resource for every state-changing operation', () => {
    const table = auditedOperations(loadSpec());
    expect(table.get('refundOrder')).toEqual({ action: 'orders.refund', resourceType: 'order', resourceParam: 'id' });
    expect(table.get('rotateWebhookSecret')).toEqual({
      action: 'webhooks.rotate_secret',
      resourceType: 'webhook',
      resourceParam: 'id',
    });
    expect(table.get('fulfillOrderItem')).toMatchObject({ action: 'orders.fulfill_item', resourceType: 'order' });
    expect(table.get('retryWebhookDelivery')).toMatchObject({ resourceType: 'webhook_log', resourceParam: 'id' });
    expect(table.get('updateQuantityDeal')).toMatchObject({ resourceType: 'quantity_deal', resourceParam: 'uniqid' });
    expect(table.get('createPaymentLink')).toEqual({
      action: 'payment_links.create',
      resourceType: 'payment_link',
      resourceParam: undefined,
    });
    expect(table.get('updateResellerProgram')).toMatchObject({ action: 'reseller_program.update' });
    expect(table.get('exchangeOAuthToken')).toMatchObject({ action: 'oauth.exchange_token' });
    expect(table.get('generateAnalyticsReport')).toMatchObject({ action: 'analytics.generate_report' });
    expect(actionOf('createProductVariantFieldOption', '/products/{id}/variants/fields/{fieldId}/options')).toBe(
      'products.create_variant_field_option',
    );
    // Every action is distinct: an entry's action names one operation.
    const actions = [...table.values()].map((o) => o.action);
    expect(new Set(actions).size).toBe(actions.length);
  });
});
