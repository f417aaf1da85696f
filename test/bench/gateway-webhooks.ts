// Signed Stripe webhooks completing orders (issue 37), beside POST /orders/{id}/complete of the same kind of orders
// in the same run. A test shop is connected to Stripe, whose API is the local fake (test/fakes/stripe/), so the
// sessions are real ones: each PENDING order (one SERIALS line, its serial reserved: the completion row's orders,
// seeded the same way) gets a Stripe session through the hosted checkout form, as a buyer choosing Stripe opens one.
//
// Not timed: seeding, opening the sessions, paying them at the fake with their webhooks kept back, and signing each
// checkout.session.completed (Stripe-Signature with the account's webhook secret, just before the run).
// Timed, from the first webhook sent to the last order completed: the webhooks POSTed to
// /webhooks/gateways/stripe/<shop> at the completion row's concurrency (autocannon in its own process), each verified
// and queued by the route, and the worker's gateway-events job (src/worker/gateway-events.ts, built as a worker
// builds it) applying them: one loop of its runOnce in this process, beside the server, started when the first webhook
// arrives, claiming again at once while it finds work and after 1 ms when it finds none. So the rate is completions
// per second end to end, and the CPU and round trips counted for the run are the route's and the worker's together,
// per completed order.
// The other side: POST /orders/{id}/complete through the whole stack, measured as the completion row measures it
// (test/bench/completions.ts). Target: the webhooks at >= 0.8x of it (verifying and matching a webhook should cost
// little next to the completion it triggers). Afterwards every order of both sides must be COMPLETED exactly once:
// one order:paid event and one PAID payment attempt each, every webhook's inbox row applied; else the bench fails.
import { sql, type Kysely } from 'kysely';
import Stripe from 'stripe';
import type { Database } from '../../db/tables';
import { gatewayWebhookUrl } from '../../src/domain/payments/connect';
import { createLogger } from '../../src/logger';
import * as admin from '../../src/ops/admin';
import { connectShopGateway } from '../../src/ops/gateway-admin';
import { systemClock } from '../../src/platform/clock';
import { workerJobs } from '../../src/worker';
import { startStripeFake, type StripeFake } from '../fakes/stripe';
import {
  benchConfig,
  completeRun,
  completionCounts,
  posts,
  seedPendingOrders,
  serialProduct,
  wholeStack,
} from './completions';
import { load, medianRatio, sideBySide, type Load, type Shot } from './load';
import { settings } from './settings';

export const GATEWAY_WEBHOOK_TARGET_RATIO = 0.8;

export interface GatewayWebhooksBench {
  /** Orders completed by webhooks per second, end to end; cost per completed order. */
  webhook: Load;
  /** POST /orders/{id}/complete of the same kind of orders, same run. */
  complete: Load;
  /** webhook / complete, median of the rounds. */
  ratio: number;
  /** Orders each measured run completes. */
  orders: number;
}

/** Waits for at most `n` promises at a time (setup against the fake and the checkout, not timed). */
async function inChunks<T>(items: T[], n: number, each: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += n) await Promise.all(items.slice(i, i + n).map(each));
}

export async function benchGatewayWebhooks(db: Kysely<Database>): Promise<GatewayWebhooksBench> {
  const fake: StripeFake = await startStripeFake();
  const live = await admin.createShop(db, { name: 'Stripe webhook bench', plan: 'business' });
  const shop = await admin.shopForMode(db, live.id, 'test');
  const { key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['*'] });
  const config = benchConfig({ GATEWAY_BASE_URLS: `STRIPE=${fake.baseUrl}` });
  const full = await wholeStack(db, config);
  try {
    const hookPath = `/webhooks/gateways/stripe/${shop.id}`;
    // Registered at PUBLIC_URL's route (connect checks it), delivered to this run's server.
    const creds = fake.createAccount({
      livemode: false,
      webhookUrl: `${full.url}${hookPath}`,
      endpointUrl: gatewayWebhookUrl(config.publicUrl, 'STRIPE', shop.id),
    });
    const webhookSecret = creds.STRIPE_WEBHOOK_SECRET!;
    await connectShopGateway(db, config, systemClock, {
      shopId: shop.id,
      code: 'STRIPE',
      fields: { secret_key: creds.STRIPE_SECRET_KEY!, webhook_secret: webhookSecret },
    });
    const serialProductId = await serialProduct(db, shop.id);
    const job = (await workerJobs(db, config, createLogger('silent'), systemClock)).find(
      (j) => j.name === 'gateway-events',
    );
    if (!job) throw new Error('bench: the worker has no gateway-events job');

    let batch = 0;
    /** PENDING orders for one run, each with an open Stripe session (the hosted form's Pay with Stripe). */
    const pendingWithSessions = async () => {
      const ids = await seedPendingOrders(db, shop.id, serialProductId, `w${batch++}`, completionCounts().total);
      const orders = await db
        .selectFrom('orders')
        .select(['id', 'uniqid'])
        .where('shop_id', '=', shop.id)
        .where('id', 'in', ids)
        .execute();
      await inChunks(orders, settings.connections, async (o) => {
        const res = await fetch(`${full.url}/invoice/${o.uniqid}/pay`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'gateway=STRIPE',
          redirect: 'manual',
        });
        if (res.status !== 303) throw new Error(`bench: the checkout answered ${res.status}: ${await res.text()}`);
      });
      return ids;
    };

    /** The webhooks of one run: each order's session paid at the fake, its event signed now, in the orders' order. */
    const signedWebhooks = async (ids: string[]): Promise<Shot[]> => {
      const attempts = await db
        .selectFrom('payment_attempts')
        .select(['order_id', 'session_id'])
        .where('shop_id', '=', shop.id)
        .where('order_id', 'in', ids)
        .where('status', '=', 'PENDING')
        .execute();
      const sessionOf = new Map(attempts.map((a) => [a.order_id, a.session_id!]));
      const from = fake.webhooks().length;
      for (const id of ids) {
        const session = sessionOf.get(id);
        if (!session) throw new Error(`bench: order ${id} has no Stripe session`);
        await fake.pay(session, { webhooks: false });
      }
      const built = fake.webhooks().slice(from);
      if (built.length !== ids.length || built.some((w) => w.type !== 'checkout.session.completed'))
        throw new Error(`bench: ${built.length} events for ${ids.length} paid sessions`);
      const timestamp = Math.floor(Date.now() / 1000);
      return built.map((w) => ({
        path: hookPath,
        raw: w.body,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'stripe-signature': Stripe.webhooks.generateTestHeaderString({
            payload: w.body,
            secret: webhookSecret,
            timestamp,
          }),
        },
      }));
    };

    /** The worker's loop over the gateway-events job until `count` events are applied (see the top of this file). */
    const applyWebhooks = async (count: number) => {
      await new Promise<void>((resolve) => full.server.once('request', () => resolve()));
      let done = 0;
      let idleSince = performance.now();
      while (done < count) {
        const handled = await job.runOnce();
        done += handled;
        if (handled > 0) idleSince = performance.now();
        else if (performance.now() - idleSince > 30_000)
          throw new Error(`bench: ${done} of ${count} webhooks applied, nothing more queued for 30 s`);
        else await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };

    const { warmup, amount } = completionCounts();
    await sql`analyze orders, order_items, product_serials, payment_attempts, gateway_events`.execute(db);
    const runs = await sideBySide(
      async () => completeRun(full.url, '/dev/v1', key, await pendingWithSessions(), 'complete-stripe-full'),
      async () => {
        const shots = await signedWebhooks(await pendingWithSessions());
        return load(full.url, key, posts('stripe-webhook-full', { shots, warmup, amount, settle: applyWebhooks }));
      },
    );
    await checkCompletedOnce(db, shop.id, batch * (warmup + amount));
    if (fake.violations.length > 0) throw new Error(`bench: the Stripe fake saw ${fake.violations.join('; ')}`);
    return { webhook: runs.full, complete: runs.baseline, ratio: medianRatio(runs.rounds), orders: amount };
  } finally {
    full.server.close();
    await fake.close();
  }
}

/** Every order of the shop completed exactly once, by either side: a lost or doubled completion fails the bench. */
async function checkCompletedOnce(db: Kysely<Database>, shopId: string, expected: number): Promise<void> {
  // The shop's 22,000 orders and their events came after the last ANALYZE: without fresh statistics the check
  // joined each order to a rescan of the shop's events (over 3.5 minutes in a full run, where it was killed).
  await sql`analyze orders, events, payment_attempts, gateway_events`.execute(db);
  const { rows } = await sql<{ orders: string; wrong: string; inbox_unapplied: string }>`
    with paid as (
      select data::jsonb->>'uniqid' as uniqid, count(*) as n from events
      where shop_id = ${shopId} and type = 'order:paid' group by 1
    ), attempts as (
      select order_id, count(*) filter (where status = 'PAID') as n from payment_attempts
      where shop_id = ${shopId} group by 1
    )
    select count(*) as orders,
      count(*) filter (where o.status <> 'COMPLETED' or coalesce(p.n, 0) <> 1 or coalesce(a.n, 0) <> 1) as wrong,
      (select count(*) from gateway_events where shop_id = ${shopId}
        and (status <> 'SUCCEEDED' or last_error is not null)) as inbox_unapplied
    from orders o
    left join paid p on p.uniqid = o.uniqid::text
    left join attempts a on a.order_id = o.id
    where o.shop_id = ${shopId}`.execute(db);
  const r = rows[0]!;
  if (Number(r.orders) !== expected || Number(r.wrong) !== 0 || Number(r.inbox_unapplied) !== 0) {
    // A few of the wrong orders as they are, so a failure says what went wrong, not only how often.
    const examples = await sql`
      select o.id, o.status, o.gateway,
        (select count(*) from events e where e.shop_id = o.shop_id and e.type = 'order:paid'
          and e.data::jsonb->>'uniqid' = o.uniqid::text) as paid_events,
        (select json_agg(json_build_object('gateway', a.gateway, 'status', a.status, 'session', a.session_id is not null))
          from payment_attempts a where a.shop_id = o.shop_id and a.order_id = o.id) as attempts
      from orders o where o.shop_id = ${shopId} and (o.status <> 'COMPLETED'
        or (select count(*) from payment_attempts a where a.shop_id = o.shop_id and a.order_id = o.id
              and a.status = 'PAID') <> 1
        or (select count(*) from events e where e.shop_id = o.shop_id and e.type = 'order:paid'
              and e.data::jsonb->>'uniqid' = o.uniqid::text) <> 1)
      limit 5`.execute(db);
    throw new Error(
      `stripe webhook bench: ${r.orders} orders (expected ${expected}), ${r.wrong} not completed exactly once, ` +
        `${r.inbox_unapplied} webhooks not applied; for example ${JSON.stringify(examples.rows)}`,
    );
  }
}
