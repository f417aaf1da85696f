// The two order writes, each through the whole stack against a bare express + pg + auth route in this process,
// side by side (both servers on the same database and pool; autocannon in its own process):
// - POST /orders, one line of one of 100 SERVICE products (unlimited stock) for one of a set of returning buyers,
//   against a bare route doing the same writes in one transaction: the product row locked, the buyer looked up, the
//   order, its item, the order:created event and the audit entry inserted. (The whole stack also checks the
//   catalog, coupon, blacklist, affiliate and reseller rules and prices the order.)
// - POST /orders/{id}/complete of a PENDING order of one SERIALS line whose serial it reserved, against a bare route
//   claiming the serial, marking the item and order complete, and writing what the completion records beside it (the
//   payment attempt, order:paid and order:completed, the receipt and delivery mail, the audit entry) in one
//   transaction. Each request completes another order, so these runs are a count of requests
//   (settings.completions, after a tenth as many to warm up), not a time.
import express from 'express';
import { sql, type Kysely } from 'kysely';
import { insertAuditEntry } from '../../db/queries/audit-entries';
import { claimReservedSerials } from '../../db/queries/serials';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { newId, newUniqid } from '../../src/ids';
import { bearerTokenOf, hashCredential } from './bench-auth';
import { benchConfig, completeRun, completionCounts, posts, seedPendingOrders, wholeStack } from './completions';
import { listen, load, medianRatio, sideBySide, type Load, type Shot } from './load';
import { settings } from './settings';
import { systemClock } from '../../src/platform/clock';

const PRODUCTS = 100;
const BUYERS = settings.buyers;

export interface SideBySide {
  baseline: Load;
  full: Load;
  /** whole stack / baseline, req/s, per round. */
  ratio: number;
}

export interface OrderWritesBench {
  create: SideBySide;
  /** POST /orders by `settings.connections` buyers at once, all of one product with counted stock (a flash sale). */
  hot: SideBySide;
  complete: SideBySide;
}

async function shopOf(db: Kysely<Database>, authorization: string | undefined): Promise<string | undefined> {
  const auth = await sql<{ shop_id: string }>`select c.shop_id from credentials c join shops s on s.id = c.shop_id
    where c.token_hash = ${hashCredential(bearerTokenOf(authorization))} and c.revoked_at is null`.execute(db);
  return auth.rows[0]?.shop_id;
}

/** The bare routes: the same writes as the whole stack, with nothing around them. */
function bareApp(db: Kysely<Database>, credentialId: string): express.Express {
  const bare = express();
  bare.use(express.json());
  const audit = (req: express.Request, action: string, resourceId: string, operationId: string) => ({
    id: newId('aud'),
    credential_id: credentialId,
    credential_kind: 'api_key',
    operation_id: operationId,
    method: 'POST',
    path: req.path,
    action,
    resource_type: 'order',
    resource_id: resourceId,
    path_params: '{}',
    status: 200,
    ip: req.ip ?? null,
    user_agent: req.headers['user-agent'] ?? null,
    request_id: 'bench',
  });

  bare.post('/orders', async (req, res) => {
    const shopId = await shopOf(db, req.headers.authorization);
    if (!shopId) return void res.status(401).end();
    const body = req.body as { email: string; items: { product_id: string; quantity: number }[] };
    const line = body.items[0]!;
    const order = await db.transaction().execute(async (trx) => {
      const product = await sql<{ id: string; title: string; price: string; currency: string }>`select id, title,
        price, currency from products where shop_id = ${shopId} and id = ${line.product_id} for update`.execute(trx);
      const p = product.rows[0];
      if (!p) return undefined;
      const customer = await sql<{ id: string }>`select id from customers where shop_id = ${shopId}
        and email = ${body.email.toLowerCase()}`.execute(trx);
      const now = new Date();
      const total = (Number(p.price) * line.quantity).toFixed(2);
      const inserted = await sql<{ id: string }>`insert into orders (id, shop_id, uniqid, kind, customer_id,
          customer_email, currency, status, status_details, payment_status, flow_type, subtotal, total,
          is_developer_invoice, expires_at, created_at, updated_at)
        values (${newId('ord')}, ${shopId}, ${newUniqid()}, 'ORDER', ${customer.rows[0]?.id ?? null},
          ${body.email.toLowerCase()}, ${p.currency}, 'PENDING', 'Awaiting payment', 'PENDING', 'DEVELOPER', ${total},
          ${total}, true, ${new Date(now.getTime() + 3_600_000)}, ${now}, ${now})
        returning *`.execute(trx);
      const o = inserted.rows[0]!;
      const items = await sql`insert into order_items (id, shop_id, order_id, position, product_id, product_title,
          product_type, quantity, unit_price, total, created_at)
        values (${newId('item')}, ${shopId}, ${o.id}, 0, ${p.id}, ${p.title}, 'SERVICE', ${line.quantity},
          ${p.price}, ${total}, ${now})
        returning *`.execute(trx);
      const view = { ...o, items: items.rows };
      await sql`insert into events (id, shop_id, type, data, created_at)
        values (${newId('evt')}, ${shopId}, 'order:created', ${JSON.stringify(view)}, ${now})`.execute(trx);
      await insertAuditEntry(trx, shopId, audit(req, 'order.created', o.id, 'createOrder'));
      return view;
    });
    if (!order) return void res.status(404).end();
    res.status(201).json({ data: order });
  });

  bare.post('/orders/:id/complete', async (req, res) => {
    const shopId = await shopOf(db, req.headers.authorization);
    if (!shopId) return void res.status(401).end();
    const done = await db.transaction().execute(async (trx) => {
      const order = await sql<{ id: string; status: string }>`select id, status from orders
        where shop_id = ${shopId} and id = ${req.params.id} for update`.execute(trx);
      if (order.rows[0]?.status !== 'PENDING') return undefined;
      const now = new Date();
      const items = await sql<{ id: string }>`select id from order_items where shop_id = ${shopId}
        and order_id = ${req.params.id} order by position`.execute(trx);
      const delivered = [];
      for (const item of items.rows) {
        const codes = await claimReservedSerials(trx, shopId, item.id, now);
        await sql`update order_items set delivery_status = 'DELIVERED', delivered_at = ${now},
          delivered_items = ${JSON.stringify({ codes })}, reserved_stock = 0
          where shop_id = ${shopId} and id = ${item.id}`.execute(trx);
        delivered.push({ id: item.id, codes });
      }
      const completed = await sql<{ id: string; uniqid: string; customer_email: string; total: string }>`update orders
          set status = 'COMPLETED', status_details = null, payment_status = 'PAID', completed_at = ${now},
          expires_at = null, updated_at = ${now}
        where shop_id = ${shopId} and id = ${req.params.id} returning *`.execute(trx);
      const o = completed.rows[0]!;
      const view = { ...o, items: delivered };
      // What a completion must record beside the change: the payment, its two events, the receipt and the
      // delivery mail, the audit entry (each one statement, as a bare route would write them).
      await sql`insert into payment_attempts (id, shop_id, order_id, gateway, status, amount, created_at, paid_at)
        values (${newId('pay')}, ${shopId}, ${o.id}, 'MANUAL', 'PAID', ${o.total}, ${now}, ${now})`.execute(trx);
      for (const [type, data] of [
        ['order:paid', { uniqid: o.uniqid, customer_email: o.customer_email, total: o.total }],
        ['order:completed', view],
      ] as const)
        await sql`insert into events (id, shop_id, type, data, created_at)
          values (${newId('evt')}, ${shopId}, ${type}, ${JSON.stringify(data)}, ${now})`.execute(trx);
      for (const [template, text] of [
        ['receipt', `Order ${o.uniqid}: ${o.total} USD`],
        ['delivery', `Order ${o.uniqid}: ${delivered.flatMap((d) => d.codes).join(', ')}`],
      ])
        await sql`insert into outbound_emails (id, shop_id, to_address, template, subject, html, text, status,
            next_attempt_at, created_at)
          values (${newId('eml')}, ${shopId}, ${o.customer_email}, ${template}, ${text}, ${`<p>${text}</p>`},
            ${text}, 'QUEUED', ${now}, ${now})`.execute(trx);
      await insertAuditEntry(trx, shopId, audit(req, 'order.completed', o.id, 'completeOrder'));
      return view;
    });
    if (!done) return void res.status(400).end();
    res.json({ data: done });
  });
  return bare;
}

/**
 * Connections of the embedded rows' loads, and how long a request may wait there. PGlite runs one statement at a
 * time in this process, so more connections only queue in front of it: at 50, a request of the completion row once
 * waited past autocannon's 10 s and stopped two full runs of four. Both sides of a row use the same.
 */
export const EMBEDDED_LOAD = { connections: 10, timeoutSeconds: 60 } as const;

/** `profileTag` sets the runs of another database apart in their profiles' names (embedded-create-full, ...). */
export async function benchOrderWrites(db: Kysely<Database>, profileTag = ''): Promise<OrderWritesBench> {
  const perRun = profileTag === 'embedded-' ? EMBEDDED_LOAD : {};
  const shop = await admin.createShop(db, { name: 'Order writes bench', plan: 'business' });
  const { key, id: credentialId } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['*'] });
  const row = (await shopById(db, shop.id))!;
  const seeded = await db.transaction().execute((trx) =>
    seedFixtures(
      trx,
      row,
      {
        products: [
          ...Array.from({ length: PRODUCTS }, (_, i) => ({
            title: `Service ${i}`,
            type: 'SERVICE' as const,
            price: '5.00',
            currency: 'USD',
            stock: -1,
          })),
          { title: 'Serial', type: 'SERIALS' as const, price: '5.00', currency: 'USD' },
          // Counted stock enough for every order the bench makes of it: each takes one unit.
          { title: 'Flash sale', type: 'SERVICE' as const, price: '5.00', currency: 'USD', stock: 10_000_000 },
        ],
      },
      systemClock,
    ),
  );
  const productIds = seeded.products.slice(0, PRODUCTS);
  const serialProduct = seeded.products[PRODUCTS]!;
  const hotProduct = seeded.products[PRODUCTS + 1]!;
  await sql`analyze`.execute(db);

  const full = await wholeStack(db, benchConfig());
  const bare = await listen(bareApp(db, credentialId));
  try {
    const orderShots: Shot[] = Array.from({ length: PRODUCTS * 3 }, (_, i) => ({
      body: {
        email: `buyer${i % BUYERS}@example.com`,
        items: [{ product_id: productIds[i % PRODUCTS]!, quantity: 1 }],
      },
    }));
    // The buyers return (their first order created them), as most buyers of a shop do.
    for (let i = 0; i < BUYERS; i += 10) {
      await Promise.all(
        orderShots.slice(i, i + 10).map(async (shot) => {
          const res = await fetch(`${full.url}/dev/v1/orders`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(shot.body),
          });
          if (res.status !== 201) throw new Error(`POST /orders: ${res.status} ${await res.text()}`);
        }),
      );
    }
    const createRuns = await sideBySide(
      () => load(`${bare.url}/orders`, key, posts(profileTag + 'create-bare', { shots: orderShots, ...perRun })),
      () => load(`${full.url}/dev/v1/orders`, key, posts(profileTag + 'create-full', { shots: orderShots, ...perRun })),
    );
    // The same returning buyers, every one ordering the one product at once.
    const hotShots: Shot[] = Array.from({ length: BUYERS }, (_, i) => ({
      body: { email: `buyer${i}@example.com`, items: [{ product_id: hotProduct, quantity: 1 }] },
    }));
    const hotRuns = await sideBySide(
      () => load(`${bare.url}/orders`, key, posts(profileTag + 'hot-bare', { shots: hotShots, ...perRun })),
      () => load(`${full.url}/dev/v1/orders`, key, posts(profileTag + 'hot-full', { shots: hotShots, ...perRun })),
    );

    let batch = 0;
    const pending = () => seedPendingOrders(db, shop.id, serialProduct, String(batch++), completionCounts().total);
    await sql`analyze orders, order_items, product_serials`.execute(db);
    const completeRuns = await sideBySide(
      async () => completeRun(bare.url, '', key, await pending(), profileTag + 'complete-bare', perRun),
      async () => completeRun(full.url, '/dev/v1', key, await pending(), profileTag + 'complete-full', perRun),
    );
    // Every measured order was completed, and its serial claimed, by the side that was asked to.
    const { rows } = await sql<{ n: string }>`select count(*) as n from product_serials
      where shop_id = ${shop.id} and status <> 'claimed'`.execute(db);
    if (Number(rows[0]!.n) !== 0) throw new Error(`completion bench: ${rows[0]!.n} serials left unclaimed`);

    return {
      create: { baseline: createRuns.baseline, full: createRuns.full, ratio: medianRatio(createRuns.rounds) },
      hot: { baseline: hotRuns.baseline, full: hotRuns.full, ratio: medianRatio(hotRuns.rounds) },
      complete: { baseline: completeRuns.baseline, full: completeRuns.full, ratio: medianRatio(completeRuns.rounds) },
    };
  } finally {
    full.server.close();
    bare.server.close();
  }
}
