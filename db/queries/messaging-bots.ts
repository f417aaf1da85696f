// The shop's Telegram bots and their users: look-ups, the operator's inserts, and the bulk switch update.
import type { Transaction } from 'kysely';
import type { Database, MessagingBotRow, MessagingBotUserRow, MessagingNotificationSwitch } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** The shop's bot with this id, or undefined (another shop's bot is not found, like a missing one). */
export async function messagingBotById(
  db: ReadDb,
  shopId: string,
  botId: string,
): Promise<MessagingBotRow | undefined> {
  return inShop(db, shopId).selectFrom('messaging_bots').selectAll().where('id', '=', botId).executeTakeFirst();
}

/** The shop's bot with this username (case-insensitive), or undefined. */
export async function messagingBotByUsername(
  db: ReadDb,
  shopId: string,
  username: string,
): Promise<MessagingBotRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('messaging_bots')
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['username']), '=', username.toLowerCase()))
    .executeTakeFirst();
}

export async function insertMessagingBot(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'messaging_bots'>,
): Promise<MessagingBotRow> {
  return inShopForWrite(trx, shopId).insertInto('messaging_bots', row).returningAll().executeTakeFirstOrThrow();
}

/** Inserts users of bots of the shop; a Telegram user the bot already has is left as it is (not returned). */
export async function insertMessagingBotUsers(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'messaging_bot_users'>[],
): Promise<MessagingBotUserRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId)
    .insertInto('messaging_bot_users', rows)
    .onConflict((oc) => oc.columns(['shop_id', 'bot_id', 'telegram_user_id']).doNothing())
    .returningAll()
    .execute();
}

/** Which of these Telegram user ids are users of the bot. */
export async function botUserTelegramIds(
  db: ReadDb,
  shopId: string,
  botId: string,
  telegramUserIds: readonly string[],
): Promise<string[]> {
  if (telegramUserIds.length === 0) return [];
  const rows = await inShop(db, shopId)
    .selectFrom('messaging_bot_users')
    .select('telegram_user_id')
    .where('bot_id', '=', botId)
    .where('telegram_user_id', 'in', telegramUserIds)
    .execute();
  return rows.map((r) => r.telegram_user_id);
}

/**
 * Sets the given switches (and only those: a column not in `switches` is not written, so a concurrent update of
 * other switches is kept) on the bot's users: those with these Telegram ids, or all of them when `telegramUserIds`
 * is undefined. Returns how many users it changed.
 */
export async function setBotUserSwitches(
  trx: Transaction<Database>,
  shopId: string,
  botId: string,
  telegramUserIds: readonly string[] | undefined,
  switches: Partial<Record<MessagingNotificationSwitch, boolean>>,
  now: Date,
): Promise<number> {
  let query = inShopForWrite(trx, shopId)
    .updateTable('messaging_bot_users')
    .set({ ...switches, updated_at: now })
    .where('bot_id', '=', botId);
  if (telegramUserIds !== undefined) {
    if (telegramUserIds.length === 0) return 0;
    query = query.where('telegram_user_id', 'in', telegramUserIds);
  }
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows);
}
