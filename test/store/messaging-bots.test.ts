// PUT /telegram/bots/{botId}/users/bulk/notifications: the switches sent are set on the listed users (by Telegram
// user id) or on every user of the bot; switches not sent, other users, other bots and other shops stay as they
// were. Refusals change nothing: an unknown or another shop's bot (404), a listed id that is not a user of this bot
// (422 naming each one, the whole request refused), a bad body (422), a key without messaging.write (403). Two
// requests setting different switches at once both take effect (real PostgreSQL). Bots and users come from fixtures
// (validated) and the operator's functions behind `cli bot create` / `cli bot user add`.
import { sql } from 'kysely';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { addBotUserAsOperator, createBotAsOperator } from '../../src/ops/marketing-admin';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000' } });
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
const switches = ['order_paid', 'order_completed', 'ticket_replied', 'review_created', 'dispute_opened', 'stock_low'];
const allOn = Object.fromEntries(switches.map((s) => [s, true]));

let unique = 0;
interface Shop {
  id: string;
  key: string;
  /** @shop_bot: users 111 (stock_low off), 222, 333. */
  bot: string;
  /** @other_bot of the same shop: user 111 and 444. */
  other: string;
}

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Bots ${++unique}` });
  const key = (await t.createKey(id, ['messaging.write'])).key;
  const seeded = await t.seed(
    id,
    parseFixtures(
      {
        messaging_bots: [
          {
            username: '@shop_bot',
            name: 'Shop alerts',
            users: [
              { telegram_user_id: '111', username: 'ann', notifications: { stock_low: false } },
              { telegram_user_id: '222' },
              { telegram_user_id: '333' },
            ],
          },
          { username: 'other_bot', users: [{ telegram_user_id: '111' }, { telegram_user_id: '444' }] },
        ],
      },
      new Date(),
    ),
  );
  const [bot, other] = seeded.messagingBots as [string, string];
  return { id, key, bot, other };
}

const put = (key: string, botId: string, body: unknown, headers: Record<string, string> = {}) =>
  t.http
    .put(`/dev/v1/telegram/bots/${encodeURIComponent(botId)}/users/bulk/notifications`)
    .set(bearer(key))
    .set(headers)
    .send(body as object);

/** Every bot user of the shop: Telegram id per bot -> switches, and the rows' full text (for "nothing changed"). */
async function users(shopId: string) {
  const rows = await t.db
    .selectFrom('messaging_bot_users')
    .selectAll()
    .where('shop_id', '=', shopId)
    .orderBy('bot_id')
    .orderBy('telegram_user_id')
    .execute();
  const bySwitch = Object.fromEntries(
    rows.map((r) => [
      `${r.bot_id}:${r.telegram_user_id}`,
      Object.fromEntries(switches.map((s) => [s, r[s as keyof typeof r]])),
    ]),
  );
  return { bySwitch, rows };
}

async function everything() {
  const r = await sql<{ s: string | null }>`select string_agg(to_jsonb(u)::text, ',' order by id) as s
    from messaging_bot_users u`.execute(t.db);
  const b = await sql<{ s: string | null }>`select string_agg(to_jsonb(x)::text, ',' order by id) as s
    from messaging_bots x`.execute(t.db);
  return { users: r.rows[0]!.s, bots: b.rows[0]!.s };
}

test('the listed users get the switches sent; switches not sent, other users and the other bot stay', async () => {
  const s = await newShop();
  const before = await users(s.id);
  expect(before.bySwitch[`${s.bot}:111`]).toEqual({ ...allOn, stock_low: false });
  expect(before.bySwitch[`${s.bot}:222`]).toEqual(allOn);

  const res = await put(s.key, s.bot, {
    user_ids: ['111', '333'],
    notifications: { order_paid: false, stock_low: true },
  });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ data: {} });
  const after = await users(s.id);
  expect(after.bySwitch).toEqual({
    ...before.bySwitch,
    [`${s.bot}:111`]: { ...allOn, order_paid: false, stock_low: true },
    [`${s.bot}:333`]: { ...allOn, order_paid: false },
  });
  // Only the changed rows were touched (updated_at), the other bot's 111 included.
  const touched = after.rows.filter((r, i) => r.updated_at.getTime() !== before.rows[i]!.updated_at.getTime());
  expect(touched.map((r) => `${r.bot_id}:${r.telegram_user_id}`).sort()).toEqual([`${s.bot}:111`, `${s.bot}:333`]);

  // A switch set to the value it has, and another left out: the left-out one keeps what the last request set.
  expect((await put(s.key, s.bot, { user_ids: ['111'], notifications: { dispute_opened: false } })).status).toBe(200);
  expect((await users(s.id)).bySwitch[`${s.bot}:111`]).toEqual({
    ...allOn,
    order_paid: false,
    dispute_opened: false,
  });
});

test('user_ids omitted: every user of the bot, and only of this bot and this shop', async () => {
  const [s, b] = [await newShop(), await newShop()];
  const before = await users(s.id);
  const otherShop = await everything();
  const res = await put(s.key, s.bot, { notifications: { ticket_replied: false } });
  expect(res.status).toBe(200);
  const after = await users(s.id);
  for (const id of ['111', '222', '333'])
    expect(after.bySwitch[`${s.bot}:${id}`]).toEqual({ ...before.bySwitch[`${s.bot}:${id}`], ticket_replied: false });
  for (const id of ['111', '444']) expect(after.bySwitch[`${s.other}:${id}`]).toEqual(allOn);
  const bRows = (await users(b.id)).bySwitch;
  expect(Object.values(bRows).every((v) => v.ticket_replied === true)).toBe(true);
  expect(otherShop.bots).toBe((await everything()).bots);
});

test('a repeated id counts once', async () => {
  const s = await newShop();
  const res = await put(s.key, s.bot, { user_ids: ['222', '222'], notifications: { review_created: false } });
  expect(res.status).toBe(200);
  expect((await users(s.id)).bySwitch[`${s.bot}:222`]).toEqual({ ...allOn, review_created: false });
});

test('a listed id that is not a user of this bot refuses the whole request: 422 naming each one, nothing changed', async () => {
  const s = await newShop();
  const before = await everything();
  // 444 is a user of the shop's other bot, 999 of no bot: both refused; 111 and 222 are not changed either.
  const res = await put(s.key, s.bot, {
    user_ids: ['111', '444', '222', '999', '444'],
    notifications: { order_paid: false },
  });
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([
    { field: 'user_ids[1]', message: 'is not a user of this bot' },
    { field: 'user_ids[3]', message: 'is not a user of this bot' },
  ]);
  expect(await everything()).toEqual(before);
});

test('an unknown bot, another shop’s bot, or another shop’s bot with its own user ids: 404, nothing changed', async () => {
  const [a, b] = [await newShop(), await newShop()];
  const before = await everything();
  const body = { user_ids: ['111'], notifications: { order_paid: false } };
  const foreign = await put(a.key, b.bot, body);
  const missing = await put(a.key, 'bot_00000000000000000000000000000000', body);
  const all = await put(a.key, b.bot, { notifications: { order_paid: false } });
  for (const res of [foreign, missing, all]) {
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('MESSAGING_BOT_NOT_FOUND');
  }
  expect(foreign.body.error.message).toBe(missing.body.error.message);
  expect(await everything()).toEqual(before);
});

test('bad bodies: 422 with the field, nothing changed', async () => {
  const s = await newShop();
  const before = await everything();
  const bad: [unknown, string][] = [
    [{ notifications: {} }, 'notifications'],
    [{ user_ids: ['111'] }, 'notifications'],
    [{ user_ids: ['111'], notifications: { order_paid: 'no' } }, 'notifications.order_paid'],
    [{ user_ids: ['111'], notifications: { shipped: true } }, 'notifications'],
    [{ user_ids: [], notifications: { order_paid: false } }, 'user_ids'],
    [{ user_ids: ['ann'], notifications: { order_paid: false } }, 'user_ids[0]'],
    [{ user_ids: '111', notifications: { order_paid: false } }, 'user_ids'],
  ];
  for (const [body, field] of bad) {
    const res = await put(s.key, s.bot, body);
    expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(res.body.error.details.map((d: { field: string }) => d.field).join(' ')).toContain(field.split('.')[0]);
  }
  expect(await everything()).toEqual(before);
});

test('scopes: messaging.write or *; a read-only or other key is 403 and changes nothing', async () => {
  const s = await newShop();
  const before = await everything();
  for (const scopes of [['email_marketing.read'], ['customers.write', 'orders.write']]) {
    const key = (await t.createKey(s.id, scopes)).key;
    const res = await put(key, s.bot, { notifications: { order_paid: false } });
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
  }
  expect(await everything()).toEqual(before);
  const star = (await t.createKey(s.id, ['*'])).key;
  expect((await put(star, s.bot, { notifications: { order_paid: false } })).status).toBe(200);
  expect((await users(s.id)).bySwitch[`${s.bot}:222`]!.order_paid).toBe(false);
});

test('an Idempotency-Key replays the stored answer without writing again', async () => {
  const s = await newShop();
  const headers = { 'Idempotency-Key': `bots-${unique}` };
  const body = { user_ids: ['222'], notifications: { stock_low: false } };
  const first = await put(s.key, s.bot, body, headers);
  expect([first.status, first.headers['idempotency-status']]).toEqual([200, 'created']);
  // Turned back on by another request; the replay must not turn it off again.
  expect((await put(s.key, s.bot, { user_ids: ['222'], notifications: { stock_low: true } })).status).toBe(200);
  const replay = await put(s.key, s.bot, body, headers);
  expect([replay.status, replay.headers['idempotency-status'], replay.body]).toEqual([200, 'cached', { data: {} }]);
  expect((await users(s.id)).bySwitch[`${s.bot}:222`]!.stock_low).toBe(true);
});

describe('bots and users from the operator and fixtures', () => {
  test('created by the operator functions, used by the API; refusals write nothing', async () => {
    const id = await t.createShop({ name: 'Operator bots' });
    const key = (await t.createKey(id, ['messaging.write'])).key;
    const bot = await createBotAsOperator(t.operator, { shopId: id, username: 'Alerts_Bot', name: 'Alerts' });
    expect(bot).toMatchObject({ username: 'Alerts_Bot', name: 'Alerts' });
    const user = await addBotUserAsOperator(t.operator, {
      shopId: id,
      botId: bot.id,
      telegramId: '42',
      off: 'order_paid',
    });
    expect(user.notifications).toEqual({ ...allOn, order_paid: false });
    const other = await newShop();
    const before = await everything();
    await expect(createBotAsOperator(t.operator, { shopId: id, username: 'alerts_bot' })).rejects.toThrow(
      /already has a bot/,
    );
    await expect(createBotAsOperator(t.operator, { shopId: id, username: 'alerts' })).rejects.toThrow(/--username/);
    await expect(addBotUserAsOperator(t.operator, { shopId: id, botId: bot.id, telegramId: '42' })).rejects.toThrow(
      /already has/,
    );
    await expect(addBotUserAsOperator(t.operator, { shopId: id, botId: bot.id, telegramId: '-5' })).rejects.toThrow(
      /--telegram-id/,
    );
    await expect(
      addBotUserAsOperator(t.operator, { shopId: id, botId: bot.id, telegramId: '43', off: 'shipped' }),
    ).rejects.toThrow(/--off/);
    await expect(addBotUserAsOperator(t.operator, { shopId: id, botId: other.bot, telegramId: '43' })).rejects.toThrow(
      /not found/i,
    );
    expect(await everything()).toEqual(before);
    expect((await put(key, bot.id, { user_ids: ['42'], notifications: { order_paid: true } })).status).toBe(200);
    expect((await users(id)).bySwitch[`${bot.id}:42`]).toEqual(allOn);
  });

  test('fixtures are validated before anything is written', async () => {
    const bad = [
      { messaging_bots: [{ username: 'nobotsuffix' }] },
      { messaging_bots: [{ username: 'a_bot' }, { username: 'A_BOT' }] },
      { messaging_bots: [{ username: 'ok_bot', users: [{ telegram_user_id: '1' }, { telegram_user_id: '1' }] }] },
      { messaging_bots: [{ username: 'ok_bot', users: [{ telegram_user_id: '0123' }] }] },
      {
        messaging_bots: [{ username: 'ok_bot', users: [{ telegram_user_id: '1', notifications: { shipped: true } }] }],
      },
      { messaging_bots: [{ username: 'ok_bot', token: 'x' }] },
    ];
    for (const value of bad) expect(() => parseFixtures(value, new Date())).toThrow(FixtureError);
    expect(() => parseFixtures(bad[1], new Date())).toThrow(/messaging_bots\/1\/username repeats/);
  });
});

describe('races (real PostgreSQL)', () => {
  pgOnly('two requests setting different switches at once both take effect (no lost update)', async () => {
    for (let round = 0; round < 10; round++) {
      const s = await newShop();
      const [x, y] = await Promise.all([
        put(s.key, s.bot, { notifications: { order_paid: false } }),
        put(s.key, s.bot, { user_ids: ['111', '222'], notifications: { order_completed: false, stock_low: false } }),
      ]);
      expect([x.status, y.status]).toEqual([200, 200]);
      const after = (await users(s.id)).bySwitch;
      expect(after[`${s.bot}:111`]).toEqual({ ...allOn, order_paid: false, order_completed: false, stock_low: false });
      expect(after[`${s.bot}:222`]).toEqual({ ...allOn, order_paid: false, order_completed: false, stock_low: false });
      expect(after[`${s.bot}:333`]).toEqual({ ...allOn, order_paid: false });
    }
  });

  pgOnly(
    'two requests setting one switch to opposite values: every user ends with one of them, never a mix',
    async () => {
      const outcomes: string[] = [];
      for (let round = 0; round < 10; round++) {
        const s = await newShop();
        const [x, y] = await Promise.all([
          put(s.key, s.bot, { notifications: { order_paid: false } }),
          put(s.key, s.bot, { notifications: { order_paid: true } }),
        ]);
        expect([x.status, y.status]).toEqual([200, 200]);
        const values = Object.entries((await users(s.id)).bySwitch)
          .filter(([k]) => k.startsWith(s.bot))
          .map(([, v]) => v.order_paid);
        expect(new Set(values).size).toBe(1);
        outcomes.push(String(values[0]));
      }
      console.log(`opposite order_paid at once, final values: ${outcomes.join(', ')}`);
    },
  );
});
