// Latency of an idempotent write: N original `POST /products/{id}/duplicate` requests, each with a fresh key
// (claim + handler transaction + stored response), against N replays of one key (one look-up, stored bytes sent).
// Sequential requests over HTTP on 127.0.0.1, through the whole stack. Runs on PostgreSQL when DATABASE_URL is
// set, on PGlite otherwise. Called by `npm run bench` (test/bench/run.ts), n = settings.idempotentRequests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { createLogger } from '../../src/logger';
import { shopById } from '../../db/queries/shops';
import { createTestDatabase } from '../helpers/test-database';
import { settings } from './settings';
import { systemClock } from '../../src/platform/clock';

export interface LatencyStats {
  n: number;
  p50_ms: number;
  p95_ms: number;
  mean_ms: number;
}

export interface IdempotencyBench {
  database: 'postgres' | 'pglite';
  original: LatencyStats;
  replay: LatencyStats;
}

function stats(samples: number[]): LatencyStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  const round = (v: number) => Math.round(v * 1000) / 1000;
  return {
    n: sorted.length,
    p50_ms: round(at(0.5)),
    p95_ms: round(at(0.95)),
    mean_ms: round(sorted.reduce((s, v) => s + v, 0) / sorted.length),
  };
}

export async function benchIdempotency(options: { n?: number; warmup?: number } = {}): Promise<IdempotencyBench> {
  const n = options.n ?? settings.idempotentRequests;
  const warmup = options.warmup ?? Math.min(20, n);
  const database = await createTestDatabase();
  const config = loadConfig({ PUBLIC_URL: 'http://bench.test', LOG_LEVEL: 'silent', RATE_LIMIT_BUSINESS: '1000000' });
  const app = await createApp({ clock: systemClock, db: database.db, config, logger: createLogger('silent') });
  const server = createServer(app);
  try {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const shop = await admin.createShop(database.db, { name: 'Bench', plan: 'business' });
    const { key: apiKey } = await admin.createApiKey(database.db, { shopId: shop.id, scopes: ['*'] });
    const row = await shopById(database.db, shop.id);
    const { products } = await database.db
      .transaction()
      .execute((trx) => seedFixtures(trx, row!, { products: [{ title: 'Bench', price: '1.00' }] }, systemClock));
    const url = `http://127.0.0.1:${port}/dev/v1/products/${products[0]!}/duplicate`;

    const call = async (key: string, expected: string): Promise<number> => {
      const started = performance.now();
      const res = await fetch(url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Idempotency-Key': key },
      });
      await res.arrayBuffer();
      const elapsed = performance.now() - started;
      const status = res.headers.get('idempotency-status');
      if (res.status !== 201 || status !== expected)
        throw new Error(`bench: expected 201 ${expected}, got ${res.status} ${status}`);
      return elapsed;
    };

    for (let i = 0; i < warmup; i++) await call(randomUUID(), 'created');
    const original: number[] = [];
    for (let i = 0; i < n; i++) original.push(await call(randomUUID(), 'created'));

    const replayKey = randomUUID();
    await call(replayKey, 'created');
    for (let i = 0; i < warmup; i++) await call(replayKey, 'cached');
    const replay: number[] = [];
    for (let i = 0; i < n; i++) replay.push(await call(replayKey, 'cached'));

    return { database: database.kind, original: stats(original), replay: stats(replay) };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await database.close();
  }
}
