// Telegram bot notifications: the switches of PUT /telegram/bots/{botId}/users/bulk/notifications do their work.
// A stand-in for the Telegram Bot API listens on 127.0.0.1 (TELEGRAM_API_URL points at it through the app's config);
// bots are created with a token through the CLI's function, events come from the real domain (POST /orders/{id}/
// complete, `cli review create`), and the worker job is run by hand: exactly the users whose switch is on get one
// message each, at their chat id, through their bot's token; a rolled-back change queues nothing; 429, 5xx and 403
// are handled as documented; the token is never in logs, audit rows or recorded errors; on PostgreSQL two workers
// at once send each message once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { botNotificationsOfShop } from '../../db/queries/bot-notifications';
import { notificationText, telegramTokenPattern } from '../../src/domain/store/bot-notifications';
import { addBotUserAsOperator, createBotAsOperator } from '../../src/ops/marketing-admin';
import { createStorefrontReview } from '../../src/ops/support-admin';
import { ManualClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { jsonAmount } from '../../src/platform/money';
import { loadSecretBox } from '../../src/platform/secret-box';
import {
  BOT_MAX_ATTEMPTS,
  BOT_RETRY_SCHEDULE_MS,
  botNotificationJob,
  redactToken,
} from '../../src/worker/bot-notifications';
import type { Job } from '../../src/worker/worker';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

interface Sent {
  path: string;
  token: string;
  chatId: unknown;
  text: string;
}

/** The Telegram Bot API stand-in: records each sendMessage and answers with `reply`. */
class TelegramStandIn {
  readonly sent: Sent[] = [];
  reply: (res: ServerResponse, req: IncomingMessage) => void = (res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"result":{"message_id":1}}');
  private server: Server | undefined;
  port = 0;

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        const m = /^\/bot([^/]+)\/sendMessage$/.exec(req.url ?? '');
        const json = JSON.parse(body) as { chat_id: unknown; text: string };
        this.sent.push({ path: req.url ?? '', token: m?.[1] ?? '', chatId: json.chat_id, text: json.text });
        this.reply(res, req);
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const answer = (status: number, body: unknown) => (res: ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

const TOKEN_A = '7000000001:AAHk3vQ9xLmN2pR5sT8uW1yZ4bC7dE0fG3h';
const TOKEN_A2 = '7000000002:AAJq8wE4rT6yU2iO0pA3sD5fG7hJ9kL1zX4';
const TOKEN_B = '7000000003:AAZx1cV3bN5mQ7wE9rT2yU4iO6pA8sD0fG1';
const tokens = [TOKEN_A, TOKEN_A2, TOKEN_B];

let t: TestApp;
let clock: ManualClock;
let telegram: TelegramStandIn;
let job: Job;
let shopA: string;
let shopB: string;
let keyA: string;
let keyB: string;
let botA: string; // users 111 (all on), 222 (order_paid off), 333 (all on)
let botA2: string; // user 444 (all on): a second bot of the shop, its own token
let botNoToken: string; // user 555 (all on): no token, no messages
let botB: string; // shop B: user 999 (all on)

beforeAll(async () => {
  telegram = new TelegramStandIn();
  await telegram.listen();
  clock = new ManualClock(Date.now());
  t = await startTestApp({ clock, env: { TELEGRAM_API_URL: `http://127.0.0.1:${telegram.port}/` } });
  job = botNotificationJob(t.db, {
    clock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, t.config.webhookSecretsKey),
    apiUrl: t.config.telegramApiUrl,
    timeoutMs: 2000,
    random: () => 0.5, // no jitter: the schedule is checked exactly
  });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, { a: { name: 'Bot Shop A' }, b: { name: 'Bot Shop B' } }));

  botA = (await createBotAsOperator(t.operator, { shopId: shopA, username: 'shop_a_alerts_bot', token: TOKEN_A })).id;
  botA2 = (await createBotAsOperator(t.operator, { shopId: shopA, username: 'shop_a_more_bot', token: TOKEN_A2 })).id;
  botNoToken = (await createBotAsOperator(t.operator, { shopId: shopA, username: 'shop_a_silent_bot' })).id;
  botB = (await createBotAsOperator(t.operator, { shopId: shopB, username: 'shop_b_alerts_bot', token: TOKEN_B })).id;
  await addBotUserAsOperator(t.operator, { shopId: shopA, botId: botA, telegramId: '111' });
  await addBotUserAsOperator(t.operator, { shopId: shopA, botId: botA, telegramId: '222', off: 'order_paid' });
  await addBotUserAsOperator(t.operator, { shopId: shopA, botId: botA, telegramId: '333' });
  await addBotUserAsOperator(t.operator, { shopId: shopA, botId: botA2, telegramId: '444' });
  await addBotUserAsOperator(t.operator, { shopId: shopA, botId: botNoToken, telegramId: '555' });
  await addBotUserAsOperator(t.operator, { shopId: shopB, botId: botB, telegramId: '999' });
});

afterAll(async () => {
  await t.close();
  await telegram.close();
});

beforeEach(async () => {
  clock.set(Date.now());
  await sql`delete from bot_notifications`.execute(t.db);
  telegram.sent.length = 0;
  telegram.reply = (res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"result":{"message_id":1}}');
});

async function product(shopId: string): Promise<string> {
  return (await t.seed(shopId, { products: [{ title: 'Pro License', price: '19.99' } as never] })).products[0]!;
}

/** A PENDING order of the shop through POST /orders (with a buyer e-mail, so completing it emits order:paid). */
async function pendingOrder(shopId: string, key: string): Promise<{ id: string; uniqid: string }> {
  const productId = await product(shopId);
  const res = await t.http
    .post('/dev/v1/orders')
    .set(bearer(key))
    .send({ email: 'buyer@example.com', items: [{ product_id: productId, quantity: 1 }] });
  expect(res.status).toBe(201);
  return { id: res.body.data.id as string, uniqid: res.body.data.uniqid as string };
}

async function completeOrder(shopId: string, key: string): Promise<{ id: string; uniqid: string }> {
  const order = await pendingOrder(shopId, key);
  const res = await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(key)).send({});
  expect(res.status).toBe(200);
  return order;
}

const putSwitches = (botId: string, body: unknown, key = keyA) =>
  t.http
    .put(`/dev/v1/telegram/bots/${botId}/users/bulk/notifications`)
    .set(bearer(key))
    .send(body as object);

/** Runs the job until it finds nothing due. */
async function drain(): Promise<void> {
  for (let i = 0; i < 20; i++) if ((await job.runOnce()) === 0) return;
}

const sentTo = (text: RegExp) =>
  telegram.sent
    .filter((s) => text.test(s.text))
    .map(
      (s) =>
        `${s.token === TOKEN_A ? 'A' : s.token === TOKEN_A2 ? 'A2' : s.token === TOKEN_B ? 'B' : '?'}:${String(s.chatId)}`,
    )
    .sort();

test('a completed order messages exactly the users whose switch is on, once each, through their bot', async () => {
  const order = await completeOrder(shopA, keyA);
  // Queued in the completion's transaction, before any worker ran.
  const queued = await botNotificationsOfShop(t.db, shopA);
  expect(queued.map((n) => `${n.event_type}`).sort()).toEqual([
    ...Array(4).fill('order:completed'), // 111, 222, 333, 444 (555's bot has no token)
    ...Array(3).fill('order:paid'), // 111, 333, 444 (222 has order_paid off)
  ]);
  expect(await botNotificationsOfShop(t.db, shopB)).toEqual([]);

  await drain();
  expect(sentTo(/paid/)).toEqual(['A2:444', 'A:111', 'A:333']);
  expect(sentTo(/completed/)).toEqual(['A2:444', 'A:111', 'A:222', 'A:333']);
  expect(telegram.sent).toHaveLength(7);
  for (const s of telegram.sent) {
    expect(s.path).toBe(`/bot${s.token}/sendMessage`);
    expect(typeof s.chatId).toBe('number'); // the Telegram user id, as a JSON number
  }
  const paid = telegram.sent.find((s) => /paid/.test(s.text))!;
  expect(paid.text).toBe(`Order ${order.uniqid} paid: 19.99 USD`);
  expect(telegram.sent.find((s) => /completed/.test(s.text))!.text).toBe(`Order ${order.uniqid} completed: 19.99 USD`);
  // No buyer e-mail in any message.
  expect(telegram.sent.some((s) => s.text.includes('buyer@example.com'))).toBe(false);
  const rows = await botNotificationsOfShop(t.db, shopA);
  expect(rows.every((r) => r.status === 'SENT' && r.attempts === 1 && r.sent_at !== null)).toBe(true);

  // Nothing is sent twice.
  expect(await job.runOnce()).toBe(0);
  expect(telegram.sent).toHaveLength(7);
});

test("another shop's events message only that shop's bot users", async () => {
  await completeOrder(shopB, keyB);
  await drain();
  expect(sentTo(/./)).toEqual(['B:999', 'B:999']);
  expect(await botNotificationsOfShop(t.db, shopA)).toEqual([]);
});

test('a switch flipped through the PUT endpoint changes who gets the next message', async () => {
  expect((await putSwitches(botA, { user_ids: ['111'], notifications: { order_paid: false } })).status).toBe(200);
  expect((await putSwitches(botA, { user_ids: ['222'], notifications: { order_paid: true } })).status).toBe(200);
  // A refused request (an id that is not a user of the bot) changes nothing.
  expect((await putSwitches(botA, { user_ids: ['333', '77'], notifications: { order_paid: false } })).status).toBe(422);
  // Every user of the second bot: order_completed off.
  expect((await putSwitches(botA2, { notifications: { order_completed: false } })).status).toBe(200);
  await completeOrder(shopA, keyA);
  await drain();
  expect(sentTo(/paid/)).toEqual(['A2:444', 'A:222', 'A:333']);
  expect(sentTo(/completed/)).toEqual(['A:111', 'A:222', 'A:333']);
  // Back as they were for the other tests.
  await putSwitches(botA, { user_ids: ['111'], notifications: { order_paid: true } });
  await putSwitches(botA, { user_ids: ['222'], notifications: { order_paid: false } });
  await putSwitches(botA2, { notifications: { order_completed: true } });
});

test('a review left by a buyer messages the review_created users; events no switch names message nobody', async () => {
  await putSwitches(botA, { user_ids: ['333'], notifications: { review_created: false } });
  const order = await completeOrder(shopA, keyA);
  await sql`delete from bot_notifications`.execute(t.db);
  const review = await createStorefrontReview(t.operator, { shopId: shopA, orderId: order.id, rating: '4' });
  clock.set(Date.now()); // the CLI's write runs on the system clock: its messages are due from its time
  await drain();
  expect(sentTo(/review/)).toEqual(['A2:444', 'A:111', 'A:222']);
  expect(telegram.sent[0]!.text).toBe(`New review ${review.id}: 4/5 on order ${order.id}`);
  await putSwitches(botA, { user_ids: ['333'], notifications: { review_created: true } });

  // An order created (order:created) is no switch's event.
  telegram.sent.length = 0;
  await pendingOrder(shopA, keyA);
  await drain();
  expect(telegram.sent).toEqual([]);
});

test('the texts of the other switches: dispute_opened, stock_low; exact amounts, no e-mail', () => {
  expect(
    notificationText('dispute:opened', {
      id: 'dsp_1',
      order_uniqid: 'u-1',
      amount: jsonAmount('1234567890123.45'),
      currency: 'USD',
      customer_email: 'buyer@example.com',
    }),
  ).toBe('Dispute dsp_1 opened on order u-1: 1234567890123.45 USD');
  expect(notificationText('product:stock_low', { product_id: 'prod_1', title: 'Pro License', stock: 3 })).toBe(
    'Low stock: Pro License (prod_1) has 3 left',
  );
  expect(notificationText('ticket:created', {})).toBeUndefined();
});

test('dispute:opened and product:stock_low emitted in a transaction queue for their switches', async () => {
  await putSwitches(botA, { user_ids: ['111'], notifications: { stock_low: false } });
  await t.db.transaction().execute(async (trx) => {
    await emitEvent(trx, shopA, 'product:stock_low', { product_id: 'prod_x', title: 'Widget', stock: 2 }, { clock });
    await emitEvent(
      trx,
      shopA,
      'dispute:opened',
      { id: 'dsp_x', order_uniqid: 'u', amount: 5, currency: 'EUR' },
      {
        clock,
      },
    );
  });
  await drain();
  expect(sentTo(/Low stock/)).toEqual(['A2:444', 'A:222', 'A:333']);
  expect(sentTo(/Dispute/)).toEqual(['A2:444', 'A:111', 'A:222', 'A:333']);
  await putSwitches(botA, { user_ids: ['111'], notifications: { stock_low: true } });
});

test('a rolled-back change queues nothing and sends nothing', async () => {
  const before = await t.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  await expect(
    t.db.transaction().execute(async (trx) => {
      await emitEvent(trx, shopA, 'order:paid', { uniqid: 'u-rolled', total: 1, currency: 'USD' }, { clock });
      expect(
        Number((await sql<{ n: string }>`select count(*) as n from bot_notifications`.execute(trx)).rows[0]!.n),
      ).toBe(3);
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  const after = await t.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  expect(after).toEqual(before);
  expect(await botNotificationsOfShop(t.db, shopA)).toEqual([]);
  expect(await job.runOnce()).toBe(0);
  expect(telegram.sent).toEqual([]);

  // A refused completion (the order is already completed) queues nothing either.
  const order = await completeOrder(shopA, keyA);
  await sql`delete from bot_notifications`.execute(t.db);
  const again = await t.http.post(`/dev/v1/orders/${order.id}/complete`).set(bearer(keyA)).send({});
  expect(again.status).toBeGreaterThanOrEqual(400);
  expect(await botNotificationsOfShop(t.db, shopA)).toEqual([]);
});

/** One order:paid message to user 444 only (bot A2), queued through the real emitEvent. */
async function oneMessage(): Promise<string> {
  await t.db.transaction().execute(async (trx) => {
    await emitEvent(trx, shopA, 'review:created', { id: 'rev_x', rating: 5, order_id: 'ord_x' }, { clock });
  });
  const rows = await botNotificationsOfShop(t.db, shopA);
  // Only 444's row is kept for these tests.
  await sql`delete from bot_notifications where id <> ${rows.find((r) => r.bot_id === botA2)!.id}`.execute(t.db);
  return rows.find((r) => r.bot_id === botA2)!.id;
}

async function row(id: string) {
  return t.db.selectFrom('bot_notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

test("429 waits Telegram's retry_after, then the message is sent", async () => {
  const id = await oneMessage();
  telegram.reply = answer(429, {
    ok: false,
    error_code: 429,
    description: 'Too Many Requests: retry after 7',
    parameters: { retry_after: 7 },
  });
  expect(await job.runOnce()).toBe(1);
  let r = await row(id);
  expect(r).toMatchObject({
    status: 'RETRYING',
    attempts: 1,
    last_error: 'status 429: Too Many Requests: retry after 7',
  });
  expect(r.next_attempt_at!.getTime()).toBe(clock.now().getTime() + 7000);
  clock.advance(6999);
  expect(await job.runOnce()).toBe(0); // not due yet
  clock.advance(1);
  telegram.reply = answer(200, { ok: true, result: {} });
  expect(await job.runOnce()).toBe(1);
  r = await row(id);
  expect(r).toMatchObject({ status: 'SENT', attempts: 2, last_error: null });
  expect(telegram.sent).toHaveLength(2);
});

test('5xx and network failures retry on the schedule, then FAILED; 200 without ok:true is retried', async () => {
  const id = await oneMessage();
  // The stand-in echoes the path (with the token) in its error: the recorded error must not keep it.
  telegram.reply = (res, req) => answer(502, { ok: false, description: `Bad Gateway at ${req.url}` })(res);
  for (let attempt = 1; attempt <= BOT_MAX_ATTEMPTS; attempt++) {
    expect(await job.runOnce()).toBe(1);
    const r = await row(id);
    expect(r.attempts).toBe(attempt);
    if (attempt < BOT_MAX_ATTEMPTS) {
      expect(r.status).toBe('RETRYING');
      expect(r.next_attempt_at!.getTime() - clock.now().getTime()).toBe(BOT_RETRY_SCHEDULE_MS[attempt - 1]);
      expect(r.last_error).toBe('status 502: Bad Gateway at /bot<token>/sendMessage');
      clock.advance(BOT_RETRY_SCHEDULE_MS[attempt - 1]!);
    } else {
      expect(r).toMatchObject({ status: 'FAILED', next_attempt_at: null });
    }
  }
  expect(telegram.sent).toHaveLength(BOT_MAX_ATTEMPTS);
  clock.advance(24 * 3_600_000);
  expect(await job.runOnce()).toBe(0);

  // A network failure (nothing listens) and a 200 that is not ok:true are retried too.
  await sql`delete from bot_notifications`.execute(t.db);
  const id2 = await oneMessage();
  telegram.reply = answer(200, { ok: false });
  expect(await job.runOnce()).toBe(1);
  expect(await row(id2)).toMatchObject({ status: 'RETRYING', attempts: 1 });
  const dead = botNotificationJob(t.db, {
    clock,
    logger: t.logger,
    secrets: await loadSecretBox(t.db, t.config.webhookSecretsKey),
    apiUrl: 'http://127.0.0.1:1', // port 1: connection refused
    timeoutMs: 2000,
    random: () => 0.5,
  });
  clock.advance(BOT_RETRY_SCHEDULE_MS[0]);
  expect(await dead.runOnce()).toBe(1);
  const r2 = await row(id2);
  expect(r2).toMatchObject({ status: 'RETRYING', attempts: 2 });
  expect(r2.last_error).toMatch(/^CONNECTION_REFUSED/);
});

test('403 (the user blocked the bot) and other 4xx fail at once, without retry', async () => {
  const id = await oneMessage();
  telegram.reply = answer(403, { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' });
  expect(await job.runOnce()).toBe(1);
  expect(await row(id)).toMatchObject({
    status: 'FAILED',
    attempts: 1,
    next_attempt_at: null,
    last_error: 'status 403: Forbidden: bot was blocked by the user',
  });
  clock.advance(24 * 3_600_000);
  expect(await job.runOnce()).toBe(0);
  expect(telegram.sent).toHaveLength(1);
});

test('the token is stored sealed, and never in logs, audit rows or recorded errors', async () => {
  const bots = await t.db.selectFrom('messaging_bots').select(['id', 'token_sealed']).execute();
  expect(bots.find((b) => b.id === botNoToken)!.token_sealed).toBeNull();
  for (const b of bots.filter((x) => x.token_sealed !== null)) {
    const stored = Buffer.from(b.token_sealed!).toString('latin1');
    for (const token of tokens) expect(stored).not.toContain(token.split(':')[1]);
  }
  // Work that logs: a failure and a success.
  await oneMessage();
  telegram.reply = (res, req) => answer(500, { ok: false, description: `oops ${req.url}` })(res);
  await job.runOnce();
  const everything = [
    JSON.stringify(t.logs),
    JSON.stringify(await t.db.selectFrom('audit_entries').selectAll().execute()),
    JSON.stringify(await t.db.selectFrom('bot_notifications').selectAll().execute()),
    JSON.stringify(await t.db.selectFrom('events').selectAll().execute()),
  ].join('\n');
  expect(t.logs.some((l) => l.message === 'bot notification not sent')).toBe(true);
  expect(t.logs.some((l) => l.message === 'bot notification sent')).toBe(true);
  for (const token of tokens) {
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(token.split(':')[1]);
  }
  expect(redactToken(`GET /bot${TOKEN_A}/sendMessage failed (${TOKEN_A})`, TOKEN_A)).toBe(
    'GET /bot<token>/sendMessage failed (<token>)',
  );
  // A malformed token is refused without echoing it.
  await expect(
    createBotAsOperator(t.operator, { shopId: shopA, username: 'bad_token_bot', token: 'not a token' }),
  ).rejects.toThrow(/--token-stdin \(or BOT_TOKEN\) must be a Telegram bot token/);
  expect(await t.db.selectFrom('messaging_bots').where('username', '=', 'bad_token_bot').selectAll().execute()).toEqual(
    [],
  );
  expect(telegramTokenPattern.test(TOKEN_A)).toBe(true);
});

(process.env.DATABASE_URL ? test : test.skip)(
  'on PostgreSQL, two workers claiming at once send each message once',
  async () => {
    for (let i = 0; i < 5; i++) await completeOrder(shopA, keyA); // 5 x 7 messages
    const queued = (await botNotificationsOfShop(t.db, shopA)).length;
    expect(queued).toBe(35);
    // Slow answers, so both workers are in flight together.
    telegram.reply = (res) =>
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 50);
    const second = botNotificationJob(t.db, {
      clock,
      logger: t.logger,
      secrets: await loadSecretBox(t.db, t.config.webhookSecretsKey),
      apiUrl: t.config.telegramApiUrl,
      batch: 20,
    });
    const counts = await Promise.all([job.runOnce(), second.runOnce()]);
    expect(counts[0]! + counts[1]!).toBe(35);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[1]).toBeGreaterThan(0);
    await Promise.all([job.runOnce(), second.runOnce()]);
    expect(telegram.sent).toHaveLength(35);
    const rows = await botNotificationsOfShop(t.db, shopA);
    expect(rows.every((r) => r.status === 'SENT' && r.attempts === 1)).toBe(true);
    // Each (chat, text) exactly once.
    expect(new Set(telegram.sent.map((s) => `${s.token}:${String(s.chatId)}:${s.text}`)).size).toBe(35);
  },
);
