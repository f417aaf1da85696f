// The Telegram bot notification outbox (migration 0023): queued in the transaction of an event, claimed and settled
// by the worker (src/worker/bot-notifications.ts).
import { sql, type Transaction } from 'kysely';
import type { BotNotificationRow, Database, MessagingNotificationSwitch } from '../tables';
import { shaped, type ShapedQuery } from './batch';
import { claimedCte, type Lease } from './leased-queue';
import { inShop, inShopForWrite, type ReadDb } from './shop-scope';

/**
 * Queues `text` for every user of the shop's bots whose `notificationSwitch` is on, on bots that have a token (a bot
 * without one cannot send): an INSERT … SELECT entry of the statement that writes the event (db/queries/batch.ts),
 * so it costs no round trip of its own, the queue matches the switches as that statement sees them, and a roll-back
 * takes the rows with it (the event's row is inserted by the same statement; its foreign key is checked at the
 * statement's end). Every table is filtered by the shop (the users' and bots' shop_id, and the join on it). Ids are
 * internal (never shown by the API): `btn_` + a UUID drawn by PostgreSQL.
 */
export function botNotificationsForEvent(
  shopId: string,
  input: {
    eventId: string;
    eventType: string;
    notificationSwitch: MessagingNotificationSwitch;
    text: string;
    now: Date;
  },
): ShapedQuery {
  const values = { $shop: shopId, $event: input.eventId, $type: input.eventType, $text: input.text, $now: input.now };
  // The switch is a column name: part of the shape, never a value.
  return shaped(
    'bot_notifications.for_event',
    input.notificationSwitch,
    values,
    (db, p, notificationSwitch) => sql`
    insert into bot_notifications
      (id, shop_id, bot_id, bot_user_id, event_id, event_type, text, status, attempts, next_attempt_at,
       created_at, updated_at)
    select 'btn_' || gen_random_uuid()::text, u.shop_id, u.bot_id, u.id, ${p('$event')}, ${p('$type')},
      ${p('$text')}, 'PENDING', 0, ${p('$now')}, ${p('$now')}, ${p('$now')}
    from messaging_bot_users u
    join messaging_bots b on b.shop_id = u.shop_id and b.id = u.bot_id
    where u.shop_id = ${p('$shop')} and b.shop_id = ${p('$shop')}
      and ${sql.ref(`u.${notificationSwitch}`)} and b.token_sealed is not null
    on conflict (shop_id, event_id, bot_user_id) do nothing`,
  );
}

/** What the worker needs to send one claimed notification. */
export interface ClaimedBotNotification {
  id: string;
  shop_id: string;
  bot_id: string;
  /** The bot's sealed token (null if it was removed after queueing: the notification then fails). */
  token_sealed: Buffer | null;
  /** The Telegram user id: the chat the message goes to. */
  chat_id: string;
  text: string;
  attempts: number;
}

/**
 * Claims due notifications of every shop for a lease (claimedCte), with the bot's token and the user's chat id
 * (joined on shop_id).
 */
export async function claimDueBotNotifications(
  trx: Transaction<Database>,
  lease: Lease,
): Promise<ClaimedBotNotification[]> {
  const claimed = claimedCte('bot_notifications', lease, [
    'id',
    'shop_id',
    'bot_id',
    'bot_user_id',
    'text',
    'attempts',
  ]);
  const { rows } = await sql<ClaimedBotNotification>`${claimed}
    select c.id, c.shop_id, c.bot_id, b.token_sealed, u.telegram_user_id as chat_id, c.text, c.attempts
    from claimed c
    join messaging_bots b on b.shop_id = c.shop_id and b.id = c.bot_id
    join messaging_bot_users u on u.shop_id = c.shop_id and u.id = c.bot_user_id`.execute(trx);
  return rows.map((r) => ({ ...r, token_sealed: r.token_sealed === null ? null : Buffer.from(r.token_sealed) }));
}

/** The shop's notifications, oldest first (tests and support). */
export async function botNotificationsOfShop(db: ReadDb, shopId: string): Promise<BotNotificationRow[]> {
  return inShop(db, shopId).selectFrom('bot_notifications').selectAll().orderBy('created_at').orderBy('id').execute();
}

/** Sets (or, with null, removes) the sealed token of a bot of the shop. */
export async function setMessagingBotToken(
  trx: Transaction<Database>,
  shopId: string,
  botId: string,
  sealed: Buffer | null,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('messaging_bots')
    .set({ token_sealed: sealed, updated_at: now })
    .where('id', '=', botId)
    .execute();
}
