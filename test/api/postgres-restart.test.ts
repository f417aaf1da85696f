// Fault test: the real server process (`src/server.ts` under tsx) keeps serving while its PostgreSQL restarts under
// read and write load. The test starts a PostgreSQL of its own (own port, own data directory) so that it can stop and
// restart it; the machine's shared instance is never touched. It runs only with DATABASE_URL set (the PostgreSQL run),
// since the embedded run has no PostgreSQL server to restart.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { Client } from 'pg';
import { openPostgres } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { shopById } from '../../db/queries/shops';
import * as admin from '../../src/domain/admin';
import { seedFixtures } from '../../src/domain/fixtures';
import { openStoredBody } from '../../src/platform/idempotency';
import { loadSecretBox } from '../../src/platform/secret-box';
import { assertMatchesContract } from '../helpers/contract';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pgBinDir =
  process.env.PG_BIN_DIR ??
  ['15', '16', '17', '14'].map((v) => `/usr/lib/postgresql/${v}/bin`).find((d) => existsSync(join(d, 'pg_ctl')));

const enabled = !!process.env.DATABASE_URL;
if (!enabled) {
  console.log(
    'postgres-restart.test.ts skipped: it starts and restarts a PostgreSQL server of its own, so it belongs to the ' +
      'PostgreSQL run (DATABASE_URL set, PostgreSQL installed); the embedded (PGlite) run has no server to restart.',
  );
}

/** initdb refuses to run as root: as root, PostgreSQL's tools run as the `postgres` OS user. */
function asPostgres(command: string, args: string[], timeoutMs = 60_000) {
  const bin = join(pgBinDir!, command);
  const [file, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return run(file, argv, { timeout: timeoutMs });
}

async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = 55_000 + Math.floor(Math.random() * 5_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createTcpServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found in 55000-59999');
}

interface Outcome {
  kind: 'read' | 'write';
  started: number;
  ended: number;
  status?: number;
  /** Network failure (connection reset, refused, timeout): what must never happen while the process lives. */
  error?: string;
  code?: string;
  retryAfter?: string | null;
  productId?: string;
  key?: string;
  source?: string;
  idempotencyStatus?: string | null;
  contract?: string;
}

const describeWithPostgres = enabled ? describe : describe.skip;

describeWithPostgres('PostgreSQL restarting under load', () => {
  let dir: string;
  let dataDir: string;
  let pgPort: number;
  let pgStarted = false;
  let server: ChildProcess | undefined;
  let serverOutput = '';
  let base: string;
  let dbUrl: string;
  let key: string;
  let sources: string[];

  // -l on every command that starts a postmaster: without it the postmaster inherits pg_ctl's stdout, and the
  // command does not finish until that pipe closes.
  const pgCtl = (...args: string[]) =>
    asPostgres('pg_ctl', ['-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', '-t', '60', ...args]);
  const pgOptions = () => `-p ${pgPort} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir}`;

  beforeAll(async () => {
    if (!pgBinDir)
      throw new Error('PostgreSQL server binaries not found: set PG_BIN_DIR (e.g. /usr/lib/postgresql/15/bin)');
    dir = mkdtempSync(join(tmpdir(), 'mdapi-pgrestart-'));
    dataDir = join(dir, 'data');
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
      chownSync(dir, uid, gid);
    }
    await asPostgres('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    pgPort = await freePort();
    pgStarted = true; // before the start returns: a start that timed out may still have left a postmaster running
    await pgCtl('-o', pgOptions(), 'start');

    const adminClient = new Client({ connectionString: `postgres://postgres@127.0.0.1:${pgPort}/postgres` });
    await adminClient.connect();
    await adminClient.query('CREATE DATABASE mdapi');
    await adminClient.end();
    dbUrl = `postgres://postgres@127.0.0.1:${pgPort}/mdapi`;

    const handle = openPostgres(dbUrl, 2);
    try {
      await migrateToLatest(handle.db);
      const shop = await admin.createShop(handle.db, { name: 'Restart Shop', plan: 'business' });
      key = (await admin.createApiKey(handle.db, { shopId: shop.id, scopes: ['*'] })).key;
      const row = (await shopById(handle.db, shop.id))!;
      // Several sources, so concurrent copies do not all queue on one product's row lock.
      const seeded = await handle.db.transaction().execute((trx) =>
        seedFixtures(trx, row, {
          products: [1, 2, 3].map((i) => ({ title: `Source ${i}`, slug: `source-${i}`, price: '5.00' })),
        }),
      );
      sources = seeded.products;
    } finally {
      await handle.close();
    }

    server = spawn(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'src', 'server.ts')], {
      cwd: root,
      // Its own process group: tsx runs the server in a child process, which a kill of tsx alone would orphan.
      detached: true,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: dbUrl,
        SEED_DEMO: 'false',
        LOG_LEVEL: 'warn',
        REDIS_URL: '',
        RATE_LIMIT_BUSINESS: '1000000',
        // A request that died with the database keeps its key `processing` until the lock timeout; 2 s instead of
        // 60 s lets this test see the key taken over after recovery without waiting a minute.
        IDEMPOTENCY_LOCK_TIMEOUT_SECONDS: '2',
      },
    });
    server.stdout!.on('data', (d: Buffer) => (serverOutput += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (serverOutput += d.toString()));
    const started = Date.now();
    let port: string | undefined;
    while (!port && Date.now() - started < 30_000 && server.exitCode === null) {
      await sleep(50);
      port = /listening on http:\/\/localhost:(\d+)/.exec(serverOutput)?.[1];
    }
    if (!port) throw new Error(`server did not start:\n${serverOutput}`);
    base = `http://127.0.0.1:${port}`;
  }, 120_000);

  afterAll(async () => {
    if (server?.pid) {
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    if (pgStarted) await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function countProcessing(): Promise<number> {
    const handle = openPostgres(dbUrl, 1);
    try {
      const row = await handle.db
        .selectFrom('idempotency_keys')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('state', '=', 'processing')
        .executeTakeFirstOrThrow();
      return row.n;
    } finally {
      await handle.close();
    }
  }

  async function call(kind: 'read' | 'write', writeKey?: string, source?: string): Promise<Outcome> {
    const path = kind === 'read' ? '/dev/v1/products?limit=20' : `/dev/v1/products/${source}/duplicate`;
    const method = kind === 'read' ? 'get' : 'post';
    const outcome: Outcome = { kind, started: Date.now(), ended: 0, key: writeKey, source };
    try {
      const res = await fetch(base + path, {
        method: method.toUpperCase(),
        headers: { authorization: `Bearer ${key}`, ...(writeKey ? { 'idempotency-key': writeKey } : {}) },
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      outcome.status = res.status;
      outcome.retryAfter = res.headers.get('retry-after');
      outcome.idempotencyStatus = res.headers.get('idempotency-status');
      const body = text ? (JSON.parse(text) as { data?: { id?: string }; error?: { code?: string } }) : undefined;
      outcome.code = body?.error?.code;
      if (kind === 'write' && res.status === 201) outcome.productId = body?.data?.id;
      try {
        assertMatchesContract(method, path, {
          status: res.status,
          headers: Object.fromEntries(res.headers),
          body,
          text,
        });
      } catch (err) {
        outcome.contract = (err as Error).message;
      }
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      outcome.error = `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}`;
    }
    outcome.ended = Date.now();
    return outcome;
  }

  test('the process survives, answers 503 + Retry-After while PostgreSQL is down, recovers, and loses no acknowledged write', async () => {
    const outcomes: Outcome[] = [];
    let stop = false;
    const hardDeadline = Date.now() + 90_000;
    let writeSeq = 0;
    const worker = async (kind: 'read' | 'write', index: number) => {
      // Bounded in count and time whatever happens to the stop flag.
      for (let i = 0; i < 3_000 && !stop && Date.now() < hardDeadline && server!.exitCode === null; i++) {
        if (kind === 'read') outcomes.push(await call('read'));
        else outcomes.push(await call('write', `restart-${writeSeq++}`, sources[index % sources.length]));
        await sleep(kind === 'read' ? 5 : 10);
      }
    };
    const load = Promise.all([
      ...[0, 1, 2].map((i) => worker('read', i)),
      ...[0, 1, 2, 3].map((i) => worker('write', i)),
    ]);
    /** Resolves with the time of the first 2xx of `kind` that started after `since`, or undefined after `withinMs`. */
    const firstSuccessAfter = async (kind: 'read' | 'write', since: number, withinMs: number) => {
      const until = Date.now() + withinMs;
      while (Date.now() < until && server!.exitCode === null) {
        const ok = outcomes.find((o) => o.kind === kind && o.started >= since && o.status && o.status < 300);
        if (ok) return ok.ended;
        await sleep(25);
      }
      return undefined;
    };

    const timeline: Record<string, number> = {};
    const restarts: { ms: number; writeRecoveredMs: number | undefined }[] = [];
    let recoveredRead: number | undefined;
    let recoveredWrite: number | undefined;
    try {
      // The load is running and writes are acknowledged before anything is restarted (on a busy machine the first
      // ones take longer than a second: wait for one, bounded).
      expect(await firstSuccessAfter('write', 0, 20_000)).toBeDefined();

      // A restart catches some pool clients checked out between two statements of a transaction: the crash needs
      // one, so a few restarts make it near certain that the listener is exercised.
      for (let r = 0; r < 3; r++) {
        const called = Date.now();
        await pgCtl('-m', 'fast', 'restart');
        const done = Date.now();
        const recovered = await firstSuccessAfter('write', done, 10_000);
        restarts.push({ ms: done - called, writeRecoveredMs: recovered && recovered - done });
        await sleep(700);
      }

      timeline.stopCalled = Date.now();
      await pgCtl('-m', 'fast', 'stop');
      timeline.stopped = Date.now();
      await sleep(2_000);
      timeline.startCalled = Date.now();
      await pgCtl('-o', pgOptions(), 'start');
      timeline.started = Date.now();
      recoveredRead = await firstSuccessAfter('read', timeline.started, 10_000);
      recoveredWrite = await firstSuccessAfter('write', timeline.started, 10_000);
      await sleep(1_000);
    } finally {
      stop = true;
      await load;
    }

    const reads = outcomes.filter((o) => o.kind === 'read');
    const writes = outcomes.filter((o) => o.kind === 'write');
    const count = (list: Outcome[], f: (o: Outcome) => boolean) => list.filter(f).length;
    const whileDown = outcomes.filter((o) => o.started >= timeline.stopped! && o.ended <= timeline.startCalled!);
    const acknowledged = writes.filter((o) => o.status === 201);
    console.log(
      JSON.stringify({
        requests: outcomes.length,
        reads: {
          total: reads.length,
          ok: count(reads, (o) => o.status === 200),
          '503': count(reads, (o) => o.status === 503),
        },
        writes: { total: writes.length, ok: acknowledged.length, '503': count(writes, (o) => o.status === 503) },
        restarts,
        while_stopped: { requests: whileDown.length, '503': count(whileDown, (o) => o.status === 503) },
        read_recovered_after_start_ms: recoveredRead && recoveredRead - timeline.started!,
        write_recovered_after_start_ms: recoveredWrite && recoveredWrite - timeline.started!,
      }),
    );

    // The process is alive and healthy.
    if (server!.exitCode !== null) console.log(`server output:\n${serverOutput.slice(-3000)}`);
    expect({ exitCode: server!.exitCode, signal: server!.signalCode }).toEqual({ exitCode: null, signal: null });
    expect(serverOutput).not.toMatch(/uncaught|unhandled/i);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // Never a connection reset or timeout, never a 500: only success or 503.
    expect(outcomes.filter((o) => o.error).map((o) => o.error)).toEqual([]);
    expect(
      outcomes.filter((o) => ![200, 201, 503].includes(o.status!)).map((o) => `${o.kind} ${o.status} ${o.code}`),
    ).toEqual([]);
    expect(outcomes.filter((o) => o.contract).map((o) => o.contract)).toEqual([]);
    // Every 503 is the envelope's SERVICE_UNAVAILABLE with a Retry-After.
    const unavailable = outcomes.filter((o) => o.status === 503);
    expect(unavailable.filter((o) => o.code !== 'SERVICE_UNAVAILABLE' || !(Number(o.retryAfter) > 0))).toEqual([]);
    // While PostgreSQL was stopped, requests were made, and every one of them was a 503.
    expect(whileDown.length).toBeGreaterThan(0);
    expect(whileDown.filter((o) => o.status !== 503).map((o) => `${o.kind} ${o.status ?? o.error}`)).toEqual([]);

    // Success again within a few seconds of PostgreSQL being back.
    expect(restarts.filter((r) => r.writeRecoveredMs === undefined)).toEqual([]);
    expect(recoveredRead! - timeline.started!).toBeLessThan(5_000);
    expect(recoveredWrite! - timeline.started!).toBeLessThan(5_000);
    for (let i = 0; i < 10; i++) expect((await call('read')).status).toBe(200);

    // Retrying every write that was not acknowledged, with its own key, gets a final answer: the key was not left
    // `processing` (a stale lock is taken over after the lock timeout, 2 s here).
    const processingBeforeRetry = await countProcessing();
    const unacknowledged = writes.filter((o) => o.status !== 201);
    const retried: Outcome[] = [];
    let stillProcessing = 0;
    const retryDeadline = Date.now() + 60_000;
    for (const o of unacknowledged) {
      let last: Outcome | undefined;
      for (let attempt = 0; attempt < 20 && Date.now() < retryDeadline; attempt++) {
        last = await call('write', o.key, o.source);
        if (last.status !== 409 && last.status !== 503) break;
        if (last.status === 409) stillProcessing++;
        await sleep(500);
      }
      if (last) retried.push(last);
    }
    console.log(
      JSON.stringify({
        keys_processing_before_retry: processingBeforeRetry,
        retried_keys: unacknowledged.length,
        answered_201: count(retried, (o) => o.status === 201),
        replayed_cached: count(retried, (o) => o.idempotencyStatus === 'cached'),
        in_progress_answers_before_takeover: stillProcessing,
      }),
    );
    expect(retried.length).toBe(unacknowledged.length);
    expect(retried.filter((o) => o.status !== 201).map((o) => `${o.key} ${o.status} ${o.code}`)).toEqual([]);

    const handle = openPostgres(dbUrl, 1);
    try {
      // Every write acknowledged with a 2xx is in the database.
      const ackedIds = acknowledged.map((o) => o.productId!);
      const found = await handle.db.selectFrom('products').select('id').where('id', 'in', ackedIds).execute();
      console.log(JSON.stringify({ acknowledged_writes: ackedIds.length, found_in_database: found.length }));
      expect(found.length).toBe(ackedIds.length);
      // No key is left `processing`, and every copy in the database is the recorded answer of exactly one key.
      expect(await countProcessing()).toBe(0);
      const recorded = await handle.db
        .selectFrom('idempotency_keys')
        .select(['credential_id', 'operation_id', 'key', 'response_status', 'response_body'])
        .where('state', '=', 'completed')
        .execute();
      // Stored bodies are sealed (src/platform/idempotency.ts): open them with the deployment's box.
      const box = await loadSecretBox(handle.db, undefined);
      const recordedIds = recorded
        .filter((r) => r.response_status === 201)
        .map((r) => {
          const scope = { credentialId: r.credential_id, operationId: r.operation_id, key: r.key };
          expect(r.response_body!.startsWith('sealed:v1:')).toBe(true);
          return (JSON.parse(openStoredBody(box, scope, r.response_body!)) as { data: { id: string } }).data.id;
        })
        .sort();
      const copies = (await handle.db.selectFrom('products').select('id').where('id', 'not in', sources).execute()).map(
        (r) => r.id,
      );
      expect(copies.sort()).toEqual(recordedIds);
    } finally {
      await handle.close();
    }
  }, 180_000);
});
