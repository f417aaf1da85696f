// Rate limiting with express-rate-limit: per shop by plan for authenticated requests, per IP for the rest.
// Counters live in Redis when REDIS_URL is set so every process shares them; while Redis is down each process
// counts in memory, so limiting degrades but requests never fail or wait on Redis.
import type { NextFunction, Request, Response } from 'express';
import {
  ipKeyGenerator,
  MemoryStore,
  rateLimit,
  type ClientRateLimitInfo,
  type Options,
  type Store,
} from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import type { Config, Plan } from '../config';
import { ApiError } from '../errors';
import type { Logger } from '../logger';
import { countRateLimitRefusal } from '../platform/metrics';
import type { RedisClient } from '../platform/redis';

export const rateLimitWindowMs = 60_000;

/**
 * Redis when it is ready, memory otherwise. rate-limit-redis loads its script once when built and keeps a failed
 * load forever, so a fresh RedisStore is built each time the client becomes ready.
 */
class FailoverStore implements Store {
  private readonly memory = new MemoryStore();
  private redisStore: RedisStore | undefined;
  private options: Options | undefined;

  constructor(
    private readonly client: RedisClient | undefined,
    readonly prefix: string,
    private readonly logger: Logger,
  ) {
    client?.on('ready', () => void this.buildRedisStore());
  }

  async init(options: Options): Promise<void> {
    this.options = options;
    this.memory.init(options);
    if (this.client?.isReady) await this.buildRedisStore();
  }

  private async buildRedisStore(): Promise<void> {
    if (!this.client || !this.options) return;
    const client = this.client;
    const store = new RedisStore({ prefix: this.prefix, sendCommand: (...args: string[]) => client.sendCommand(args) });
    try {
      await store.init(this.options);
      this.redisStore = store;
    } catch (err) {
      this.logger.warn('rate limit store not ready on redis', { error: (err as Error).message });
    }
  }

  private get live(): RedisStore | undefined {
    return this.client?.isReady ? this.redisStore : undefined;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const redis = this.live;
    if (redis) {
      try {
        return await redis.increment(key);
      } catch {
        // fall through to memory: a Redis failure must not fail the request
      }
    }
    return this.memory.increment(key);
  }

  async decrement(key: string): Promise<void> {
    await (this.live ?? this.memory).decrement(key);
  }

  async resetKey(key: string): Promise<void> {
    await (this.live ?? this.memory).resetKey(key);
  }

  shutdown(): void {
    this.memory.shutdown();
  }
}

export interface RateLimiter {
  /** Counts an authenticated request against its shop; throws RATE_LIMITED when over. Sets the X-RateLimit-* headers. */
  shop(req: Request, res: Response, shopId: string, plan: Plan): Promise<void>;
  /** Counts a request without a valid credential against its IP. */
  anonymous(req: Request, res: Response): Promise<void>;
  redisState(): 'up' | 'down' | 'not configured';
}

/** The 429 of a limiter, counted by which one refused. */
const limited = (limiter: 'shop' | 'ip') => (_req: Request, res: Response, next: NextFunction) => {
  countRateLimitRefusal(limiter);
  const retry = res.getHeader('Retry-After');
  next(
    new ApiError('RATE_LIMITED', 'Too many requests; wait for Retry-After seconds.', {
      headers: { 'Retry-After': String(retry ?? 60) },
    }),
  );
};

function run(
  middleware: (req: Request, res: Response, next: NextFunction) => unknown,
  req: Request,
  res: Response,
): Promise<void> {
  return new Promise((resolve, reject) => {
    void middleware(req, res, (err?: unknown) => (err ? reject(err) : resolve()));
  });
}

export function createRateLimiter(
  config: Config,
  logger: Logger,
  redis: RedisClient | undefined,
  prefix = 'rl:',
): RateLimiter {
  const common = {
    windowMs: rateLimitWindowMs,
    legacyHeaders: true, // X-RateLimit-Limit / -Remaining / -Reset (Unix seconds), as the contract says
    standardHeaders: false,
    passOnStoreError: true,
    validate: false, // its configuration checks are for development; they cost time on every request
  } as const;
  const shopLimiter = rateLimit({
    ...common,
    handler: limited('shop'),
    store: new FailoverStore(redis, `${prefix}shop:`, logger),
    limit: (_req, res) => config.rateLimits[res.locals.plan as Plan] ?? config.rateLimits.free,
    keyGenerator: (_req, res) => String(res.locals.shopId),
  });
  const ipLimiter = rateLimit({
    ...common,
    handler: limited('ip'),
    store: new FailoverStore(redis, `${prefix}ip:`, logger),
    limit: config.anonymousRateLimit,
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown'),
  });
  return {
    shop: (req, res, shopId, plan) => {
      res.locals.shopId = shopId;
      res.locals.plan = plan;
      return run(shopLimiter, req, res);
    },
    anonymous: (req, res) => run(ipLimiter, req, res),
    redisState: () => (redis ? (redis.isReady ? 'up' : 'down') : 'not configured'),
  };
}
