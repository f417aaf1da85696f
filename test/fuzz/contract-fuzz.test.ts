// Contract fuzzing: every operation of openapi.yaml is called with requests generated from its own schemas
// (test/fuzz/arbitraries.ts), schema-valid ones and deliberately broken ones, as shop A with a full-access key, with
// path ids drawn from shop A's resources, shop B's, and random or malformed ids. For every response:
//   - never a 5xx;
//   - an X-Request-Id header;
//   - a 4xx carries the documented error envelope, and every response matches the contract (status declared, body
//     and headers valid: test/helpers/contract.ts);
//   - nothing of shop B (any of its ids, its key, the marker its own resources are named with) appears in the
//     response, unless shop A itself sent it at some point (an id echoed in a 404, or in A's own audit trail).
// FUZZ_SEED fixes the seed (printed with every failure and in the summary; random otherwise), FUZZ_RUNS the runs per
// operation and family (default 25: about 2 minutes on PostgreSQL), FUZZ_OPS (comma-separated operationIds)
// narrows the run, FUZZ_DEBUG prints the valid requests the server refused. The summary goes to stdout and to
// test-artifacts/fuzz-report.json.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { sql } from 'kysely';
import request from 'supertest';
import { loadSpec } from '../../src/spec';
import { assertMatchesContract } from '../helpers/contract';
import { codeFor, exchange, newApp, redirectUri } from '../helpers/oauth-apps';
import { startTestApp, type TestApp } from '../helpers/test-app';
import {
  contractParameterKinds,
  createTwoShops,
  isResourceKind,
  type ResourceKind,
  type TwoShops,
} from '../helpers/two-shops';
import {
  clip,
  operationModels,
  requestInputs,
  type FuzzRequest,
  type IdPool,
  type OperationModel,
  type References,
} from './arbitraries';

const spec = loadSpec();
const runs = Math.max(1, Number(process.env.FUZZ_RUNS ?? 25));
const baseSeed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : randomBytes(4).readInt32LE(0);
const only = process.env.FUZZ_OPS?.split(',').map((s) => s.trim());

/** Operations that need a particular resource of a kind, plus the other ids that fit them. */
const operationKinds: Readonly<Record<string, Readonly<Record<string, ResourceKind[]>>>> = {
  claimProductSerials: { id: ['serialProduct', 'product'] },
  completeOrder: { id: ['pendingOrder', 'fulfillableOrder', 'order'] },
  fulfillOrder: { id: ['fulfillableOrder', 'pendingOrder', 'order'] },
  refundOrder: { id: ['order', 'pendingOrder'] },
  convertCustomerAffiliateBalance: { id: ['affiliate', 'customer'] },
  creditCustomerWallet: { id: ['customer', 'affiliate', 'referredCustomer'] },
  debitCustomerWallet: { id: ['customer', 'affiliate', 'referredCustomer'] },
  getCustomer: { id: ['customer', 'affiliate', 'referredCustomer'] },
  duplicateProduct: { id: ['product', 'serialProduct'] },
};
/** The OAuth endpoints answer 4xx in RFC 6749's shape ({ error: "invalid_request", … }), not the API envelope. */
const oauthErrorShape = new Set(['exchangeOAuthToken', 'revokeOAuthToken']);

interface Failure {
  operationId: string;
  family: string;
  seed: number;
  error: string;
  counterexample?: unknown;
}
interface OperationStats {
  cases: number;
  ms: number;
  statuses: Record<string, number>;
  validAccepted: number;
  validCases: number;
}

let t: TestApp;
let shops: TwoShops;
let server: Server;
let baseUrl: string;
let shopBSecrets: string[] = [];
const sentByA = new Set<string>();
let oauthClient: Awaited<ReturnType<typeof newApp>>;
let references: References;
const failures: Failure[] = [];
const stats: Record<string, OperationStats> = {};
const skipped: Record<string, number> = {};
let totalCases = 0;
const slowest: { ms: number; request: unknown }[] = [];
const started = Date.now();

/** Every id-like value of shop B (ids, uniqids, foreign keys) that shop A does not share, plus its key and marker. */
async function secretsOf(shopId: string, otherShopId: string, extra: string[]): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
    where c.table_schema = current_schema() and c.data_type in ('text', 'character varying')
      and (c.column_name in ('id', 'uniqid') or c.column_name like '%\\_id' escape '\\')
      and c.column_name <> 'shop_id'
      and exists (select 1 from information_schema.columns s where s.table_schema = c.table_schema
                  and s.table_name = c.table_name and s.column_name = 'shop_id')`.execute(t.db);
  const collect = async (shop: string) => {
    const values = new Set<string>();
    for (const { table_name, column_name } of columns.rows) {
      const rows = await sql<{ v: string | null }>`select ${sql.ref(column_name)} as v from ${sql.table(table_name)}
        where shop_id = ${shop}`.execute(t.db);
      for (const r of rows.rows) if (r.v && r.v.length >= 8) values.add(r.v);
    }
    return values;
  };
  const mine = await collect(shopId);
  const theirs = await collect(otherShopId);
  return [...[...mine].filter((v) => !theirs.has(v)), shopId, ...extra];
}

beforeAll(async () => {
  t = await startTestApp({
    env: {
      // Thousands of requests from one IP and one shop: the rate limits are not what this file tests.
      RATE_LIMIT_FREE: '1000000',
      RATE_LIMIT_PRO: '1000000',
      RATE_LIMIT_ANONYMOUS: '1000000',
      // Domain verification must not reach a real resolver: a dead local one fails fast.
      DNS_SERVERS: '127.0.0.1:9',
      DNS_TIMEOUT_MS: '200',
    },
  });
  shops = await createTwoShops(t);
  // Shop B's own resources carry a marker no request of the fuzz can produce by chance.
  const marker = `FZB${randomBytes(8).toString('hex')}`;
  await t.seed(shops.b.shopId, {
    customers: [{ email: `${marker.toLowerCase()}@example.com`, name: marker }],
    products: [
      { title: marker, slug: marker.toLowerCase(), type: 'SERVICE', price: '3.00', description: `about ${marker}` },
    ],
  });
  shopBSecrets = await secretsOf(shops.b.shopId, shops.a.shopId, [shops.b.key, shops.b.credentialId, marker]);
  oauthClient = await newApp(t, { scopes: 'orders.read products.read customers.read' });
  references = await referencesOf();
  server = createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.close();
  const operations = Object.keys(stats).length;
  const summary = `fuzz: ${totalCases} cases over ${operations} operations, ${failures.length} failures`;
  const report = {
    summary,
    seed: baseSeed,
    runsPerFamily: runs,
    database: process.env.DATABASE_URL ? 'postgresql' : 'pglite',
    durationMs: Date.now() - started,
    cases: totalCases,
    operations,
    failures,
    skipped,
    slowest,
    perOperation: stats,
  };
  const dir = join(__dirname, '..', '..', 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'fuzz-report.json'), `${JSON.stringify(report, null, 2)}\n`);
  const accepted = Object.values(stats).reduce((n, x) => n + x.validAccepted, 0);
  const valid = Object.values(stats).reduce((n, x) => n + x.validCases, 0);
  console.log(
    `${summary} (seed ${baseSeed}, ${runs} runs per family, ${report.durationMs} ms; ` +
      `${accepted} of ${valid} valid requests answered 2xx/3xx)`,
  );
});

/**
 * Body properties that refer to data, with shop A's values (and shop B's where they differ), as path ids are drawn:
 * what lets a schema-valid body get past its look-ups (items[].product_id, a license key, a draft's revision…) to
 * the business rules. Some state is prepared so the operations that need it can succeed at least once: unused OAuth
 * codes and a refresh token, shop A's reseller ACTIVE (seeded SUSPENDED, and /suspend comes before /reinstate in the
 * contract), shop A on a plan with additional domains.
 */
async function referencesOf(): Promise<References> {
  const a = shops.a.ids;
  const b = shops.b.ids;
  const http = (method: 'get' | 'post', url: string) =>
    t.http[method](`/dev/v1${url}`).set('Authorization', `Bearer ${shops.a.key}`);
  const draft = await http('get', `/themes/${a.theme}/control/document/draft`);
  if (draft.status !== 200) throw new Error(`draft: ${draft.status} ${draft.text}`);
  const reinstated = await http('post', `/resellers/${a.reseller}/reinstate`);
  if (reinstated.status !== 200) throw new Error(`reinstate: ${reinstated.status} ${reinstated.text}`);
  await sql`update shops set plan = 'pro' where id = ${shops.a.shopId}`.execute(t.db);
  const codes = await Promise.all([1, 2, 3].map(() => codeFor(t, shops.a.key, oauthClient)));
  const refresh = (await exchange(t, oauthClient, await codeFor(t, shops.a.key, oauthClient))).refresh_token;
  return {
    product_id: { own: [a.product, a.product, a.serialProduct], foreign: [b.product], omit: 3 },
    variant_id: { own: [a.variant], foreign: [b.variant], omit: 4 },
    customer_id: { own: [a.customer, a.affiliate], foreign: [b.customer] },
    quantity: { own: [1, 1, 2] },
    // createOrder's lines: each generated line may name a product that needs a variant, another shop's, or none; a
    // list of several is then almost never valid as a whole, so whole known-good lists are drawn too.
    items: {
      own: [
        [{ product_id: a.product, variant_id: a.variant, quantity: 1 }],
        // Not serialProduct: its three serials are for claimProductSerials and the seeded orders.
        [{ product_id: a.product, variant_id: a.variant, quantity: 2 }],
      ],
    },
    // The two shops hold no attachments: a delivery of files is left out where another kind of content can go.
    files: { own: [], omit: 6 },
    options: { own: [{}], omit: 4 },
    addons: { own: [[]], omit: 4 },
    coupon_code: { own: [a.couponCode], foreign: [b.couponCode], omit: 4 },
    affiliate_code: { own: ['ADA10'], omit: 4 },
    gateway: { own: ['SANDBOX'], omit: 4 },
    // A random string is rarely an IP address (422 on ip_address), and both are checked against the blacklist.
    ip_address: { own: ['203.0.113.7', '2001:db8::7'], omit: 4 },
    country: { own: ['US', 'DE'], omit: 4 },
    currency: { own: ['USD'], omit: 4 },
    amount: { own: [], omit: 4 },
    expires_at: { own: [4_000_000_000], omit: 4 },
    key: { own: ['TENANCY-LICENSE-0001'] },
    hwid: { own: ['HW-TENANCY'], omit: 4 },
    // Each accepted save moves the draft one revision on.
    expected_revision: { own: [0, 1, 2].map((n) => (draft.body as { data: { revision: number } }).data.revision + n) },
    document: { own: [(draft.body as { data: { document: unknown } }).data.document] },
    domain: { own: ['shop-a.example.com', 'www.shop-a.example.org'] },
    client_id: { own: [oauthClient.id], foreign: ['app_unknown'] },
    client_secret: { own: oauthClient.secret ? [oauthClient.secret] : [], foreign: ['mcs_wrong'] },
    redirect_uri: { own: [redirectUri] },
    scope: { own: ['orders.read', 'products.read customers.read'], omit: 4 },
    code_challenge: { own: [], omit: 8 },
    code_verifier: { own: [], omit: 8 },
    grant_type: { own: ['authorization_code', 'refresh_token'] },
    code: { own: codes, omit: 2 },
    refresh_token: { own: [refresh], omit: 2 },
  };
}

function idPool(model: OperationModel, param: string): IdPool {
  const ref = model.pathParams.find((p) => p.name === param)?.ref ?? '';
  const kinds =
    operationKinds[model.operationId]?.[param] ?? (contractParameterKinds[ref] ? [contractParameterKinds[ref]] : []);
  const valid = kinds.filter(isResourceKind);
  return {
    own: valid.map((k) => shops.a.ids[k]),
    ownOther: Object.values(shops.a.ids).filter((id) => !valid.some((k) => shops.a.ids[k] === id)),
    foreign: [...valid.map((k) => shops.b.ids[k]), ...Object.values(shops.b.ids).slice(0, 6)],
  };
}

/** Sends one generated request as it is (raw bodies byte for byte, no client-side clean-up). */
async function send(req: FuzzRequest): Promise<request.Response> {
  let r = request(baseUrl)[req.method as 'get'](req.url);
  for (const [k, v] of Object.entries(req.headers)) r = r.set(k, v);
  const body = req.body;
  if (body?.kind === 'json') {
    if (body.value !== undefined) r = r.set('Content-Type', 'application/json').send(JSON.stringify(body.value));
  } else if (body?.kind === 'raw') {
    if (body.contentType !== undefined) r = r.set('Content-Type', body.contentType);
    r = r.send(Buffer.from(body.text, 'utf8'));
  } else if (body?.kind === 'form') {
    r = r.type('form').send(new URLSearchParams(body.fields).toString());
  } else if (body?.kind === 'multipart') {
    for (const [k, v] of Object.entries(body.fields)) r = r.field(k, v);
    if (body.file) r = r.attach('file', Buffer.from('not allowed'), 'x.txt');
  }
  return r.ok(() => true);
}

/** Client-side refusals (Node will not put the value on the wire): the server never saw these. */
const clientSide = new Set(['ERR_INVALID_CHAR', 'ERR_UNESCAPED_CHARACTERS', 'ERR_INVALID_HTTP_TOKEN']);

function check(req: FuzzRequest, res: request.Response): void {
  const where = `${req.operationId} ${req.method.toUpperCase()} ${req.url.slice(0, 200)} -> ${res.status}`;
  if (res.status >= 500) throw new Error(`5xx: ${where}: ${String(res.text).slice(0, 500)}`);
  if (!res.headers['x-request-id']) throw new Error(`no X-Request-Id: ${where}`);
  if (res.status >= 400) {
    const error = (res.body as { error?: unknown })?.error;
    const envelope =
      (oauthErrorShape.has(req.operationId) && typeof error === 'string') ||
      (typeof error === 'object' &&
        error !== null &&
        typeof (error as { code?: unknown }).code === 'string' &&
        typeof (error as { message?: unknown }).message === 'string' &&
        typeof (error as { doc_url?: unknown }).doc_url === 'string');
    if (!envelope) throw new Error(`4xx without the error envelope: ${where}: ${String(res.text).slice(0, 300)}`);
  }
  assertMatchesContract(req.method, req.url, res);
  const seen = `${JSON.stringify(res.headers)}\n${res.text ?? ''}`;
  // What shop A ever sent (B's ids in its own paths, say) it knows: its audit trail may list those requests.
  const sent = req.text;
  for (const secret of shopBSecrets) if (sent.includes(secret)) sentByA.add(secret);
  const leaked = shopBSecrets.filter((s) => seen.includes(s) && !sentByA.has(s));
  if (leaked.length) throw new Error(`shop B leaked to shop A: ${leaked.join(', ')} in ${where}`);
}

function seedFor(operationId: string, family: string): number {
  let h = baseSeed | 0;
  for (const ch of `${operationId}/${family}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}

// Deletes last, so the other operations keep meeting shop A's seeded resources.
const models = operationModels(spec)
  .filter((m) => !only || only.includes(m.operationId))
  .sort((a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'));

test('the fuzz covers every operation of the contract', () => {
  const all = operationModels(spec);
  if (!only) expect(models).toHaveLength(all.length);
  // A path parameter without a resource kind would only ever get random ids: map new ones in contractParameterKinds.
  const unmapped = all.flatMap((m) =>
    m.pathParams
      .filter((p) => !operationKinds[m.operationId]?.[p.name] && !contractParameterKinds[p.ref ?? ''])
      .map((p) => `${m.operationId} {${p.name}}`),
  );
  expect(unmapped).toEqual([]);
});

describe.each(models.map((m) => [m.operationId, m] as const))('%s', (operationId, model) => {
  test(`${runs} valid + ${runs} mutated requests: no 5xx, request id, envelope, contract, no leak`, async () => {
    const s: OperationStats = (stats[operationId] = { cases: 0, ms: 0, statuses: {}, validAccepted: 0, validCases: 0 });
    const t0 = Date.now();
    const inputs = requestInputs(spec, model, {
      ids: (param) => idPool(model, param),
      headers: model.isPublic ? {} : { Authorization: `Bearer ${shops.a.key}` },
      pinnedQuery: {
        client_id: fc.constantFrom(oauthClient.id, oauthClient.id, 'app_unknown'),
        redirect_uri: fc.constantFrom(redirectUri, redirectUri, 'https://evil.example/cb'),
      },
      references,
    });
    const errors: string[] = [];
    for (const family of ['valid', 'mutated'] as const) {
      const seed = seedFor(operationId, family);
      try {
        await fc.assert(
          fc.asyncProperty(inputs[family], async (req) => {
            totalCases++;
            s.cases++;
            let res: request.Response;
            const sentAt = Date.now();
            try {
              res = await send(req);
            } catch (err) {
              const code = (err as { code?: string }).code ?? '';
              if (clientSide.has(code) || /EPIPE|ECONNRESET/.test(code)) {
                skipped[code] = (skipped[code] ?? 0) + 1;
                return;
              }
              throw err;
            }
            const took = Date.now() - sentAt;
            if (slowest.length < 10 || took > slowest[slowest.length - 1]!.ms) {
              slowest.push({ ms: took, request: req.toJSON() });
              slowest.sort((a, b) => b.ms - a.ms).splice(10);
            }
            s.statuses[res.status] = (s.statuses[res.status] ?? 0) + 1;
            if (family === 'valid') {
              s.validCases++;
              if (res.status < 400) s.validAccepted++;
              else if (process.env.FUZZ_DEBUG)
                console.log(JSON.stringify(req.toJSON()), res.status, res.text.slice(0, 400));
            }
            check(req, res);
          }),
          { numRuns: runs, seed, includeErrorInReport: true, interruptAfterTimeLimit: 120_000 },
        );
      } catch (err) {
        const message = (err as Error).message;
        const counterexample = /Counterexample: (.*)/.exec(message)?.[1];
        failures.push({
          operationId,
          family,
          seed,
          error: message.slice(0, 4000),
          counterexample: counterexample ? clip(counterexample) : undefined,
        });
        errors.push(`[${family}, FUZZ_SEED=${baseSeed}, property seed ${seed}]\n${message}`);
      }
    }
    s.ms = Date.now() - t0;
    if (errors.length) throw new Error(errors.join('\n\n'));
  }, 180_000);
});
