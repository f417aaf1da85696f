// One log line per request when its response finishes. It names the route and the shop, never a header or body,
// so credentials cannot leak into logs.
import type { RequestHandler } from 'express';
import type { Logger } from '../logger';

export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    // A logger that would drop the line (LOG_LEVEL=silent, or above info) costs no listener and no line per request.
    if (logger.silent || !logger.isInfoEnabled()) return next();
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info('request', {
        method: req.method,
        route: res.locals.route ?? null,
        operation_id: res.locals.operationId ?? null,
        status: res.statusCode,
        duration_ms: Math.round(durationMs * 100) / 100,
        shop_id: res.locals.shopId ?? null,
        credential_id: res.locals.credentialId ?? null,
        request_id: res.locals.requestId,
      });
    });
    next();
  };
}
