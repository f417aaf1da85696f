// POST /orders and GET /orders?limit=50 through PgBouncer in transaction mode (Debian's 1.18, started here in front
// of the bench's own PostgreSQL) beside the same whole stack on a direct connection, side by side in one run, with
// the round trips each side sends. Both stacks run in this process with a pg pool of POOL connections, and PgBouncer
// lends as many server connections (default_pool_size), so the difference is the pooler's hop and nothing else. Both
// stacks send every statement unnamed (DATABASE_NAMED_STATEMENTS=off, as docs/deployment.md says behind PgBouncer
// 1.18, which cannot keep prepared statements), so the round trips are the same on both sides: a pooler that needed
// a prepare per statement would show here. Needs PostgreSQL and pgbouncer.
import type { Kysely } from 'kysely';
import { openPostgres } from '../../db/database';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { systemClock } from '../../src/platform/clock';
import { pgBouncerBin, startPgBouncer } from '../helpers/pg-cluster';
import { benchConfig, posts, wholeStack } from './completions';
import { load, medianRatio, sideBySide, type Shot } from './load';
import { PAGE, seedBenchOrders } from './order-lists';
import type { SideBySide } from './order-writes';
import { settings } from './settings';

/** Client connections of each stack's pool, and PgBouncer's server connections. */
export const POOL = 10;
const PRODUCTS = 100;
/** Orders of the list side: page 1 is what is read, so a list deep enough to need its index (a quick run: fewer). */
const LIST_ORDERS = settings.quick ? 1_000 : 10_000;

export interface PoolerBench {
  create: SideBySide;
  list: SideBySide;
}

/** null when pgbouncer is not installed (the row then says so). */
export async function benchPooler(db: Kysely<Database>, databaseUrl: string): Promise<PoolerBench | null> {
  if (!pgBouncerBin) return null;
  const target = new URL(databaseUrl);
  const bouncer = await startPgBouncer(
    { host: target.hostname, port: Number(target.port || 5432) },
    { poolMode: 'transaction', defaultPoolSize: POOL, maxClientConn: 4 * POOL },
  );
  const direct = openPostgres(databaseUrl, { max: POOL, namedStatements: false });
  const pooled = openPostgres(bouncer.url(decodeURIComponent(target.pathname.slice(1))), {
    max: POOL,
    namedStatements: false,
  });
  try {
    const shop = await admin.createShop(db, { name: 'Pooler bench', plan: 'business' });
    const { key } = await admin.createApiKey(db, { shopId: shop.id, scopes: ['*'] });
    await seedBenchOrders(db, shop.id, LIST_ORDERS);
    const row = (await shopById(db, shop.id))!;
    const products = (
      await db.transaction().execute((trx) =>
        seedFixtures(
          trx,
          row,
          {
            products: Array.from({ length: PRODUCTS }, (_, i) => ({
              title: `Pooled service ${i}`,
              type: 'SERVICE' as const,
              price: '5.00',
              currency: 'EUR',
              stock: -1,
            })),
          },
          systemClock,
        ),
      )
    ).products;

    const directStack = await wholeStack(direct.db, benchConfig());
    const pooledStack = await wholeStack(pooled.db, benchConfig());
    try {
      const listPath = `/dev/v1/orders?limit=${PAGE}`;
      const list = await sideBySide(
        () => load(`${directStack.url}${listPath}`, key, { cost: true, label: 'pooler-list-direct' }),
        () => load(`${pooledStack.url}${listPath}`, key, { cost: true, label: 'pooler-list-pgbouncer' }),
      );
      const shots: Shot[] = Array.from({ length: PRODUCTS * 3 }, (_, i) => ({
        body: {
          email: `buyer${i % settings.buyers}@example.com`,
          items: [{ product_id: products[i % PRODUCTS]!, quantity: 1 }],
        },
      }));
      const create = await sideBySide(
        () => load(`${directStack.url}/dev/v1/orders`, key, posts('pooler-create-direct', { shots })),
        () => load(`${pooledStack.url}/dev/v1/orders`, key, posts('pooler-create-pgbouncer', { shots })),
      );
      return {
        create: { baseline: create.baseline, full: create.full, ratio: medianRatio(create.rounds) },
        list: { baseline: list.baseline, full: list.full, ratio: medianRatio(list.rounds) },
      };
    } finally {
      directStack.server.close();
      pooledStack.server.close();
    }
  } finally {
    await pooled.close();
    await direct.close();
    await bouncer.destroy();
  }
}
