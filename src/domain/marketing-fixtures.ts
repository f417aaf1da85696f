// The email-marketing and messaging-bot part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md):
// `email_marketing` (one setting per provider; a provider the shop already has is set to what the file says, as
// `cli email-marketing set` does) and `messaging_bots` (each with its users and their switches). Written through the
// same functions as the command line (src/domain/email-marketing.ts, messaging-bots.ts), so the same rules hold; any
// refusal rolls the whole seed back.
import type { Transaction } from 'kysely';
import type { Database, EmailMarketingProvider, MessagingNotificationSwitch } from '../../db/tables';
import { ApiError } from '../errors';
import { emailMarketingProviders, LIST_ID_MAX, setEmailMarketing } from './email-marketing';
import {
  addBotUsers,
  BOT_NAME_MAX,
  BOT_USER_NAME_MAX,
  createBot,
  messagingNotificationSwitches,
  type NotificationSwitches,
} from './messaging-bots';

const switchesSchema = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(messagingNotificationSwitches.map((s) => [s, { type: 'boolean' }])),
} as const;

/** Properties of the fixture schema. */
export const marketingFixtureSchema = {
  // Email-marketing integrations, at most one per provider (GET /email-marketing/settings).
  email_marketing: {
    type: 'array',
    maxItems: emailMarketingProviders.length,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['provider'],
      properties: {
        provider: { enum: emailMarketingProviders },
        enabled: { type: 'boolean' },
        list_id: { type: 'string', pattern: `^[\\x21-\\x7e]{1,${LIST_ID_MAX}}$` },
        double_opt_in: { type: 'boolean' },
        sync_customers: { type: 'boolean' },
        last_synced_at: { type: 'string', format: 'date-time' },
      },
    },
  },
  // Telegram bots of the shop with their users (PUT /telegram/bots/{botId}/users/bulk/notifications).
  messaging_bots: {
    type: 'array',
    maxItems: 100,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['username'],
      properties: {
        // The bot's Telegram username (an @ in front is dropped).
        username: { type: 'string', pattern: '^@?[A-Za-z][A-Za-z0-9_]{1,28}[Bb][Oo][Tt]$' },
        name: { type: 'string', minLength: 1, maxLength: BOT_NAME_MAX },
        users: {
          type: 'array',
          maxItems: 10000,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['telegram_user_id'],
            properties: {
              telegram_user_id: { type: 'string', pattern: '^[1-9][0-9]{0,19}$' },
              username: { type: 'string', minLength: 1, maxLength: BOT_USER_NAME_MAX },
              // Switches that start off (or on): every switch is on unless set here.
              notifications: switchesSchema,
            },
          },
        },
      },
    },
  },
} as const;

export interface EmailMarketingFixture {
  provider: EmailMarketingProvider;
  enabled?: boolean;
  list_id?: string;
  double_opt_in?: boolean;
  sync_customers?: boolean;
  last_synced_at?: string;
}

export interface MessagingBotFixture {
  username: string;
  name?: string;
  users?: {
    telegram_user_id: string;
    username?: string;
    notifications?: Partial<Record<MessagingNotificationSwitch, boolean>>;
  }[];
}

export interface MarketingFixtures {
  email_marketing?: EmailMarketingFixture[];
  messaging_bots?: MessagingBotFixture[];
}

/** Rules across items that the JSON Schema does not say. */
export function marketingFixtureProblems(f: MarketingFixtures): string[] {
  const problems: string[] = [];
  const providers = new Map<string, number>();
  (f.email_marketing ?? []).forEach((e, i) => {
    const j = providers.get(e.provider);
    if (j !== undefined) problems.push(`/email_marketing/${i}/provider repeats /email_marketing/${j}/provider`);
    providers.set(e.provider, i);
  });
  const usernames = new Map<string, number>();
  (f.messaging_bots ?? []).forEach((b, i) => {
    const name = b.username.replace(/^@/, '').toLowerCase();
    const j = usernames.get(name);
    if (j !== undefined) problems.push(`/messaging_bots/${i}/username repeats /messaging_bots/${j}/username`);
    usernames.set(name, i);
    const users = new Map<string, number>();
    (b.users ?? []).forEach((u, k) => {
      const l = users.get(u.telegram_user_id);
      if (l !== undefined)
        problems.push(`/messaging_bots/${i}/users/${k}/telegram_user_id repeats /messaging_bots/${i}/users/${l}`);
      users.set(u.telegram_user_id, k);
    });
  });
  return problems;
}

/** A refusal of the domain as a fixture problem at its path. */
function problem(err: unknown, path: string, fail: (message: string) => Error): unknown {
  if (!(err instanceof ApiError)) return err;
  const details = (err.details ?? []).map((d) => ` ${d.field} ${d.message}`).join(';');
  return fail(`${path}${details || ` ${err.message}`}`);
}

/** Writes the settings, bots and bot users of a fixture file (in the caller's transaction); returns their ids. */
export async function seedMarketingFixtures(
  trx: Transaction<Database>,
  shopId: string,
  f: MarketingFixtures,
  now: Date,
  fail: (message: string) => Error,
): Promise<{ emailMarketingSettings: string[]; messagingBots: string[]; messagingBotUsers: string[] }> {
  const created = {
    emailMarketingSettings: [] as string[],
    messagingBots: [] as string[],
    messagingBotUsers: [] as string[],
  };
  for (const [i, e] of (f.email_marketing ?? []).entries()) {
    try {
      const row = await setEmailMarketing(
        trx,
        shopId,
        { ...e, last_synced_at: e.last_synced_at === undefined ? undefined : new Date(e.last_synced_at) },
        now,
      );
      created.emailMarketingSettings.push(row.id);
    } catch (err) {
      throw problem(err, `/email_marketing/${i}`, fail);
    }
  }
  for (const [i, b] of (f.messaging_bots ?? []).entries()) {
    try {
      const bot = await createBot(trx, shopId, { username: b.username, name: b.name ?? null }, now);
      created.messagingBots.push(bot.id);
      const users = await addBotUsers(
        trx,
        shopId,
        bot.id,
        (b.users ?? []).map((u) => ({ ...u, notifications: u.notifications as NotificationSwitches | undefined })),
        now,
      );
      created.messagingBotUsers.push(...users.map((u) => u.id));
    } catch (err) {
      throw problem(err, `/messaging_bots/${i}`, fail);
    }
  }
  return created;
}
