// The Redis connection used for rate-limit counters. Redis is never required for serving: commands fail at once
// while it is down (no offline queue), and the client reconnects by itself with back-off.
import { createClient } from 'redis';
import type { Logger } from '../logger';

function create(url: string) {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2000,
      reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 5000),
    },
  });
}

export type RedisClient = ReturnType<typeof create>;

export function connectRedis(url: string, logger: Logger): RedisClient {
  const client = create(url);
  let wasDown = false;
  client.on('error', (err: Error) => {
    if (!wasDown)
      logger.warn('redis unavailable; rate limits fall back to this process memory', { error: err.message });
    wasDown = true;
  });
  client.on('ready', () => {
    if (wasDown) logger.info('redis available again; rate limits shared through redis');
    wasDown = false;
  });
  // The first connection attempt may fail; the reconnect strategy keeps trying in the background.
  client.connect().catch(() => undefined);
  return client;
}
