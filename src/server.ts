// Process entry: configuration, database (migrated), first-run demo, listen, graceful shutdown.
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { openDatabase, DatabaseBusyError } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { shopCount } from '../db/queries/shops';
import { createApp } from './app';
import { ConfigError, loadConfig } from './config';
import { createDemo } from './domain/admin';
import { createLogger } from './logger';
import { scheduleIdempotencyPurge } from './platform/idempotency';
import { connectRedis } from './platform/redis';

async function main(): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const database = await openDatabase(config);
  const applied = await migrateToLatest(database.db);
  if (applied.length) logger.info('migrations applied', { migrations: applied });

  let demo: Awaited<ReturnType<typeof createDemo>> | undefined;
  if (config.seedDemo && (await shopCount(database.db)) === 0) demo = await createDemo(database.db);

  const redis = config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined;
  const app = await createApp({ db: database.db, config, logger, redis });
  const server: Server = createServer(app);
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = `http://localhost:${port}`;
  logger.info('listening', { port, database: database.kind, startup_ms: Date.now() - started });
  // Expired idempotency keys (past their 24 h replay window) are deleted every 10 minutes.
  const stopIdempotencyPurge = scheduleIdempotencyPurge(database.db, logger);

  // Human-facing start banner on stdout (the demo key is shown this once, on the first start only).
  console.log(
    `\nMerchant Developer API listening on ${base}  (database: ${database.kind === 'pglite' ? `embedded, ${config.dataDir}` : 'PostgreSQL'})`,
  );
  console.log(`  API:  ${base}/dev/v1    Docs: ${base}/docs    Spec: ${base}/openapi.yaml`);
  if (demo) {
    console.log(
      `\nCreated a demo shop (${demo.shop_id}) with sample products. Its full-access API key, shown only now:`,
    );
    console.log(`  ${demo.key}`);
    console.log(`Try: curl -H "Authorization: Bearer ${demo.key}" ${base}/dev/v1/me\n`);
  } else {
    console.log('  Create an API key with: npm run -s cli -- key create --shop <shop id> --scopes "*"\n');
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    stopIdempotencyPurge();
    // Stop accepting; let in-flight requests finish; idle keep-alive sockets are closed now, busy ones at the deadline.
    server.close(async () => {
      let code = 0;
      try {
        await redis?.close().catch(() => undefined);
        await database.close();
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
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DatabaseBusyError) console.error(`Cannot start: ${err.message}`);
  else console.error(err);
  process.exit(1);
});
