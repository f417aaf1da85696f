// Builds the express app (no listen): the server and the tests both start here.
import { gatewayWebhookRouter } from './http/gateway-webhooks';
import { createGateways } from './integrations/gateway-accounts';
import { gatewayProviders } from './integrations';
import type { GatewayProvider } from './integrations/gateway-provider';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/tables';
import { serverSecret } from '../db/queries/server-secrets';
import { handlers as defaultHandlers } from '../handlers';
import type { Config } from './config';
import type { Logger } from './logger';
import { ApiError } from './errors';
import { accessLog } from './http/access-log';
import { requestMetrics, requestSpans } from './http/telemetry';
import { activeTracer } from './platform/tracing';
import { createApi } from './http/api';
import { docsRouter } from './http/docs';
import { checkoutRouter } from './pages/checkout/router';
import { consentRouter } from './pages/consent/router';
import { themePreviewRouter } from './pages/theme-preview/router';
import { analyticsDownloadRouter } from './pages/analytics-download/router';
import { errorAnswer, sendError } from './http/errors';
import type { HandlerMap } from './http/handler';
import { createRateLimiter } from './http/rate-limit';
import { requestId } from './http/request-id';
import type { RedisClient } from './platform/redis';
import { CursorCodec } from './platform/cursor';
import { Idempotency } from './platform/idempotency';
import { UnitOfWork, type EffectSink } from './platform/unit-of-work';
import { ReadOnlyPlugin } from '../db/read-only';
import type { Clock } from './platform/clock';
import type { ReadRouting } from './platform/read-routing';
import { defaultEffectSinks } from './domain/effects';
import { loadSecretBox } from './platform/secret-box';
import { oauthMetadataPathInsertion, oauthServerMetadata } from './domain/account/oauth-metadata';

export interface AppOptions {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  /** Replaces handlers (tests inject failures this way). */
  handlers?: Partial<HandlerMap>;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
  /** How long an idempotency claim lasts unless renewed (default: config, 5 s); tests shorten or lengthen it. */
  idempotencyLeaseMs?: number;
  /** The longest a running request keeps renewing its idempotency lease (default: config, 60 s). */
  idempotencyLockTimeoutMs?: number;
  /** Rate-limit counters go here when given (REDIS_URL); otherwise they are kept in memory. */
  redis?: RedisClient;
  /** Key prefix of the rate-limit counters (tests isolate themselves with their own). */
  rateLimitPrefix?: string;
  /** Where writes' side effects go (events outbox, mail queue, audit trail), inside their transaction. */
  effectSinks?: EffectSink[];
  /** Waits between write retries (tests pass one that does not sleep). */
  sleep?: (ms: number) => Promise<void>;
  /** What time-dependent rules read: the entry point's choice (the system clock; tests pass a ManualClock). */
  clock: Clock;
  /** The payment providers (default: Stripe, PayPal, BTCPay Server; tests may pass ones with short timeouts). */
  gatewayProviders?: readonly GatewayProvider[];
  /** Read operations on streaming replicas (DATABASE_READ_URL), started by the caller; absent: all on `db`. */
  reads?: ReadRouting;
}

/** Where a write's side effects go by default: the events outbox, the mail queue and the audit trail. */
export { defaultEffectSinks };

export async function createApp(options: AppOptions): Promise<express.Express> {
  const { db, config, logger } = options;
  const cursors = new CursorCodec(await serverSecret(db, 'cursor'), options.now);
  const limiter = createRateLimiter(config, logger, options.redis, options.rateLimitPrefix);
  const { clock } = options;
  const secrets = await loadSecretBox(db, config.webhookSecretsKey);
  const gateways = createGateways(options.gatewayProviders ?? gatewayProviders, config.gatewayBaseUrls, secrets);
  const unitOfWork = new UnitOfWork(db, {
    clock,
    statementTimeoutMs: config.statementTimeoutMs,
    sinks: options.effectSinks ?? defaultEffectSinks(clock),
    logger,
    sleep: options.sleep,
  });
  const handle = await createApi({
    db,
    readDb: db.withPlugin(new ReadOnlyPlugin()),
    reads: options.reads,
    unitOfWork,
    services: { config, logger, cursors, clock, realClock: clock, secrets, gateways },
    handlers: { ...defaultHandlers, ...options.handlers } as HandlerMap,
    limiter,
    idempotency: new Idempotency(db, unitOfWork, {
      errorAnswer: errorAnswer(config.publicUrl),
      logger,
      secrets,
      now: options.now,
      leaseMs: options.idempotencyLeaseMs ?? config.idempotencyLeaseMs,
      lockTimeoutMs: options.idempotencyLockTimeoutMs ?? config.idempotencyLockTimeoutMs,
    }),
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', config.trustProxy);
  app.use(requestId);
  // Tracing off (the default): no span middleware at all. On: the request's span is active for the rest of it.
  const tracer = activeTracer();
  if (tracer) app.use(requestSpans(tracer));
  app.use(requestMetrics());
  app.use(accessLog(logger));
  // The API first: every other route below is outside /dev/v1, and each router mounted ahead of it would be walked,
  // layer by layer, on every API request (a few µs each; license validation spends ~0.35 ms in all).
  app.use('/dev/v1', async (req: Request, res: Response, next: NextFunction) => {
    try {
      await handle(req, res);
    } catch (err) {
      next(err);
    }
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Ready = the database answers. Redis down only degrades rate limiting (counted per process), so it is
  // reported but does not take the instance out of service.
  app.get('/readyz', async (_req, res) => {
    const redis = limiter.redisState();
    try {
      await sql`select 1`.execute(db);
      res.json({ status: redis === 'down' ? 'degraded' : 'ready', database: 'up', redis });
    } catch {
      res.status(503).set('Retry-After', '5').json({ status: 'unavailable', database: 'down', redis });
    }
  });
  app.use(docsRouter());
  app.use(gatewayWebhookRouter({ db, gateways, logger, clock, publicUrl: config.publicUrl }));
  app.use(
    checkoutRouter({
      db,
      unitOfWork,
      services: { config, logger, cursors, clock, realClock: clock, secrets, gateways },
    }),
  );
  app.use(await consentRouter({ db, unitOfWork, services: { config, logger, clock }, limiter }));
  app.use(themePreviewRouter({ db, services: { clock, logger } }));
  app.use(analyticsDownloadRouter({ db, clock }));

  // RFC 8414 §3: the metadata of the issuer `<public URL>/dev/v1` lives at this path-inserted location (outside the
  // API's root), where standard OAuth clients look for it; the API serves the same document under /dev/v1 too.
  app.get(oauthMetadataPathInsertion, (_req, res) => {
    res.json(oauthServerMetadata(config.publicUrl));
  });

  app.use((_req: Request, _res: Response, next: NextFunction) => next(new ApiError('NOT_FOUND', 'No such route.')));
  // express recognises an error handler by its four parameters.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, err, config.publicUrl, logger);
  });
  return app;
}
