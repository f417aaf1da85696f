// The command line's part of email marketing and messaging bots (src/ops/cli.ts): `email-marketing set`, `bot create`,
// `bot user add`. Each is one unit of work through the same functions as fixtures; a refusal writes nothing.
import type { Operator } from './operator';
import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import { shopById } from '../../db/queries/shops';
import type { Database, MessagingNotificationSwitch } from '../../db/tables';
import { ValidationError } from '../errors';
import { loadSecretBox } from '../platform/secret-box';
import { emailMarketingSettingView } from '../views/email-marketing-setting';
import { AdminError, operatorWrite } from './admin';
import { setEmailMarketing } from '../domain/store/email-marketing';
import { setEmailMarketingKey } from '../domain/store/email-marketing-sync';
import { addBotUsers, createBot, messagingNotificationSwitches } from '../domain/store/messaging-bots';
import { setBotToken } from '../domain/store/bot-notifications';

async function requireShop(db: Kysely<Database>, shopId: string): Promise<void> {
  if (!(await shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
}

// The domain's field names as the command line's options.
const optionOf: Record<string, string> = {
  list_id: 'list',
  api_key: 'api-key-stdin (or EMAIL_MARKETING_API_KEY)',
  'users[0].telegram_user_id': 'telegram-id',
  'users[0].username': 'username',
  token: 'token-stdin (or BOT_TOKEN)',
};

/** A 422 of the domain as the command line's options: `--username must be …`. */
async function asOptions<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ValidationError)
      throw new AdminError(
        (err.details ?? []).map((d) => `--${optionOf[d.field] ?? d.field} ${d.message}`).join('; ') || err.message,
      );
    throw err;
  }
}

/** `email-marketing set`: the shop's setting of a provider becomes exactly what the options say. */
export async function setEmailMarketingAsOperator(
  op: Operator,
  input: {
    shopId: string;
    provider: string;
    list?: string;
    disabled?: boolean;
    doubleOptIn?: boolean;
    noSync?: boolean;
    /** The provider API key (emailMarketingApiKeyFrom); undefined keeps the stored one. */
    apiKey?: string;
  },
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  const box = input.apiKey === undefined ? undefined : await loadSecretBox(db, op.config.webhookSecretsKey);
  const row = await asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:email-marketing set', async (w) => {
      const setting = await setEmailMarketing(w, {
        provider: input.provider.toUpperCase(),
        enabled: input.disabled !== true,
        list_id: input.list ?? null,
        double_opt_in: input.doubleOptIn === true,
        sync_customers: input.noSync !== true,
      });
      if (box && input.apiKey !== undefined) await setEmailMarketingKey(w, box, setting.id, input.apiKey);
      return setting;
    }),
  );
  return emailMarketingSettingView(row);
}

/**
 * `email-marketing set`'s provider API key: stdin with --api-key-stdin (one trailing newline dropped), else the
 * EMAIL_MARKETING_API_KEY environment variable, else none (the stored key, if any, stays). Never an argument, which
 * every user of the machine could read (ps).
 */
export function emailMarketingApiKeyFrom(
  fromStdin: boolean,
  env: NodeJS.ProcessEnv = process.env,
  readStdin: () => string = () => readFileSync(0, 'utf8'),
): string | undefined {
  if (fromStdin) {
    const key = readStdin().replace(/\r?\n$/, '');
    if (key === '') throw new AdminError('--api-key-stdin: stdin held no key');
    return key;
  }
  return env.EMAIL_MARKETING_API_KEY || undefined;
}

/**
 * `bot create`: a Telegram bot of the shop, with its token (sealed; src/domain/store/bot-notifications.ts) when given.
 * The token is never returned, logged or audited; without one the bot's users get no notifications.
 */
export async function createBotAsOperator(
  op: Operator,
  input: { shopId: string; username: string; name?: string; token?: string },
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  const secrets = input.token === undefined ? undefined : await loadSecretBox(db, op.config.webhookSecretsKey);
  const bot = await asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:bot create', async (w) => {
      const created = await createBot(w, { username: input.username, name: input.name ?? null });
      if (input.token !== undefined) await setBotToken(w, created.id, input.token, secrets!);
      return created;
    }),
  );
  return {
    id: bot.id,
    username: bot.username,
    name: bot.name,
    has_token: input.token !== undefined,
    created_at: bot.created_at.toISOString(),
  };
}

/** `--off order_paid,stock_low` -> those switches off (every other one on). */
export function parseSwitchesOff(text: string | undefined): Partial<Record<MessagingNotificationSwitch, boolean>> {
  if (text === undefined) return {};
  const out: Partial<Record<MessagingNotificationSwitch, boolean>> = {};
  for (const name of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(messagingNotificationSwitches as readonly string[]).includes(name))
      throw new AdminError(`--off: "${name}" is not a switch (${messagingNotificationSwitches.join(', ')})`);
    out[name as MessagingNotificationSwitch] = false;
  }
  return out;
}

/** `bot user add`: a Telegram user of a bot of the shop, every switch on but those of --off. */
export async function addBotUserAsOperator(
  op: Operator,
  input: { shopId: string; botId: string; telegramId: string; username?: string; off?: string },
) {
  const { db } = op;
  await requireShop(db, input.shopId);
  const notifications = parseSwitchesOff(input.off);
  const [user] = await asOptions(() =>
    operatorWrite(op, input.shopId, 'cli:bot user add', (w) =>
      addBotUsers(w, input.botId, [
        { telegram_user_id: input.telegramId, username: input.username ?? null, notifications },
      ]),
    ),
  );
  return {
    id: user!.id,
    bot_id: user!.bot_id,
    telegram_user_id: user!.telegram_user_id,
    username: user!.username,
    notifications: Object.fromEntries(messagingNotificationSwitches.map((s) => [s, user![s]])),
  };
}
