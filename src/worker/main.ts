// `npm run worker`: the background worker alone (no HTTP), for deployments that scale it apart from the API.
// Any number may run against the same PostgreSQL: each claims its own rows (SKIP LOCKED). On the embedded database
// only one process can open the data directory, so there the worker runs inside `npm start`.
import { openDatabase } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { whenNamingStops } from '../../db/named-statements';
import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { systemClock } from '../platform/clock';
import { startMetricsEndpoint } from '../http/metrics-endpoint';
import { watchDatabase } from '../platform/metrics';
import { startTracing } from '../platform/tracing';
import { createWorker } from '.';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const tracing = config.otlpEndpoint ? startTracing({ serviceName: 'merchant-developer-api-worker' }) : undefined;
  whenNamingStops((reason) => logger.warn('named statements turned off', { reason }));
  const database = await openDatabase(config);
  await migrateToLatest(database.db, config.databaseMigrationUrl);
  // Its own METRICS_PORT when it runs beside an API process on the same host.
  watchDatabase(database);
  const metrics = config.metrics ? await startMetricsEndpoint(config.metrics, logger) : undefined;
  const worker = await createWorker(database.db, config, logger, systemClock);
  worker.start();
  logger.info('worker started', { database: database.kind, pid: process.pid });
  const stop = async (signal: string) => {
    logger.info('worker stopping', { signal });
    await worker.stop();
    await metrics?.close();
    await database.close();
    await tracing?.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
