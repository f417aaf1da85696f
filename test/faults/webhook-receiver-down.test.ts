// Fault test: webhook receivers down for the whole retry schedule but its last attempt. The real server process
// (orders created and paid through the API, webhook worker off) and a delivery worker process of its own
// (test/helpers/webhook-worker-process.ts, running src/worker/webhook-delivery.ts) against one PostgreSQL database.
// Three endpoints: two on a receiver that answers 500 to everything, one on a port where nothing listens (refused).
// The worker's clock is moved forward over stdin to each retry's due time, so the ~28 h schedule takes seconds; the
// receivers come back before the last attempt, which must then deliver every (event, endpoint) pair: none lost,
// each signed as Standard Webhooks says, and every attempt logged when the schedule says. PostgreSQL run only
// (DATABASE_URL set): the embedded database cannot be opened by two processes.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/ops/admin';
import { seedFixtures } from '../../src/ops/fixtures/fixtures';
import { MAX_ATTEMPTS, JITTER, retrySchedule } from '../../src/worker/webhook-delivery';
import { freePort } from '../helpers/redis-server';
import { Receiver } from '../helpers/webhook-receiver';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { send, sleep } from './load';
import { systemClock } from '../../src/platform/clock';
import { describeInPostgresRun } from '../helpers/postgres-run';

const root = join(__dirname, '..', '..');
const ORDERS = 4;
const EVENTS = ['order:created', 'order:paid', 'order:completed'] as const;

/** The delivery worker process; its clock offset is set over stdin and acknowledged on stdout. */
class WorkerProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<void>;
  constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  static async start(databaseUrl: string): Promise<WorkerProcess> {
    const child = spawn(
      join(root, 'node_modules', '.bin', 'tsx'),
      [join(root, 'test', 'helpers', 'webhook-worker-process.ts')],
      {
        cwd: root,
        detached: true, // tsx runs the script in a child of its own: signals go to the process group
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          LOG_LEVEL: 'warn',
          WORKER_STOP_ON_STDIN_END: '1',
          WORKER_CLOCK_FROM_STDIN: '1',
          WORKER_TIMEOUT_MS: '5000',
        },
      },
    );
    const worker = new WorkerProcess(child);
    await waitFor(
      'the worker process to be ready',
      async () => /^ready \d+$/m.test(worker.stdout) || child.exitCode !== null,
      30_000,
    );
    if (!/^ready \d+$/m.test(worker.stdout)) throw new Error(`worker did not start:\n${worker.stderr}`);
    return worker;
  }

  async setClockOffset(ms: number): Promise<void> {
    const ack = `clock-offset ${ms}\n`;
    const seen = this.stdout.split(ack).length - 1;
    this.child.stdin!.write(ack);
    await waitFor(
      `the worker to take clock offset ${ms}`,
      async () => this.stdout.split(ack).length - 1 > seen,
      10_000,
    );
  }

  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await this.exited;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

const describeWithPostgres = describeInPostgresRun(
  'webhook-receiver-down.test.ts',
  'it runs the server and a delivery worker as processes of their own ' +
    'against one PostgreSQL database, so it belongs to the PostgreSQL run (DATABASE_URL set); the embedded (PGlite) ' +
    'database cannot be opened by two processes.',
);

describeWithPostgres('webhook receivers down for the retry schedule', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;
  let worker: WorkerProcess | undefined;
  const failing = new Receiver(); // answers 500 while down
  let refusedPort: number; // nothing listens here while down
  const late = new Receiver(); // listens on refusedPort once the receivers are back
  let key: string;
  let shopId: string;
  let products: string[];

  beforeAll(async () => {
    database = await createTestDatabase();
    const shop = await admin.createShop(database.db, { name: 'Webhook Shop', plan: 'business' });
    shopId = shop.id;
    key = (await admin.createApiKey(database.db, { shopId, scopes: ['*'] })).key;
    const row = (await shopById(database.db, shopId))!;
    products = (
      await database.db
        .transaction()
        .execute((trx) =>
          seedFixtures(trx, row, { products: [{ title: 'Guide', slug: 'guide', price: '9.00' }] }, systemClock),
        )
    ).products;
    await failing.start(0);
    refusedPort = await freePort();
    server = await startServerProcess({
      DATABASE_URL: database.url!,
      REDIS_URL: '',
      WEBHOOK_WORKER: 'off', // the worker process below is the only one delivering
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });
  }, 90_000);

  afterAll(async () => {
    await worker?.kill();
    await server?.kill();
    await failing.stop();
    await late.stop();
    await database?.close();
  }, 60_000);

  const deliveries = () =>
    database.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id', 'event_id', 'status', 'attempts', 'next_attempt_at', 'lease_token'])
      .where('shop_id', '=', shopId)
      .execute();

  test('every event reaches every endpoint once the receivers are back for the last attempt, on schedule', async () => {
    const started = Date.now();
    const urls = {
      '/one': `http://127.0.0.1:${failing.port}/one`,
      '/two': `http://127.0.0.1:${failing.port}/two`,
      '/three': `http://127.0.0.1:${refusedPort}/three`,
    };
    const secrets = new Map<string, string>(); // path -> endpoint secret
    const endpointPaths = new Map<string, string>(); // endpoint id -> path
    for (const [path, url] of Object.entries(urls)) {
      const created = await send(server!.base, {
        kind: 'webhook',
        method: 'post',
        path: '/dev/v1/webhooks',
        key,
        body: { url, events: EVENTS },
      });
      expect({ status: created.status, contract: created.contract }).toEqual({ status: 201, contract: undefined });
      endpointPaths.set(created.id!, path);
      // The secret is shown once, in the creation answer.
      secrets.set(path, String(created.data!.secret));
    }

    worker = await WorkerProcess.start(database.url!);

    const orderUniqids: string[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const order = await send(server!.base, {
        kind: 'order',
        method: 'post',
        path: '/dev/v1/orders',
        key,
        idempotencyKey: `webhook-order-${i}`,
        body: { email: `buyer${i}@example.com`, items: [{ product_id: products[0], quantity: 1 }] },
      });
      expect({ status: order.status, contract: order.contract }).toEqual({ status: 201, contract: undefined });
      const paid = await send(server!.base, {
        kind: 'complete',
        method: 'post',
        path: `/dev/v1/orders/${order.id}/complete`,
        key,
        body: {},
      });
      expect({ status: paid.status, contract: paid.contract }).toEqual({ status: 200, contract: undefined });
      orderUniqids.push(String(order.data!.uniqid));
    }
    const events = await database.db
      .selectFrom('events')
      .select(['id', 'type', 'data'])
      .where('shop_id', '=', shopId)
      .where('type', 'in', [...EVENTS])
      .execute();
    expect(events.length).toBe(ORDERS * EVENTS.length);
    const expectedPairs = events.flatMap((e) => Object.keys(urls).map((path) => `${path} ${e.id}`)).sort();

    // Walk the schedule: once every delivery has made its k-th attempt, move the worker's clock past the latest
    // (k+1)-th due time. The first wait (5 s) passes in real time; the clock moves only while no attempt is in flight,
    // so no attempt's logged wait includes a jump. The receivers come back only after the 7th (the last failing)
    // attempt.
    let offset = 0;
    const steps: { attempt: number; waited_ms: number; clock_h: number }[] = [];
    for (let k = 1; k < MAX_ATTEMPTS; k++) {
      const stepStarted = Date.now();
      await waitFor(
        `every delivery to have made attempt ${k}`,
        async () => {
          const rows = await deliveries();
          // Made and recorded: a claim counts its attempt at once, its outcome settles it (the lease let go).
          return rows.length === expectedPairs.length && rows.every((r) => r.attempts >= k && r.lease_token === null);
        },
        20_000,
      );
      const rows = await deliveries();
      // Nothing runs ahead: no delivery went past attempt k+1 (the (k+1)-th may already be under way at k = 1, whose
      // 5 s wait passes in real time), and none succeeded or gave up.
      expect(rows.filter((r) => r.attempts > k + 1 || r.status !== 'RETRYING')).toEqual([]);
      if (k === MAX_ATTEMPTS - 1) {
        failing.down = false;
        late.down = false;
        await late.start(refusedPort);
        // Back up, but the last attempt is ~10 h away on the worker's clock: nothing is delivered before it moves.
        await sleep(1_000);
        expect(failing.hits.filter((h) => h.answered === 204).length + late.hits.length).toBe(0);
      }
      if (k > 1) {
        expect(rows.every((r) => r.attempts === k)).toBe(true);
        const latestDue = Math.max(...rows.map((r) => r.next_attempt_at!.getTime()));
        offset = Math.max(offset, latestDue + 1_000 - Date.now());
        await worker.setClockOffset(offset);
      }
      steps.push({ attempt: k, waited_ms: Date.now() - stepStarted, clock_h: Math.round(offset / 36_000) / 100 });
    }
    await waitFor(
      'every delivery to succeed',
      async () => (await deliveries()).every((r) => r.status === 'SUCCEEDED'),
      30_000,
    ).catch(async (err: Error) => {
      const failed = await database.db
        .selectFrom('webhook_attempts')
        .select(['url', 'attempt', 'status', 'response_status', 'error'])
        .where('shop_id', '=', shopId)
        .where('attempt', '=', MAX_ATTEMPTS)
        .where('status', '!=', 'SUCCEEDED')
        .execute();
      const states = failed.map((a) => JSON.stringify(a));
      throw new Error(`${err.message}\nclock offset ${offset}\n${states.join('\n')}\n${worker!.stderr.slice(-3000)}`);
    });

    // None lost: every (event, endpoint) pair succeeded, on the last attempt of the schedule.
    const final = await deliveries();
    expect(final.length).toBe(expectedPairs.length);
    expect(final.filter((r) => r.status !== 'SUCCEEDED' || r.attempts !== MAX_ATTEMPTS)).toEqual([]);

    // Each endpoint got each event (at least once) with a 2xx, and nothing it was not subscribed to.
    const accepted = [...failing.hits, ...late.hits].filter((h) => h.answered === 204);
    expect([...new Set(accepted.map((h) => `${h.path} ${h.id}`))].sort()).toEqual(expectedPairs);
    // The 500 receiver saw every failed attempt of its two endpoints.
    expect(failing.hits.filter((h) => h.answered === 500).length).toBe(2 * events.length * (MAX_ATTEMPTS - 1));

    // Every request is signed with its endpoint's secret, as Standard Webhooks verifies it. The timestamp is the
    // worker's (moved) clock, so the verifier's "now" is set to it: the 5-minute tolerance is not what is tested.
    const byId = new Map(events.map((e) => [e.id, e]));
    for (const hit of [...failing.hits, ...late.hits]) {
      const timestamp = Number(hit.headers['webhook-timestamp']) * 1000;
      const now = jest.spyOn(Date, 'now').mockReturnValue(timestamp);
      try {
        const payload = new Webhook(secrets.get(hit.path)!).verify(hit.body, {
          'webhook-id': String(hit.headers['webhook-id']),
          'webhook-timestamp': String(hit.headers['webhook-timestamp']),
          'webhook-signature': String(hit.headers['webhook-signature']),
        }) as { event: string; data: { uniqid: string } };
        const event = byId.get(hit.id)!;
        expect({ event: payload.event, data: payload.data }).toEqual({
          event: event.type,
          data: JSON.parse(event.data),
        });
        expect(orderUniqids).toContain(payload.data.uniqid);
      } finally {
        now.mockRestore();
      }
    }

    // The log has every attempt, each when the schedule said: attempt k+1 never before attempt k's due time, which
    // is the schedule's wait (within its jitter) after attempt k.
    const attempts = await database.db
      .selectFrom('webhook_attempts')
      .select([
        'delivery_id',
        'endpoint_id',
        'attempt',
        'status',
        'response_status',
        'error',
        'duration_ms',
        'next_retry_at',
        'attempted_at',
      ])
      .where('shop_id', '=', shopId)
      .orderBy('delivery_id')
      .orderBy('attempt')
      .execute();
    expect(attempts.length).toBe(final.length * MAX_ATTEMPTS);
    const problems: string[] = [];
    const gaps: number[][] = retrySchedule.map(() => []);
    for (const delivery of final) {
      const log = attempts.filter((a) => a.delivery_id === delivery.id);
      const path = endpointPaths.get(delivery.endpoint_id)!;
      expect(log.map((a) => a.attempt)).toEqual(Array.from({ length: MAX_ATTEMPTS }, (_, i) => i + 1));
      for (const a of log) {
        const last = a.attempt === MAX_ATTEMPTS;
        const where = `${path} ${delivery.id} attempt ${a.attempt}`;
        if (last) {
          if (a.status !== 'SUCCEEDED' || a.response_status !== 204 || a.next_retry_at)
            problems.push(`${where}: ${a.status} ${a.response_status}`);
          continue;
        }
        const failedAsExpected =
          path === '/three'
            ? a.response_status === null && /ECONNREFUSED/.test(a.error ?? '')
            : a.response_status === 500;
        if (a.status !== 'RETRYING' || !failedAsExpected)
          problems.push(`${where}: ${a.status} ${a.response_status} ${a.error}`);
        const wait = a.next_retry_at!.getTime() - a.attempted_at!.getTime();
        const base = retrySchedule[a.attempt - 1]!;
        gaps[a.attempt - 1]!.push(wait);
        // next_retry_at is counted from when the outcome was recorded: the attempt's own duration comes on top.
        if (wait < base * (1 - JITTER) - 1 || wait > base * (1 + JITTER) + (a.duration_ms ?? 0) + 2_000)
          problems.push(`${where}: waits ${wait} ms, schedule says ${base} ms ±${JITTER * 100}%`);
        const nextAttempt = log[a.attempt]!;
        if (nextAttempt.attempted_at!.getTime() < a.next_retry_at!.getTime())
          problems.push(`${where}: attempt ${a.attempt + 1} ran before it was due`);
      }
    }
    expect(problems).toEqual([]);

    console.log(
      `webhook-receiver-down: ${JSON.stringify({
        endpoints: Object.keys(urls).length,
        orders: ORDERS,
        events: events.length,
        deliveries: final.length,
        attempts_logged: attempts.length,
        receiver_500_hits: failing.hits.filter((h) => h.answered === 500).length,
        delivered_hits: accepted.length,
        duplicates: accepted.length - expectedPairs.length,
        signatures_verified: failing.hits.length + late.hits.length,
        worker_clock_h: Math.round(offset / 36_000) / 100,
        wait_ms_min_max_by_attempt: gaps.map((g) => [Math.min(...g), Math.max(...g)]),
        steps,
        test_ms: Date.now() - started,
      })}`,
    );
  }, 90_000);
});
