// Test mode's walk (issue 26, first proof): a live shop and its test twin hold the same data, and every operation of
// the contract with a path parameter, and every reference to a row in a request body, is called with the other
// mode's ids: the live key with the test ids, the test key (mdk_test_…) with the live ids. Each answer is the 404 of
// an id that exists nowhere (or, for a body reference, the very answer of such an id), never a success, and nothing
// changes. The routes, bodies and probes are the tenancy walk's (test/helpers/contract-walk.ts), generated from the
// contract; the two tenants are test/helpers/two-shops.ts with `b: 'test twin'`. Then events: a live key never sees
// a test event nor the reverse, and each mode's webhook endpoint is sent only its own mode's events.
import { operations } from '../../src/generated/operations';
import {
  bodyPropertiesNotShopRows,
  bodyReferences,
  createWalker,
  describeReference,
  describeRoute,
  implementedRoutes,
  routes,
  walkedBodyReferences,
  type BodyReference,
  type OperationId,
} from '../helpers/contract-walk';
import { snapshotTables } from '../helpers/db-snapshot';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { createTwoShops, shopDataShape, type TenantShop, type TwoShops } from '../helpers/two-shops';

let t: TestApp;
let shops: TwoShops;
let live: TenantShop;
let test_: TenantShop;
let walker: ReturnType<typeof createWalker>;

/** The probes, counted: the lead's closing note quotes these. */
const counts = {
  routes: routes.length,
  implementedRoutes: implementedRoutes.length,
  bodyReferences: walkedBodyReferences.length,
  /** live key with test ids: every route; test key with live ids: the implemented ones; each body reference both ways. */
  probes: routes.length + implementedRoutes.length + 2 * walkedBodyReferences.length,
};

beforeAll(async () => {
  // A few hundred requests from one shop: lift the rate limit, which is not what this file tests.
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shops = await createTwoShops(t, { b: 'test twin' });
  live = shops.a;
  test_ = shops.b;
  walker = createWalker(t, 'cross-mode');
  // Use each key once, so the walk does not stamp credentials.last_used_at for the first time.
  for (const s of [live, test_]) expect((await t.http.get('/dev/v1/me').set(bearer(s.key))).status).toBe(200);
});
afterAll(() => t?.close());

test('the two tenants are one merchant’s two modes: a live shop and its test twin, a live key and a test key', async () => {
  const rows = await t.db
    .selectFrom('shops')
    .select(['id', 'livemode', 'live_shop_id'])
    .where('id', 'in', [live.shopId, test_.shopId])
    .execute();
  expect(rows.find((r) => r.id === live.shopId)).toMatchObject({ livemode: true, live_shop_id: null });
  expect(rows.find((r) => r.id === test_.shopId)).toMatchObject({ livemode: false, live_shop_id: live.shopId });
  expect(live.key).toMatch(/^mdk_(?!test_)/);
  expect(test_.key).toMatch(/^mdk_test_/);
  const me = async (key: string) => (await t.http.get('/dev/v1/me').set(bearer(key))).body.data;
  expect(await me(live.key)).toMatchObject({ id: live.shopId, livemode: true, live_account_id: null });
  expect(await me(test_.key)).toMatchObject({ id: test_.shopId, livemode: false, live_account_id: live.shopId });
});

test('the two modes hold the same data under different ids', async () => {
  expect(await shopDataShape(t, test_.shopId)).toEqual(await shopDataShape(t, live.shopId));
  for (const kind of Object.keys(live.ids) as (keyof typeof live.ids)[])
    expect(test_.ids[kind]).not.toBe(live.ids[kind]);
});

// Before the walk: its last part, the test key with its own ids, deletes the test webhook endpoint (and its log).
describe('events and webhooks stay in their mode', () => {
  async function allEvents(key: string): Promise<{ id: string; livemode: boolean }[]> {
    const out: { id: string; livemode: boolean }[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.http
        .get(`/dev/v1/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        .set(bearer(key));
      expect(res.status).toBe(200);
      out.push(...res.body.data);
      cursor = res.body.pagination?.has_more ? res.body.pagination.next_cursor : undefined;
    } while (cursor);
    return out;
  }

  test('a live key’s GET /events never shows a test event, and a test key’s never a live one', async () => {
    const rows = await t.db.selectFrom('events').select(['id', 'shop_id', 'livemode']).execute();
    const liveIds = rows.filter((r) => r.shop_id === live.shopId).map((r) => r.id);
    const testIds = rows.filter((r) => r.shop_id === test_.shopId).map((r) => r.id);
    // Not vacuous: both modes have events (the seeded order:paid, the orders' own).
    expect(liveIds.length).toBeGreaterThan(0);
    expect(testIds.length).toBeGreaterThan(0);
    expect(rows.filter((r) => r.shop_id === test_.shopId).every((r) => r.livemode === false)).toBe(true);
    expect(rows.filter((r) => r.shop_id === live.shopId).every((r) => r.livemode === true)).toBe(true);

    const seenLive = await allEvents(live.key);
    expect(seenLive.map((e) => e.id).sort()).toEqual([...liveIds].sort());
    expect(seenLive.every((e) => e.livemode === true)).toBe(true);
    const seenTest = await allEvents(test_.key);
    expect(seenTest.map((e) => e.id).sort()).toEqual([...testIds].sort());
    expect(seenTest.every((e) => e.livemode === false)).toBe(true);
  });

  test('a test webhook endpoint is sent only test events, a live one only live events', async () => {
    const deliveries = await t.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('events as e', (j) => j.onRef('e.shop_id', '=', 'd.shop_id').onRef('e.id', '=', 'd.event_id'))
      .select(['d.endpoint_id', 'd.shop_id', 'e.livemode'])
      .where('d.endpoint_id', 'in', [live.ids.webhook, test_.ids.webhook])
      .execute();
    const of = (endpoint: string) => deliveries.filter((d) => d.endpoint_id === endpoint);
    // Not vacuous: each endpoint was sent its mode's order:paid events.
    expect(of(live.ids.webhook).length).toBeGreaterThan(0);
    expect(of(test_.ids.webhook).length).toBeGreaterThan(0);
    expect(of(live.ids.webhook).every((d) => d.livemode === true && d.shop_id === live.shopId)).toBe(true);
    expect(of(test_.ids.webhook).every((d) => d.livemode === false && d.shop_id === test_.shopId)).toBe(true);
  });
});

describe('the cross-mode walk: every {id} route and every body reference with the other mode’s ids', () => {
  let before: Record<string, string>;

  beforeAll(async () => {
    before = await snapshotTables(t.db, {
      skipTables: (table) => table === 'idempotency_keys' || table === 'audit_entries',
      skipColumns: { credentials: ['last_used_at'] },
    });
  });

  test(`it covers ${counts.routes} {id} routes (${counts.implementedRoutes} built) and ${counts.bodyReferences} body references: ${counts.probes} cross-mode probes`, () => {
    const withParams = (Object.keys(operations) as OperationId[]).filter((id) => operations[id].path.includes('{'));
    expect(routes.map((r) => r.operationId).sort()).toEqual(withParams.sort());
    // Every id-like body property of the contract is walked, or left out with its reason, or belongs to an
    // operation not built yet (501 whatever its body says).
    const unmapped = bodyReferences.filter(
      (r) => r.route.implemented && r.kind === undefined && bodyPropertiesNotShopRows[r.property] === undefined,
    );
    expect(unmapped.map(describeReference)).toEqual([]);
    const leftOut = bodyReferences.filter((r) => !walkedBodyReferences.includes(r));
    console.log(
      [
        `The cross-mode walk: ${counts.probes} probes = ${counts.routes} {id} routes with the live key and test ids`,
        `  + ${counts.implementedRoutes} built {id} routes with the test key and live ids`,
        `  + ${counts.bodyReferences} body references x 2 directions.`,
        `{id} routes:`,
        ...routes.map((r) => `  ${describeRoute(r)}`),
        `Body references walked:`,
        ...walkedBodyReferences.map((r) => `  ${describeReference(r)}`),
        `Body references left out:`,
        ...leftOut.map(
          (r) =>
            `  ${describeReference(r)}: ${bodyPropertiesNotShopRows[r.property] ?? (r.route.implemented ? '?' : 'operation not built (501)')}`,
        ),
      ].join('\n'),
    );
    expect(counts.bodyReferences).toBeGreaterThan(0);
  });

  test.each(routes.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'live key with the test twin’s ids: %s %s %s',
    async (_id, _method, _path, route) => walker.walkRoute(route, live, test_),
  );

  test.each(implementedRoutes.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'test key with the live shop’s ids: %s %s %s',
    async (_id, _method, _path, route) => walker.walkRoute(route, test_, live),
  );

  const refCases = walkedBodyReferences.map((r) => [r.route.operationId, `body.${r.at.join('.')}`, r] as const);

  test.each(refCases)('live key, a test id in the body: %s %s', async (_id, _at, ref: BodyReference) => {
    await walker.walkBodyReference(ref, live, test_);
  });

  test.each(refCases)('test key, a live id in the body: %s %s', async (_id, _at, ref: BodyReference) => {
    await walker.walkBodyReference(ref, test_, live);
  });

  test('nothing changed in the database (every table but idempotency_keys and audit_entries, row by row)', async () => {
    // Not vacuous: the walk above ran in full (a filtered run, -t, fails here instead of passing on nothing).
    expect(walker.walked.size).toBe(counts.probes);
    const after = await snapshotTables(t.db, {
      skipTables: (table) => table === 'idempotency_keys' || table === 'audit_entries',
      skipColumns: { credentials: ['last_used_at'] },
    });
    expect(Object.keys(after)).toEqual(
      expect.arrayContaining(['products', 'orders', 'events', 'shops', 'credentials']),
    );
    expect(after).toEqual(before);
  });

  test.each(refCases)(
    'the body references are checked (the test key with its own id answers otherwise than with a missing one): %s %s',
    async (_id, _at, ref: BodyReference) => {
      const { own, none } = await walker.ownBodyReference(ref, test_);
      const said = `${ref.route.operationId} body.${ref.at.join('.')}: own id ${own.status} ${JSON.stringify(own.body?.error ?? '')}, missing id ${none.status} ${JSON.stringify(none.body?.error ?? '')}`;
      expect({
        said,
        differs: [own.status, own.body?.error?.code].join() !== [none.status, none.body?.error?.code].join(),
      }).toEqual({
        said,
        differs: true,
      });
    },
  );

  // Deletes last: a deleted endpoint would make the operations on it (and on its delivery log) not found.
  const deletesLast = [...implementedRoutes].sort(
    (x, y) => Number(x.method === 'delete') - Number(y.method === 'delete'),
  );
  test.each(deletesLast.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'the test key with the test ids succeeds (so the 404s are about the mode): %s %s %s',
    async (_id, _method, _path, route) => {
      const { ids } = walker.idsOf(route, test_);
      const res = await walker.call(route, test_, ids);
      const said = `${route.operationId} by the test key with its own ids answered ${res.status} ${JSON.stringify(res.body?.error ?? '')}`;
      expect({ said, ok: res.status >= 200 && res.status < 300 }).toEqual({ said, ok: true });
    },
  );
});
