// Traces (issue 28), with an in-memory exporter: POST /orders, then its completion, then the webhook the completion
// queued. Each request is a server span named by its operationId with its PostgreSQL statements as child spans
// (named by verb and table, no SQL text or values); the worker's delivery span is in a trace of its own, linked to the
// completion's span through the traceparent stored with the event; every log line written in a span carries its
// trace id. Tracing off (the default) is checked too: no span middleware, no traceparent stored.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, context, trace } from '@opentelemetry/api';
import { sql } from 'kysely';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { querySpanName } from '../../db/query-spans';
import { loadSecretBox } from '../../src/platform/secret-box';
import { startTracing, parseTraceparent, type Tracing } from '../../src/platform/tracing';
import { mailJob } from '../../src/worker/mail';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import type { Job } from '../../src/worker/worker';
import { systemClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let t: TestApp;
let key: string;
let product: string;
let receiver: Server;
let received = 0;
let job: Job;
/** The requests' spans: what the webhook delivery and the mail they queued link back to. */
let creation: ReadableSpan;
let completion: ReadableSpan;

beforeAll(async () => {
  // Before the app and its database: both are built traced only while tracing is on.
  tracing = startTracing({ processor: new SimpleSpanProcessor({ exporter }) });
  t = await startTestApp();
  const shop = await t.createShop({ name: 'Traced' });
  key = (await t.createKey(shop, ['*'])).key;
  product = (await t.seed(shop, { products: [{ title: 'P', price: '10.00' } as never] })).products[0]!;
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  const endpoint = await t.http
    .post('/dev/v1/webhooks')
    .set(bearer(key))
    .send({ url, events: ['order:paid'] });
  expect(endpoint.status).toBe(201);
  job = webhookDeliveryJob(t.db, {
    clock: systemClock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, undefined),
    allowPrivateTargets: true,
  });
});

afterAll(async () => {
  await tracing.shutdown();
  receiver.close();
  await t.close();
});

const hrtime = ([seconds, nanos]: [number, number]) => seconds * 1e9 + nanos;
const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const childrenOf = (parent: ReadableSpan) =>
  exporter
    .getFinishedSpans()
    .filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId && s !== parent);

/** One order of the shop's product: the write both transaction tests trace. */
const createOrder = () =>
  t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: product, quantity: 1 }] });

test('POST /orders -> complete -> webhook delivery: request spans, their statements, and the linked delivery', async () => {
  exporter.reset();
  const created = await createOrder();
  expect(created.status).toBe(201);
  const completed = await t.http.post(`/dev/v1/orders/${created.body.data.id}/complete`).set(bearer(key)).send({});
  expect(completed.status).toBe(200);

  // One server span per request, named by operationId, each the root of its own trace.
  const [create] = named('createOrder');
  const [complete] = named('completeOrder');
  expect(create).toBeDefined();
  expect(complete).toBeDefined();
  for (const span of [create!, complete!]) {
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.attributes['http.response.status_code']).toBe(span === create ? 201 : 200);
    expect(span.attributes['http.route']).toMatch(/^POST \/dev\/v1\/orders/);
  }
  expect(complete!.spanContext().traceId).not.toBe(create!.spanContext().traceId);
  creation = create!;
  completion = complete!;

  // Their statements are client spans under them: verb and table, no text, no values.
  const statements = childrenOf(create!);
  expect(statements.length).toBeGreaterThan(0);
  expect(statements.every((s) => s.kind === SpanKind.CLIENT)).toBe(true);
  expect(statements.map((s) => s.name)).toContainEqual(expect.stringMatching(/^(insert|select|with|update) \w+/));
  expect(statements.map((s) => s.name).join(' ')).toMatch(/orders/);
  for (const s of [...statements, ...childrenOf(complete!)]) {
    expect(s.attributes['db.system.name']).toBe('postgresql');
    expect(Object.keys(s.attributes).sort()).toEqual(expect.arrayContaining(['db.operation.name', 'db.system.name']));
    expect(JSON.stringify(s.attributes)).not.toContain('buyer@example.com');
  }
  expect(childrenOf(complete!).length).toBeGreaterThan(0);

  // The event stored the completion's traceparent; the worker's span links to it.
  const stored = await t.db
    .selectFrom('events')
    .select(['type', 'traceparent'])
    .where('type', '=', 'order:paid')
    .execute();
  expect(stored).toHaveLength(1);
  expect(parseTraceparent(stored[0]!.traceparent)).toMatchObject({
    traceId: complete!.spanContext().traceId,
    spanId: complete!.spanContext().spanId,
  });

  while ((await job.runOnce()) > 0);
  expect(received).toBe(1);
  const [delivery] = named('webhook.deliver');
  expect(delivery).toBeDefined();
  expect(delivery!.kind).toBe(SpanKind.CONSUMER);
  expect(delivery!.parentSpanContext).toBeUndefined();
  expect(delivery!.spanContext().traceId).not.toBe(complete!.spanContext().traceId);
  expect(delivery!.links).toHaveLength(1);
  expect(delivery!.links[0]!.context).toMatchObject({
    traceId: complete!.spanContext().traceId,
    spanId: complete!.spanContext().spanId,
  });
  expect(delivery!.attributes).toMatchObject({ 'webhook.event_type': 'order:paid', 'job.outcome': 'delivered' });
});

test('a queued mail is a job span linked to the request that queued it; a statement outside any span makes none', async () => {
  const mail = mailJob(t.db, { clock: systemClock, logger: t.logger, smtpUrl: undefined, from: 'x@example.com' });
  exporter.reset();
  await sql`select 1`.execute(t.db);
  expect(exporter.getFinishedSpans()).toEqual([]);
  // The completion above queued the buyer's mail.
  while ((await mail.runOnce()) > 0);
  const sent = named('job mail');
  expect(sent.length).toBeGreaterThan(0);
  const requests = [creation, completion].map((s) => s.spanContext().spanId);
  for (const span of sent) {
    expect(span.attributes['job.outcome']).toBe('sent');
    expect(span.parentSpanContext).toBeUndefined();
    expect(childrenOf(span).map((s) => s.name)).toContainEqual(expect.stringMatching(/outbound_emails/));
    expect(span.links).toHaveLength(1);
    expect(requests).toContain(span.links[0]!.context.spanId);
  }
  // The buyer's receipt was queued by the completion.
  expect(sent.map((s) => s.links[0]!.context.spanId)).toContain(completion.spanContext().spanId);
  // The polls that claimed the mail were outside any span: no root statement spans.
  expect(exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT && !s.parentSpanContext)).toEqual([]);
});

test("a write's transaction: begin and commit spans around its statements, on either database", async () => {
  exporter.reset();
  const created = await createOrder();
  expect(created.status).toBe(201);
  const [create] = named('createOrder');
  const statements = childrenOf(create!).sort((a, b) => hrtime(a.startTime) - hrtime(b.startTime));
  const names = statements.map((s) => s.name);
  // One span per step: the driver's own `begin`/`commit` statement (PostgreSQL) is not a second one.
  expect(names.filter((n) => n === 'begin')).toHaveLength(1);
  expect(names.filter((n) => n === 'commit')).toHaveLength(1);
  expect(names.filter((n) => n === 'rollback')).toHaveLength(0);
  const [begin, commit] = [names.indexOf('begin'), names.indexOf('commit')];
  // The order's statements are between them (the credential's look-up is before, outside the transaction).
  expect(begin).toBeGreaterThan(0);
  expect(names.slice(begin + 1, commit)).toContainEqual(expect.stringMatching(/ orders$/));
  expect(commit).toBe(names.length - 1);
  for (const step of [statements[begin]!, statements[commit]!]) {
    expect(step.kind).toBe(SpanKind.CLIENT);
    expect(step.attributes).toEqual({ 'db.system.name': 'postgresql', 'db.operation.name': step.name });
    expect(childrenOf(step)).toEqual([]);
  }
});

test('a transaction rolled back is a rollback span', async () => {
  exporter.reset();
  const tracer = trace.getTracer('test');
  const parent = tracer.startSpan('job test');
  await context.with(trace.setSpan(context.active(), parent), () =>
    expect(
      t.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        throw new Error('undone');
      }),
    ).rejects.toThrow('undone'),
  );
  parent.end();
  const [job] = named('job test');
  expect(childrenOf(job!).map((s) => s.name)).toEqual(['begin', 'select', 'rollback']);
});

test('every log line written inside a request carries its trace id', async () => {
  exporter.reset();
  t.logs.length = 0;
  expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
  const [span] = named('getAccount');
  expect(span).toBeDefined();
  const lines = t.logs.filter((l) => l.request_id !== undefined);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line).toMatchObject({ trace_id: span!.spanContext().traceId });
});

test("a caller's traceparent is continued; a malformed one starts a new trace", async () => {
  exporter.reset();
  const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  await t.http.get('/dev/v1/me').set(bearer(key)).set('traceparent', parent);
  await t.http.get('/dev/v1/me').set(bearer(key)).set('traceparent', '00-zz-bad-01');
  const [continued, fresh] = named('getAccount');
  expect(continued!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
  expect(continued!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
  expect(fresh!.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
  expect(fresh!.parentSpanContext).toBeUndefined();
});

test('statement span names: the verb and the first table, never the text', () => {
  expect(querySpanName('select "id" from "orders" where "shop_id" = $1').name).toBe('select orders');
  expect(querySpanName('insert into "events" ("id") values ($1)').name).toBe('insert events');
  expect(querySpanName('update "orders" set "status" = $1').name).toBe('update orders');
  expect(querySpanName('delete from idempotency_keys where expires_at < $1').name).toBe('delete idempotency_keys');
  expect(
    querySpanName('with due as (select id from webhook_deliveries) update webhook_deliveries d set x = 1').name,
  ).toBe('update webhook_deliveries');
  expect(querySpanName('begin; set local statement_timeout = 10').name).toBe('begin');
  expect(querySpanName('commit').name).toBe('commit');
});
