// One app + database per test file, an HTTP client whose every response is checked against openapi.yaml, and
// factories for shops, keys and products. Logs are captured in memory so tests can assert what was (not) logged.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import type { Express } from 'express';
import winston from 'winston';
import { createApp, type AppOptions } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import * as admin from '../../src/ops/admin';
import { seedFixtures, type Fixtures } from '../../src/ops/fixtures/fixtures';
import { logLineFormat, type Logger } from '../../src/logger';
import { connectRedis, type RedisClient } from '../../src/platform/redis';
import { shopById } from '../../db/queries/shops';
import { assertMatchesContract } from './contract';
import { createTestDatabase, type TestDatabase } from './test-database';
import type { Operator } from '../../src/ops/operator';
import { systemClock } from '../../src/platform/clock';
import { openReadRouting, type ReadRouting } from '../../src/platform/read-routing';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type Agent = { [M in Method]: (url: string) => request.Test };

/** supertest, with every response validated against the contract before the test sees it. */
export function contractClient(app: Express | string): Agent {
  const agent = request(app);
  const client = {} as Agent;
  for (const method of ['get', 'post', 'put', 'patch', 'delete'] as Method[]) {
    client[method] = (url: string) => {
      const test = agent[method](url);
      const then = test.then.bind(test);
      // await calls then(): validate first, then hand the response on.
      (test as { then: unknown }).then = (ok?: (r: request.Response) => unknown, fail?: (e: unknown) => unknown) =>
        then((res) => {
          assertMatchesContract(method, url, res);
          return res;
        }).then(ok, fail);
      return test;
    };
  }
  return client;
}

export interface TestApp {
  app: Express;
  database: TestDatabase;
  db: TestDatabase['db'];
  config: Config;
  logger: Logger;
  logs: Record<string, unknown>[];
  http: Agent;
  /** What an operator command (src/ops) is given: this app's database, configuration and clock. */
  operator: Operator;
  /**
   * A live shop, or with `mode: 'test'` the test twin of a new live shop (where the SANDBOX gateway is): its id.
   * `createKey` makes a key of the shop's own mode.
   */
  createShop(input?: {
    name?: string;
    plan?: 'free' | 'pro' | 'business';
    currency?: string;
    mode?: 'live' | 'test';
  }): Promise<string>;
  createKey(shopId: string, scopes: string[], name?: string): Promise<{ id: string; key: string }>;
  seed(shopId: string, fixtures: Fixtures): ReturnType<typeof seedFixtures>;
  redis: RedisClient | undefined;
  /** Read routing to DATABASE_READ_URL's replicas, when `env` names some (as the server builds it). */
  reads: ReadRouting | undefined;
  close(): Promise<void>;
}

export function memoryLogger(): { logger: Logger; logs: Record<string, unknown>[] } {
  const logs: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      logs.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const logger = winston.createLogger({
    level: 'debug',
    format: logLineFormat(),
    transports: [new winston.transports.Stream({ stream })],
  });
  return { logger, logs };
}

export async function startTestApp(
  options: Partial<Omit<AppOptions, 'db' | 'logger'>> & {
    env?: NodeJS.ProcessEnv;
    /** A database the caller prepared (the migration test's, migrated by hand); closed with the app. */
    database?: TestDatabase;
  } = {},
): Promise<TestApp> {
  const { database: given, env, ...appOptions } = options;
  const database = given ?? (await createTestDatabase());
  const config =
    options.config ?? loadConfig({ PUBLIC_URL: 'http://api.test', REDIS_URL: process.env.REDIS_URL, ...env });
  const { logger, logs } = memoryLogger();
  // With REDIS_URL the rate-limit counters live in the real Redis, under a prefix of this file's own.
  const redis = config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined;
  const rateLimitPrefix = `rl:test:${randomBytes(6).toString('hex')}:`;
  const replicas = await openReadRouting({
    primary: database.db,
    urls: config.databaseReadUrls,
    maxLagMs: config.replicaMaxLagMs,
    redis,
    logger,
  });
  const app = await createApp({
    rateLimitPrefix,
    reads: replicas?.routing,
    ...appOptions,
    db: database.db,
    config,
    logger,
    redis,
    clock: options.clock ?? systemClock,
  });
  const db = database.db;
  return {
    app,
    database,
    db,
    config,
    logger,
    logs,
    http: contractClient(app),
    operator: { db, config, clock: options.clock ?? systemClock },
    createShop: async (input = {}) => {
      const live = await admin.createShop(db, {
        name: input.name ?? 'Test Shop',
        plan: input.plan,
        currency: input.currency,
      });
      return input.mode === 'test' ? (await admin.shopForMode(db, live.id, 'test')).id : live.id;
    },
    createKey: async (shopId, scopes, name) => admin.createApiKey(db, { shopId, scopes, name }),
    seed: async (shopId, fixtures) => {
      const shop = await shopById(db, shopId);
      if (!shop) throw new Error(`no shop ${shopId}`);
      return db.transaction().execute((trx) => seedFixtures(trx, shop, fixtures, options.clock ?? systemClock));
    },
    redis,
    reads: replicas?.routing,
    close: async () => {
      await replicas?.close();
      await redis?.close().catch(() => undefined);
      await database.close();
    },
  };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
