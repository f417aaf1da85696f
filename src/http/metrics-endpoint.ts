// The Prometheus endpoint: `GET /metrics` on a server of its own (METRICS_PORT, bound to 127.0.0.1 unless
// METRICS_HOST says otherwise), never on the API's port, so a load balancer in front of the API cannot expose it.
// With METRICS_TOKEN set, a scrape must carry `Authorization: Bearer <token>`, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger';
import { registry } from '../platform/metrics';

export interface MetricsEndpoint {
  /** The port it listens on (the one asked for, or the one given for port 0). */
  port: number;
  close(): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether the Authorization header carries the token; digests first, so lengths leak nothing either. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (.+)$/i.exec(header ?? '')?.[1] ?? '';
  return timingSafeEqual(digest(given), digest(token));
}

export function metricsServer(options: { token: string | undefined }): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    if (options.token !== undefined && !bearerMatches(req.headers.authorization, options.token)) {
      res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer realm="metrics"' });
      res.end('A Bearer token (METRICS_TOKEN) is required.\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${(err as Error)?.message}\n`);
      },
    );
  });
}

/**
 * Serves the metrics until closed. A port already taken (two processes on one host) is logged, not fatal: the
 * API and the worker go on without their metrics rather than not at all.
 */
export function startMetricsEndpoint(
  options: { port: number; host: string; token: string | undefined },
  logger: Logger,
): Promise<MetricsEndpoint | undefined> {
  const server = metricsServer(options);
  return new Promise((resolve) => {
    server.once('error', (err) => {
      logger.warn('metrics endpoint not started', { error: err.message, port: options.port, host: options.host });
      resolve(undefined);
    });
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo;
      logger.info('metrics endpoint listening', { host: options.host, port, token: options.token !== undefined });
      resolve({ port, close: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });
}
