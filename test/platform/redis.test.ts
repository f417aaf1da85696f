// connectRedis (src/platform/redis.ts) against a redis-server this test starts on a port of its own (never the
// machine's shared one): it never throws or queues while Redis is away, says so once, reconnects within about a
// second when Redis comes up, and says that once.
import type { ChildProcess } from 'node:child_process';
import { connectRedis, type RedisClient } from '../../src/platform/redis';
import { memoryLogger } from '../helpers/test-app';
import { freePort, startRedis } from '../helpers/redis-server';

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

async function waitFor(check: () => boolean, ms: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (check()) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`condition not met in ${ms} ms`);
}

const messages = (logs: Record<string, unknown>[], level: string) =>
  logs.filter((l) => l.level === level).map((l) => l.message);
const down = 'redis unavailable; rate limits fall back to this process memory';
const back = 'redis available again; rate limits shared through redis';

let client: RedisClient | undefined;
let redis: ChildProcess | undefined;
afterEach(async () => {
  await client?.destroy();
  client = undefined;
  if (redis) await stop(redis);
  redis = undefined;
});

test('Redis up from the start: connected, and nothing logged about availability', async () => {
  const port = await freePort();
  redis = await startRedis(port);
  const { logger, logs } = memoryLogger();
  client = connectRedis(`redis://127.0.0.1:${port}`, logger);
  await waitFor(() => client!.isReady, 5000);
  expect(await client.ping()).toBe('PONG');
  expect(messages(logs, 'warn')).toEqual([]);
  expect(messages(logs, 'info')).toEqual([]);
});

test('Redis away: commands fail at once (no queue), one warning however many retries; back: one info, working', async () => {
  const port = await freePort();
  const { logger, logs } = memoryLogger();
  client = connectRedis(`redis://127.0.0.1:${port}`, logger);
  // Several reconnect attempts fail (100, 200, 400 ms apart): still one warning, with the cause.
  await new Promise((r) => setTimeout(r, 900));
  expect(messages(logs, 'warn')).toEqual([down]);
  expect(logs.find((l) => l.message === down)?.error).toEqual(expect.any(String));
  const started = Date.now();
  await expect(client.ping()).rejects.toThrow();
  expect(Date.now() - started).toBeLessThan(500);

  redis = await startRedis(port);
  // The back-off is capped low enough that the client is back within about a second or two, not seconds later.
  await waitFor(() => client!.isReady, 3000);
  expect(await client.ping()).toBe('PONG');
  await waitFor(() => messages(logs, 'info').length > 0, 1000);
  expect(messages(logs, 'info')).toEqual([back]);

  // Down again: warned again (once), and back again: told again.
  await stop(redis);
  await waitFor(() => messages(logs, 'warn').length === 2, 3000);
  redis = await startRedis(port);
  await waitFor(() => client!.isReady, 3000);
  await waitFor(() => messages(logs, 'info').length === 2, 1000);
  expect(messages(logs, 'warn')).toEqual([down, down]);
  expect(messages(logs, 'info')).toEqual([back, back]);
});
