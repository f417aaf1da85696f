// Webhook delivery across OS processes: several workers (test/helpers/webhook-worker-process.ts, each a process of
// its own) against one PostgreSQL outbox deliver every (event, endpoint) pair exactly once; and a worker killed
// (SIGKILL) in the middle of a delivery delays it, never loses it: once its lease has run out another worker
// delivers it again (at least once: the receiver sees that webhook-id twice) and everything else exactly once.
// PostgreSQL only (DATABASE_URL set): the embedded database cannot be opened by several processes.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import * as admin from '../../src/ops/admin';
import { createWebhook } from '../../src/domain/webhooks/webhooks';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { systemClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { loadSecretBox, type SecretBox } from '../../src/platform/secret-box';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { Receiver } from '../helpers/webhook-receiver';

const pgTest = process.env.DATABASE_URL ? test : test.skip;

const root = join(__dirname, '..', '..');
const tsxBin = join(root, 'node_modules', '.bin', 'tsx');
const workerScript = join(root, 'test', 'helpers', 'webhook-worker-process.ts');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  workers: readonly WorkerProcess[] = [],
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) {
      // What the workers said (errors go to their stderr) is usually why.
      const output = workers.map((w, i) => `worker ${i} stderr:\n${w.stderr.slice(-2000)}`).join('\n');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${output}`);
    }
    await sleep(25);
  }
}

/** One worker process. tsx runs the script in a child of its own, so signals go to the process group. */
class WorkerProcess {
  stdout = '';
  stderr = '';
  /** Deliveries this process claimed, from its `claimed <n>` lines. */
  claimed = 0;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stdout!.on('data', (d: Buffer) => {
      this.stdout += d.toString();
      this.claimed = [...this.stdout.matchAll(/^claimed (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    });
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  static async start(databaseUrl: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
    const child = spawn(tsxBin, [workerScript], {
      cwd: root,
      detached: true,
      // stdin stays open as long as this process lives: when it ends (even killed), the worker stops.
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', WORKER_STOP_ON_STDIN_END: '1', ...env },
    });
    const worker = new WorkerProcess(child);
    running.add(worker);
    let gone = false;
    void worker.exited.then(() => (gone = true));
    await waitFor('a worker process to be ready', () => gone || /^ready \d+$/m.test(worker.stdout), 30_000).catch(
      () => undefined,
    );
    if (!/^ready \d+$/m.test(worker.stdout)) {
      worker.kill('SIGKILL');
      throw new Error(`worker process did not start:\n${worker.stdout}\n${worker.stderr}`);
    }
    return worker;
  }

  kill(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.child.pid!, signal);
    } catch {
      /* already gone */
    }
  }

  /** SIGTERM (the round under way finishes), SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.kill('SIGTERM');
      const timer = setTimeout(() => this.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    running.delete(this);
  }
}

const running = new Set<WorkerProcess>();

let database: TestDatabase;
let secrets: SecretBox;

beforeAll(async () => {
  if (!process.env.DATABASE_URL) return;
  database = await createTestDatabase();
  // Created here, before any worker starts: every process then reads the same key from the database.
  secrets = await loadSecretBox(database.db, undefined);
}, 60_000);

afterAll(async () => {
  // Whatever a failed test left behind: no worker outlives the file, none keeps the database from being dropped.
  for (const w of running) w.kill('SIGKILL');
  await Promise.all([...running].map((w) => w.exited));
  running.clear();
  await database?.close();
}, 60_000);

async function shopWithEndpoints(urls: string[]): Promise<{ shop: string; secrets: Map<string, string> }> {
  const shop = (await admin.createShop(database.db, { name: 'Workers', plan: 'business' })).id;
  const endpointSecrets = new Map<string, string>();
  for (const url of urls) {
    const created = await database.db
      .transaction()
      .execute((trx) =>
        createWebhook(
          shopWrite(trx, shop, new Effects(), systemClock),
          { url, events: ['order:paid'] },
          { secrets, allowPrivateTargets: true },
        ),
      );
    endpointSecrets.set(new URL(url).pathname, created.secret);
  }
  return { shop, secrets: endpointSecrets };
}

/** `n` order:paid events, `perTransaction` to a transaction; their ids in order. */
async function emitMany(shop: string, n: number, perTransaction: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += perTransaction) {
    await database.db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(n, i + perTransaction); j++) {
        const { event } = await emitEvent(
          trx,
          shop,
          'order:paid',
          {
            uniqid: `o${from + j}`,
            total: 1,
            currency: 'USD',
          },
          { clock: systemClock },
        );
        ids.push(event.id);
      }
    });
  }
  return ids;
}

interface DeliveryState {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
  lease_until: Date | null;
  lease_token: string | null;
  next_attempt_at: Date | null;
}

async function deliveries(shop: string): Promise<DeliveryState[]> {
  const { rows } = await sql<DeliveryState>`select id, event_id, status, attempts, lease_until, lease_token,
    next_attempt_at from webhook_deliveries where shop_id = ${shop}`.execute(database.db);
  return rows;
}

async function unsettled(shop: string): Promise<number> {
  return (await deliveries(shop)).filter((d) => d.status !== 'SUCCEEDED').length;
}

async function attemptRows(shop: string): Promise<{ delivery_id: string; attempt: number; status: string }[]> {
  const { rows } = await sql<{ delivery_id: string; attempt: number; status: string }>`select delivery_id, attempt,
    status from webhook_attempts where shop_id = ${shop}`.execute(database.db);
  return rows;
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

describe('webhook workers in separate processes (PostgreSQL)', () => {
  pgTest(
    '3 workers, 300 events to 2 endpoints: every (event, endpoint) delivered exactly once, the work shared',
    async () => {
      // A few ms per answer, so that rounds overlap and the workers really compete for due rows.
      const receiver = new Receiver({ answer: () => ({ status: 204, delayMs: Math.random() * 5 }) });
      await receiver.start();
      const workers: WorkerProcess[] = [];
      try {
        const paths = ['/hooks/a', '/hooks/b'];
        const { shop, secrets: endpointSecrets } = await shopWithEndpoints(paths.map((p) => receiver.url(p)));
        // Started and ready before the events exist: all three poll the outbox while it fills.
        workers.push(
          ...(await Promise.all(
            [0, 1, 2].map(() => WorkerProcess.start(database.url!, { WORKER_BATCH: '10', WORKER_IDLE_MS: '20' })),
          )),
        );
        const started = Date.now();
        const eventIds = await emitMany(shop, 300, 10);
        const expected = paths.length * eventIds.length;
        await waitFor(
          `${expected} distinct deliveries, all SUCCEEDED`,
          async () => receiver.distinct().size >= expected && (await unsettled(shop)) === 0,
          90_000,
          workers,
        );
        const elapsedMs = Date.now() - started;
        await sleep(500); // a duplicate in flight would arrive now
        for (const w of workers) await w.stop();

        const claims = workers.map((w) => w.claimed);
        console.log(
          JSON.stringify({
            deliveries: expected,
            received: receiver.hits.length,
            distinct: receiver.distinct().size,
            claimed_per_process: claims,
            ms_from_first_emit_to_all_delivered: elapsedMs,
          }),
        );

        // Exactly the expected pairs, each once: no duplicates at all in the raw list.
        const want = paths.flatMap((p) => eventIds.map((id) => `${p} ${id}`)).sort();
        expect(receiver.hits.map((h) => `${h.path} ${h.id}`).sort()).toEqual(want);
        // Signed with each endpoint's own secret, by processes that read the key from the database.
        for (const h of receiver.hits) {
          const payload = new Webhook(endpointSecrets.get(h.path)!).verify(h.body, {
            'webhook-id': h.id,
            'webhook-timestamp': String(h.headers['webhook-timestamp']),
            'webhook-signature': String(h.headers['webhook-signature']),
          }) as { event: string };
          expect(payload.event).toBe('order:paid');
        }
        // The database agrees: one attempt each, succeeded, no lease left.
        const rows = await deliveries(shop);
        expect(rows).toHaveLength(expected);
        expect(rows.filter((d) => d.status !== 'SUCCEEDED' || d.attempts !== 1 || d.lease_token !== null)).toEqual([]);
        const attempts = await attemptRows(shop);
        expect(attempts).toHaveLength(expected);
        expect(attempts.filter((a) => a.status !== 'SUCCEEDED' || a.attempt !== 1)).toEqual([]);
        // Each delivery was claimed by exactly one process (claims add up, none claimed twice), and the work was
        // shared: at least two of the three processes claimed some.
        expect(claims.reduce((a, b) => a + b, 0)).toBe(expected);
        expect(claims.filter((c) => c > 0).length).toBeGreaterThanOrEqual(2);
        // No attempt outlived its lease.
        for (const w of workers) expect(w.stderr).not.toContain('lease was taken over');
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
        await receiver.stop();
      }
    },
    150_000,
  );

  pgTest(
    'a worker SIGKILLed mid-delivery: after its lease ran out another delivers it again; nothing is lost',
    async () => {
      const leaseMs = 1500;
      let hang = true;
      let hungId = '';
      const receiver = new Receiver({
        // The first request for the chosen event is never answered; everything else is answered 200.
        answer: (hit) =>
          hang && hit.id === hungId
            ? undefined
            : { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' },
      });
      await receiver.start();
      const workers: WorkerProcess[] = [];
      try {
        const { shop } = await shopWithEndpoints([receiver.url('/hooks')]);
        // One transaction: all 20 are due at once; the hanging attempt holds one slot, the others go through it.
        const before = await emitMany(shop, 20, 20);
        hungId = before[0]!;
        const env = { WORKER_LEASE_MS: String(leaseMs), WORKER_TIMEOUT_MS: '30000', WORKER_BATCH: '50' };
        const first = await WorkerProcess.start(database.url!, env);
        workers.push(first);

        // The receiver has the hanging request, and every other delivery of the round is recorded: only the hung
        // one is in flight when the process dies.
        await waitFor(
          'the hung request and the 19 others recorded',
          async () => receiver.hits.some((h) => h.id === hungId) && (await unsettled(shop)) === 1,
          30_000,
          workers,
        );
        const held = (await deliveries(shop)).find((d) => d.event_id === hungId)!;
        // The claim counted the attempt before making it, so an outcome never recorded still counts.
        expect(held).toMatchObject({ status: 'PENDING', attempts: 1 });
        expect(held.lease_until).not.toBeNull();
        const leaseUntil = held.lease_until!.getTime();

        first.kill('SIGKILL');
        const exit = await first.exited;
        const killedAt = Date.now();
        expect(exit.signal).toBe('SIGKILL');
        hang = false;
        // Still claimed by the dead process: nothing may deliver it until its lease runs out.
        expect((await deliveries(shop)).find((d) => d.event_id === hungId)).toMatchObject({
          status: 'PENDING',
          lease_token: held.lease_token,
        });

        // More work arrives while no worker runs; a second worker takes everything over.
        const after = await emitMany(shop, 10, 5, 20);
        const second = await WorkerProcess.start(database.url!, env);
        workers.push(second);
        const secondReadyAt = Date.now();
        await waitFor(
          'all 30 deliveries SUCCEEDED',
          async () => receiver.hits.filter((h) => h.id === hungId).length >= 2 && (await unsettled(shop)) === 0,
          30_000,
          workers,
        );
        await sleep(300); // a duplicate in flight would arrive now
        await second.stop();

        const hung = receiver.hits.filter((h) => h.id === hungId);
        console.log(
          JSON.stringify({
            lease_ms: leaseMs,
            first_request_to_kill_ms: killedAt - hung[0]!.at,
            kill_to_lease_end_ms: leaseUntil - killedAt,
            second_worker_ready_before_lease_end_ms: leaseUntil - secondReadyAt,
            redelivered_after_lease_end_ms: hung[1]!.at - leaseUntil,
            received: receiver.hits.length,
            claimed: { killed: first.claimed, second: second.claimed },
          }),
        );

        // At least once: the same webhook-id twice, the same body, and the second only after the lease ran out.
        expect(hung).toHaveLength(2);
        expect(hung[1]!.body).toBe(hung[0]!.body);
        expect(hung[1]!.at).toBeGreaterThanOrEqual(leaseUntil);
        // Nothing lost, nothing else repeated: every other event exactly once.
        const counts = countBy(receiver.hits, (h) => h.id);
        expect(new Set(counts.keys())).toEqual(new Set([...before, ...after]));
        expect([...counts].filter(([id, n]) => id !== hungId && n !== 1)).toEqual([]);
        // The second worker claimed exactly the abandoned delivery and the new ones.
        expect(second.claimed).toBe(1 + after.length);
        const rows = await deliveries(shop);
        expect(rows).toHaveLength(30);
        expect(rows.filter((d) => d.status !== 'SUCCEEDED' || d.lease_token !== null || d.next_attempt_at)).toEqual([]);
        // The killed attempt counted: the hung delivery made two, every other one.
        expect(rows.filter((d) => d.attempts !== (d.event_id === hungId ? 2 : 1))).toEqual([]);
        // The killed attempt left no outcome (it never had one); the log has no attempt left PENDING.
        expect((await attemptRows(shop)).filter((a) => a.status !== 'SUCCEEDED')).toEqual([]);
        expect(second.stderr).not.toMatch(/error/i);
      } finally {
        for (const w of workers) w.kill('SIGKILL');
        await Promise.all(workers.map((w) => w.stop()));
        await receiver.stop();
      }
    },
    120_000,
  );
});
