// The shop's Telegram bots and their users' notification switches. Bots and users are written by the operator
// (`cli bot create`, `cli bot user add`) and by fixtures (src/ops/fixtures/marketing.ts); the API sets switches
// in bulk (PUT /telegram/bots/{botId}/users/bulk/notifications).
//
// Decisions (written into openapi.yaml):
// - A bot user is addressed by its Telegram user id (decimal text, e.g. "123456789"): the API has no bot-user
//   resource of its own, and the Telegram id is what the merchant's bot knows its users by.
// - `user_ids` naming any Telegram id that is not a user of this bot refuses the whole request (422
//   VALIDATION_ERROR, one detail per such id, `user_ids[i]`): nothing is changed, as Stripe refuses a request with a
//   bad parameter instead of applying part of it. A repeated id counts once.
// - A bot here is its Telegram username, a display name and (set by the operator) its token, sealed: this API sends
//   the notifications the switches ask for itself (src/domain/store/bot-notifications.ts, src/worker/bot-notifications.ts).
// - Switches not sent are not written at all (the UPDATE sets only the sent columns), so two requests flipping
//   different switches at once both take effect.
import * as bots from '../../../db/queries/messaging-bots';
import type { MessagingBotRow, MessagingBotUserRow, MessagingNotificationSwitch } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError, type ErrorDetail } from '../../errors';
import { newId } from '../../ids';
import type { ShopWrite } from '../../platform/unit-of-work';

export const messagingNotificationSwitches: readonly MessagingNotificationSwitch[] = [
  'order_paid',
  'order_completed',
  'ticket_replied',
  'review_created',
  'dispute_opened',
  'stock_low',
];

export const telegramUserIdPattern = /^[1-9][0-9]{0,19}$/;
export const botUsernamePattern = /^[A-Za-z][A-Za-z0-9_]{1,28}[Bb][Oo][Tt]$/;
export const BOT_NAME_MAX = 100;
export const BOT_USER_NAME_MAX = 64;

export type NotificationSwitches = Partial<Record<MessagingNotificationSwitch, boolean>>;

export interface BulkNotificationsRequest {
  user_ids?: string[];
  notifications: NotificationSwitches;
}

/** The switches the request sends, and only those (a key left out is not written). */
function sentSwitches(notifications: NotificationSwitches): NotificationSwitches {
  const out: NotificationSwitches = {};
  for (const name of messagingNotificationSwitches) {
    const value = notifications[name];
    if (typeof value === 'boolean') out[name] = value;
  }
  return out;
}

/**
 * PUT /telegram/bots/{botId}/users/bulk/notifications. Unknown bot (or another shop's): 404 MESSAGING_BOT_NOT_FOUND.
 * A listed Telegram id that is not a user of the bot: 422 naming each one. Both before anything is written; the
 * update is then one statement in the unit of work's transaction.
 */
export async function updateBotNotifications(
  w: ShopWrite,
  botId: string,
  request: BulkNotificationsRequest,
): Promise<Record<string, never>> {
  const { trx, shopId, now } = w;
  const bot = await bots.messagingBotById(trx, shopId, botId);
  if (!bot) throw new NotFoundError('MESSAGING_BOT_NOT_FOUND');
  const switches = sentSwitches(request.notifications);
  if (Object.keys(switches).length === 0)
    throw new ValidationError([{ field: 'notifications', message: 'must set at least one switch' }]);
  const ids = request.user_ids === undefined ? undefined : [...new Set(request.user_ids)];
  if (ids !== undefined) {
    const known = new Set(await bots.botUserTelegramIds(trx, shopId, bot.id, ids));
    const unknown: ErrorDetail[] = [];
    request.user_ids!.forEach((id, i) => {
      if (!known.has(id) && request.user_ids!.indexOf(id) === i)
        unknown.push({ field: `user_ids[${i}]`, message: 'is not a user of this bot' });
    });
    if (unknown.length > 0)
      throw new ValidationError(unknown, 'Some user_ids are not users of this bot; nothing was changed.');
  }
  // The request's audit entry (src/platform/audit.ts) names the bot from the path; nothing else to record.
  await bots.setBotUserSwitches(trx, shopId, bot.id, ids, switches, now);
  return {};
}

// ---------------------------------------------------------------------------------------------------------------
// Bots and users (the CLI and fixtures)
// ---------------------------------------------------------------------------------------------------------------

export interface NewBot {
  username: string;
  name?: string | null;
}

export function botProblems(input: NewBot): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const username = input.username.replace(/^@/, '');
  if (!botUsernamePattern.test(username))
    problems.push({
      field: 'username',
      message: 'must be a Telegram bot username: 5 to 32 letters, digits or _, starting with a letter, ending in "bot"',
    });
  if (input.name != null && (input.name.trim().length < 1 || input.name.length > BOT_NAME_MAX))
    problems.push({ field: 'name', message: `must be 1 to ${BOT_NAME_MAX} characters` });
  return problems;
}

/** Adds a bot to the shop; invalid: 422; a username the shop's bots already have (any case): 409 CONFLICT. */
export async function createBot(w: ShopWrite, input: NewBot): Promise<MessagingBotRow> {
  const { trx, shopId, now } = w;
  const problems = botProblems(input);
  if (problems.length > 0) throw new ValidationError(problems);
  const username = input.username.replace(/^@/, '');
  if (await bots.messagingBotByUsername(trx, shopId, username))
    throw new ApiError('CONFLICT', `The shop already has a bot @${username}.`);
  return bots.insertMessagingBot(trx, shopId, {
    id: newId('bot'),
    username,
    name: input.name?.trim() ?? null,
    created_at: now,
    updated_at: now,
  });
}

export interface NewBotUser {
  telegram_user_id: string;
  username?: string | null;
  /** Switches that differ from the default (every switch on). */
  notifications?: NotificationSwitches;
}

export function botUserProblems(input: NewBotUser): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!telegramUserIdPattern.test(input.telegram_user_id))
    problems.push({ field: 'telegram_user_id', message: 'must be a Telegram user id (a positive whole number)' });
  if (input.username != null && (input.username.length < 1 || input.username.length > BOT_USER_NAME_MAX))
    problems.push({ field: 'username', message: `must be 1 to ${BOT_USER_NAME_MAX} characters` });
  return problems;
}

/**
 * Adds users to a bot of the shop (unknown bot: 404). A Telegram user the bot already has: 409 CONFLICT (the whole
 * batch is refused). Invalid: 422 with the item's index.
 */
export async function addBotUsers(
  w: ShopWrite,
  botId: string,
  users: readonly NewBotUser[],
): Promise<MessagingBotUserRow[]> {
  const { trx, shopId, now } = w;
  const bot = await bots.messagingBotById(trx, shopId, botId);
  if (!bot) throw new NotFoundError('MESSAGING_BOT_NOT_FOUND');
  const problems = users.flatMap((u, i) =>
    botUserProblems(u).map((p) => ({ field: `users[${i}].${p.field}`, message: p.message })),
  );
  if (problems.length > 0) throw new ValidationError(problems);
  const rows = users.map((u) => ({
    id: newId('btu'),
    bot_id: bot.id,
    telegram_user_id: u.telegram_user_id,
    username: u.username ?? null,
    ...sentSwitches(u.notifications ?? {}),
    created_at: now,
    updated_at: now,
  }));
  const inserted = await bots.insertMessagingBotUsers(trx, shopId, rows);
  if (inserted.length !== new Set(rows.map((r) => r.telegram_user_id)).size || inserted.length !== rows.length)
    throw new ApiError('CONFLICT', `The bot @${bot.username} already has one of these Telegram users.`);
  return inserted;
}
