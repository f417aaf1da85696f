// Idempotency claims are leases (src/platform/idempotency.ts, migration 0027): the owner renews its lease while its
// request runs, a lapsed lease is taken over, and an owner that lost its key cannot commit its change. The crash of a
// real server process is test/faults/idempotency-crash.test.ts; this file proves the rules in process, on both
// databases where they can be seen there.
import { systemClock } from '../../src/platform/clock';
import { randomUUID } from 'node:crypto';
import type { Response } from 'express';
import { sql } from 'kysely';
import {
  claimOrFetchIdempotencyKey,
  completeIdempotencyKey,
  idempotencyKeyByScope,
  releaseIdempotencyKey,
  renewIdempotencyLease,
  takeOverIdempotencyKey,
  type IdempotencyScope,
} from '../../db/queries/idempotency-keys';
import { duplicateProduct as realDuplicate } from '../../handlers/catalog';
import { createApp } from '../../src/app';
import type { OperationHandler } from '../../src/http/handler';
import { duplicateProduct as duplicateInDomain } from '../../src/domain/catalog/products';
import { errorAnswer } from '../../src/http/errors';
import { renderResult, sendOutcome } from '../../src/http/idempotency';
import { Idempotency, type WriteRequest } from '../../src/platform/idempotency';
import { Effects, shopWrite, UnitOfWork, type Work, type WriteOrigin } from '../../src/platform/unit-of-work';
import { countWhere } from '../helpers/counts';
import {
  duplicateUrl,
  productCount as productCountOf,
  shopWithProduct as shopWithProductOf,
  type IdempotencyShop,
} from '../helpers/idempotency-shop';
import { bearer, contractClient, startTestApp, type Agent, type TestApp } from '../helpers/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let t: TestApp;
/** A second server on the same database: its own process state (leases it renews), as another instance has. */
let other: Agent;
/** What POST /products/{id}/duplicate does on both servers; tests swap it and put it back. */
let duplicate: OperationHandler<'duplicateProduct'> = realDuplicate;

// A lease long enough that no renewal happens during a test (a renewal every 20 s): the tests that need the lease to
// lapse make it lapse in the database, so nothing depends on timing.
const LONG_LEASE_MS = 60_000;

beforeAll(async () => {
  t = await startTestApp({
    idempotencyLeaseMs: LONG_LEASE_MS,
    handlers: { duplicateProduct: (ctx) => duplicate(ctx) },
  });
  other = contractClient(
    await createApp({
      clock: systemClock,
      db: t.db,
      config: t.config,
      logger: t.logger,
      idempotencyLeaseMs: LONG_LEASE_MS,
      handlers: { duplicateProduct: (ctx) => duplicate(ctx) },
    }),
  );
});
afterAll(() => t.close());
afterEach(() => {
  duplicate = realDuplicate;
});

type Shop = IdempotencyShop;
const shopWithProduct = () => shopWithProductOf(t);
const productCount = (shopId: string) => productCountOf(t, shopId);
const post = (client: Agent, s: Shop, key: string) =>
  client.post(duplicateUrl(s.productId)).set(bearer(s.key)).set('Idempotency-Key', key);

/** Makes the key's lease lapse now, as if its owner had stopped renewing it a while ago. */
async function lapse(scope: IdempotencyScope): Promise<void> {
  const { numUpdatedRows } = await t.db
    .updateTable('idempotency_keys')
    .set({ lease_expires_at: sql<Date>`now() - interval '1 second'` })
    .where('credential_id', '=', scope.credentialId)
    .where('operation_id', '=', scope.operationId)
    .where('key', '=', scope.key)
    .where('state', '=', 'processing')
    .executeTakeFirst();
  expect(numUpdatedRows).toBe(1n);
}

/** Resolves when the handler is entered; the handler then waits for `release()`. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  return { release, opened, inside, enter: () => entered() };
}

describe('the statements an owner relies on', () => {
  test('an owner whose lapsed lease was taken over can neither renew it, store its response nor release it', async () => {
    const s = await shopWithProduct();
    const scope = { credentialId: s.credentialId, operationId: 'duplicateProduct', key: randomUUID() };
    const a = { token: randomUUID(), lockedAt: new Date('2026-11-20T10:00:00Z') };
    const b = { token: randomUUID(), lockedAt: new Date('2026-11-20T10:00:00Z') }; // the same lock time: only the token differs
    const claim = { fingerprint: 'f', expiresAt: new Date(Date.now() + 86_400_000), leaseMs: 5_000 };
    expect(await claimOrFetchIdempotencyKey(t.db, scope, { ...a, ...claim })).toEqual({ claimed: true });
    // A held lease is neither claimed nor taken over.
    const seen = await claimOrFetchIdempotencyKey(t.db, scope, { ...b, ...claim });
    expect(seen).toMatchObject({ claimed: false, row: { owner_token: a.token, lease_lapsed: false } });
    expect(await takeOverIdempotencyKey(t.db, scope, a.token, b, 5_000)).toBe(false);
    expect(await renewIdempotencyLease(t.db, scope, a, 5_000)).toBe(true);

    await lapse(scope);
    expect((await idempotencyKeyByScope(t.db, scope))?.lease_lapsed).toBe(true);
    // Only from the owner seen: a taker that read another owner takes nothing.
    expect(await takeOverIdempotencyKey(t.db, scope, randomUUID(), b, 5_000)).toBe(false);
    expect(await takeOverIdempotencyKey(t.db, scope, a.token, b, 5_000)).toBe(true);
    expect(await takeOverIdempotencyKey(t.db, scope, a.token, b, 5_000)).toBe(false);
    const row = await idempotencyKeyByScope(t.db, scope);
    expect(row).toMatchObject({ state: 'processing', owner_token: b.token, lease_lapsed: false });

    // The old owner, still running: its change and its response would commit together, and must not.
    const response = { status: 201, headers: {}, body: '{"data":{}}' };
    const committed = await t.db
      .transaction()
      .execute(async (trx) => {
        await duplicateInDomain(shopWrite(trx, s.shopId, new Effects(), systemClock), s.productId);
        if (!(await completeIdempotencyKey(trx, scope, a, response, new Date()))) throw new Error('lost');
        return true;
      })
      .catch((err: Error) => err.message);
    expect(committed).toBe('lost');
    expect(await productCount(s.shopId)).toBe(1);
    expect(await renewIdempotencyLease(t.db, scope, a, 5_000)).toBe(false);
    expect(await releaseIdempotencyKey(t.db, scope, a)).toBe(false);
    expect(await idempotencyKeyByScope(t.db, scope)).toMatchObject({ state: 'processing', owner_token: b.token });

    // The new owner stores its response; then nobody holds anything to renew.
    expect(await completeIdempotencyKey(t.db, scope, b, response, new Date())).toBe(true);
    expect(await renewIdempotencyLease(t.db, scope, b, 5_000)).toBe(false);
    expect(await idempotencyKeyByScope(t.db, scope)).toMatchObject({ state: 'completed', response_status: 201 });
  });
});

describe('through HTTP', () => {
  test('an owner that lost its lease to another server cannot commit: its change is rolled back, the taker answers', async () => {
    if (t.database.kind !== 'postgres') {
      // A request waiting inside its transaction holds PGlite's one connection: the other server could not even read.
      console.log('skipped on PGlite: two requests in flight at once need real PostgreSQL');
      return;
    }
    const s = await shopWithProduct();
    const key = randomUUID();
    const scope = { credentialId: s.credentialId, operationId: 'duplicateProduct', key };
    // Each request stalls in its transaction until released (a paused process, a heartbeat that cannot get through).
    const gates = [gate(), gate()];
    const [a, b] = gates as [ReturnType<typeof gate>, ReturnType<typeof gate>];
    duplicate = async (ctx) => {
      const g = gates.shift()!;
      g.enter();
      await g.opened;
      return realDuplicate(ctx);
    };
    const first = post(t.http, s, key).then((r) => r);
    await a.inside;
    await lapse(scope);
    // Another server takes the lapsed key over and runs the request too; it is still running when the first ends.
    const taker = post(other, s, key).then((r) => r);
    await b.inside;
    expect(await idempotencyKeyByScope(t.db, scope)).toMatchObject({ state: 'processing', lease_lapsed: false });

    // The first request copies the product and tries to store its response: the key is no longer its own.
    a.release();
    const late = await first;
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    expect(late.headers['idempotency-status']).toBe('processing');
    expect(await productCount(s.shopId)).toBe(1);
    expect(await idempotencyKeyByScope(t.db, scope)).toMatchObject({ state: 'processing' });

    b.release();
    const done = await taker;
    expect(done.status).toBe(201);
    expect(done.headers['idempotency-status']).toBe('created');
    expect(await productCount(s.shopId)).toBe(2);
    const replay = await post(t.http, s, key);
    expect(replay.headers['idempotency-status']).toBe('cached');
    expect(replay.text).toBe(done.text);
    expect(await productCount(s.shopId)).toBe(2);
  });

  test('a live slow request keeps its key for many lease periods: 409 meanwhile, then its own response, once', async () => {
    // Short enough for six periods to pass in a few seconds; long enough that a renewal every third of it is not
    // missed on a loaded CI machine (at 300 ms one run saw a takeover).
    const leaseMs = 900;
    const slow = await startTestApp({
      idempotencyLeaseMs: leaseMs,
      handlers: { duplicateProduct: (ctx) => duplicate(ctx) },
    });
    const g = gate();
    try {
      // The retries go to another server on the same database: only the lease in the row says the owner is alive.
      const otherServer = contractClient(
        await createApp({
          clock: systemClock,
          db: slow.db,
          config: slow.config,
          logger: slow.logger,
          idempotencyLeaseMs: leaseMs,
        }),
      );
      const shopId = await slow.createShop({ plan: 'business' });
      const { key: apiKey } = await slow.createKey(shopId, ['*']);
      const { products } = await slow.seed(shopId, { products: [{ title: 'Widget', price: '1.00' }] });
      const send = (client: Agent) =>
        client
          .post(duplicateUrl(products[0]!))
          .set(bearer(apiKey))
          .set('Idempotency-Key', 'slow-1')
          .then((r) => r);
      duplicate = async (ctx) => {
        g.enter();
        await g.opened;
        return realDuplicate(ctx);
      };
      const first = send(slow.http);
      await g.inside;
      duplicate = realDuplicate;

      // Six lease periods while the first request waits inside its transaction.
      const started = Date.now();
      const during: Promise<{ status: number; headers: Record<string, string>; text: string }>[] = [];
      while (Date.now() - started < 6 * leaseMs) {
        const r = send(otherServer);
        if (slow.database.kind === 'postgres') {
          // Answered at once: the lease is held, renewed by the owner's heartbeat on a connection of its own.
          const res = await r;
          expect([res.status, res.headers['idempotency-status']]).toEqual([409, 'processing']);
          expect(res.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
        }
        // On PGlite the retry (and the owner's renewals) wait behind the owner's transaction for the one connection.
        during.push(r);
        await sleep(100);
      }
      // (On PGlite any query would wait for the owner's transaction, which waits for this test: count only here.)
      if (slow.database.kind === 'postgres') expect(await countWhere(slow.db, 'products', 'shop_id', shopId)).toBe(1);
      g.release();
      const done = await first;
      expect(done.status).toBe(201);
      expect(done.headers['idempotency-status']).toBe('created');
      const answers = await Promise.all(during);
      // Never a takeover: every retry was told to wait, or (PGlite, after the owner committed) got its response.
      for (const res of answers) {
        if (res.status === 409) expect(res.headers['idempotency-status']).toBe('processing');
        else expect([res.headers['idempotency-status'], res.text]).toEqual(['cached', done.text]);
      }
      expect(answers.length).toBeGreaterThanOrEqual(5);
      const replay = await send(otherServer);
      expect(replay.headers['idempotency-status']).toBe('cached');
      expect(replay.text).toBe(done.text);
      expect(await countWhere(slow.db, 'products', 'shop_id', shopId)).toBe(2);
    } finally {
      g.release(); // a failed expectation must not leave the first request holding the database
      await slow.close();
    }
  });
});

/** Enough of express's Response for what the API sends of Idempotency.execute's outcome. */
function fakeResponse() {
  const r = {
    statusCode: 0,
    headers: {} as Record<string, string>,
    body: undefined as string | undefined,
    status(code: number) {
      r.statusCode = code;
      return r;
    },
    set(name: string | Record<string, string>, value?: string) {
      if (typeof name === 'string') r.headers[name.toLowerCase()] = value!;
      else for (const [k, v] of Object.entries(name)) r.headers[k.toLowerCase()] = v;
      return r;
    },
    type() {
      return r;
    },
    send(body: string) {
      r.body = body;
      return r;
    },
  };
  return r;
}

/** What Idempotency.execute did: the status it sent, or the error it threw (with its code). */
interface Outcome {
  status: number | 'error';
  code?: string;
  res: ReturnType<typeof fakeResponse>;
}

/** A unit of work whose next run first waits for the gate: a request that claimed its key and waits its turn. */
class GatedUnitOfWork extends UnitOfWork {
  next: ReturnType<typeof gate> | undefined;
  override async run<T>(origin: WriteOrigin, work: Work<T>): Promise<T> {
    const g = this.next;
    this.next = undefined;
    if (g) {
      g.enter();
      await g.opened;
    }
    return super.run(origin, work);
  }
}

describe('the lease of a request in this process', () => {
  async function setUp(options: { leaseMs: number; lockTimeoutMs?: number }) {
    const s = await shopWithProduct();
    const unitOfWork = new GatedUnitOfWork(t.db, { clock: systemClock });
    const idempotency = new Idempotency(t.db, unitOfWork, { errorAnswer: errorAnswer('http://api.test'), ...options });
    const key = randomUUID();
    const origin: WriteOrigin = {
      shopId: s.shopId,
      credentialId: s.credentialId,
      operationId: 'duplicateProduct',
      requestId: 'r',
    };
    const execute = async () => {
      const res = fakeResponse();
      const request: WriteRequest = {
        headers: { 'idempotency-key': key },
        credentialId: s.credentialId,
        operationId: 'duplicateProduct',
        method: 'POST',
        path: duplicateUrl(s.productId),
        query: {},
        body: undefined,
      };
      try {
        const outcome = await idempotency.execute(request, origin, async (trx, effects) =>
          renderResult({
            status: 201,
            data: await duplicateInDomain(shopWrite(trx, s.shopId, effects, systemClock), s.productId),
          }),
        );
        sendOutcome(res as unknown as Response, outcome);
      } catch (err) {
        return { status: 'error', code: (err as { code?: string }).code, res } as Outcome;
      }
      return { status: res.statusCode, res } as Outcome;
    };
    const scope = { credentialId: s.credentialId, operationId: 'duplicateProduct', key };
    return { s, unitOfWork, execute, scope };
  }

  test('a lapsed lease whose owner is still renewing here is not taken over (its renewal may only be queued)', async () => {
    // On the embedded database a renewal waits behind every transaction for the one connection, so a live owner's
    // lease can lapse while it merely waits its turn. This request renews from this process: it is alive.
    const { s, unitOfWork, execute, scope } = await setUp({ leaseMs: LONG_LEASE_MS });
    const g = gate();
    unitOfWork.next = g;
    const first = execute();
    await g.inside; // claimed, renewing, waiting for the database
    await lapse(scope);

    const retry = await execute();
    expect(retry.status).toBe('error');
    expect(retry.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    expect(retry.res.headers['idempotency-status']).toBe('processing');
    expect(await productCount(s.shopId)).toBe(1);

    g.release();
    const done = await first;
    expect(done.status).toBe(201);
    expect(done.res.headers['idempotency-status']).toBe('created');
    const replay = await execute();
    expect(replay.res.headers['idempotency-status']).toBe('cached');
    expect(replay.res.body).toBe(done.res.body);
    expect(await productCount(s.shopId)).toBe(2);
  });

  test('a request past the lock timeout stops renewing: its key is taken over and its late change rolled back', async () => {
    const { s, unitOfWork, execute, scope } = await setUp({ leaseMs: 300, lockTimeoutMs: 600 });
    const g = gate();
    unitOfWork.next = g;
    const hung = execute();
    await g.inside;
    // Held (and renewed) until the lock timeout, then let go: it lapses within a lease after that.
    await sleep(400);
    expect((await idempotencyKeyByScope(t.db, scope))?.lease_lapsed).toBe(false);
    const started = Date.now();
    let taken: Outcome | undefined;
    while (Date.now() - started < 5_000) {
      const r = await execute();
      if (r.status !== 'error') {
        taken = r;
        break;
      }
      expect(r.code).toBe('IDEMPOTENCY_IN_PROGRESS');
      await sleep(50);
    }
    expect(taken?.status).toBe(201);
    expect(taken?.res.headers['idempotency-status']).toBe('created');

    g.release();
    const late = await hung;
    expect(late.status).toBe('error');
    expect(late.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    expect(await productCount(s.shopId)).toBe(2);
  });
});
