// Throughput of webhook delivery by ONE worker: N events (BENCH_WEBHOOK_EVENTS, default 2000) to one endpoint, a
// local receiver answering 204 at once, and the delivery job (src/worker/webhook-delivery.ts) driven by a loop of
// runOnce (batch BENCH_WEBHOOK_BATCH, default 50), timed from the first claim until every delivery is recorded.
// The events are emitted (and committed) before the clock starts, so this measures the worker alone: claim, sign,
// POST, record. The receiver runs in this process too, so "CPU per delivery" includes its side of each request.
// Target: >= 500 events/s. Called by `npm run bench` (test/bench/run.ts) on its database; `tsx
// test/bench/webhook-delivery.ts` runs it alone on a fresh one. Prints a table; asserts nothing.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import * as admin from '../../src/domain/admin';
import { createWebhook } from '../../src/domain/webhooks';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/platform/events';
import { loadSecretBox } from '../../src/platform/secret-box';
import { webhookDeliveryJob } from '../../src/worker/webhook-delivery';
import globalSetup from '../helpers/global-setup';
import { createTestDatabase } from '../helpers/test-database';

export interface WebhookDeliveryBench {
  deliveries: number;
  batch: number;
  seconds: number;
  eventsPerSecond: number;
  /** Rounds (runOnce calls that claimed something) and their mean duration. */
  rounds: number;
  meanRoundMs: number;
  /** CPU time of this process (worker and receiver) per delivery, in microseconds. */
  cpuUsPerDelivery: number;
  /** Time to emit (and commit) the N events beforehand, not part of the measure. */
  emitSeconds: number;
  /** Requests the receiver got beyond one per event (expected 0). */
  duplicates: number;
  /** Deliveries not SUCCEEDED at the end (expected 0). */
  unsettled: number;
}

export const WEBHOOK_TARGET_PER_SECOND = 500;

export async function benchWebhookDelivery(
  db: Kysely<Database>,
  options: { n?: number; batch?: number; warmup?: number } = {},
): Promise<WebhookDeliveryBench> {
  const n = options.n ?? Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
  const batch = options.batch ?? Number(process.env.BENCH_WEBHOOK_BATCH ?? 50);
  const warmup = options.warmup ?? 100;

  const ids: string[] = [];
  const server = createServer((req, res) => {
    ids.push(String(req.headers['webhook-id']));
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  try {
    const secrets = await loadSecretBox(db, undefined);
    const shop = (await admin.createShop(db, { name: 'Webhook bench', plan: 'business' })).id;
    await db
      .transaction()
      .execute((trx) =>
        createWebhook(
          trx,
          shop,
          { url, events: ['order:paid'] },
          { clock: systemClock, secrets, allowPrivateTargets: true },
        ),
      );
    const emit = async (count: number) => {
      for (let i = 0; i < count; i += 100) {
        await db.transaction().execute(async (trx) => {
          for (let j = i; j < Math.min(count, i + 100); j++) {
            await emitEvent(trx, shop, 'order:paid', { uniqid: `bench-${j}`, total: 19.99, currency: 'USD' });
          }
        });
      }
    };
    const job = webhookDeliveryJob(db, {
      clock: systemClock,
      logger: createLogger('silent'),
      secrets,
      allowPrivateTargets: true,
      batch,
    });
    const drain = async (count: number) => {
      let rounds = 0;
      for (let done = 0; done < count;) {
        const handled = await job.runOnce();
        if (handled === 0) throw new Error(`bench: nothing due after ${done} of ${count} deliveries`);
        done += handled;
        rounds++;
      }
      return rounds;
    };

    // Warm-up: connections, JIT, the secret box; not measured.
    await emit(warmup);
    await drain(warmup);
    await sql`analyze webhook_deliveries, webhook_attempts, events`.execute(db);

    const emitStarted = performance.now();
    await emit(n);
    const emitSeconds = (performance.now() - emitStarted) / 1000;

    const cpu = process.cpuUsage();
    const started = performance.now();
    const rounds = await drain(n);
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);

    const { rows } = await sql<{ n: string }>`select count(*) as n from webhook_deliveries
      where shop_id = ${shop} and status <> 'SUCCEEDED'`.execute(db);
    const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
    return {
      deliveries: n,
      batch,
      seconds: round(seconds, 3),
      eventsPerSecond: Math.round(n / seconds),
      rounds,
      meanRoundMs: round((seconds * 1000) / rounds, 1),
      cpuUsPerDelivery: Math.round((used.user + used.system) / n),
      emitSeconds: round(emitSeconds, 3),
      duplicates: ids.length - new Set(ids).size,
      unsettled: Number(rows[0]!.n),
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export function printWebhookDelivery(r: WebhookDeliveryBench, database: string): void {
  console.log(
    `\nWebhook delivery, one worker (${database}; batch ${r.batch}, ${r.rounds} rounds of ${r.meanRoundMs} ms; ` +
      `receiver on 127.0.0.1 answering 204):`,
  );
  console.log('| deliveries | seconds | events/s | target |');
  console.log('|---|---|---|---|');
  console.log(`| ${r.deliveries} | ${r.seconds} | ${r.eventsPerSecond} | >= ${WEBHOOK_TARGET_PER_SECOND}/s |`);
  console.log(
    `CPU per delivery (worker + receiver): ${r.cpuUsPerDelivery} us; emitting the events beforehand: ` +
      `${r.emitSeconds} s; duplicates: ${r.duplicates}; not SUCCEEDED: ${r.unsettled}`,
  );
}

if (require.main === module) {
  (async () => {
    await globalSetup();
    const database = await createTestDatabase();
    try {
      printWebhookDelivery(await benchWebhookDelivery(database.db), database.kind);
    } finally {
      await database.close();
    }
  })().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
