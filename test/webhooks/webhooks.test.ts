// Webhook endpoints, the events outbox and its delivery: registration, the signed deliveries (verified with the
// `standardwebhooks` package, written by others), the retry schedule on an injected clock, rotation, test events,
// manual retries, the delivery log, the events API, outbound safety, and a rolled-back write that leaves nothing.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config';
import { ManualClock } from '../../src/platform/clock';
import { defaultEventConsumers, emitEvent } from '../../src/domain/effects';
import { eventsSink } from '../../src/platform/events';
import { loadSecretBox } from '../../src/platform/secret-box';
import { UnitOfWork } from '../../src/platform/unit-of-work';
import { MAX_ATTEMPTS, retrySchedule, webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import type { Job } from '../../src/worker/worker';
import { duplicateProduct } from '../../src/domain/catalog/products';
import type { OperationHandler } from '../../src/http/handler';
import { mailDraft } from '../../src/mail/templates';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { Receiver, type Answerer, type Hit } from '../helpers/webhook-receiver';

let t: TestApp;
let clock: ManualClock;
let shop: string;
let key: string;
let receiver: Receiver;

function job(options: { allowPrivateTargets?: boolean; timeoutMs?: number } = {}): Promise<Job> {
  return loadSecretBox(t.db, undefined).then((secrets) =>
    webhookDeliveryJob(t.db, {
      clock,
      logger: t.logger,
      secrets,
      allowPrivateTargets: options.allowPrivateTargets ?? true,
      // Long enough for a receiver in this process to answer while the embedded database (on the same thread)
      // works through a burst of attempts on a loaded machine; the tests of time-outs set their own.
      timeoutMs: options.timeoutMs ?? 10_000,
      random: () => 0.5, // no jitter: the schedule is checked exactly
    }),
  );
}

async function drain(j: Job): Promise<number> {
  let total = 0;
  for (let n = await j.runOnce(); n > 0; n = await j.runOnce()) total += n;
  return total;
}

async function createEndpoint(body: Record<string, unknown>, k = key) {
  const res = await t.http.post('/dev/v1/webhooks').set(bearer(k)).send(body);
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string; url: string };
}

async function emit(type: string, data: unknown, shopId = shop): Promise<string> {
  const { event } = await t.db.transaction().execute((trx) => emitEvent(trx, shopId, type, data, { clock }));
  return event.id;
}

async function count(table: string, shopId = shop): Promise<number> {
  const { rows } = await sql<{
    n: string;
  }>`select count(*) as n from ${sql.table(table)} where shop_id = ${shopId}`.execute(t.db);
  return Number(rows[0]!.n);
}

const verify = (secret: string, r: Hit) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

beforeAll(async () => {
  clock = new ManualClock(Date.now()); // standardwebhooks refuses timestamps 5 minutes away from the real time
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  shop = await t.createShop();
  // orders.read, customers.read: the events API shows an event only to a credential that may read its resource.
  ({ key } = await t.createKey(shop, ['webhooks.read', 'webhooks.write', 'orders.read', 'customers.read']));
});

afterAll(async () => {
  await t.close();
});

beforeEach(async () => {
  clock.set(Date.now());
  receiver = new Receiver({ down: false });
  await receiver.start();
  await sql`delete from webhook_endpoints where shop_id = ${shop}`.execute(t.db);
});

afterEach(async () => {
  await receiver.stop();
});

describe('endpoints', () => {
  test('registering one shows its secret once; it is stored encrypted and never listed', async () => {
    const created = await createEndpoint({ url: receiver.url(), events: ['order:paid'], description: 'orders' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const list = await t.http.get('/dev/v1/webhooks').set(bearer(key));
    expect(list.status).toBe(200);
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([created.id]);
    expect(JSON.stringify(list.body)).not.toContain(created.secret.slice(6));
    const { rows } = await sql<{
      secret: Buffer;
    }>`select secret from webhook_endpoints where id = ${created.id}`.execute(t.db);
    const stored = Buffer.from(rows[0]!.secret);
    expect(stored.toString('latin1')).not.toContain(created.secret);
    expect(stored.includes(Buffer.from(created.secret.slice(6), 'base64'))).toBe(false);
  });

  test('a hanging endpoint holds back only itself: another endpoint is delivered in full while it hangs', async () => {
    // The slow receiver answers only once every delivery to the fast endpoint is SUCCEEDED: a worker that made the
    // fast deliveries wait for the slow ones would never get there (the safety net answers 503 after 60 s, and the
    // test fails on it). Two slots per endpoint, four in all: the fast endpoint's 30 deliveries need many claims,
    // all made while both slow attempts hang.
    let releasedBy: 'fast deliveries done' | 'safety net' | undefined;
    let slowHits = 0;
    const fastDone = async () =>
      Number(
        (
          await sql<{ n: string }>`select count(*) as n from webhook_deliveries
            where shop_id = ${shop} and endpoint_id = ${fast.id} and status = 'SUCCEEDED'`.execute(t.db)
        ).rows[0]!.n,
      ) === 30;
    const slowServer = createServer((req, res) => {
      slowHits++;
      req.resume();
      const safety = Date.now() + 60_000;
      const poll = async () => {
        if (await fastDone()) releasedBy ??= 'fast deliveries done';
        else if (Date.now() > safety) releasedBy ??= 'safety net';
        else return void setTimeout(() => void poll(), 25);
        res.writeHead(releasedBy === 'safety net' ? 503 : 204).end();
      };
      req.on('end', () => void poll());
    });
    await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve));
    let fast: { id: string } = { id: '' };
    try {
      const slowUrl = `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/slow`;
      await createEndpoint({ url: slowUrl, events: ['order:paid'] });
      fast = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
      for (let i = 0; i < 30; i++) await emit('order:paid', { n: i });
      const j = webhookDeliveryJob(t.db, {
        clock,
        logger: t.logger,
        secrets: await loadSecretBox(t.db, undefined),
        allowPrivateTargets: true,
        timeoutMs: 120_000,
        concurrency: 4,
        perEndpoint: 2,
      });
      expect(await drain(j)).toBe(60);
      expect(releasedBy).toBe('fast deliveries done');
      expect(receiver.hits).toHaveLength(30);
      expect(slowHits).toBe(30);
      expect(
        (
          await sql<{ status: string }>`select status from webhook_deliveries where shop_id = ${shop}`.execute(t.db)
        ).rows.map((r) => r.status),
      ).toEqual(Array(60).fill('SUCCEEDED'));
    } finally {
      slowServer.closeAllConnections();
      await new Promise<void>((resolve) => slowServer.close(() => resolve()));
    }
  }, 90_000);

  test('one endpoint alone borrows the whole pool, never more: its share is a floor, not a ceiling', async () => {
    // Each answer waits until the requests in flight stop growing, so the worker's limit is what the receiver sees.
    let open = 0;
    let most = 0;
    const server = createServer((req, res) => {
      open++;
      most = Math.max(most, open);
      req.resume();
      req.on('end', () =>
        setTimeout(() => {
          open--;
          res.writeHead(204).end();
        }, 150),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/busy`;
      await createEndpoint({ url, events: ['order:paid'] });
      for (let i = 0; i < 40; i++) await emit('order:paid', { n: i });
      const j = webhookDeliveryJob(t.db, {
        clock,
        logger: t.logger,
        secrets: await loadSecretBox(t.db, undefined),
        allowPrivateTargets: true,
        concurrency: 8,
        perEndpoint: 2,
      });
      expect(await drain(j)).toBe(40);
      expect(most).toBe(8);
      expect(
        (
          await sql<{ n: string }>`select count(*) as n from webhook_deliveries
            where shop_id = ${shop} and status = 'SUCCEEDED'`.execute(t.db)
        ).rows[0]!.n,
      ).toBe('40');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);

  test.each([
    ['ftp://example.com/hook', ['order:paid']],
    ['not a url', ['order:paid']],
    ['https://user:pass@example.com/hook', ['order:paid']],
    ['https://example.com/hook', ['order:exploded']],
    ['https://example.com/hook', []],
  ])('refuses url %s with events %j, writing nothing', async (url, events) => {
    const before = await count('webhook_endpoints');
    const res = await t.http.post('/dev/v1/webhooks').set(bearer(key)).send({ url, events });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(await count('webhook_endpoints')).toBe(before);
  });

  test('PATCH changes what it is given; DELETE removes the endpoint and its queued deliveries', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const patched = await t.http
      .patch(`/dev/v1/webhooks/${e.id}`)
      .set(bearer(key))
      .send({ events: ['*'], enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id: e.id, events: ['*'], enabled: false, url: receiver.url() });
    await t.http.patch(`/dev/v1/webhooks/${e.id}`).set(bearer(key)).send({ enabled: true });
    await emit('order:paid', { uniqid: 'u1', customer_email: 'a@b.c', total: 1, currency: 'USD' });
    expect(await count('webhook_deliveries')).toBe(1);
    const del = await t.http.delete(`/dev/v1/webhooks/${e.id}`).set(bearer(key));
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ data: {} });
    expect(await count('webhook_deliveries')).toBe(0);
    expect(await count('webhook_attempts')).toBe(0);
    expect(await drain(await job())).toBe(0);
    expect(receiver.hits).toHaveLength(0);
    expect((await t.http.delete(`/dev/v1/webhooks/${e.id}`).set(bearer(key))).status).toBe(404);
  });

  test('an unknown or another shop’s endpoint is not found', async () => {
    const other = await t.createShop();
    const { key: otherKey } = await t.createKey(other, ['webhooks.read', 'webhooks.write']);
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    for (const [method, path] of [
      ['patch', `/dev/v1/webhooks/${e.id}`],
      ['delete', `/dev/v1/webhooks/${e.id}`],
      ['post', `/dev/v1/webhooks/${e.id}/rotate-secret`],
      ['post', `/dev/v1/webhooks/${e.id}/test`],
    ] as const) {
      const res = await t.http[method](path)
        .set(bearer(otherKey))
        .send(method === 'patch' ? { enabled: false } : {});
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('WEBHOOK_NOT_FOUND');
    }
    expect(await count('webhook_attempts')).toBe(0);
    const still = await t.http.get('/dev/v1/webhooks').set(bearer(key));
    expect(still.body.data[0]).toMatchObject({ id: e.id, enabled: true });
  });
});

describe('delivery', () => {
  test('100 events: every one delivered once, signed so that standardwebhooks verifies it', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      ids.push(await emit('order:paid', { uniqid: `u${i}`, customer_email: 'a@b.c', total: 19.99, currency: 'USD' }));
    }
    await emit('order:created', { ignored: true }); // not subscribed
    await drain(await job());
    expect(receiver.hits).toHaveLength(100);
    const seen = receiver.hits.map((r) => {
      const payload = verify(e.secret, r) as { event: string; data: { uniqid: string } };
      expect(payload.event).toBe('order:paid');
      expect(r.headers['content-type']).toBe('application/json');
      return String(r.headers['webhook-id']);
    });
    expect(new Set(seen)).toEqual(new Set(ids));
    const logs = await t.http.get('/dev/v1/webhooks/logs?per_page=100').set(bearer(key));
    expect(logs.body.data.total).toBe(100);
    expect(logs.body.data.items.every((l: { status: string }) => l.status === 'SUCCEEDED')).toBe(true);
  });

  test('a 2xx answer with a NUL in its body is recorded once (NUL kept as U+FFFD), not sent again', async () => {
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    receiver.answer = () => ({ status: 200, body: 'ok\u0000done' });
    await emit('order:paid', { uniqid: 'nul', customer_email: 'a@b.c', total: 1, currency: 'USD' });
    await drain(await job());
    clock.advance(61_000); // past the lease: an outcome not recorded would be sent again now
    await drain(await job());
    expect(receiver.hits).toHaveLength(1);
    const logs = await t.http.get('/dev/v1/webhooks/logs?per_page=1').set(bearer(key));
    expect(logs.body.data.items[0]).toMatchObject({ status: 'SUCCEEDED', response_body: 'ok\uFFFDdone' });
  });

  test('the body is exactly { event, data, livemode }, amounts with every digit', async () => {
    await createEndpoint({ url: receiver.url(), events: ['*'] });
    await t.db.transaction().execute((trx) =>
      emitEvent(
        trx,
        shop,
        'order:paid',
        {
          uniqid: 'u',
          customer_email: 'a@b.c',
          total: (JSON as unknown as { rawJSON(s: string): number }).rawJSON('999999999999.99999999'),
          currency: 'USD',
        },
        { clock },
      ),
    );
    await drain(await job());
    const [latest] = (await t.http.get('/dev/v1/events?limit=1').set(bearer(key))).body.data as { id: string }[];
    const one = await t.http.get(`/dev/v1/events/${latest!.id}`).set(bearer(key));
    expect(one.text).toContain('"total":999999999999.99999999');
    expect(receiver.hits[0]!.body).toBe(
      '{"event":"order:paid","data":{"uniqid":"u","customer_email":"a@b.c","total":999999999999.99999999,"currency":"USD"},"livemode":true}',
    );
  });

  test('a receiver that refuses connections for 3 attempts gets the event on the 4th, on the schedule', async () => {
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const port = receiver.port;
    await receiver.stop();
    const eventId = await emit('order:paid', { n: 1 });
    const j = await job();
    const start = clock.now().getTime();
    let elapsed = 0;
    for (let i = 0; i < 3; i++) {
      expect(await drain(j)).toBe(1);
      elapsed += retrySchedule[i]!;
      // Not due a moment before its time.
      clock.set(start + elapsed - 1);
      expect(await drain(j)).toBe(0);
      clock.set(start + elapsed);
    }
    await receiver.start(port);
    expect(await drain(j)).toBe(1);
    expect(receiver.hits.map((r) => r.headers['webhook-id'])).toEqual([eventId]);
    const { rows } = await sql<{
      attempt: number;
      status: string;
      error_code: string | null;
      next_retry_at: Date | null;
    }>`select attempt, status, error_code, next_retry_at from webhook_attempts where event_id = ${eventId} order by attempt`.execute(
      t.db,
    );
    expect(rows.map((r) => r.status)).toEqual(['RETRYING', 'RETRYING', 'RETRYING', 'SUCCEEDED']);
    expect(rows.map((r) => r.error_code)).toEqual([
      'CONNECTION_REFUSED',
      'CONNECTION_REFUSED',
      'CONNECTION_REFUSED',
      null,
    ]);
    let at = start;
    rows.slice(0, 3).forEach((r, i) => {
      at += retrySchedule[i]!;
      expect(new Date(r.next_retry_at!).getTime()).toBe(at);
    });
  });

  test.each<[string, Answerer, RegExp]>([
    [
      'answers 500',
      () => ({ status: 500, body: 'boom' }),
      /^HTTP_ERROR the endpoint answered 500 Internal Server Error/,
    ],
    ['hangs past the timeout', () => undefined, /^TIMEOUT .*within 0\.3 s/],
    [
      'redirects to another local address',
      () => ({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }),
      /^HTTP_ERROR .*redirects are not followed/,
    ],
  ])('a receiver that %s is retried, then FAILED after the last attempt', async (_name, answer, error) => {
    receiver.answer = answer;
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const eventId = await emit('order:paid', { n: 2 });
    const j = await job({ timeoutMs: 300 });
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect(await drain(j)).toBe(1);
      clock.advance(retrySchedule[attempt - 1] ?? 0);
    }
    clock.advance(100 * 3_600_000);
    expect(await drain(j)).toBe(0);
    expect(receiver.hits).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(receiver.hits.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
    const logs = await t.http.get('/dev/v1/webhooks/logs?per_page=100').set(bearer(key));
    const items = logs.body.data.items as { attempt: number; status: string; response_status: number | null }[];
    expect(items).toHaveLength(MAX_ATTEMPTS);
    expect(items[0]).toMatchObject({ attempt: MAX_ATTEMPTS, status: 'FAILED', next_retry_at: null });
    expect(items.slice(1).every((i) => i.status === 'RETRYING')).toBe(true);
    const { rows } = await sql<{
      error: string | null;
    }>`select error_code || ' ' || error as error from webhook_attempts where event_id = ${eventId}`.execute(t.db);
    expect(rows.every((r) => error.test(r.error ?? ''))).toBe(true);
    const failed = await sql<{
      status: string;
    }>`select status from webhook_deliveries where event_id = ${eventId}`.execute(t.db);
    expect(failed.rows[0]!.status).toBe('FAILED');
  });

  test('a disabled endpoint receives nothing until it is enabled again; nothing is lost', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    await emit('order:paid', { n: 3 });
    await t.http.patch(`/dev/v1/webhooks/${e.id}`).set(bearer(key)).send({ enabled: false });
    expect(await drain(await job())).toBe(0);
    const events = await count('events');
    const testing = await t.http.post(`/dev/v1/webhooks/${e.id}/test`).set(bearer(key));
    expect(testing.status).toBe(422);
    expect(testing.body.error.details).toEqual([expect.objectContaining({ field: 'enabled' })]);
    expect(await count('events')).toBe(events);
    await t.http.patch(`/dev/v1/webhooks/${e.id}`).set(bearer(key)).send({ enabled: true });
    expect(await drain(await job())).toBe(1);
    expect(receiver.hits).toHaveLength(1);
  });
});

describe('rotation', () => {
  test('without a grace period only the new secret verifies', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const rotated = await t.http.post(`/dev/v1/webhooks/${e.id}/rotate-secret`).set(bearer(key));
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    expect(secret).not.toBe(e.secret);
    await emit('order:paid', { n: 4 });
    await drain(await job());
    const r = receiver.hits[0]!;
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verify(secret, r)).not.toThrow();
    expect(() => verify(e.secret, r)).toThrow();
  });

  test('with expire_previous_in_seconds both sign during the window, only the new one after it', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const rotated = await t.http
      .post(`/dev/v1/webhooks/${e.id}/rotate-secret`)
      .set(bearer(key))
      .send({ expire_previous_in_seconds: 60 });
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    const j = await job();
    await emit('order:paid', { n: 5 });
    clock.advance(59_000);
    await drain(j);
    const during = receiver.hits[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => verify(secret, during)).not.toThrow();
    expect(() => verify(e.secret, during)).not.toThrow();
    clock.advance(2_000);
    await emit('order:paid', { n: 6 });
    await drain(j);
    const after = receiver.hits[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verify(secret, after)).not.toThrow();
    expect(() => verify(e.secret, after)).toThrow();
  });

  test('a grace period outside 0..86400 is refused and the secret is unchanged', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const res = await t.http
      .post(`/dev/v1/webhooks/${e.id}/rotate-secret`)
      .set(bearer(key))
      .send({ expire_previous_in_seconds: 86_401 });
    expect(res.status).toBe(422);
    await emit('order:paid', { n: 7 });
    await drain(await job());
    expect(() => verify(e.secret, receiver.hits[0]!)).not.toThrow();
  });
});

describe('test events and retries', () => {
  test('POST /webhooks/{id}/test queues webhook:test to that endpoint only', async () => {
    const e = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const other = new Receiver({ down: false });
    await other.start();
    try {
      await createEndpoint({ url: other.url(), events: ['*'] });
      const res = await t.http.post(`/dev/v1/webhooks/${e.id}/test`).set(bearer(key));
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ webhook_id: e.id, event: 'webhook:test', status: 'PENDING', attempt: 1 });
      await drain(await job());
      expect(other.hits).toHaveLength(0);
      expect(JSON.parse(receiver.hits[0]!.body)).toEqual({
        event: 'webhook:test',
        data: { webhook_id: e.id, message: 'This is a test event.' },
        livemode: true,
      });
      expect(receiver.hits[0]!.headers['webhook-id']).toBe(res.body.data.event_id);
    } finally {
      await other.stop();
    }
  });

  test('a retry of a FAILED delivery is one more attempt with the same webhook-id', async () => {
    receiver.answer = () => ({ status: 503 });
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    const eventId = await emit('order:paid', { n: 8 });
    const j = await job();
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      await drain(j);
      clock.advance(retrySchedule[attempt - 1] ?? 0);
    }
    const logs = await t.http.get('/dev/v1/webhooks/logs?status=FAILED').set(bearer(key));
    const failed = logs.body.data.items[0] as { id: string };
    receiver.answer = () => ({ status: 200, body: 'ok' });
    const retry = await t.http.post(`/dev/v1/webhooks/logs/${failed.id}/retry`).set(bearer(key));
    expect(retry.status).toBe(202);
    expect(retry.body.data).toMatchObject({ status: 'PENDING', attempt: MAX_ATTEMPTS + 1, event_id: eventId });
    await drain(j);
    expect(receiver.hits.at(-1)!.headers['webhook-id']).toBe(eventId);
    const done = await t.http.get('/dev/v1/webhooks/logs?status=SUCCEEDED').set(bearer(key));
    expect(done.body.data.items[0]).toMatchObject({
      attempt: MAX_ATTEMPTS + 1,
      response_status: 200,
      response_body: 'ok',
    });
    // A failed manual retry settles the delivery again: no new schedule.
    receiver.answer = () => ({ status: 500 });
    await t.http.post(`/dev/v1/webhooks/logs/${failed.id}/retry`).set(bearer(key));
    await drain(j);
    clock.advance(100 * 3_600_000);
    expect(await drain(j)).toBe(0);
  });

  test('a retry while an attempt is queued brings that attempt forward instead of adding one', async () => {
    await receiver.stop();
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    await emit('order:paid', { n: 9 });
    const j = await job();
    await drain(j); // fails: RETRYING, next attempt in 5 s
    const logs = await t.http.get('/dev/v1/webhooks/logs').set(bearer(key));
    const pending = logs.body.data.items.find((i: { status: string }) => i.status === 'PENDING');
    const retry = await t.http.post(`/dev/v1/webhooks/logs/${pending.id}/retry`).set(bearer(key));
    expect(retry.status).toBe(202);
    expect(retry.body.data.id).toBe(pending.id);
    expect(await count('webhook_attempts')).toBe(2);
    expect(await drain(j)).toBe(1); // due now, without moving the clock
  });

  test('an unknown log id is WEBHOOK_LOG_NOT_FOUND and changes nothing', async () => {
    const before = await count('webhook_attempts');
    const res = await t.http.post('/dev/v1/webhooks/logs/whl_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f/retry').set(bearer(key));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('WEBHOOK_LOG_NOT_FOUND');
    expect(await count('webhook_attempts')).toBe(before);
  });

  test('the log filters by endpoint and status and pages', async () => {
    const a = await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    await createEndpoint({ url: receiver.url(), events: ['order:paid'] });
    for (let i = 0; i < 3; i++) await emit('order:paid', { i });
    await drain(await job());
    const onlyA = await t.http.get(`/dev/v1/webhooks/logs?webhook_id=${a.id}&per_page=2&page=2`).set(bearer(key));
    expect(onlyA.body.data).toMatchObject({ total: 3, page: 2, per_page: 2 });
    expect(onlyA.body.data.items).toHaveLength(1);
    expect(onlyA.body.data.items[0].webhook_id).toBe(a.id);
    const none = await t.http.get('/dev/v1/webhooks/logs?status=FAILED').set(bearer(key));
    expect(none.body.data.total).toBe(0);
  });
});

describe('outbound safety with private targets off', () => {
  test('an address literal of a private network is refused at registration, writing nothing', async () => {
    const strict = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
    try {
      const s = await strict.createShop();
      const { key: k } = await strict.createKey(s, ['webhooks.write']);
      for (const url of [
        'http://127.0.0.1/h',
        'http://10.0.0.1/h',
        'http://169.254.169.254/latest/meta-data',
        'http://[::1]/h',
        'http://localhost:8080/h',
      ]) {
        const res = await strict.http
          .post('/dev/v1/webhooks')
          .set(bearer(k))
          .send({ url, events: ['*'] });
        expect(res.status).toBe(422);
      }
      const { rows } = await sql<{ n: string }>`select count(*) as n from webhook_endpoints`.execute(strict.db);
      expect(Number(rows[0]!.n)).toBe(0);
    } finally {
      await strict.close();
    }
  });

  test('a name that resolves to 127.0.0.1 is refused at delivery, and the refusal is logged', async () => {
    await createEndpoint({ url: `http://localhost:${receiver.port}/hooks`, events: ['order:paid'] });
    const eventId = await emit('order:paid', { n: 10 });
    await drain(await job({ allowPrivateTargets: false }));
    expect(receiver.hits).toHaveLength(0);
    const { rows } = await sql<{ status: string; error: string; response_status: number | null }>`
      select status, error, response_status from webhook_attempts where event_id = ${eventId} and attempt = 1`.execute(
      t.db,
    );
    expect(rows[0]).toMatchObject({ status: 'RETRYING', response_status: null });
    expect(rows[0]!.error).toMatch(/^refused: .*127\.0\.0\.1|::1/);
  });
});

describe('events API', () => {
  test('lists the shop’s events newest first, filters by type, and gets one; another shop sees none', async () => {
    const first = await emit('customer:created', { id: 'cus_1' });
    clock.advance(1000);
    const second = await emit('order:paid', { uniqid: 'u', customer_email: 'a@b.c', total: 5, currency: 'USD' });
    const list = await t.http.get('/dev/v1/events?limit=100').set(bearer(key));
    expect(list.status).toBe(200);
    const ids = list.body.data.map((e: { id: string }) => e.id);
    expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
    const paid = await t.http.get('/dev/v1/events?filters=type:order:paid&limit=100').set(bearer(key));
    expect(paid.body.data.every((e: { type: string }) => e.type === 'order:paid')).toBe(true);
    expect(paid.body.data.map((e: { id: string }) => e.id)).toContain(second);
    const one = await t.http.get(`/dev/v1/events/${second}`).set(bearer(key));
    expect(one.body.data).toMatchObject({
      id: second,
      type: 'order:paid',
      data: { uniqid: 'u', customer_email: 'a@b.c', total: 5, currency: 'USD' },
    });
    const other = await t.createShop();
    const { key: otherKey } = await t.createKey(other, ['webhooks.read', 'orders.read']);
    const hidden = await t.http.get(`/dev/v1/events/${second}`).set(bearer(otherKey));
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('EVENT_NOT_FOUND');
    expect((await t.http.get('/dev/v1/events').set(bearer(otherKey))).body.data).toEqual([]);
  });

  test('an unknown type filter is 422', async () => {
    const res = await t.http.get('/dev/v1/events?filters=type:order:exploded').set(bearer(key));
    expect(res.status).toBe(422);
  });
});

describe('the outbox is transactional', () => {
  test('a write that emits an event and then fails leaves no event and no delivery', async () => {
    await createEndpoint({ url: receiver.url(), events: ['*'] });
    const before = { events: await count('events'), deliveries: await count('webhook_deliveries') };
    const uow = new UnitOfWork(t.db, { clock, sinks: [eventsSink(defaultEventConsumers, clock)] });
    await expect(
      uow.run(
        { shopId: shop, credentialId: undefined, operationId: 'test', requestId: 'r' } as never,
        async (_trx, fx) => {
          fx.emit('order:paid', { n: 11 });
          throw new Error('the change failed');
        },
      ),
    ).rejects.toThrow('the change failed');
    // And one that emits and then fails after the sink wrote its rows (a failing statement later in the same
    // transaction) leaves nothing either.
    await expect(
      uow.run({ shopId: shop, credentialId: undefined, operationId: 'test', requestId: 'r' } as never, async (trx) => {
        await emitEvent(trx, shop, 'order:paid', { n: 12 }, { clock });
        await sql`select 1/0`.execute(trx);
      }),
    ).rejects.toThrow();
    expect(await count('events')).toBe(before.events);
    expect(await count('webhook_deliveries')).toBe(before.deliveries);
    expect(await drain(await job())).toBe(0);
    expect(receiver.hits).toHaveLength(0);
  });

  test('a handler that emits an event and queues mail, then fails: no event, no delivery, no mail, no copy', async () => {
    const failing = await startTestApp({
      clock,
      handlers: {
        duplicateProduct: (async ({ write, params, effects: fx }) => {
          const copy = await duplicateProduct(write, params.id);
          fx.emit('order:paid', { uniqid: 'x', customer_email: 'a@b.c', total: 1, currency: 'USD' });
          fx.mail(mailDraft('a@b.c', 'reseller_invitation', { shopName: 'S', inviteUrl: 'https://x.example/i' }));
          if (copy) throw new Error('failed after emitting');
          return { status: 201, data: copy };
        }) as OperationHandler<'duplicateProduct'>,
      },
    });
    try {
      const s = await failing.createShop();
      const { key: k } = await failing.createKey(s, ['*']);
      const seeded = await failing.seed(s, { products: [{ title: 'P', price: '1.00' }] });
      await failing.http
        .post('/dev/v1/webhooks')
        .set(bearer(k))
        .send({ url: receiver.url(), events: ['*'] });
      const counts = async () => {
        const n = async (table: string) =>
          Number(
            (
              await sql<{ n: string }>`select count(*) as n from ${sql.table(table)} where shop_id = ${s}`.execute(
                failing.db,
              )
            ).rows[0]!.n,
          );
        return {
          events: await n('events'),
          deliveries: await n('webhook_deliveries'),
          mail: await n('outbound_emails'),
          products: await n('products'),
        };
      };
      const before = await counts();
      const res = await failing.http.post(`/dev/v1/products/${seeded.products[0]}/duplicate`).set(bearer(k));
      expect(res.status).toBe(500);
      expect(await counts()).toEqual(before);
      expect(before).toMatchObject({ events: 0, deliveries: 0, mail: 0, products: 1 });
    } finally {
      await failing.close();
    }
  });

  test('the config default: private targets allowed on the embedded database only', () => {
    expect(loadConfig({}).webhookAllowPrivateTargets).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'postgres://x@h/db' }).webhookAllowPrivateTargets).toBe(false);
    expect(
      loadConfig({ DATABASE_URL: 'postgres://x@h/db', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
        .webhookAllowPrivateTargets,
    ).toBe(true);
  });
});
