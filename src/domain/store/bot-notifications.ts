// Telegram notifications to the users of a shop's bots: what makes their switches (PUT
// /telegram/bots/{botId}/users/bulk/notifications) do something. queueBotNotifications consumes every event in its
// transaction (registered in src/domain/effects.ts); for the events a switch names, one message is queued for
// each user of the shop's bots (with a token) whose switch is on, and the worker (src/worker/bot-notifications.ts)
// sends them through the Telegram Bot API. A rolled-back change queues nothing; a switch turned off before the
// event's transaction takes no message.
//
// Decisions (written into openapi.yaml):
// - Which event a switch names: order_paid <- order:paid, order_completed <- order:completed, review_created <-
//   review:created, dispute_opened <- dispute:opened, stock_low <- product:stock_low. ticket_replied: this API has no
//   ticket reply yet (only ticket:created), so that switch is stored and takes effect once ticket replies exist.
// - A bot's token (from @BotFather) is given to the operator's CLI (`bot create --token-stdin`, or BOT_TOKEN), stored
//   sealed (AES-256-GCM, src/platform/secret-box.ts), never returned, logged or audited. A bot without a token gets
//   no notifications (nothing is queued for its users).
// - The message is short and names only what the merchant's dashboard already shows about the event (the order's
//   uniqid, amount and currency; the review's rating; the product's title and stock): no buyer e-mail, no secrets.
import { botNotificationsForEvent, setMessagingBotToken } from '../../../db/queries/bot-notifications';
import { messagingBotById } from '../../../db/queries/messaging-bots';
import type { MessagingNotificationSwitch } from '../../../db/tables';
import { NotFoundError, ValidationError } from '../../errors';
import type { EventConsumer } from '../../platform/events';
import type { SecretBox } from '../../platform/secret-box';
import type { ShopWrite } from '../../platform/unit-of-work';

/** The event each switch stands for. ticket_replied has none until the API has ticket replies. */
export const switchOfEvent: Readonly<Record<string, MessagingNotificationSwitch>> = {
  'order:paid': 'order_paid',
  'order:completed': 'order_completed',
  'review:created': 'review_created',
  'dispute:opened': 'dispute_opened',
  'product:stock_low': 'stock_low',
};

/** A token as @BotFather gives it: the bot's numeric id, a colon, and 30+ letters, digits, _ or -. */
export const telegramTokenPattern = /^[0-9]{1,20}:[A-Za-z0-9_-]{30,100}$/;

/** What a bot's token is sealed with: it opens only on that bot's row of that shop. */
export function botTokenContext(shopId: string, botId: string): string {
  return `messaging-bot:${shopId}:${botId}`;
}

/**
 * Sets the token of a bot of the shop (unknown bot: 404), sealed. A malformed token: 422 on `token` (the message
 * never repeats the value).
 */
export async function setBotToken(w: ShopWrite, botId: string, token: string, secrets: SecretBox): Promise<void> {
  const { trx, shopId, now } = w;
  if (!telegramTokenPattern.test(token))
    throw new ValidationError([
      { field: 'token', message: 'must be a Telegram bot token as @BotFather gives it (123456789:AA…)' },
    ]);
  const bot = await messagingBotById(trx, shopId, botId);
  if (!bot) throw new NotFoundError('MESSAGING_BOT_NOT_FOUND');
  await setMessagingBotToken(trx, shopId, bot.id, secrets.seal(token, botTokenContext(shopId, bot.id)), now);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A short field of the event's data as text: strings cut to `max`, exact amounts (JSON.rawJSON) as their digits. */
function field(data: Record<string, unknown>, name: string, max = 100): string {
  const v = data[name];
  if (typeof v === 'string') return v.length > max ? `${v.slice(0, max - 1)}…` : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (isRecord(v)) return JSON.stringify(v); // a JSON.rawJSON amount: its exact digits
  return '?';
}

/** The message of an event a switch names, or undefined for any other event. */
export function notificationText(type: string, data: unknown): string | undefined {
  const d = isRecord(data) ? data : {};
  switch (type) {
    case 'order:paid':
      return `Order ${field(d, 'uniqid')} paid: ${field(d, 'total')} ${field(d, 'currency')}`;
    case 'order:completed':
      return `Order ${field(d, 'uniqid')} completed: ${field(d, 'total')} ${field(d, 'currency')}`;
    case 'review:created':
      return `New review ${field(d, 'id')}: ${field(d, 'rating')}/5 on order ${field(d, 'order_id')}`;
    case 'dispute:opened':
      return `Dispute ${field(d, 'id')} opened on order ${field(d, 'order_uniqid')}: ${field(d, 'amount')} ${field(d, 'currency')}`;
    case 'product:stock_low':
      return `Low stock: ${field(d, 'title')} (${field(d, 'product_id')}) has ${field(d, 'stock')} left`;
    default:
      return undefined;
  }
}

/**
 * Queues the event's message to every user of the shop's bots whose switch for it is on (bots with a token only),
 * in the statement that writes the event. Events no switch names queue nothing.
 */
export const queueBotNotifications: EventConsumer = {
  inStatement(shopId, event, data) {
    const notificationSwitch = switchOfEvent[event.type];
    const text = notificationText(event.type, data);
    if (notificationSwitch === undefined || text === undefined) return [];
    const query = botNotificationsForEvent(shopId, {
      eventId: event.id,
      eventType: event.type,
      notificationSwitch,
      text,
      now: event.created_at,
    });
    return [{ name: 'bot_notifications', query }];
  },
};
