// `gateway connect stripe` as an operator runs it: secrets from the environment or stdin (never an argument), the
// shop's mode checked against the key, Stripe (its fake, held to Stripe's published document) refusing a wrong key,
// the account's webhook endpoints read for one that posts to the shop's route, enabled, with every event we act on,
// the credentials stored sealed, the webhook address printed, and no secret in any output. A refused connect writes
// nothing.
import { sql } from 'kysely';
import { inProcessCli, type Cli } from '../helpers/cli';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { stripeEventTypes } from '../../src/integrations/stripe/notices';
import { shopForMode } from '../../src/ops/admin';
import { startStripeFake, type StripeFake } from '../fakes/stripe';

let database: TestDatabase;
let fake: StripeFake;
let cli: Cli;
let shopId: string;
let testShopId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  fake = await startStripeFake();
  cli = inProcessCli(database, {
    ...process.env,
    PUBLIC_URL: 'http://api.test',
    GATEWAY_BASE_URLS: `STRIPE=${fake.baseUrl}`,
  });
  shopId = (await cli('shop', 'create', '--name', 'Connect')).json.id;
  // The shop's test-mode twin (made by its first use, as connect --mode test would), whose route a test-mode
  // connection's endpoint must post to.
  testShopId = (await shopForMode(database.db, shopId, 'test')).id;
}, 60_000);
afterAll(async () => {
  await fake?.close();
  await database?.close();
});

async function connections(): Promise<number> {
  const { rows } = await sql<{ n: string }>`select count(*)::text as n from gateway_connections`.execute(database.db);
  return Number(rows[0]!.n);
}

/** What a refused run told the operator (with --json the error is a JSON document on stdout). */
function said(out: { stdout: string; stderr: string }): string {
  return `${out.stdout}${out.stderr}`;
}

const routeOf = (shop: string) => `http://api.test/webhooks/gateways/stripe/${shop}`;

/** A Stripe account whose webhook endpoint posts to `shop`'s route. */
const accountFor = (livemode: boolean, shop: string) => fake.createAccount({ livemode, webhookUrl: routeOf(shop) });

function leaks(out: { stdout: string; stderr: string }, secrets: Record<string, string>): string[] {
  return Object.values(secrets).filter((s) => out.stdout.includes(s) || out.stderr.includes(s));
}

test('a test shop takes Stripe test keys from the environment; the address is printed, no secret is', async () => {
  const creds = accountFor(false, testShopId);
  const out = await cli.with({ env: creds })('gateway', 'connect', 'stripe', '--shop', shopId, '--mode', 'test');
  expect(out.code).toBe(0);
  expect(out.json).toEqual({
    gateway: 'STRIPE',
    mode: 'test',
    webhook_url: routeOf(testShopId),
    settings: {},
  });
  // The test twin's own address, not the live shop's.
  expect(out.json.webhook_url).not.toContain(shopId);
  expect(leaks(out, creds)).toEqual([]);
  // Stored sealed: neither secret is in the row's bytes.
  const { rows } = await sql<{ sealed: Buffer }>`select sealed_credentials as sealed from gateway_connections`.execute(
    database.db,
  );
  expect(rows).toHaveLength(1);
  for (const secret of Object.values(creds)) expect(Buffer.from(rows[0]!.sealed).includes(secret)).toBe(false);
  const list = await cli('gateway', 'list', '--shop', shopId, '--mode', 'test');
  expect(list.json).toEqual(expect.arrayContaining([{ code: 'STRIPE', kind: 'SESSION', active: true, coins: [] }]));
  expect(fake.violations).toEqual([]);
});

test('a live key for a test shop, a test key for a live shop, and a key Stripe does not know: refused, nothing written', async () => {
  const before = await connections();
  const live = accountFor(true, shopId);
  const test = accountFor(false, testShopId);
  const wrongMode = await cli.with({ env: live })('gateway', 'connect', 'stripe', '--shop', shopId, '--mode', 'test');
  expect(wrongMode.code).not.toBe(0);
  expect(said(wrongMode)).toMatch(/live/i);
  const wrongMode2 = await cli.with({ env: test })('gateway', 'connect', 'stripe', '--shop', shopId, '--mode', 'live');
  expect(wrongMode2.code).not.toBe(0);
  const unknown = { ...live, STRIPE_SECRET_KEY: `sk_live_${'x'.repeat(40)}` };
  const refused = await cli.with({ env: unknown })('gateway', 'connect', 'stripe', '--shop', shopId);
  expect(refused.code).not.toBe(0);
  expect(said(refused)).toMatch(/refused these credentials/);
  for (const out of [wrongMode, wrongMode2, refused]) expect(leaks(out, { ...live, ...test, ...unknown })).toEqual([]);
  expect(await connections()).toBe(before);
  expect(fake.violations).toEqual([]);
});

test('--secrets-stdin takes a JSON object; a missing secret is named, not guessed', async () => {
  const live = accountFor(true, shopId);
  const empty = Object.fromEntries(Object.keys(live).map((k) => [k, '']));
  const missing = await cli.with({ env: empty, stdin: JSON.stringify({ secret_key: live.STRIPE_SECRET_KEY }) })(
    'gateway',
    'connect',
    'stripe',
    '--shop',
    shopId,
    '--secrets-stdin',
  );
  expect(missing.code).not.toBe(0);
  expect(said(missing)).toMatch(/STRIPE_WEBHOOK_SECRET/);
  const ok = await cli.with({
    env: empty,
    stdin: JSON.stringify({ STRIPE_SECRET_KEY: live.STRIPE_SECRET_KEY, webhook_secret: live.STRIPE_WEBHOOK_SECRET }),
  })('gateway', 'connect', 'stripe', '--shop', shopId, '--mode', 'live', '--secrets-stdin');
  expect(ok.code).toBe(0);
  expect(ok.json).toMatchObject({
    gateway: 'STRIPE',
    mode: 'live',
    webhook_url: `http://api.test/webhooks/gateways/stripe/${shopId}`,
  });
  expect(leaks(ok, live)).toEqual([]);
  expect(fake.violations).toEqual([]);
});

describe("the account's webhook endpoint: refused, saying what to fix, nothing written", () => {
  const connectLive = (creds: Record<string, string>) =>
    cli.with({ env: creds })('gateway', 'connect', 'stripe', '--shop', shopId, '--mode', 'live');

  test('none at all; one posting elsewhere (another shop, another PUBLIC_URL); disabled; events left out', async () => {
    const before = await connections();
    const none = fake.createAccount({ livemode: true });
    const elsewhere = accountFor(true, testShopId);
    const otherHost = fake.createAccount({
      livemode: true,
      webhookUrl: `https://old.example.com/webhooks/gateways/stripe/${shopId}`,
    });
    const disabled = accountFor(true, shopId);
    fake.configureWebhookEndpoint(disabled, { enabled: false });
    const partial = accountFor(true, shopId);
    fake.configureWebhookEndpoint(partial, { events: ['checkout.session.completed', 'charge.refunded'] });
    const refusals: [Record<string, string>, RegExp][] = [
      [none, /no webhook endpoint posting to http:\/\/api\.test\/webhooks\/gateways\/stripe\/shop_\w+: add one/],
      [elsewhere, /no webhook endpoint posting to/],
      [otherHost, /no webhook endpoint posting to/],
      [disabled, /webhook endpoint we_\w+ posting to .* is disabled/],
      [
        partial,
        /does not send checkout\.session\.async_payment_succeeded, checkout\.session\.async_payment_failed, checkout\.session\.expired, charge\.dispute\.created, charge\.dispute\.closed: add them/,
      ],
    ];
    for (const [creds, message] of refusals) {
      const out = await connectLive(creds);
      expect(out.code).not.toBe(0);
      expect(said(out)).toMatch(/STRIPE refused this connection \(live mode\)/);
      expect(said(out)).toMatch(message);
      expect(leaks(out, creds)).toEqual([]);
    }
    expect(await connections()).toBe(before);
    expect(fake.violations).toEqual([]);
  });

  test('a restricted key that cannot read webhook endpoints: refused, naming the permission', async () => {
    const before = await connections();
    const creds = fake.restrictKey(accountFor(true, shopId), ['/v1/webhook_endpoints']);
    expect(creds.STRIPE_SECRET_KEY).toMatch(/^rk_live_/);
    const out = await connectLive(creds);
    expect(out.code).not.toBe(0);
    expect(said(out)).toMatch(/restricted key cannot read webhook endpoints: give it Read access to Webhook Endpoints/);
    expect(leaks(out, creds)).toEqual([]);
    expect(await connections()).toBe(before);
    // The same key with the permission connects.
    fake.restrictKey(creds, []);
    expect((await connectLive(creds)).code).toBe(0);
    expect(fake.violations).toEqual([]);
  });

  test('an endpoint sending exactly our events is enough; so is the route spelled with another case and port', async () => {
    const exact = accountFor(true, shopId);
    fake.configureWebhookEndpoint(exact, { events: [...stripeEventTypes, 'customer.created'] });
    expect((await connectLive(exact)).code).toBe(0);
    const spelled = fake.createAccount({
      livemode: true,
      webhookUrl: `HTTP://API.test:80/webhooks/gateways/stripe/${shopId}`,
    });
    expect((await connectLive(spelled)).code).toBe(0);
    expect(fake.violations).toEqual([]);
  });
});
