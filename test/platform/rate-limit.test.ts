// Rate limiting: per shop by plan, per IP without a credential, headers on every authenticated response, and a
// Redis outage (a redis-server this test starts on its own port, never the machine's shared one) costs nothing.
import type { ChildProcess } from 'node:child_process';
import { createClient } from 'redis';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { freePort, startRedis } from '../helpers/redis-server';

const limits = { RATE_LIMIT_FREE: '3', RATE_LIMIT_PRO: '5', RATE_LIMIT_ANONYMOUS: '2' };

describe('limits by plan', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { ...limits, REDIS_URL: process.env.REDIS_URL } });
  });
  afterAll(() => t.close());

  test('the limit-th request passes, the next is 429 RATE_LIMITED with Retry-After', async () => {
    const shop = await t.createShop({ plan: 'free' });
    const { key } = await t.createKey(shop, ['*']);
    const before = Math.floor(Date.now() / 1000);
    // The 60 s window opens with the first request, somewhere between `before` and its answer (which a busy machine
    // can delay by seconds): the reset lies within a minute of that span, whatever the machine's load.
    let firstAnswered: number | undefined;
    for (let i = 1; i <= 3; i++) {
      const res = await t.http.get('/dev/v1/me').set(bearer(key));
      firstAnswered ??= Math.ceil(Date.now() / 1000);
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(3 - i));
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(before);
      expect(reset).toBeLessThanOrEqual(firstAnswered + 61);
    }
    const blocked = await t.http.get('/dev/v1/me').set(bearer(key));
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('RATE_LIMITED');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.headers['x-ratelimit-remaining']).toBe('0');
  });

  test('a shop on another plan sees its own limit; another key of the same shop shares it', async () => {
    const pro = await t.createShop({ plan: 'pro' });
    const first = await t.createKey(pro, ['*']);
    const second = await t.createKey(pro, ['products.read']);
    const res = await t.http.get('/dev/v1/me').set(bearer(first.key));
    expect(res.headers['x-ratelimit-limit']).toBe('5');
    for (let i = 0; i < 3; i++) await t.http.get('/dev/v1/me').set(bearer(first.key));
    const shared = await t.http.get('/dev/v1/me').set(bearer(second.key));
    expect(shared.headers['x-ratelimit-remaining']).toBe('0');
    expect((await t.http.get('/dev/v1/me').set(bearer(second.key))).status).toBe(429);
  });

  test('requests refused for scope still count (they reached an authenticated shop)', async () => {
    const shop = await t.createShop({ plan: 'free' });
    const { key } = await t.createKey(shop, ['orders.read']);
    for (let i = 0; i < 3; i++) expect((await t.http.get('/dev/v1/products').set(bearer(key))).status).toBe(403);
    expect((await t.http.get('/dev/v1/products').set(bearer(key))).status).toBe(429);
  });
});

test('requests without a valid credential are limited per IP', async () => {
  const t = await startTestApp({ env: limits });
  try {
    // Until Redis is ready the limiter counts in memory and then moves to Redis (by design): counting across that
    // move would make the third request's fate depend on connection timing.
    await waitFor(async () => !t.redis || t.redis.isReady);
    expect((await t.http.get('/dev/v1/me')).status).toBe(401);
    expect((await t.http.get('/dev/v1/me').set(bearer(`mdk_${'Z'.repeat(43)}`))).status).toBe(401);
    const blocked = await t.http.get('/dev/v1/me');
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('RATE_LIMITED');
  } finally {
    await t.close();
  }
});

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

test('Redis stopping mid-run costs no request, readyz shows it, and limiting resumes through Redis when it is back', async () => {
  const port = await freePort();
  let redis = await startRedis(port);
  const url = `redis://127.0.0.1:${port}`;
  const t = await startTestApp({ env: { RATE_LIMIT_FREE: '1000', REDIS_URL: url } });
  const probe = createClient({ url, socket: { reconnectStrategy: 100 } });
  probe.on('error', () => undefined); // it sees the outage too; that is the point
  await probe.connect();
  try {
    await waitFor(async () => (await t.http.get('/readyz')).body.redis === 'up');
    const shop = await t.createShop();
    const { key } = await t.createKey(shop, ['*']);
    for (let i = 0; i < 3; i++) expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
    const counted = await probe.keys('rl:test:*');
    expect(counted.length).toBeGreaterThan(0); // the counter lives in Redis

    redis.kill('SIGKILL');
    await new Promise((r) => redis.once('exit', r));
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await t.http.get('/dev/v1/me').set(bearer(key));
      statuses.push(res.status);
      expect(res.headers['x-ratelimit-limit']).toBe('1000');
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    const degraded = await t.http.get('/readyz');
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ status: 'degraded', redis: 'down', database: 'up' });

    redis = await startRedis(port);
    await waitFor(async () => (await t.http.get('/readyz')).body.redis === 'up', 15_000);
    await waitFor(async () => probe.isReady);
    expect(await probe.keys('rl:test:*')).toEqual([]); // a fresh Redis: nothing counted yet
    expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
    await waitFor(async () => (await probe.keys('rl:test:*')).length > 0);
  } finally {
    await probe.close().catch(() => undefined);
    await t.close();
    redis.kill('SIGKILL');
  }
});

test('Redis down at start: requests are served and limited in memory; once Redis comes up, counters move there', async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const t = await startTestApp({ env: { RATE_LIMIT_FREE: '1000', REDIS_URL: url } });
  let redis: ChildProcess | undefined;
  const probe = createClient({ url, socket: { reconnectStrategy: 100 } });
  probe.on('error', () => undefined);
  try {
    const shop = await t.createShop();
    const { key } = await t.createKey(shop, ['*']);
    for (let i = 0; i < 5; i++) {
      const res = await t.http.get('/dev/v1/me').set(bearer(key));
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(999 - i)); // counted, in memory
    }
    expect((await t.http.get('/readyz')).body).toMatchObject({ status: 'degraded', redis: 'down' });

    redis = await startRedis(port);
    await waitFor(async () => (await t.http.get('/readyz')).body.redis === 'up', 15_000);
    await probe.connect();
    expect((await t.http.get('/dev/v1/me').set(bearer(key))).status).toBe(200);
    await waitFor(async () => (await probe.keys('rl:test:*')).length > 0);
  } finally {
    await probe.close().catch(() => undefined);
    await t.close();
    redis?.kill('SIGKILL');
  }
});
