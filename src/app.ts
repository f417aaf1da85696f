// Builds the express app (no listen): the server and the tests both start here.
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
import { createApi } from './http/api';
import { readBody } from './http/body';
import { docsRouter } from './http/docs';
import { sendError } from './http/errors';
import type { HandlerMap } from './http/handler';
import { requestId } from './http/request-id';
import { CursorCodec } from './platform/cursor';

export interface AppOptions {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  /** Replaces handlers (tests inject failures this way). */
  handlers?: Partial<HandlerMap>;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
}

export async function createApp(options: AppOptions): Promise<express.Express> {
  const { db, config, logger } = options;
  const cursors = new CursorCodec(await serverSecret(db, 'cursor'), options.now);
  const handle = await createApi({
    db,
    services: { config, logger, cursors },
    handlers: { ...defaultHandlers, ...options.handlers } as HandlerMap,
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestId);
  app.use(accessLog(logger));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await sql`select 1`.execute(db);
      res.json({ status: 'ready', database: 'up' });
    } catch {
      res.status(503).set('Retry-After', '5').json({ status: 'unavailable', database: 'down' });
    }
  });
  app.use(docsRouter());

  app.use('/dev/v1', readBody, async (req: Request, res: Response, next: NextFunction) => {
    try {
      await handle(req, res);
    } catch (err) {
      next(err);
    }
  });

  app.use((_req: Request, _res: Response, next: NextFunction) => next(new ApiError('NOT_FOUND', 'No such route.')));
  // express recognises an error handler by its four parameters.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, err, config.publicUrl, logger);
  });
  return app;
}
