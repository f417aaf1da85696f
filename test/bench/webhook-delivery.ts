// Webhook delivery by ONE worker: settings.webhookEvents events to one endpoint, a local receiver answering 204 at
// once, and the delivery job (src/worker/webhook-delivery.ts, its default settings) driven by a loop of runOnce,
// timed from the first claim until every delivery is recorded. The events are emitted (and committed) before the
// clock starts, so this measures the worker alone: claim, sign, POST, record; the statements it sent to PostgreSQL
// are counted (test/helpers/round-trips.ts). The baseline is a bare loop over the same events: read a batch of them
// from the events table, sign each body as the worker does (Standard Webhooks, the endpoint's secret) and POST the
// batch at once to the same receiver (keep-alive connections), with nothing recorded. Target: >= 2,500 events/s.
// Then the slow endpoint: FAST_ENDPOINTS endpoints answering at once, alone and beside one that answers after
// SLOW_ANSWER_MS, each setting in a shop of its own; the fast endpoints' delivery rate (until all their deliveries
// are SUCCEEDED) beside it and without it. Target: the slow endpoint costs them less than 10%.
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { createWebhook } from '../../src/domain/webhooks/webhooks';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { eventBody } from '../../src/platform/events';
import { loadSecretBox } from '../../src/platform/secret-box';
import { signatureHeader } from '../../src/platform/webhook-signature';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import { measureCost } from '../helpers/round-trips';
import { settings } from './settings';

export interface WebhookDeliveryBench {
  deliveries: number;
  /** Events per second: the worker, and the bare loop over the same events. */
  eventsPerSecond: number;
  bareEventsPerSecond: number;
  /** Requests the receiver got beyond one per event from the worker (expected 0). */
  duplicates: number;
  /** Deliveries not SUCCEEDED at the end (expected 0). */
  unsettled: number;
  /** Statements sent to PostgreSQL per delivery (0 on the embedded database, which the count does not see). */
  roundTrips: number;
  bareRoundTrips: number;
  /** CPU ms of this process per delivery (the receiver's share included, as in the bare loop). */
  cpuMs: number;
  bareCpuMs: number;
  slow: SlowEndpointBench;
}

export interface SlowEndpointBench {
  /** Deliveries to the fast endpoints per run. */
  deliveries: number;
  /** The fast endpoints' deliveries per second beside the slow endpoint, and without it. */
  withSlow: number;
  withoutSlow: number;
}

export const WEBHOOK_TARGET_PER_SECOND = 2_500;
export const FAST_ENDPOINTS = 4;
export const SLOW_ANSWER_MS = 2_000;
/** The fast endpoints' rate beside the slow one, as a share of their rate without it. */
export const SLOW_ENDPOINT_TARGET_RATIO = 0.9;

function post(url: URL, agent: Agent, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function benchWebhookDelivery(db: Kysely<Database>): Promise<WebhookDeliveryBench> {
  const n = settings.webhookEvents;
  const batch = settings.webhookBatch;
  const warmup = Math.min(100, n);

  let received: string[] = [];
  const server = createServer((req, res) => {
    received.push(String(req.headers['webhook-id']));
    req.resume();
    const wait = req.url === '/slow' ? SLOW_ANSWER_MS : 0;
    req.on('end', () => (wait ? setTimeout(() => res.writeHead(204).end(), wait) : res.writeHead(204).end()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const url = `${origin}/hooks`;
  const agent = new Agent({ keepAlive: true });
  try {
    const secrets = await loadSecretBox(db, undefined);
    const shop = (await admin.createShop(db, { name: 'Webhook bench', plan: 'business' })).id;
    const endpoint = await db
      .transaction()
      .execute((trx) =>
        createWebhook(
          shopWrite(trx, shop, new Effects(), systemClock),
          { url, events: ['order:paid'] },
          { secrets, allowPrivateTargets: true },
        ),
      );
    const emit = async (count: number, into = shop) => {
      for (let i = 0; i < count; i += 100) {
        await db.transaction().execute(async (trx) => {
          for (let j = i; j < Math.min(count, i + 100); j++) {
            await emitEvent(
              trx,
              into,
              'order:paid',
              { uniqid: `bench-${j}`, total: 19.99, currency: 'USD' },
              { clock: systemClock },
            );
          }
        });
      }
    };
    const job = webhookDeliveryJob(db, {
      clock: systemClock,
      logger: createLogger('silent'),
      secrets,
      allowPrivateTargets: true,
    });
    const drain = async (count: number) => {
      for (let done = 0; done < count;) {
        const handled = await job.runOnce();
        if (handled === 0) throw new Error(`bench: nothing due after ${done} of ${count} deliveries`);
        done += handled;
      }
    };
    /** The bare loop: the shop's events after `afterId`, a batch at a time, signed and POSTed at once. */
    const bareLoop = async (afterId: string, count: number) => {
      const target = new URL(url);
      let last = afterId;
      for (let done = 0; done < count;) {
        const { rows } = await sql<{ id: string; type: string; data: string }>`select id, type, data from events
          where shop_id = ${shop} and id > ${last} order by id limit ${Math.min(batch, count - done)}`.execute(db);
        if (rows.length === 0) throw new Error(`bench: the bare loop ran out of events after ${done}`);
        await Promise.all(
          rows.map(async (e) => {
            const body = eventBody(e.type, e.data);
            const timestamp = Math.floor(Date.now() / 1000);
            const status = await post(
              target,
              agent,
              {
                'webhook-id': e.id,
                'webhook-timestamp': String(timestamp),
                'webhook-signature': signatureHeader([endpoint.secret], e.id, timestamp, body),
              },
              body,
            );
            if (status !== 204) throw new Error(`bench: the receiver answered ${status}`);
          }),
        );
        done += rows.length;
        last = rows[rows.length - 1]!.id;
      }
    };

    // Warm-up of both: connections, JIT, the secret box; not measured.
    await emit(warmup);
    await drain(warmup);
    await bareLoop('', warmup);
    await sql`analyze webhook_deliveries, webhook_attempts, events`.execute(db);
    const { rows: lastRows } = await sql<{ id: string }>`select max(id) as id from events
      where shop_id = ${shop}`.execute(db);
    await emit(n);

    const bareCost = measureCost();
    const bareStarted = performance.now();
    await bareLoop(lastRows[0]!.id, n);
    const bareSeconds = (performance.now() - bareStarted) / 1000;
    const bare = bareCost.stop(n);

    received = [];
    const cost = measureCost();
    const started = performance.now();
    await drain(n);
    const seconds = (performance.now() - started) / 1000;
    const worker = cost.stop(n);

    const { rows } = await sql<{ n: string }>`select count(*) as n from webhook_deliveries
      where shop_id = ${shop} and status <> 'SUCCEEDED'`.execute(db);
    const duplicates = received.length - new Set(received).size;
    const slow = await benchSlowEndpoint(db, origin, emit, secrets);
    return {
      deliveries: n,
      eventsPerSecond: Math.round(n / seconds),
      bareEventsPerSecond: Math.round(n / bareSeconds),
      duplicates,
      unsettled: Number(rows[0]!.n),
      roundTrips: worker.roundTrips,
      bareRoundTrips: bare.roundTrips,
      cpuMs: worker.cpuMs,
      bareCpuMs: bare.cpuMs,
      slow,
    };
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * The fast endpoints' delivery rate in a shop of FAST_ENDPOINTS of them, and in one with a slow endpoint beside them
 * (every event goes to all): one worker, from the first claim until every fast delivery is SUCCEEDED. The slow
 * endpoint's deliveries are still coming in when the clock stops; the job then finishes its attempts in flight.
 */
async function benchSlowEndpoint(
  db: Kysely<Database>,
  origin: string,
  emit: (count: number, into: string) => Promise<void>,
  secrets: Awaited<ReturnType<typeof loadSecretBox>>,
): Promise<SlowEndpointBench> {
  const events = Math.max(1, Math.round(settings.webhookEvents / FAST_ENDPOINTS));
  const run = async (withSlow: boolean) => {
    const shop = (await admin.createShop(db, { name: `Webhook bench, slow endpoint ${withSlow}`, plan: 'business' }))
      .id;
    const paths = [...Array.from({ length: FAST_ENDPOINTS }, (_, i) => `/fast/${i}`), ...(withSlow ? ['/slow'] : [])];
    for (const path of paths) {
      await db
        .transaction()
        .execute((trx) =>
          createWebhook(
            shopWrite(trx, shop, new Effects(), systemClock),
            { url: `${origin}${path}`, events: ['order:paid'] },
            { secrets, allowPrivateTargets: true },
          ),
        );
    }
    await emit(events, shop);
    const fastLeft = async () =>
      Number(
        (
          await sql<{ n: string }>`select count(*) as n from webhook_deliveries d
            join webhook_endpoints e on e.shop_id = d.shop_id and e.id = d.endpoint_id
            where d.shop_id = ${shop} and d.status <> 'SUCCEEDED' and e.url not like '%/slow'`.execute(db)
        ).rows[0]!.n,
      );
    const job = webhookDeliveryJob(db, {
      clock: systemClock,
      logger: createLogger('silent'),
      secrets,
      allowPrivateTargets: true,
    });
    const started = performance.now();
    while ((await fastLeft()) > 0) {
      if ((await job.runOnce()) === 0) throw new Error('bench: fast deliveries left, none due');
    }
    const seconds = (performance.now() - started) / 1000;
    await job.settle!();
    // What the slow endpoint has not had yet stays out of every later claim.
    await sql`update webhook_endpoints set enabled = false where shop_id = ${shop}`.execute(db);
    return (FAST_ENDPOINTS * events) / seconds;
  };
  const withoutSlow = await run(false);
  const withSlow = await run(true);
  return { deliveries: FAST_ENDPOINTS * events, withSlow: Math.round(withSlow), withoutSlow: Math.round(withoutSlow) };
}
