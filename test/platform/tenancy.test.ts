// Tenancy, checked four ways (issue 7, point 3):
//  a. the catalog: every shop-owned table has a unique (shop_id, id), every reference between shop-owned rows is a
//     composite foreign key that carries shop_id on both sides, and no shop-less table points into shop rows;
//  b. the database refuses a row of shop B that points at a row of shop A (23503), whatever the code does;
//  c. the walk: every operation of the contract with a path parameter, called by shop B with shop A's ids (and by
//     A with B's ids), answers 404 (implemented) or 501 (not yet), never a success or a 403, and changes nothing;
//     the same calls by A with its own ids succeed, so the 404s are about tenancy and not about bad ids;
//  d. the source: every query module reaches shop-owned tables only through inShop()/inShopForWrite().
// Two shops with identical data come from test/helpers/two-shops.ts; add new resource kinds there. The walk's
// routes and probes are test/helpers/contract-walk.ts (test/platform/cross-mode.test.ts walks them between modes).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql, type Kysely, type Transaction } from 'kysely';
import { inShop, inShopForWrite } from '../../db/queries/shop-scope';
import type { Database } from '../../db/tables';
import { operations } from '../../src/generated/operations';
import {
  createWalker,
  describeRoute,
  idsOf,
  implementedRoutes,
  routes,
  type OperationId,
} from '../helpers/contract-walk';
import { snapshotTables } from '../helpers/db-snapshot';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { createTwoShops, shopDataShape, type ResourceKind, type TenantShop, type TwoShops } from '../helpers/two-shops';

const root = join(__dirname, '..', '..');
// ---------------------------------------------------------------------------------------------------------------
// The app, the two shops
// ---------------------------------------------------------------------------------------------------------------

let t: TestApp;
let shops: TwoShops;
let walker: ReturnType<typeof createWalker>;
beforeAll(async () => {
  // A few hundred requests from one shop: lift the rate limit, which is not what this file tests.
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_ANONYMOUS: '100000' } });
  shops = await createTwoShops(t);
  walker = createWalker(t, 'tenancy');
  // Use each key once, so the walk does not stamp credentials.last_used_at for the first time.
  for (const s of [shops.a, shops.b]) expect((await t.http.get('/dev/v1/me').set(bearer(s.key))).status).toBe(200);
});
afterAll(() => t?.close());

test('the two shops hold the same data under different ids', async () => {
  const [a, b] = [await shopDataShape(t, shops.a.shopId), await shopDataShape(t, shops.b.shopId)];
  expect(b).toEqual(a);
  // The two of sameData, the subscription step's `Tenancy Plan` and the license step's `Tenancy License`.
  expect(a.products).toHaveLength(4);
  expect(a.product_variants).toHaveLength(2);
  expect(a.product_serials).toHaveLength(3);
  expect(a.customers).toHaveLength(3);
  expect(a.affiliate_applications).toHaveLength(1);
  for (const kind of Object.keys(shops.a.ids) as ResourceKind[]) expect(shops.b.ids[kind]).not.toBe(shops.a.ids[kind]);
});

// ---------------------------------------------------------------------------------------------------------------
// a. The catalog
// ---------------------------------------------------------------------------------------------------------------

interface ForeignKey {
  name: string;
  from_table: string;
  from_columns: string[];
  to_table: string;
  to_columns: string[];
}

async function shopOwnedTables(db: Kysely<Database> | Transaction<Database>): Promise<string[]> {
  const r = await sql<{ table_name: string }>`
    select c.table_name::text as table_name
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and c.column_name = 'shop_id' and t.table_type = 'BASE TABLE'
    order by 1`.execute(db);
  return r.rows.map((x) => x.table_name);
}

/** Unique, non-partial, immediate constraints and indexes of `public` tables, as column lists. */
async function uniqueKeys(db: Kysely<Database> | Transaction<Database>): Promise<{ table: string; columns: string }[]> {
  const r = await sql<{ table: string; columns: string }>`
    select cl.relname::text as table,
      (select string_agg(a.attname::text, ',' order by k.ord)
         from unnest(i.indkey::int2[]) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum) as columns
    from pg_index i
    join pg_class cl on cl.oid = i.indrelid
    join pg_namespace n on n.oid = cl.relnamespace
    where n.nspname = 'public' and i.indisunique and i.indimmediate
      and i.indpred is null and i.indexprs is null`.execute(db);
  return r.rows;
}

async function foreignKeys(db: Kysely<Database> | Transaction<Database>): Promise<ForeignKey[]> {
  const r = await sql<{ name: string; from_table: string; from_columns: string; to_table: string; to_columns: string }>`
    select con.conname::text as name, src.relname::text as from_table, dst.relname::text as to_table,
      (select string_agg(a.attname::text, ',' order by k.ord)
         from unnest(con.conkey) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum) as from_columns,
      (select string_agg(a.attname::text, ',' order by k.ord)
         from unnest(con.confkey) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.attnum) as to_columns
    from pg_constraint con
    join pg_class src on src.oid = con.conrelid
    join pg_class dst on dst.oid = con.confrelid
    join pg_namespace n on n.oid = src.relnamespace
    where con.contype = 'f' and n.nspname = 'public'
    order by 2, 1`.execute(db);
  return r.rows.map((x) => ({ ...x, from_columns: x.from_columns.split(','), to_columns: x.to_columns.split(',') }));
}

/**
 * References from a table WITHOUT shop_id into shop-owned rows: such a table could link rows of two shops, so each
 * one must be justified here.
 */
const shopLessReferences: Readonly<Record<string, string>> = {
  'idempotency_keys(credential_id) -> credentials(id)':
    'a key belongs to the one credential that made the request; it never links two shop rows',
};

/** Every way the schema breaks the tenancy rules (empty when it keeps them). */
async function tenancyViolations(db: Kysely<Database> | Transaction<Database>): Promise<string[]> {
  const owned = new Set(await shopOwnedTables(db));
  const uniques = await uniqueKeys(db);
  const fks = await foreignKeys(db);
  const notNull = await sql<{ table_name: string; is_nullable: string }>`
    select table_name::text as table_name, is_nullable::text as is_nullable from information_schema.columns
    where table_schema = 'public' and column_name = 'shop_id'`.execute(db);
  const problems: string[] = [];
  const withId = await sql<{ table_name: string }>`
    select table_name::text as table_name from information_schema.columns
    where table_schema = 'public' and column_name = 'id'`.execute(db);
  const hasId = new Set(withId.rows.map((r) => r.table_name));
  for (const table of owned) {
    // A link table (no id of its own: coupon_products, product_files) is keyed by the shop and the rows it links.
    const keyed = hasId.has(table)
      ? uniques.some((u) => u.table === table && u.columns === 'shop_id,id')
      : uniques.some((u) => u.table === table && u.columns.startsWith('shop_id,'));
    if (!keyed) {
      problems.push(`${table}: no unique constraint on exactly (shop_id, id)`);
    }
    if (notNull.rows.find((r) => r.table_name === table)?.is_nullable !== 'NO') {
      problems.push(`${table}: shop_id is nullable`);
    }
    if (!fks.some((f) => f.from_table === table && f.to_table === 'shops' && f.from_columns.join() === 'shop_id')) {
      problems.push(`${table}: shop_id does not reference shops (id)`);
    }
  }
  for (const fk of fks) {
    const text = `${fk.from_table}(${fk.from_columns.join(', ')}) -> ${fk.to_table}(${fk.to_columns.join(', ')})`;
    if (!owned.has(fk.to_table)) continue;
    if (!owned.has(fk.from_table)) {
      if (!shopLessReferences[text])
        problems.push(`${fk.name}: ${text} points into shop rows from a table without shop_id`);
      continue;
    }
    const paired = fk.from_columns.some((c, i) => c === 'shop_id' && fk.to_columns[i] === 'shop_id');
    if (!paired) problems.push(`${fk.name}: ${text} does not carry shop_id -> shop_id (make it (shop_id, x_id))`);
  }
  return problems;
}

describe('a. the catalog', () => {
  test('every shop-owned table has a unique (shop_id, id) and every reference between shop rows carries shop_id', async () => {
    const owned = await shopOwnedTables(t.db);
    // Not vacuous: the tables and composite keys of the migrations so far are all seen.
    expect(owned).toEqual(
      expect.arrayContaining(['credentials', 'customers', 'product_serials', 'product_variants', 'products']),
    );
    const composite = (await foreignKeys(t.db)).filter(
      (f) => owned.includes(f.from_table) && owned.includes(f.to_table),
    );
    expect(composite.map((f) => f.name).sort()).toEqual(
      expect.arrayContaining([
        'customers_referred_by_fkey',
        'product_serials_product_fkey',
        'product_serials_variant_fkey',
        'product_variants_product_fkey',
      ]),
    );
    expect(await tenancyViolations(t.db)).toEqual([]);
  });

  test('the check catches a table that forgets the rules (a probe created and rolled back)', async () => {
    const rollback = new Error('rollback');
    let found: string[] = [];
    await expect(
      t.db.transaction().execute(async (trx) => {
        await sql`create table tenancy_probe (
          id text primary key,
          shop_id text not null references shops (id),
          product_id text references products (id))`.execute(trx);
        await sql`create table tenancy_probe_link (
          id text primary key,
          customer_id text references customers (id))`.execute(trx);
        found = await tenancyViolations(trx);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(found).toEqual(
      expect.arrayContaining([
        'tenancy_probe: no unique constraint on exactly (shop_id, id)',
        expect.stringMatching(/^tenancy_probe_product_id_fkey: tenancy_probe\(product_id\) -> products\(id\) does not/),
        expect.stringMatching(/^tenancy_probe_link_customer_id_fkey: .* from a table without shop_id$/),
      ]),
    );
    expect(await shopOwnedTables(t.db)).not.toContain('tenancy_probe');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// b. The database refuses a cross-shop link
// ---------------------------------------------------------------------------------------------------------------

class Rollback extends Error {}

/** Runs `write` in a transaction that is always rolled back; returns the SQLSTATE and constraint it failed with. */
async function attempt(
  write: (trx: Transaction<Database>) => Promise<unknown>,
): Promise<{ code: string; constraint?: string } | 'accepted'> {
  try {
    await t.db.transaction().execute(async (trx) => {
      await write(trx);
      throw new Rollback();
    });
  } catch (err) {
    if (err instanceof Rollback) return 'accepted';
    const e = err as { code?: string; constraint?: string };
    return { code: String(e.code), ...(e.constraint ? { constraint: e.constraint } : {}) };
  }
  throw new Error('unreachable');
}

const uid = () => `${Date.now().toString(16)}${Math.random().toString(16).slice(2, 14)}`;

const insertVariant = (trx: Transaction<Database>, shopId: string, productId: string) =>
  sql`insert into product_variants (id, shop_id, product_id, title, price, price_display)
      values (${`var_x${uid()}`}, ${shopId}, ${productId}, 'Standard', 25, 25)`.execute(trx);

const insertSerial = (trx: Transaction<Database>, shopId: string, productId: string, variantId: string | null) =>
  sql`insert into product_serials (id, shop_id, product_id, variant_id, serial)
      values (${`ser_x${uid()}`}, ${shopId}, ${productId}, ${variantId}, 'CROSS-0001')`.execute(trx);

const insertCustomer = (trx: Transaction<Database>, shopId: string, referredBy: string) =>
  sql`insert into customers (id, shop_id, email, wallet_id, wallet_currency, referred_by_customer_id)
      values (${`cus_x${uid()}`}, ${shopId}, ${`cross-${uid()}@example.com`}, ${`wal_x${uid()}`}, 'USD', ${referredBy})`.execute(
    trx,
  );

describe('b. the database refuses a row of shop B that points at a row of shop A (23503)', () => {
  const cases: [
    string,
    (trx: Transaction<Database>, own: TenantShop, other: TenantShop) => Promise<unknown>,
    string,
  ][] = [
    [
      'a variant of B on A’s product',
      (trx, own, other) => insertVariant(trx, own.shopId, other.ids.product),
      'product_variants_product_fkey',
    ],
    [
      'a serial of B on A’s product',
      (trx, own, other) => insertSerial(trx, own.shopId, other.ids.serialProduct, null),
      'product_serials_product_fkey',
    ],
    [
      'a serial of B on B’s product with A’s variant',
      (trx, own, other) => insertSerial(trx, own.shopId, own.ids.product, other.ids.variant),
      'product_serials_variant_fkey',
    ],
    [
      'a new customer of B referred by A’s affiliate',
      (trx, own, other) => insertCustomer(trx, own.shopId, other.ids.affiliate),
      'customers_referred_by_fkey',
    ],
    [
      'B’s existing customer re-pointed at A’s affiliate',
      (trx, own, other) =>
        sql`update customers set referred_by_customer_id = ${other.ids.affiliate}
              where id = ${own.ids.referredCustomer}`.execute(trx),
      'customers_referred_by_fkey',
    ],
  ];

  test.each(cases)('%s', async (_name, write, constraint) => {
    // The same row pointing at B's own rows is accepted: the refusal is about the shop, nothing else.
    expect(await attempt((trx) => write(trx, shops.b, shops.b))).toBe('accepted');
    const refused = await attempt((trx) => write(trx, shops.b, shops.a));
    expect(refused).not.toBe('accepted');
    expect(refused).toEqual({ code: '23503', constraint });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// c. The walk
// ---------------------------------------------------------------------------------------------------------------

/**
 * Tables left out of the snapshot, and columns left out of a table's rows (bookkeeping, not tenant data).
 * audit_entries: every refused write of the walk is recorded in its caller's own shop, as it must be (the audit
 * trail records refusals; test/security/audit.test.ts checks those entries): that is the one change the walk makes.
 */
const notSnapshotted = (table: string) =>
  table === 'idempotency_keys' || table === 'audit_entries' || table.startsWith('kysely_migration');
const bookkeepingColumns: Readonly<Record<string, string[]>> = { credentials: ['last_used_at'] };

/** Every table but the ones above: row count and an md5 of its rows' text in primary-key order. */
const snapshot = () => snapshotTables(t.db, { skipTables: notSnapshotted, skipColumns: bookkeepingColumns });

describe('c. every {id} route, called with the other shop’s ids: 404 or 501, never a success, nothing changed', () => {
  let before: Record<string, string>;
  let idempotencyBefore: Set<string>;

  beforeAll(async () => {
    before = await snapshot();
    const rows = await t.db.selectFrom('idempotency_keys').select(['credential_id', 'operation_id', 'key']).execute();
    idempotencyBefore = new Set(rows.map((r) => `${r.credential_id} ${r.operation_id} ${r.key}`));
  });

  test('the walk covers every operation of the contract with a path parameter', () => {
    const withParams = (Object.keys(operations) as OperationId[]).filter((id) => operations[id].path.includes('{'));
    expect(routes.map((r) => r.operationId).sort()).toEqual(withParams.sort());
    const unmapped = routes.flatMap((r) =>
      r.params.filter((p) => p.kind === undefined).map((p) => `${r.operationId} {${p.name}} (${p.ref})`),
    );
    expect(unmapped).toEqual([]);
    const lines = routes.map(describeRoute);
    console.log(
      `The cross-shop walk covers ${routes.length} {id} routes (${implementedRoutes.length} implemented):\n${lines.join('\n')}`,
    );
  });

  test('every implemented {id} operation is walked with real fixture ids, not placeholders', () => {
    const missing = implementedRoutes.flatMap((r) => {
      const { placeholders } = idsOf(r, shops.a);
      return placeholders.map(
        (p) => `${r.operationId} ${r.path}: ${p} has no fixture: add its resource to test/helpers/two-shops.ts`,
      );
    });
    expect(missing).toEqual([]);
  });

  test.each(routes.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'shop B with shop A’s ids: %s %s %s',
    async (_id, _method, _path, route) => walker.walkRoute(route, shops.b, shops.a),
  );

  test.each(implementedRoutes.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'shop A with shop B’s ids: %s %s %s',
    async (_id, _method, _path, route) => walker.walkRoute(route, shops.a, shops.b),
  );

  test('nothing changed in the database (every table but idempotency_keys and audit_entries, compared row by row)', async () => {
    // Not vacuous: the walk above ran in full (a filtered run, -t, fails here instead of passing on nothing).
    expect(walker.walked.size).toBe(routes.length + implementedRoutes.length);
    const after = await snapshot();
    expect(Object.keys(after)).toEqual(
      expect.arrayContaining(['products', 'product_variants', 'product_serials', 'customers', 'credentials', 'shops']),
    );
    expect(after).toEqual(before);
    // What the walk did leave: the idempotency records of its refused writes, each the walkers' own stored 404.
    const rows = await t.db
      .selectFrom('idempotency_keys')
      .select(['credential_id', 'operation_id', 'key', 'state', 'response_status'])
      .execute();
    const added = rows.filter((r) => !idempotencyBefore.has(`${r.credential_id} ${r.operation_id} ${r.key}`));
    for (const r of added) {
      expect([shops.a.credentialId, shops.b.credentialId]).toContain(r.credential_id);
      expect({ op: r.operation_id, state: r.state, status: r.response_status }).toEqual({
        op: r.operation_id,
        state: 'completed',
        status: 404,
      });
    }
  });

  // Deletes last: a deleted endpoint would make the operations on it (and on its delivery log) not found.
  const deletesLast = [...implementedRoutes].sort(
    (x, y) => Number(x.method === 'delete') - Number(y.method === 'delete'),
  );
  test.each(deletesLast.map((r) => [r.operationId, r.method.toUpperCase(), r.path, r] as const))(
    'shop A with its own ids succeeds (so the 404s are about the shop): %s %s %s',
    async (_id, _method, _path, route) => {
      const { ids } = idsOf(route, shops.a);
      const res = await walker.call(route, shops.a, ids);
      const said = `${route.operationId} by shop A with its own ids answered ${res.status} ${JSON.stringify(res.body?.error ?? '')}`;
      expect({ said, ok: res.status >= 200 && res.status < 300 }).toEqual({ said, ok: true });
    },
  );
});

// ---------------------------------------------------------------------------------------------------------------
// d. The source: query modules reach shop-owned tables only through the shop scope
// ---------------------------------------------------------------------------------------------------------------

const queriesDir = join(root, 'db', 'queries');
const queryMethods = /\.\s*(selectFrom|updateTable|deleteFrom|insertInto|mergeInto|replaceInto)\s*\(/g;
const joinMethods = /\.\s*(innerJoin|leftJoin|rightJoin|fullJoin)\s*\(/g;

/**
 * Queries that reach a shop-owned table without the scope by design, per file and enclosing function, with the
 * reason. The test fails when an entry is no longer used, so this list cannot rot.
 */
const unscopedByDesign: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'credentials.ts': {
    insertCredential: 'admin (CLI): the row being inserted names its shop',
    liveCredentialWithShopByHash: 'authentication: the presented key decides the shop, so there is no shop yet',
    touchCredential: 'by the id of the credential that has just authenticated',
    revokeCredential: 'admin (CLI): an operator revokes a key by its id',
    credentialsOfShop: 'admin (CLI): filters shop_id itself',
  },
  'outbound-emails.ts': {
    allEmails: "admin (CLI): the operator's view of every shop's mail",
  },
  'orders.ts': {
    orderByUniqid: 'the hosted checkout addresses an invoice by its unguessable uniqid alone; the row names its shop',
    expiredPendingOrdersForUpdate: 'the expiry job serves every shop: it claims due orders across shops',
  },
  'payment-links.ts': {
    paymentLinkByUniqid: "a link's hosted page addresses it by its unguessable uniqid alone; the row names its shop",
  },
  'subscriptions.ts': {
    subscriptionsDueForUpdate: 'the renewal job serves every shop: it claims due subscriptions across shops',
  },
  'analytics.ts': {
    claimDueGenerations: 'the report worker serves every shop: it claims queued generations across shops',
  },
  'payment-attempts.ts': {
    attemptBySession: 'a gateway addresses its session by the session id alone; the row then names its shop',
  },
  'store-domains.ts': {
    domainVerifiedByAnotherShop:
      'a VERIFIED hostname serves one shop: whether another shop has verified it (a yes/no, no row of it)',
  },
  'oauth.ts': {
    liveGrantsOfClient: "admin (CLI): revoking an app revokes its grants in every shop (with a shop, it is inShop()'s)",
    codeByHashForUpdate: 'the token endpoint: the presented code decides the shop; the row then names it',
    refreshTokenByHashForUpdate: 'the token endpoint: the presented refresh token decides the shop; the row names it',
    accessTokenByHash: 'token revocation (RFC 7009): the presented token decides the shop; the row names it',
  },
  'owner-sessions.ts': {
    ownerAccountByEmail: 'the consent page signs an owner in by email alone: the account then names its shop',
    liveOwnerSessionByTokenHash: "the consent page's cookie decides the session, so there is no shop yet",
  },
  'customers.ts': {
    customersPage: "reads the derived table customerAccounts(), whose customers rows are inShop()'s (figures added)",
  },
  'themes.ts': {
    previewByTokenHash:
      "a preview page addresses its session by the unguessable token's hash alone; the row names its shop",
  },
};

/** Comments blanked out (offsets and line numbers kept); strings kept. */
function blankComments(src: string): string {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += src.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** The end offset of the balanced (...) that opens at `open`. */
function closingParen(src: string, open: number): number {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    if (src[i] === '(') depth++;
    else if (src[i] === ')' && --depth === 0) return i;
  }
  return src.length;
}

/** What the method call at `dot` is called on: `inShop(...)`, `inShopForWrite(...)`, an identifier, or other. */
function receiverOf(src: string, dot: number, scopedVariables: Set<string>): { scoped: boolean; text: string } {
  let i = dot - 1;
  while (i >= 0 && /\s/.test(src[i]!)) i--;
  if (src[i] === ')') {
    let depth = 0;
    for (; i >= 0; i--) {
      if (src[i] === ')') depth++;
      else if (src[i] === '(' && --depth === 0) break;
    }
    const callee = /([A-Za-z_$][\w$]*)\s*$/.exec(src.slice(0, i))?.[1] ?? '';
    return { scoped: callee === 'inShop' || callee === 'inShopForWrite', text: `${callee}(…)` };
  }
  const name = /([A-Za-z_$][\w$]*)$/.exec(src.slice(0, i + 1))?.[1] ?? '';
  return { scoped: scopedVariables.has(name), text: name || src.slice(Math.max(0, i - 20), i + 1).trim() };
}

/** The top-level declaration (a function or a `const`, starting at column 0) that holds `offset`. */
function enclosingFunction(src: string, offset: number): string {
  const declarations =
    /^(?:export\s+)?(?:async\s+)?(?:function\*?\s+([A-Za-z_$][\w$]*)|(?:const|let)\s+([A-Za-z_$][\w$]*))/gm;
  const matches = [...src.slice(0, offset).matchAll(declarations)];
  const last = matches[matches.length - 1];
  return last ? (last[1] ?? last[2]!) : '(top level)';
}

interface Finding {
  where: string;
  file: string;
  fn: string;
  message: string;
}

/** The findings of one query module's text (`file` is its name in db/queries). */
function scanSource(
  file: string,
  raw: string,
  shopTables: Set<string>,
): { findings: Finding[]; exemptionsUsed: Set<string> } {
  const findings: Finding[] = [];
  const exemptionsUsed = new Set<string>();
  const src = blankComments(raw);
  const lineOf = (offset: number) => src.slice(0, offset).split('\n').length;
  const scopedVariables = new Set(
    [...src.matchAll(/(?:const|let)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*inShop(?:ForWrite)?\s*\(/g)].map(
      (m) => m[1]!,
    ),
  );
  const report = (offset: number, message: string) => {
    const fn = enclosingFunction(src, offset);
    if (unscopedByDesign[file]?.[fn]) {
      exemptionsUsed.add(`${file} ${fn}`);
      return;
    }
    findings.push({ where: `db/queries/${file}:${lineOf(offset)}`, file, fn, message });
  };
  for (const m of src.matchAll(queryMethods)) {
    const dot = m.index!;
    const open = dot + m[0].length - 1;
    const argument = src.slice(open + 1, closingParen(src, open)).trim();
    const literal = /^(['"`])([^'"`]*)\1/.exec(argument);
    const table = literal ? literal[2]!.split(/\s+as\s+/)[0]!.trim() : undefined;
    if (table !== undefined && !shopTables.has(table)) continue;
    const receiver = receiverOf(src, dot, scopedVariables);
    if (receiver.scoped) continue;
    report(
      dot,
      table !== undefined
        ? `${receiver.text}.${m[1]}('${table}') reaches a shop-owned table outside inShop()/inShopForWrite()`
        : `${receiver.text}.${m[1]}(${argument.split(/[,)]/)[0]}) names its table at run time, outside inShop()/inShopForWrite()`,
    );
  }
  for (const m of src.matchAll(joinMethods)) {
    const open = m.index! + m[0].length - 1;
    const args = src.slice(open + 1, closingParen(src, open));
    const literal = /^\s*(['"`])([^'"`]*)\1/.exec(args);
    const table = literal ? literal[2]!.split(/\s+as\s+/)[0]!.trim() : undefined;
    if (table === undefined || !shopTables.has(table)) continue;
    if (!/shop_id/.test(args)) report(m.index!, `.${m[1]}('${table}') does not join on shop_id`);
  }
  return { findings, exemptionsUsed };
}

describe('d. the source: db/queries reaches shop-owned tables only through inShop()/inShopForWrite()', () => {
  test('no query module selects, updates, deletes or inserts shop rows outside the shop scope', async () => {
    const shopTables = new Set(await shopOwnedTables(t.db));
    const files = readdirSync(queriesDir).filter((f) => f.endsWith('.ts') && f !== 'shop-scope.ts');
    expect(files).toEqual(expect.arrayContaining(['customers.ts', 'products.ts', 'serials.ts', 'shop-rows.ts']));
    const findings: Finding[] = [];
    const exemptionsUsed = new Set<string>();
    for (const file of files) {
      const r = scanSource(file, readFileSync(join(queriesDir, file), 'utf8'), shopTables);
      findings.push(...r.findings);
      for (const e of r.exemptionsUsed) exemptionsUsed.add(e);
    }
    expect(findings.map((f) => `${f.where} (${f.fn}): ${f.message}`)).toEqual([]);
    // Every exemption is still needed (delete the ones that are not).
    const declared = Object.entries(unscopedByDesign).flatMap(([file, fns]) =>
      Object.keys(fns).map((fn) => `${file} ${fn}`),
    );
    expect(declared.filter((d) => !exemptionsUsed.has(d))).toEqual([]);
  });

  test('the scan finds unscoped queries (it is not blind)', async () => {
    const probe = [
      "// db.selectFrom('products') in a comment is not a query",
      "export const a = (db) => db.selectFrom('products').selectAll();",
      "export function b(trx) {\n  return trx\n    .updateTable('customers as c').set({ note: '' });\n}",
      'export const c = (db, table) => db.deleteFrom(table);',
      "export const d = (db, s) => inShop(db, s).selectFrom('products').leftJoin('product_variants as v', 'v.id', 'x');",
      "export const e = (db, s) => inShop(db, s).selectFrom('product_serials as s').selectAll();",
      "export const f = (trx, s) => { const scope = inShopForWrite(trx, s); return scope.deleteFrom('products'); };",
      "export const g = (db) => db.selectFrom('shops').selectAll();",
    ].join('\n');
    const { findings } = scanSource('probe.ts', probe, new Set(await shopOwnedTables(t.db)));
    expect(findings.map((f) => `${f.where} ${f.fn}`)).toEqual([
      'db/queries/probe.ts:2 a',
      'db/queries/probe.ts:5 b',
      'db/queries/probe.ts:7 c',
      'db/queries/probe.ts:8 d',
    ]);
  });

  test('every builder of the scope carries the shop: selects, updates and deletes filter shop_id, inserts set it', async () => {
    const shop = shops.a.shopId;
    const select = inShop(t.db, shop).selectFrom('products as p').select('p.id').compile();
    expect(select.sql).toMatch(/where "p"\."shop_id" = \$1/);
    expect(select.parameters).toEqual([shop]);
    await t.db.transaction().execute(async (trx) => {
      const scope = inShopForWrite(trx, shop);
      const update = scope.updateTable('customers').set({ note: 'x' }).where('id', '=', 'cus_x').compile();
      expect(update.sql).toMatch(/"customers"\."shop_id" = \$\d/);
      expect(update.parameters).toContain(shop);
      const del = scope.deleteFrom('product_serials').where('id', '=', 'ser_x').compile();
      expect(del.sql).toMatch(/"product_serials"\."shop_id" = \$\d/);
      expect(del.parameters).toContain(shop);
      const row = {
        id: 'var_x',
        product_id: 'prod_x',
        title: 'T',
        price: '1',
        price_display: '1',
        shop_id: 'shop_other',
      };
      const insert = scope.insertInto('product_variants', row as never).compile();
      expect(insert.parameters).toContain(shop);
      expect(insert.parameters).not.toContain('shop_other');
      const selectW = scope.selectFrom('product_variants').selectAll().compile();
      expect(selectW.sql).toMatch(/"product_variants"\."shop_id" = \$1/);
    });
  });
});
