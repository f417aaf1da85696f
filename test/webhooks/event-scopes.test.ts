// The events API is no side door around scopes, and no event carries a secret (issue 24, point 2):
//  - GET /events and GET /events/{id} show an event only to a credential that may also read the resource it
//    describes (license:* needs licenses.read besides webhooks.read), filtered in the query so pages and cursors
//    count only what is shown; an unreadable event by id is a 404 like a missing one;
//  - a license event holds the license without its key (`key_hint`), an order event no `license_keys`: in the API,
//    in the body a webhook receiver gets (the real delivery worker, a local receiver, signatures verified), and in
//    the database, where after issuing licenses no table but the buyer's delivery mail holds a key in clear;
//  - migration 0025 rewrites events stored before with keys in them, and a delivery still queued for such an event
//    then sends the scrubbed body.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { up as migration0025 } from '../../db/migrations/0025_events_without_secrets';
import { knownScopes } from '../../src/auth/scopes';
import { eventReadScopes, webhookEventTypes } from '../../src/domain/webhooks/webhooks';
import { newId } from '../../src/ids';
import { ManualClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { loadSecretBox } from '../../src/platform/secret-box';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { assertEventPayloads } from '../helpers/webhook-payloads';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

let t: TestApp;
let clock: ManualClock;
let shop: string;
let admin: string; // '*'
let hooksOnly: string; // webhooks.read
let hooksAndLicenses: string; // webhooks.read licenses.read
let licensesOnly: string; // licenses.read
let product: string;
let server: Server;
let receiverUrl: string;
const received: Received[] = [];
/** Every key issued in this file, to look for in the database. */
const issuedKeys: string[] = [];

beforeAll(async () => {
  clock = new ManualClock(Date.now()); // standardwebhooks refuses timestamps 5 minutes away from the real time
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', RATE_LIMIT_FREE: '100000' } });
  shop = await t.createShop({ name: 'Event scopes' });
  admin = (await t.createKey(shop, ['*'])).key;
  hooksOnly = (await t.createKey(shop, ['webhooks.read'])).key;
  hooksAndLicenses = (await t.createKey(shop, ['webhooks.read', 'licenses.read'])).key;
  licensesOnly = (await t.createKey(shop, ['licenses.read'])).key;
  [product] = (
    await t.seed(shop, {
      products: [{ title: 'Pro Lifetime', type: 'SERVICE', price: '25.10', license_activation_limit: 1 }],
    })
  ).products as [string];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await t?.close();
});

const events = (query: string, key: string) => t.http.get(`/dev/v1/events${query}`).set(bearer(key));
const eventById = (id: string, key: string) => t.http.get(`/dev/v1/events/${id}`).set(bearer(key));

async function createLicense(body: Record<string, unknown> = {}) {
  const res = await t.http
    .post('/dev/v1/licenses')
    .set(bearer(admin))
    .send({ product_id: product, ...body });
  expect(res.status).toBe(201);
  issuedKeys.push(res.body.data.key);
  return res.body.data as { id: string; key: string };
}

async function storedEvents(type: string) {
  const { rows } = await sql<{ id: string; data: string }>`select id, data from events
    where shop_id = ${shop} and type = ${type} order by created_at, id`.execute(t.db);
  return rows;
}

/** Every page of GET /events for this query, following the cursor; returns the pages. */
async function walk(query: string, key: string) {
  const pages: { ids: string[]; has_more: boolean }[] = [];
  let cursor: string | null = null;
  do {
    const res = await events(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    expect(res.status).toBe(200);
    pages.push({ ids: res.body.data.map((e: { id: string }) => e.id), has_more: res.body.pagination.has_more });
    cursor = res.body.pagination.next_cursor;
  } while (cursor);
  return pages;
}

async function drainWebhooks(): Promise<void> {
  const secrets = await loadSecretBox(t.db, undefined);
  const job = webhookDeliveryJob(t.db, {
    clock,
    logger: t.logger,
    secrets,
    allowPrivateTargets: true,
    timeoutMs: 5000,
    random: () => 0.5,
  });
  while ((await job.runOnce()) > 0);
}

test('every event type has its read scope in one map, and every scope there is one the contract grants', () => {
  for (const type of webhookEventTypes) {
    const scope = eventReadScopes[type];
    if (scope !== null) expect(knownScopes).toContain(scope);
  }
  // Only the test event needs nothing beyond webhooks.read.
  expect(webhookEventTypes.filter((type) => eventReadScopes[type] === null)).toEqual(['webhook:test']);
});

describe('with license events and test events in the shop', () => {
  let licenses: { id: string; key: string }[];
  let licenseEvents: string[];
  let testEvents: string[];
  let secret: string;

  beforeAll(async () => {
    const endpoint = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(admin))
      .send({ url: receiverUrl, events: ['license:created', 'webhook:test'] });
    expect(endpoint.status).toBe(201);
    secret = endpoint.body.data.secret;
    // Interleaved, so a filter applied after the page was read would leave holes in the pages.
    licenses = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      licenses.push(await createLicense());
      clock.advance(1000);
      expect((await t.http.post(`/dev/v1/webhooks/${endpoint.body.data.id}/test`).set(bearer(admin))).status).toBe(202);
    }
    licenseEvents = (await storedEvents('license:created')).map((e) => e.id);
    testEvents = (await storedEvents('webhook:test')).map((e) => e.id);
    expect([licenseEvents.length, testEvents.length]).toEqual([3, 3]);
  });

  test('webhooks.read alone: license events are not listed, not filterable, not readable by id', async () => {
    const all = await events('?limit=100', hooksOnly);
    expect(all.status).toBe(200);
    const types = new Set(all.body.data.map((e: { type: string }) => e.type));
    expect([...types]).toEqual(['webhook:test']);
    expect(JSON.stringify(all.body)).not.toContain(licenses[0]!.id);

    const filtered = await events('?filters=type:license:created', hooksOnly);
    expect(filtered.status).toBe(200);
    expect(filtered.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });

    for (const id of licenseEvents) {
      const one = await eventById(id, hooksOnly);
      expect(one.status).toBe(404);
      expect(one.body.error.code).toBe('EVENT_NOT_FOUND');
    }
    // The same key still reads the events it may: the test events.
    expect((await eventById(testEvents[0]!, hooksOnly)).status).toBe(200);
    // And it is still refused the licenses themselves.
    expect((await t.http.get('/dev/v1/licenses').set(bearer(hooksOnly))).status).toBe(403);
  });

  test('the filter is in the query: pages of 1 walk exactly the readable events, has_more true only before the last', async () => {
    const pages = await walk('?limit=1', hooksOnly);
    expect(pages.map((p) => p.ids.length)).toEqual([1, 1, 1]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
    expect(pages.flatMap((p) => p.ids).sort()).toEqual([...testEvents].sort());
    // With licenses.read too, the same walk has all six.
    const both = await walk('?limit=2', hooksAndLicenses);
    expect(both.flatMap((p) => p.ids).sort()).toEqual([...licenseEvents, ...testEvents].sort());
    expect(both.map((p) => p.has_more)).toEqual([true, true, false]);
  });

  test('licenses.read without webhooks.read: the events API stays closed (403)', async () => {
    const res = await events('', licensesOnly);
    expect(res.status).toBe(403);
    expect((await eventById(licenseEvents[0]!, licensesOnly)).status).toBe(403);
  });

  test('webhooks.read + licenses.read: license events are visible and hold no key, only its last 5 characters', async () => {
    const res = await events('?filters=type:license:created&limit=100', hooksAndLicenses);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { id: string }) => e.id).sort()).toEqual([...licenseEvents].sort());
    for (const e of res.body.data) {
      const license = licenses.find((l) => l.id === e.data.id)!;
      expect(e.data).not.toHaveProperty('key');
      expect(e.data.key_hint).toBe(license.key.slice(-5));
      expect(JSON.stringify(e)).not.toContain(license.key);
      const one = await eventById(e.id, hooksAndLicenses);
      expect(one.status).toBe(200);
      expect(one.body.data).toEqual(e);
    }
    // Full access reads them the same way: the key is not in the event for anyone.
    const full = await eventById(licenseEvents[0]!, admin);
    expect(full.body.data.data).not.toHaveProperty('key');
    expect(await assertEventPayloads(t.db, shop, ['license:created'])).toBe(3);
  });

  test('the webhook body a receiver gets for license:created holds no key', async () => {
    received.length = 0;
    await drainWebhooks();
    const licenseBodies = received.filter((r) => JSON.parse(r.body).event === 'license:created');
    expect(licenseBodies).toHaveLength(3);
    for (const r of licenseBodies) {
      const body = new Webhook(secret).verify(r.body, {
        'webhook-id': String(r.headers['webhook-id']),
        'webhook-timestamp': String(r.headers['webhook-timestamp']),
        'webhook-signature': String(r.headers['webhook-signature']),
      }) as { data: Record<string, unknown> };
      const license = licenses.find((l) => l.id === body.data.id)!;
      expect(body.data).not.toHaveProperty('key');
      expect(body.data.key_hint).toBe(license.key.slice(-5));
      expect(r.body).not.toContain(license.key);
    }
  });
});

test('a merchant key under 20 characters gets no hint (5 of its characters would give too much away)', async () => {
  const short = await createLicense({ key: 'SHORT-KEY-42' });
  const [stored] = (await storedEvents('license:created')).filter((e) => JSON.parse(e.data).id === short.id);
  expect(JSON.parse(stored!.data)).toMatchObject({ id: short.id, key_hint: null });
  expect(stored!.data).not.toContain('SHORT-KEY-42');
});

test('an order that issues licenses: order:completed has no license_keys; revocations carry no key either', async () => {
  const created = await t.http
    .post('/dev/v1/orders')
    .set(bearer(admin))
    .send({ email: 'ada@example.com', items: [{ product_id: product, quantity: 2 }] });
  expect(created.status).toBe(201);
  const done = await t.http.post(`/dev/v1/orders/${created.body.data.id}/complete`).set(bearer(admin)).send({});
  expect(done.status).toBe(200);
  // The API answer to the caller still shows the keys (orders.write/`*` may see them) ...
  const keys = done.body.data.license_keys.map((k: { key: string }) => k.key) as string[];
  expect(keys).toHaveLength(2);
  issuedKeys.push(...keys);
  // ... the event does not.
  const completed = (await storedEvents('order:completed')).find((e) => JSON.parse(e.data).id === done.body.data.id)!;
  const data = JSON.parse(completed.data);
  expect(data).not.toHaveProperty('license_keys');
  expect(data.items[0]).not.toHaveProperty('license_keys');
  expect(data.items[0].delivered_items.license_ids).toHaveLength(2);
  // The amounts keep their digits.
  expect(completed.data).toContain('"total":50.2');
  const refunded = await t.http.post(`/dev/v1/orders/${created.body.data.id}/refund`).set(bearer(admin)).send({});
  expect(refunded.status).toBe(200);
  const revoked = await storedEvents('license:revoked');
  expect(revoked).toHaveLength(2);
  for (const k of keys) {
    expect(completed.data).not.toContain(k);
    for (const r of revoked) expect(r.data).not.toContain(k);
  }
  expect(await assertEventPayloads(t.db, shop, ['order:completed', 'license:revoked'])).toBe(3);
});

test('after issuing licenses, no table holds a key in clear but the buyer delivery mail', async () => {
  expect(issuedKeys.length).toBeGreaterThanOrEqual(6);
  const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns
    where table_schema = current_schema() and data_type in ('text', 'json', 'jsonb', 'character varying', 'ARRAY')
    order by table_name, column_name`.execute(t.db);
  const holding: string[] = [];
  for (const { table_name, column_name } of columns) {
    const { rows } = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table_name)}
      where ${sql.ref(column_name)}::text like any(${issuedKeys.filter((k) => k.length >= 20).map((k) => `%${k}%`)})`.execute(
      t.db,
    );
    if (Number(rows[0]!.n) > 0) holding.push(`${table_name}.${column_name}`);
  }
  expect(holding).toEqual(['outbound_emails.html', 'outbound_emails.text']);
});

describe('migration 0025 on events stored before it', () => {
  const oldKey = '7Q2KD-M4XNA-9PZRT-H3C8V-BW6YE';
  const oldLicense = () =>
    `{"id":"lic_old1","key":"${oldKey}","product_id":"${product}","order_id":null,"customer_id":null,` +
    `"customer_email":null,"status":"ACTIVE","hwid":null,"activation_limit":1,"devices":[],"expires_at":null,` +
    `"note":null,"last_validated_at":null,"created_at":1763781000,"updated_at":1763781000}`;
  const oldOrderKeyRef = `{"id":"lic_old1","key":"${oldKey}","product_id":"${product}","status":"ACTIVE","expires_at":null}`;
  const oldOrder = () =>
    `{"id":"ord_old1","total":19.990000000000000001,"license_keys":[${oldOrderKeyRef}],` +
    `"items":[{"id":"itm_old1","total":19.990000000000000001,"license_keys":[${oldOrderKeyRef}],` +
    `"delivered_items":{"license_ids":["lic_old1"]}}]}`;
  const untouched = `{"uniqid":"0195f3c1-a2b3-7c9d-8e4f-5a6b7c8d9e0f","customer_email":"a@b.co","total":1.10,"currency":"USD"}`;
  let ids: { license: string; order: string; paid: string };

  beforeAll(async () => {
    ids = { license: newId('evt'), order: newId('evt'), paid: newId('evt') };
    const rows = [
      { id: ids.license, type: 'license:created', data: oldLicense() },
      { id: ids.order, type: 'order:completed', data: oldOrder() },
      { id: ids.paid, type: 'order:paid', data: untouched },
    ];
    for (const r of rows)
      await sql`insert into events (id, shop_id, type, data, created_at)
        values (${r.id}, ${shop}, ${r.type}, ${r.data}, now())`.execute(t.db);
    // A delivery of the old license event still queued to an endpoint, as it was before the migration.
    const endpoint = await t.http
      .post('/dev/v1/webhooks')
      .set(bearer(admin))
      .send({ url: receiverUrl, events: ['order:paid'] });
    await sql`insert into webhook_deliveries (id, shop_id, endpoint_id, event_id, status, next_attempt_at,
        pending_attempt_id, created_at, updated_at)
      values ('whd_old1', ${shop}, ${endpoint.body.data.id}, ${ids.license}, 'PENDING', ${clock.now()}, 'whl_old1',
        ${clock.now()}, ${clock.now()})`.execute(t.db);
    await sql`insert into webhook_attempts (id, shop_id, delivery_id, endpoint_id, event_id, event_type, url, attempt,
        status, next_retry_at, created_at)
      values ('whl_old1', ${shop}, 'whd_old1', ${endpoint.body.data.id}, ${ids.license}, 'license:created',
        ${receiverUrl}, 1, 'PENDING', ${clock.now()}, ${clock.now()})`.execute(t.db);
  });

  const dataOf = async (id: string) =>
    (await sql<{ data: string }>`select data from events where id = ${id}`.execute(t.db)).rows[0]!.data;

  test('rewrites keys out, in place, keeping every other byte; leaves other events alone; runs twice the same', async () => {
    expect(await dataOf(ids.license)).toContain(oldKey);
    await migration0025(t.db as never);
    const license = await dataOf(ids.license);
    expect(license).toBe(oldLicense().replace(`"key":"${oldKey}"`, '"key_hint":"BW6YE"'));
    const order = await dataOf(ids.order);
    expect(order).toBe(
      '{"id":"ord_old1","total":19.990000000000000001,' +
        '"items":[{"id":"itm_old1","total":19.990000000000000001,"delivered_items":{"license_ids":["lic_old1"]}}]}',
    );
    expect(await dataOf(ids.paid)).toBe(untouched);
    await migration0025(t.db as never);
    expect(await dataOf(ids.license)).toBe(license);
    expect(await dataOf(ids.order)).toBe(order);
    const { rows } = await sql<{ n: string }>`select count(*)::text as n from events
      where data like ${`%${oldKey}%`}`.execute(t.db);
    expect(rows[0]!.n).toBe('0');
  });

  test('the delivery still queued for the old event sends the scrubbed body', async () => {
    received.length = 0;
    await drainWebhooks();
    const sent = received.find((r) => r.headers['webhook-id'] === ids.license);
    expect(sent).toBeDefined();
    expect(sent!.body).not.toContain(oldKey);
    expect(JSON.parse(sent!.body).data.key_hint).toBe('BW6YE');
  });
});

test('an event emitted with a key by any code path is stored without it', async () => {
  const key = 'ABCDE-FGHJK-MNPQR-STVWX-YZ012';
  const { event } = await t.db
    .transaction()
    .execute((trx) => emitEvent(trx, shop, 'license:created', { id: 'lic_direct', key, status: 'ACTIVE' }, { clock }));
  expect(JSON.parse(event.data)).toEqual({ id: 'lic_direct', key_hint: 'YZ012', status: 'ACTIVE' });
});
