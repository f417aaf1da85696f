// GET /email-marketing/settings: the shop's email-marketing integrations (one per provider) as a cursor list, newest
// first with ties broken by id, walked page by page without a skip or a repeat; a tampered, foreign or mismatched
// cursor is 422; the list holds only the caller's shop's settings; it needs email_marketing.read. The settings come
// from fixtures (validated: a bad file writes nothing) and from the operator's function behind `cli email-marketing
// set` (tested end to end in test/store/marketing-cli.test.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { setEmailMarketingAsOperator } from '../../src/ops/marketing-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000' } });
});
afterAll(() => t.close());

let unique = 0;
async function newShop(): Promise<{ id: string; key: string }> {
  const id = await t.createShop({ name: `Marketing ${++unique}` });
  return { id, key: (await t.createKey(id, ['email_marketing.read'])).key };
}

const list = (key: string, query: Record<string, string | number> = {}) =>
  t.http.get('/dev/v1/email-marketing/settings').query(query).set(bearer(key));

const rowsOf = async (shopId: string) =>
  t.db.selectFrom('email_marketing_settings').selectAll().where('shop_id', '=', shopId).orderBy('id').execute();

/** Every page of the list with `limit`, and the ids in the order they came. */
async function walk(key: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await list(key, { limit, ...(cursor ? { cursor } : {}) });
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...res.body.data.map((s: { id: string }) => s.id));
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
    pages++;
  } while (cursor);
  return { ids, pages };
}

test('a shop without settings: an empty page, no cursor', async () => {
  const s = await newShop();
  const res = await list(s.key);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
});

test('every field as the fixture set it; only the shop’s own settings', async () => {
  const [a, b] = [await newShop(), await newShop()];
  const seeded = await t.seed(
    a.id,
    parseFixtures(
      {
        email_marketing: [
          {
            provider: 'MAILCHIMP',
            list_id: 'a1b2c3',
            double_opt_in: true,
            sync_customers: false,
            last_synced_at: '2026-11-22T03:10:00.000Z',
          },
        ],
      },
      new Date(),
    ),
  );
  await t.seed(b.id, { email_marketing: [{ provider: 'KLAVIYO', enabled: false }] });
  const res = await list(a.key);
  expect(res.status).toBe(200);
  const [row] = await rowsOf(a.id);
  expect(res.body.data).toEqual([
    {
      id: seeded.emailMarketingSettings[0],
      provider: 'MAILCHIMP',
      enabled: true,
      list_id: 'a1b2c3',
      double_opt_in: true,
      sync_customers: false,
      last_synced_at: '2026-11-22T03:10:00.000Z',
      created_at: row!.created_at.toISOString(),
      updated_at: row!.updated_at.toISOString(),
    },
  ]);
  // Defaults of a setting the file says little about: enabled unless told, no list, never synced.
  const other = await list(b.key);
  expect(other.body.data).toHaveLength(1);
  expect(other.body.data[0]).toMatchObject({
    provider: 'KLAVIYO',
    enabled: false,
    list_id: null,
    double_opt_in: false,
    sync_customers: true,
    last_synced_at: null,
  });
});

test('the cursor walk: newest first, ties broken by id, no skip and no repeat at every page size', async () => {
  const s = await newShop();
  // Two written in one seed share created_at (the tie the id breaks); two more later, one per operator command.
  await t.seed(s.id, { email_marketing: [{ provider: 'MAILCHIMP' }, { provider: 'KLAVIYO' }] });
  await setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'sendgrid', list: 'news' });
  await setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'BREVO' });
  const rows = await rowsOf(s.id);
  expect(rows).toHaveLength(4);
  const expected = [...rows]
    .sort((x, y) => y.created_at.getTime() - x.created_at.getTime() || (x.id < y.id ? 1 : -1))
    .map((r) => r.id);
  for (const limit of [1, 2, 3, 4, 100]) {
    const { ids, pages } = await walk(s.key, limit);
    expect(ids).toEqual(expected);
    expect(pages).toBe(Math.max(1, Math.ceil(4 / limit)));
  }
  // A setting written again keeps its place (id and created_at), so a walk in progress does not see it twice.
  const first = await list(s.key, { limit: 2 });
  await setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'MAILCHIMP', disabled: true });
  const rest = await list(s.key, { limit: 2, cursor: first.body.pagination.next_cursor });
  const seen = [...first.body.data, ...rest.body.data].map((x: { id: string }) => x.id);
  expect(seen).toEqual(expected);
  expect(rest.body.data.find((x: { provider: string }) => x.provider === 'MAILCHIMP')?.enabled ?? false).toBe(false);
});

test('a tampered, foreign or out-of-range cursor or limit: 422 with a detail, nothing else told', async () => {
  const [a, b] = [await newShop(), await newShop()];
  await t.seed(a.id, { email_marketing: [{ provider: 'MAILCHIMP' }, { provider: 'BREVO' }] });
  await t.seed(b.id, { email_marketing: [{ provider: 'MAILCHIMP' }, { provider: 'BREVO' }] });
  const cursor = (await list(a.key, { limit: 1 })).body.pagination.next_cursor as string;
  expect(typeof cursor).toBe('string');
  // The character replaced is the one tested, so the tampered cursor always differs (1 run in 64 it did not).
  const flipped = cursor.slice(0, -2) + (cursor.at(-2) === 'A' ? 'B' : 'A') + cursor.slice(-1);
  for (const bad of [flipped, `${cursor}x`, 'not-a-cursor']) {
    const res = await list(a.key, { limit: 1, cursor: bad });
    expect([res.status, res.body.error.code, res.body.error.details[0].field]).toEqual([
      422,
      'VALIDATION_ERROR',
      'query.cursor',
    ]);
  }
  // Shop B with shop A's cursor.
  const foreign = await list(b.key, { limit: 1, cursor });
  expect([foreign.status, foreign.body.error.details[0].field]).toEqual([422, 'query.cursor']);
  // Another list's cursor (the blacklist's) is not one of this list.
  const blKey = (await t.createKey(a.id, ['*'])).key;
  await t.seed(a.id, {
    blacklist: [
      { type: 'EMAIL', value: 'x@example.com' },
      { type: 'EMAIL', value: 'y@example.com' },
    ],
  });
  const blCursor = (await t.http.get('/dev/v1/blacklist').query({ limit: 1 }).set(bearer(blKey))).body.pagination
    .next_cursor as string;
  const mixed = await list(a.key, { limit: 1, cursor: blCursor });
  expect([mixed.status, mixed.body.error.details[0].field]).toEqual([422, 'query.cursor']);
  for (const limit of [0, 101]) expect((await list(a.key, { limit })).status).toBe(422);
  // The real cursor still works.
  expect((await list(a.key, { limit: 1, cursor })).status).toBe(200);
});

test('scopes: email_marketing.read or *; any other scope is 403; no key is 401', async () => {
  const s = await newShop();
  await t.seed(s.id, { email_marketing: [{ provider: 'MAILCHIMP' }] });
  const star = (await t.createKey(s.id, ['*'])).key;
  const other = (await t.createKey(s.id, ['messaging.write', 'customers.read'])).key;
  expect((await list(s.key)).status).toBe(200);
  expect((await list(star)).status).toBe(200);
  const refused = await list(other);
  expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
  expect((await t.http.get('/dev/v1/email-marketing/settings')).status).toBe(401);
});

describe('fixtures', () => {
  test('validated before anything is written: a repeated provider, a bad list id, an unknown provider', () => {
    const bad = [
      { email_marketing: [{ provider: 'MAILCHIMP' }, { provider: 'MAILCHIMP' }] },
      { email_marketing: [{ provider: 'MAILCHIMP', list_id: 'has space' }] },
      { email_marketing: [{ provider: 'CONSTANTCONTACT' }] },
      { email_marketing: [{ provider: 'BREVO', last_synced_at: 'yesterday' }] },
      { email_marketing: [{ provider: 'BREVO', extra: true }] },
    ];
    for (const value of bad) expect(() => parseFixtures(value, new Date())).toThrow(FixtureError);
    expect(() => parseFixtures(bad[0], new Date())).toThrow(/email_marketing\/1\/provider repeats/);
  });

  test('a provider the shop already has is set to what the file says, keeping its id', async () => {
    const s = await newShop();
    const first = await t.seed(s.id, { email_marketing: [{ provider: 'MAILCHIMP', list_id: 'one' }] });
    const again = await t.seed(s.id, { email_marketing: [{ provider: 'MAILCHIMP', list_id: 'two', enabled: false }] });
    expect(again.emailMarketingSettings).toEqual(first.emailMarketingSettings);
    const rows = await rowsOf(s.id);
    expect(rows.map((r) => [r.list_id, r.enabled])).toEqual([['two', false]]);
  });

  test('a refusal later in the file rolls the settings back too', async () => {
    const s = await newShop();
    await t.seed(s.id, { messaging_bots: [{ username: 'taken_bot' }] });
    await expect(
      t.seed(s.id, { email_marketing: [{ provider: 'KLAVIYO' }], messaging_bots: [{ username: 'TAKEN_bot' }] }),
    ).rejects.toThrow(/messaging_bots\/0/);
    expect(await rowsOf(s.id)).toEqual([]);
  });
});

test('the example of docs/fixtures.md seeds: two settings, a bot with two users and their switches', async () => {
  const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'fixtures.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Email marketing and messaging bots'));
  const start = section.indexOf('```json') + 7;
  const fixtures = parseFixtures(JSON.parse(section.slice(start, section.indexOf('```', start))), new Date());
  const s = await newShop();
  const seeded = await t.seed(s.id, fixtures);
  expect(seeded.emailMarketingSettings).toHaveLength(2);
  expect(seeded.messagingBots).toHaveLength(1);
  expect(seeded.messagingBotUsers).toHaveLength(2);
  const listed = (await list(s.key)).body.data as { provider: string; last_synced_at: string | null }[];
  expect(listed.map((x) => [x.provider, x.last_synced_at]).sort()).toEqual([
    ['KLAVIYO', null],
    ['MAILCHIMP', '2026-11-22T03:10:00.000Z'],
  ]);
  const bot = await t.db
    .selectFrom('messaging_bots')
    .selectAll()
    .where('id', '=', seeded.messagingBots[0]!)
    .executeTakeFirstOrThrow();
  expect([bot.username, bot.name]).toEqual(['shop_alerts_bot', 'Shop alerts']);
  const users = await t.db
    .selectFrom('messaging_bot_users')
    .select(['telegram_user_id', 'stock_low', 'review_created', 'order_paid'])
    .where('bot_id', '=', bot.id)
    .orderBy('telegram_user_id')
    .execute();
  expect(users).toEqual([
    { telegram_user_id: '123456789', stock_low: true, review_created: true, order_paid: true },
    { telegram_user_id: '987654321', stock_low: false, review_created: false, order_paid: true },
  ]);
});

test('the operator’s `email-marketing set`: refusals name the option and write nothing', async () => {
  const s = await newShop();
  await setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'brevo', list: 'one' });
  const before = await rowsOf(s.id);
  await expect(setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'aweber' })).rejects.toThrow(
    /^--provider must be one of MAILCHIMP, KLAVIYO, SENDGRID, BREVO$/,
  );
  await expect(
    setEmailMarketingAsOperator(t.operator, { shopId: s.id, provider: 'BREVO', list: 'has space' }),
  ).rejects.toThrow(/^--list must be 1 to 200 visible ASCII characters$/);
  await expect(setEmailMarketingAsOperator(t.operator, { shopId: 'shop_nope', provider: 'BREVO' })).rejects.toThrow(
    'No shop with id shop_nope',
  );
  expect(await rowsOf(s.id)).toEqual(before);
});
