// Email-marketing sync: a shop's new customer (created through POST /orders, `customer:created`) is queued in the same
// transaction for each of its settings that can sync, and the worker job adds it to the list with each provider's
// documented request, against a local HTTP server standing in for Mailchimp, Klaviyo, SendGrid and Brevo
// (EMAIL_MARKETING_BASE_URLS). Checked: the exact request of each provider (method, path, auth header, body with the
// email, the list and the opt-in status); disabled, sync-off, keyless, double-opt-in-on-SendGrid/Brevo and other
// shops' settings get nothing; last_synced_at moves to the clock's now on success only (and the API shows it); a
// rolled-back change queues nothing; 429/5xx/network retried on the schedule and FAILED after the last attempt; a
// 4xx FAILED at once; a setting switched off meanwhile cancels; the key is sealed, never in logs, audit rows or
// stored errors; and on PostgreSQL two workers claiming at once call the provider once per row.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { emailMarketingKeyExists } from '../../db/queries/email-marketing-sync';
import { customerForEmail } from '../../src/domain/customers/customers';
import { emailMarketingApiKeyFrom, setEmailMarketingAsOperator } from '../../src/ops/marketing-admin';
import { ManualClock } from '../../src/platform/clock';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { emitEvent } from '../../src/domain/effects';
import { loadSecretBox } from '../../src/platform/secret-box';
import { emailMarketingSyncJob, RETRY_SCHEDULE_MS } from '../../src/worker/email-marketing-sync';
import type { Job } from '../../src/worker/worker';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const clock = new ManualClock(new Date('2027-03-01T10:00:00Z'));
let t: TestApp;
let server: Server;
let base: string;
const received: Received[] = [];
/** Statuses to answer, in order, for requests whose URL contains the key; 200 `{}` when none is left. */
const plans = new Map<string, { status: number; body?: string }[]>();
/** Answers that never come (a time-out), for URLs containing the key. */
const hang = new Set<string>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() };
      received.push(r);
      if ([...hang].some((k) => r.url.includes(k))) return;
      const key = [...plans.keys()].find((k) => r.url.includes(k));
      const next = key ? plans.get(key)!.shift() : undefined;
      res.writeHead(next?.status ?? 200, { 'content-type': 'application/json' });
      res.end(next?.body ?? '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestApp({
    clock,
    env: {
      RATE_LIMIT_FREE: '100000',
      EMAIL_MARKETING_BASE_URLS: `MAILCHIMP=${base}/mc,KLAVIYO=${base}/kl,SENDGRID=${base}/sg/,BREVO=${base}/br`,
    },
  });
});
afterAll(async () => {
  await t.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function syncJob(options: { timeoutMs?: number; batch?: number } = {}): Promise<Job> {
  return emailMarketingSyncJob(t.db, {
    clock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, t.config.webhookSecretsKey),
    baseUrls: t.config.emailMarketingBaseUrls,
    allowPrivateTargets: false,
    random: () => 0.5, // no jitter: the schedule exactly
    ...options,
  });
}

const keysUsed: string[] = [];
let unique = 0;

interface Shop {
  id: string;
  key: string;
  product: string;
}

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Sync ${++unique}` });
  const key = (await t.createKey(id, ['*'])).key;
  const product = (await t.seed(id, { products: [{ title: 'Ebook', price: '5.00' } as never] })).products[0]!;
  return { id, key, product };
}

async function setting(
  shop: Shop,
  provider: string,
  options: { list?: string; apiKey?: string; doubleOptIn?: boolean; disabled?: boolean; noSync?: boolean } = {},
) {
  if (options.apiKey) keysUsed.push(options.apiKey);
  return setEmailMarketingAsOperator(t.operator, { shopId: shop.id, provider, ...options });
}

/** A new customer of the shop, made as a buyer makes one: an order with a new email. */
async function buyer(shop: Shop, email: string): Promise<void> {
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(shop.key))
    .send({ email, items: [{ product_id: shop.product, quantity: 1 }] });
  expect(res.status).toBe(201);
}

const syncsOf = (shopId: string) =>
  t.db.selectFrom('email_marketing_syncs').selectAll().where('shop_id', '=', shopId).orderBy('id').execute();
const settingsOf = async (shop: Shop) =>
  (await t.http.get('/dev/v1/email-marketing/settings').set(bearer(shop.key))).body.data as {
    provider: string;
    last_synced_at: string | null;
  }[];
const lastSynced = async (shop: Shop) =>
  Object.fromEntries((await settingsOf(shop)).map((s) => [s.provider, s.last_synced_at]));
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const basic = (key: string) => `Basic ${Buffer.from(`anystring:${key}`).toString('base64')}`;
const sentTo = (prefix: string) => received.filter((r) => r.url.startsWith(prefix));

function clearServer(): void {
  received.length = 0;
  plans.clear();
  hang.clear();
}

beforeEach(() => clearServer());

test('a new customer reaches every syncing provider with its documented request; nobody else is called', async () => {
  const shop = await newShop();
  await setting(shop, 'mailchimp', { list: 'aud1', apiKey: 'mc0123456789abcdef-us6', doubleOptIn: true });
  await setting(shop, 'KLAVIYO', { list: 'XyZ123', apiKey: 'pk_klaviyo_secret_1' });
  await setting(shop, 'SENDGRID', { list: 'sg-list-1', apiKey: 'SG.sendgrid.secret_1' });
  await setting(shop, 'BREVO', { list: '7', apiKey: 'xkeysib-brevo-secret-1' });
  // A shop whose settings cannot sync: disabled, sync off, no key, double opt-in on Brevo.
  const idle = await newShop();
  await setting(idle, 'MAILCHIMP', { list: 'aud2', apiKey: 'mcidle-us1', disabled: true });
  await setting(idle, 'KLAVIYO', { list: 'L2', apiKey: 'pk_idle_2', noSync: true });
  await setting(idle, 'SENDGRID', { list: 'sg-2' });
  await setting(idle, 'BREVO', { list: '9', apiKey: 'xkeysib-idle-3', doubleOptIn: true });
  // Another shop, syncing, whose customers are not this shop's.
  const other = await newShop();
  await setting(other, 'MAILCHIMP', { list: 'aud3', apiKey: 'mcother-us2' });

  await buyer(shop, 'Ada.Lovelace@Example.com');
  await buyer(idle, 'grace@example.com');
  expect(await syncsOf(idle.id)).toEqual([]);
  expect(await syncsOf(other.id)).toEqual([]);
  const queued = await syncsOf(shop.id);
  expect(queued.map((s) => [s.status, s.email, s.attempts])).toEqual(
    Array(4).fill(['PENDING', 'ada.lovelace@example.com', 0]),
  );
  expect(await lastSynced(shop)).toEqual({ MAILCHIMP: null, KLAVIYO: null, SENDGRID: null, BREVO: null });

  clock.advance(1000);
  const job = await syncJob();
  expect(await job.runOnce()).toBe(4);
  expect(received).toHaveLength(4);
  const email = 'ada.lovelace@example.com';

  const [mc] = sentTo('/mc/');
  expect([mc!.method, mc!.url]).toEqual(['PUT', `/mc/3.0/lists/aud1/members/${md5(email)}`]);
  expect(mc!.headers.authorization).toBe(basic('mc0123456789abcdef-us6'));
  expect(JSON.parse(mc!.body)).toEqual({ email_address: email, status_if_new: 'pending' });

  const [kl] = sentTo('/kl/');
  expect([kl!.method, kl!.url]).toEqual(['POST', '/kl/api/profile-subscription-bulk-create-jobs']);
  expect(kl!.headers.authorization).toBe('Klaviyo-API-Key pk_klaviyo_secret_1');
  expect(kl!.headers.revision).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  expect(kl!.headers['content-type']).toBe('application/vnd.api+json');
  expect(JSON.parse(kl!.body)).toEqual({
    data: {
      type: 'profile-subscription-bulk-create-job',
      attributes: {
        profiles: {
          data: [
            {
              type: 'profile',
              attributes: { email, subscriptions: { email: { marketing: { consent: 'SUBSCRIBED' } } } },
            },
          ],
        },
        historical_import: false,
      },
      relationships: { list: { data: { type: 'list', id: 'XyZ123' } } },
    },
  });

  const [sg] = sentTo('/sg/');
  expect([sg!.method, sg!.url]).toEqual(['PUT', '/sg/v3/marketing/contacts']);
  expect(sg!.headers.authorization).toBe('Bearer SG.sendgrid.secret_1');
  expect(JSON.parse(sg!.body)).toEqual({ list_ids: ['sg-list-1'], contacts: [{ email }] });

  const [br] = sentTo('/br/');
  expect([br!.method, br!.url]).toEqual(['POST', '/br/v3/contacts']);
  expect(br!.headers['api-key']).toBe('xkeysib-brevo-secret-1');
  expect(br!.headers.authorization).toBeUndefined();
  expect(JSON.parse(br!.body)).toEqual({ email, listIds: [7], updateEnabled: true });

  // SYNCED, and each setting's last_synced_at is the clock's now, as the API lists it.
  const now = clock.now();
  expect((await syncsOf(shop.id)).map((s) => [s.status, s.attempts, s.synced_at?.getTime()])).toEqual(
    Array(4).fill(['SYNCED', 1, now.getTime()]),
  );
  const iso = now.toISOString();
  expect(await lastSynced(shop)).toEqual({ MAILCHIMP: iso, KLAVIYO: iso, SENDGRID: iso, BREVO: iso });
  expect(await lastSynced(idle)).toEqual({ MAILCHIMP: null, KLAVIYO: null, SENDGRID: null, BREVO: null });
  expect(await lastSynced(other)).toEqual({ MAILCHIMP: null });

  // Nothing is sent twice; a returning buyer is no new customer.
  expect(await job.runOnce()).toBe(0);
  await buyer(shop, 'ada.lovelace@example.com');
  expect(await job.runOnce()).toBe(0);
  expect(received).toHaveLength(4);

  // The other shop's customer: its own list, `subscribed` without double opt-in; the first shop's untouched.
  clock.advance(60_000);
  await buyer(other, 'linus@example.com');
  expect(await job.runOnce()).toBe(1);
  expect(received.slice(4).map((r) => [r.url, JSON.parse(r.body), r.headers.authorization])).toEqual([
    [
      `/mc/3.0/lists/aud3/members/${md5('linus@example.com')}`,
      { email_address: 'linus@example.com', status_if_new: 'subscribed' },
      basic('mcother-us2'),
    ],
  ]);
  expect(await lastSynced(other)).toEqual({ MAILCHIMP: clock.now().toISOString() });
  expect((await lastSynced(shop)).MAILCHIMP).toBe(iso);
});

test('a rolled-back change queues nothing; a blocked buyer queues nothing', async () => {
  const shop = await newShop();
  await setting(shop, 'SENDGRID', { list: 'l', apiKey: 'SG.rollback' });
  await expect(
    t.db.transaction().execute(async (trx) => {
      const w = shopWrite(trx, shop.id, new Effects(), clock);
      const { customer } = await customerForEmail(w, { currency: 'USD' }, 'gone@example.com');
      await emitEvent(trx, shop.id, 'customer:created', { id: customer.id, email: customer.email }, { clock });
      // Queued inside the transaction...
      expect(
        await trx.selectFrom('email_marketing_syncs').select('id').where('shop_id', '=', shop.id).execute(),
      ).toHaveLength(1);
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  // ...and gone with it.
  expect(await syncsOf(shop.id)).toEqual([]);

  await t.seed(shop.id, { blacklist: [{ type: 'EMAIL_DOMAIN', value: 'blocked.example' }] });
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(shop.key))
    .send({ email: 'new@blocked.example', items: [{ product_id: shop.product, quantity: 1 }] });
  expect(res.status).toBe(400);
  expect(await syncsOf(shop.id)).toEqual([]);
  expect(await (await syncJob()).runOnce()).toBe(0);
  expect(received).toEqual([]);
});

test('429 and 5xx are retried on the schedule until a 2xx; last_synced_at moves only then', async () => {
  const shop = await newShop();
  await setting(shop, 'SENDGRID', { list: 'retry-list', apiKey: 'SG.retry' });
  await buyer(shop, 'retry@example.com');
  plans.set('/sg/', [{ status: 503 }, { status: 429 }]);
  const job = await syncJob();

  const start = clock.now().getTime();
  expect(await job.runOnce()).toBe(1);
  let [row] = await syncsOf(shop.id);
  expect([row!.status, row!.attempts, row!.last_status, row!.next_attempt_at?.getTime()]).toEqual([
    'RETRYING',
    1,
    503,
    start + RETRY_SCHEDULE_MS[0]!,
  ]);
  expect((await lastSynced(shop)).SENDGRID).toBeNull();
  // Not due yet: nothing is sent.
  clock.advance(RETRY_SCHEDULE_MS[0]! - 1);
  expect(await job.runOnce()).toBe(0);
  clock.advance(1);
  expect(await job.runOnce()).toBe(1);
  [row] = await syncsOf(shop.id);
  expect([row!.status, row!.attempts, row!.last_status]).toEqual(['RETRYING', 2, 429]);
  clock.advance(RETRY_SCHEDULE_MS[1]!);
  expect(await job.runOnce()).toBe(1);
  [row] = await syncsOf(shop.id);
  expect([row!.status, row!.attempts, row!.last_status, row!.last_error, row!.next_attempt_at]).toEqual([
    'SYNCED',
    3,
    200,
    null,
    null,
  ]);
  expect(received).toHaveLength(3);
  expect((await lastSynced(shop)).SENDGRID).toBe(clock.now().toISOString());
});

test('a provider that keeps failing (5xx, time-outs) is tried 6 times, then FAILED; a 4xx FAILED at once', async () => {
  const shop = await newShop();
  await setting(shop, 'BREVO', { list: '12', apiKey: 'xkeysib-down' });
  await setting(shop, 'MAILCHIMP', { list: 'badlist', apiKey: 'mc-wrong-key-us3' });
  await buyer(shop, 'down@example.com');
  plans.set('/br/', Array(10).fill({ status: 500, body: '{"message":"internal"}' }));
  // Mailchimp answers 401 and echoes the key: it is stored redacted.
  plans.set('/mc/', [{ status: 401, body: '{"detail":"API key mc-wrong-key-us3 is invalid"}' }]);
  const job = await syncJob();

  expect(await job.runOnce()).toBe(2);
  for (const wait of RETRY_SCHEDULE_MS) {
    clock.advance(wait);
    expect(await job.runOnce()).toBe(1);
  }
  clock.advance(7 * 24 * 3_600_000);
  expect(await job.runOnce()).toBe(0);
  expect(sentTo('/br/')).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
  expect(sentTo('/mc/')).toHaveLength(1);

  const rows = await t.db
    .selectFrom('email_marketing_syncs as s')
    .innerJoin('email_marketing_settings as e', (j) =>
      j.onRef('e.shop_id', '=', 's.shop_id').onRef('e.id', '=', 's.setting_id'),
    )
    .select(['e.provider', 's.status', 's.attempts', 's.last_status', 's.last_error', 's.next_attempt_at'])
    .where('s.shop_id', '=', shop.id)
    .orderBy('e.provider')
    .execute();
  expect(rows).toEqual([
    {
      provider: 'BREVO',
      status: 'FAILED',
      attempts: 6,
      last_status: 500,
      last_error: 'status 500: {"message":"internal"}',
      next_attempt_at: null,
    },
    {
      provider: 'MAILCHIMP',
      status: 'FAILED',
      attempts: 1,
      last_status: 401,
      last_error: 'status 401: {"detail":"API key [redacted] is invalid"}',
      next_attempt_at: null,
    },
  ]);
  expect(await lastSynced(shop)).toEqual({ BREVO: null, MAILCHIMP: null });

  // A provider that does not answer in time is retried too.
  const slow = await newShop();
  await setting(slow, 'KLAVIYO', { list: 'slow', apiKey: 'pk_slow' });
  await buyer(slow, 'slow@example.com');
  hang.add('/kl/');
  expect(await (await syncJob({ timeoutMs: 300 })).runOnce()).toBe(1);
  const [timedOut] = await syncsOf(slow.id);
  expect([timedOut!.status, timedOut!.attempts, timedOut!.last_status]).toEqual(['RETRYING', 1, null]);
  expect(timedOut!.last_error).toMatch(/^TIMEOUT/);
});

test('a setting disabled (or its sync turned off) before the worker runs cancels the queued sync, unsent', async () => {
  const shop = await newShop();
  await setting(shop, 'KLAVIYO', { list: 'k1', apiKey: 'pk_cancel' });
  await setting(shop, 'SENDGRID', { list: 's1', apiKey: 'SG.cancel' });
  await buyer(shop, 'late@example.com');
  await setting(shop, 'KLAVIYO', { list: 'k1', disabled: true });
  await setting(shop, 'SENDGRID', { list: 's1', noSync: true });
  expect(await (await syncJob()).runOnce()).toBe(2);
  expect(received).toEqual([]);
  expect((await syncsOf(shop.id)).map((s) => [s.status, s.attempts, s.last_error]).sort()).toEqual([
    ['CANCELLED', 0, 'sync_customers is off'],
    ['CANCELLED', 0, 'the setting is disabled'],
  ]);
});

test('the key: from stdin or the environment, sealed at rest, kept when not given, never logged or audited', async () => {
  expect(emailMarketingApiKeyFrom(true, {}, () => 'from-stdin-key\n')).toBe('from-stdin-key');
  expect(emailMarketingApiKeyFrom(false, { EMAIL_MARKETING_API_KEY: 'from-env-key' })).toBe('from-env-key');
  expect(emailMarketingApiKeyFrom(false, {})).toBeUndefined();
  expect(() => emailMarketingApiKeyFrom(true, {}, () => '\n')).toThrow('--api-key-stdin');

  const shop = await newShop();
  const out = await setting(shop, 'SENDGRID', { list: 'keep', apiKey: 'SG.kept-key' });
  expect(out).toMatchObject({ provider: 'SENDGRID' });
  expect(await emailMarketingKeyExists(t.db, shop.id, out.id)).toBe(true);
  expect(JSON.stringify(out)).not.toContain('SG.kept-key');
  // Set again without a key: the stored key stays and is used.
  expect((await setting(shop, 'SENDGRID', { list: 'keep' })).id).toBe(out.id);
  expect(await emailMarketingKeyExists(t.db, shop.id, out.id)).toBe(true);
  await expect(
    setEmailMarketingAsOperator(t.operator, {
      shopId: shop.id,
      provider: 'SENDGRID',
      list: 'keep',
      apiKey: 'has space',
    }),
  ).rejects.toThrow(/^--api-key-stdin \(or EMAIL_MARKETING_API_KEY\) must be/);
  await buyer(shop, 'kept@example.com');
  await (await syncJob()).runOnce();
  expect(sentTo('/sg/').map((r) => r.headers.authorization)).toEqual(['Bearer SG.kept-key']);

  // Everything the key could have reached, in every shop of this file.
  const sealed = await t.db.selectFrom('email_marketing_keys').select('sealed_key').execute();
  expect(sealed.length).toBeGreaterThan(5);
  const audit = (await sql<{ text: string }>`select to_jsonb(r)::text as text from audit_entries r`.execute(t.db)).rows
    .map((r) => r.text)
    .join('\n');
  const stored = (
    await sql<{ text: string }>`select to_jsonb(r)::text as text from email_marketing_syncs r`.execute(t.db)
  ).rows
    .map((r) => r.text)
    .join('\n');
  const settingsText = (await t.http.get('/dev/v1/email-marketing/settings').set(bearer(shop.key))).text;
  const logs = JSON.stringify(t.logs);
  expect(keysUsed.length).toBeGreaterThan(10);
  for (const key of keysUsed) {
    expect(logs).not.toContain(key);
    expect(audit).not.toContain(key);
    expect(stored).not.toContain(key);
    expect(settingsText).not.toContain(key);
    for (const s of sealed) expect(Buffer.from(s.sealed_key).includes(Buffer.from(key))).toBe(false);
  }
  expect(audit).toContain('createOrder'); // the audit trail was read (the operator's CLI writes are not audited)
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

pgOnly('two workers claiming at once call the provider once per row (PostgreSQL)', async () => {
  const shop = await newShop();
  await setting(shop, 'KLAVIYO', { list: 'race', apiKey: 'pk_race' });
  const emails = Array.from({ length: 12 }, (_, i) => `race${i}@example.com`);
  for (const e of emails) await buyer(shop, e);
  // Small batches, so both workers claim in every round until nothing is due.
  const [a, b] = [await syncJob({ batch: 3 }), await syncJob({ batch: 3 })];
  let claimed = 0;
  let rounds = 0;
  for (;;) {
    const [na, nb] = await Promise.all([a.runOnce(), b.runOnce()]);
    if (na + nb === 0) break;
    claimed += na + nb;
    rounds++;
  }
  expect(claimed).toBe(12);
  expect(rounds).toBeGreaterThanOrEqual(2);
  const sent = sentTo('/kl/').map(
    (r) =>
      (JSON.parse(r.body) as { data: { attributes: { profiles: { data: { attributes: { email: string } }[] } } } }).data
        .attributes.profiles.data[0]!.attributes.email,
  );
  expect(sent.sort()).toEqual([...emails].sort());
  expect((await syncsOf(shop.id)).every((s) => s.status === 'SYNCED' && s.attempts === 1)).toBe(true);
  expect(await Promise.all([a.runOnce(), b.runOnce()])).toEqual([0, 0]);
});
