// Process entry: configuration, database (migrated), first-run demo, listen, graceful shutdown.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { openDatabase, DatabaseBusyError } from '../db/database';
import { whenNamingStops } from '../db/named-statements';
import { migrateToLatest } from '../db/migrate';
import { oldestLiveShopIds, shopCount } from '../db/queries/shops';
import { createApp } from './app';
import { ConfigError, loadConfig } from './config';
import { createHttpServer } from './http/client-error';
import { listen, PortInUseError } from './http/listen';
import { collectValidators } from './http/validators';
import { createLogger } from './logger';
import { openCliChannel } from './ops/cli-channel';
import { scheduleIdempotencyPurge } from './platform/idempotency';
import { systemClock } from './platform/clock';
import { createWorker } from './worker';
import { startMetricsEndpoint } from './http/metrics-endpoint';
import { watchDatabase } from './platform/metrics';
import { startTracing } from './platform/tracing';
import { openReadRouting } from './platform/read-routing';

async function main(): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  // Before the database opens, so its statements are traced; nothing is registered when it is off.
  const tracing = config.otlpEndpoint ? startTracing({ serviceName: 'merchant-developer-api' }) : undefined;
  whenNamingStops((reason) => logger.warn('named statements turned off', { reason }));
  const database = await openDatabase(config);
  if (database.created?.unpacked) logger.info('embedded database created from the schema image');
  else if (database.created) logger.info('embedded database created by initdb', { why: database.created.reason });
  const applied = await migrateToLatest(database.db, config.databaseMigrationUrl);
  if (applied.length) logger.info('migrations applied', { migrations: applied });
  // The embedded database is this process's alone: the CLI's commands come here to run (src/ops/cli-channel.ts).
  // Without it the server still serves; the CLI then reports the database in use, as it did before the channel.
  const cliChannel =
    database.kind === 'pglite'
      ? await openCliChannel(database, config.dataDir, logger).catch((err: unknown) => {
          logger.warn('the CLI cannot run beside this server', { error: (err as Error).message });
          return undefined;
        })
      : undefined;

  // Loaded only when REDIS_URL is set.
  const redis = config.redisUrl
    ? (require('./platform/redis') as typeof import('./platform/redis')).connectRedis(config.redisUrl, logger)
    : undefined;
  // Request validators compile on first use; the rest compile in the background once the server listens, when idle.
  const validators = collectValidators();
  // Read operations on streaming replicas (DATABASE_READ_URL), once their first check is done.
  const replicas = await openReadRouting({
    primary: database.db,
    urls: config.databaseReadUrls,
    maxLagMs: config.replicaMaxLagMs,
    poolSize: config.databasePoolSize,
    namedStatements: config.databaseNamedStatements,
    // Far past any read the API serves: a replica silent that long is not answering, and the primary serves the read.
    queryTimeoutMs: 30_000,
    redis,
    logger,
  });
  const closeReplicas = async () => replicas?.close();
  const app = await createApp({ db: database.db, config, logger, redis, clock: systemClock, reads: replicas?.routing });
  const server: Server = createHttpServer(app, config, logger);
  // Metrics on a port of their own (METRICS_PORT), never the API's.
  watchDatabase(database);
  const metrics = config.metrics ? await startMetricsEndpoint(config.metrics, logger) : undefined;
  // Requests being answered: background work (the validators' compile) waits while there are any.
  let requestsInFlight = 0;
  server.on('request', (_req, res: ServerResponse) => {
    requestsInFlight++;
    res.once('close', () => requestsInFlight--);
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  // A signal from the moment the port is bound is kept, and acted on once shutdown can run (below): with no handler,
  // Node's default would end the process at once, in the middle of the start's steps.
  let early: string | undefined;
  const keep = (signal: string) => (early ??= signal);
  process.on('SIGTERM', keep).on('SIGINT', keep);
  // The port is bound before the demo shop is made: a start that cannot listen leaves nothing behind, so the next
  // start (on a free port) still makes the demo and prints its keys, which are shown only once.
  await listen(server, config.port, config.host).catch(async (err: unknown) => {
    await cliChannel?.close();
    await redis?.close().catch(() => undefined);
    await metrics?.close();
    await closeReplicas();
    await database.close();
    throw err;
  });
  // From here on a signal shuts down: the steps below (the demo shop and its keys, the worker) finish before shutdown
  // closes what they use, so a signal during them still drains, prints the keys made and exits 0.
  let stopping = false;
  let worker: Awaited<ReturnType<typeof createWorker>> | undefined;
  let stopIdempotencyPurge = () => {};
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    // Stop accepting; let in-flight requests finish; idle keep-alive sockets are closed now, busy ones at the deadline.
    server.close(async () => {
      let code = 0;
      try {
        await startSteps.catch(() => undefined);
        stopIdempotencyPurge();
        await worker?.stop();
        await cliChannel?.close();
        await redis?.close().catch(() => undefined);
        await metrics?.close();
        await closeReplicas();
        await database.close();
        await tracing?.shutdown().catch(() => undefined);
        logger.info('stopped');
      } catch (err) {
        code = 1;
        logger.error('shutdown failed', { error: (err as Error).message });
      } finally {
        process.exit(code);
      }
    });
    server.closeIdleConnections();
    setTimeout(() => {
      for (const s of sockets) s.destroy();
    }, config.shutdownGraceSeconds * 1000).unref();
  };
  // Added before the keeper is removed: a signal's listeners never drop to none, for Node then stops watching the
  // signal and a signal caught but not yet handed to a listener is lost (the process neither stops nor dies).
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.off('SIGTERM', keep).off('SIGINT', keep);

  const finishStart = async () => {
    // Loaded only when used: the demo's fixture validator costs ~170 ms of every start otherwise.
    let demo: Awaited<ReturnType<typeof import('./ops/admin').createDemo>> | undefined;
    if (config.seedDemo && (await shopCount(database.db)) === 0) {
      const { createDemo } = require('./ops/admin') as typeof import('./ops/admin');
      demo = await createDemo(
        { db: database.db, config, clock: systemClock },
        { checkoutBaseUrl: config.checkoutBaseUrl },
      );
    }
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const base = `http://localhost:${port}`;
    logger.info('listening', {
      port,
      database: database.kind,
      replicas: config.databaseReadUrls.length,
      startup_ms: Date.now() - started,
      tracing: tracing !== undefined,
    });
    // Webhook deliveries and mail, in this process unless WEBHOOK_WORKER=off (then `npm run worker` does them).
    // Not started once shutdown has begun; shutdown stops it either way.
    worker =
      config.webhookWorker && !stopping ? await createWorker(database.db, config, logger, systemClock) : undefined;
    if (!stopping) {
      worker?.start({ idleFirst: true });
      // Expired idempotency keys (past their 24 h replay window) are deleted every 10 minutes.
      stopIdempotencyPurge = scheduleIdempotencyPurge(database.db, logger, systemClock);
    }

    // Human-facing start banner on stdout (the demo key is shown this once, on the first start only).
    console.log(
      `\nMerchant Developer API listening on ${base}  (database: ${database.kind === 'pglite' ? `embedded, ${config.dataDir}` : 'PostgreSQL'})`,
    );
    console.log(`  API:  ${base}/dev/v1    Docs: ${base}/docs    Spec: ${base}/openapi.yaml`);
    if (demo) {
      console.log(
        `\nCreated a demo shop (${demo.shop_id}) with sample products, and its test twin. Keys, shown only now:`,
      );
      console.log(`  Live key (live mode; a live shop never offers the SANDBOX gateway):\n    ${demo.live_key}`);
      console.log(
        `  Test key (use this to walk the README: create an order, pay on the sandbox page, receive the webhook):\n    ${demo.test_key}`,
      );
      console.log(`Try: curl -H "Authorization: Bearer ${demo.test_key}" ${base}/dev/v1/me`);
      console.log(`A sample pending order in TEST mode, to pay with the SANDBOX gateway: ${demo.test_checkout_url}\n`);
    } else {
      // The CLI works beside this server (on the embedded database it runs its commands here): a hint to paste as is.
      const [first, ...more] = await oldestLiveShopIds(database.db, 2);
      console.log(
        first
          ? `  Create an API key${more.length ? ' (for the oldest shop)' : ''} with: npm run -s cli -- key create --shop ${first} --mode test --scopes "*"\n`
          : '  Create a shop with: npm run -s cli -- shop create --name NAME, then a key: key create --shop <its id> --mode test --scopes "*"\n',
      );
    }
    // Last, once the start's own steps are done: they were waiting behind its slices.
    if (stopping) return;
    validators
      .compileInBackground({ busy: () => requestsInFlight > 0 })
      .catch((err: unknown) => logger.error('a request validator does not compile', { error: (err as Error).message }));
  };
  const startSteps = finishStart();
  if (early) shutdown(early);
  await startSteps;
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DatabaseBusyError || err instanceof PortInUseError)
    console.error(`Cannot start: ${err.message}`);
  else console.error(err);
  process.exit(1);
});
