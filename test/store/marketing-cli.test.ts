// `cli email-marketing set`, `cli bot create` and `cli bot user add` end to end, as an operator runs them (`npm run
// -s cli -- … --json`; in-process through test/helpers/cli.ts on this file's database), plus `cli seed` with the
// marketing part of a fixture file: what they write is what GET /email-marketing/settings lists and what PUT
// /telegram/bots/{botId}/users/bulk/notifications changes; refusals exit 1 (2 for a usage error) with the reason and
// write nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../../db/database';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { inProcessCli, type Cli } from '../helpers/cli';
import { bearer, contractClient, memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { systemClock } from '../../src/platform/clock';

let dir: string;
let database: TestDatabase;
let cli: Cli;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-marketing-cli-'));
  database = await createTestDatabase();
  cli = inProcessCli(database);
});
afterAll(async () => {
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The app on the CLI's database. */
async function withApp(fn: (app: Express, handle: DatabaseHandle) => Promise<void>): Promise<void> {
  const app = await createApp({
    clock: systemClock,
    db: database.db,
    config: loadConfig({ PUBLIC_URL: 'http://api.test' }),
    logger: memoryLogger().logger,
  });
  await fn(app, database);
}

/** The marketing tables' rows, as text (for "a refusal wrote nothing"). */
async function marketingRows(): Promise<string> {
  let out = '';
  await withApp(async (_app, { db }) => {
    for (const table of ['email_marketing_settings', 'messaging_bots', 'messaging_bot_users']) {
      const r = await sql<{ s: string | null }>`select string_agg(to_jsonb(x)::text, ',' order by id) as s
        from ${sql.table(table)} x`.execute(db);
      out += `${table}: ${r.rows[0]!.s}\n`;
    }
  });
  return out;
}

test('email-marketing set, bot create, bot user add and seed: listed and switched through the API; refusals', async () => {
  const shop = (await cli('shop', 'create', '--name', 'Marketing')).json.id as string;
  const key = (await cli('key', 'create', '--shop', shop, '--scopes', 'email_marketing.read messaging.write')).json
    .key as string;

  const set = await cli(
    'email-marketing',
    'set',
    '--shop',
    shop,
    '--provider',
    'mailchimp',
    '--list',
    'a1b2c3',
    '--double-opt-in',
  );
  expect(set.code).toBe(0);
  expect(set.json).toMatchObject({
    provider: 'MAILCHIMP',
    enabled: true,
    list_id: 'a1b2c3',
    double_opt_in: true,
    sync_customers: true,
  });
  // Set again: the same setting (id, created_at) becomes exactly what the options say.
  const again = await cli(
    'email-marketing',
    'set',
    '--shop',
    shop,
    '--provider',
    'MAILCHIMP',
    '--disabled',
    '--no-sync',
  );
  expect(again.code).toBe(0);
  expect(again.json).toMatchObject({
    id: set.json.id,
    created_at: set.json.created_at,
    enabled: false,
    list_id: null,
    double_opt_in: false,
    sync_customers: false,
  });

  const bot = await cli('bot', 'create', '--shop', shop, '--username', '@Shop_Alerts_bot', '--name', 'Alerts');
  expect(bot.code).toBe(0);
  expect(bot.json).toMatchObject({ username: 'Shop_Alerts_bot', name: 'Alerts' });
  const user = await cli(
    'bot',
    'user',
    'add',
    '--shop',
    shop,
    '--bot',
    bot.json.id,
    '--telegram-id',
    '123456789',
    '--username',
    'ann',
    '--off',
    'stock_low,review_created',
  );
  expect(user.code).toBe(0);
  expect(user.json).toMatchObject({
    bot_id: bot.json.id,
    telegram_user_id: '123456789',
    notifications: { order_paid: true, stock_low: false, review_created: false },
  });
  const file = join(dir, 'marketing.json');
  writeFileSync(
    file,
    JSON.stringify({
      email_marketing: [{ provider: 'BREVO', list_id: 'news' }],
      messaging_bots: [
        { username: 'second_bot', users: [{ telegram_user_id: '5', notifications: { order_paid: false } }] },
      ],
    }),
  );
  const seeded = await cli('seed', '--shop', shop, '--file', file);
  expect(seeded.code).toBe(0);
  expect(seeded.json.emailMarketingSettings).toHaveLength(1);
  expect(seeded.json.messagingBots).toHaveLength(1);

  // Refusals: nothing written. (Only a few here: the domain's refusals are tested through its functions in
  // test/store/messaging-bots.test.ts and email-marketing.test.ts.)
  const before = await marketingRows();
  const refusals: [string[], number, string | RegExp][] = [
    [['email-marketing', 'set', '--shop', shop], 2, '--provider is required'],
    [
      ['bot', 'create', '--shop', shop, '--username', 'shop_alerts_BOT'],
      1,
      'The shop already has a bot @shop_alerts_BOT.',
    ],
    [['bot', 'create', '--shop', shop, '--username', 'alerts'], 1, /^--username must be a Telegram bot username/],
    [
      ['bot', 'user', 'add', '--shop', shop, '--bot', bot.json.id, '--telegram-id', '7', '--off', 'shipped'],
      1,
      /^--off: "shipped"/,
    ],
    [['bot', 'user', 'add', '--shop', shop, '--bot', 'bot_nope', '--telegram-id', '7'], 1, 'Messaging bot not found.'],
  ];
  for (const [args, code, message] of refusals) {
    const r = await cli(...args);
    expect({ args, code: r.code }).toEqual({ args, code });
    expect(r.json.error.message).toMatch(message);
  }
  const badFile = join(dir, 'bad.json');
  writeFileSync(
    badFile,
    JSON.stringify({ email_marketing: [{ provider: 'KLAVIYO' }], messaging_bots: [{ username: 'second_BOT' }] }),
  );
  const badSeed = await cli('seed', '--shop', shop, '--file', badFile);
  expect([badSeed.code, badSeed.json.error.message]).toEqual([
    1,
    'The fixture file is not valid: /messaging_bots/0 The shop already has a bot @second_BOT.',
  ]);
  expect(await marketingRows()).toBe(before);

  await withApp(async (app, { db }) => {
    const http = contractClient(app);
    const listed = await http.get('/dev/v1/email-marketing/settings').set(bearer(key));
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { provider: string }) => s.provider)).toEqual(['BREVO', 'MAILCHIMP']);
    expect(listed.body.data[1]).toEqual(again.json);
    const put = await http
      .put(`/dev/v1/telegram/bots/${bot.json.id}/users/bulk/notifications`)
      .set(bearer(key))
      .send({ user_ids: ['123456789'], notifications: { stock_low: true, order_paid: false } });
    expect(put.status).toBe(200);
    const row = await db
      .selectFrom('messaging_bot_users')
      .selectAll()
      .where('bot_id', '=', bot.json.id)
      .executeTakeFirstOrThrow();
    expect([row.stock_low, row.order_paid, row.review_created, row.order_completed]).toEqual([
      true,
      false,
      false,
      true,
    ]);
  });
});
