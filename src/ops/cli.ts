// The admin command line: `npm run -s cli -- <command> [options] [--json]`.
// With --json exactly one JSON document is printed on stdout (also for errors, as { "error": { "message" } }).
// runCli is the whole program minus the process: tests run it in-process on their open database (one spawn costs
// seconds: tsx, then the database opened and migrated); the entry at the bottom only wires the process to it.
import { connectCommands, connectFields, connectShopGateway } from './gateway-admin';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { openDatabase, DatabaseBusyError, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import { loadConfig, ConfigError, type Config } from '../config';
import { ApiError } from '../errors';
import { systemClock } from '../platform/clock';
import type { Operator } from './operator';
import * as admin from './admin';

import { FixtureError } from './fixtures/fixtures';
import { applyAsOperator } from '../domain/affiliates/affiliates';
import * as support from './support-admin';
import * as resellerAdmin from './reseller-admin';
import * as analyticsAdmin from './analytics-admin';
import { createOwner } from './owner-admin';
import * as marketingAdmin from './marketing-admin';
import * as oauthAdmin from './oauth-admin';
import { commandUsage, commands, fullUsage, helpHint } from './cli-usage';

/** The command line is wrong (not what it asks for is): exit code 2, with the command's usage or a hint to `help`. */
class UsageError extends Error {}

function unknownCommand(command: string): UsageError {
  return new UsageError(command ? `Unknown command "${command}".` : 'No command given.');
}

/** The command's words: those before the first option (an option's value is never one of them). */
function commandWords(argv: string[]): string {
  const end = argv.findIndex((a) => a.startsWith('-'));
  return argv.slice(0, end < 0 ? undefined : end).join(' ');
}

/**
 * `help`, `help <command>`, `--help`/`-h` anywhere (after a command: that command's): the usage asked for, or
 * undefined when the command line asks for something else. Read before the options are parsed or the configuration
 * loaded, so help answers whatever else is wrong.
 */
function helpAsked(argv: string[]): string | undefined {
  const words = argv.filter((a) => a !== '--json');
  let command: string;
  if (words[0] === 'help') command = commandWords(words.slice(1));
  else if (words.includes('--help') || words.includes('-h')) command = commandWords(words);
  else return undefined;
  if (command === '') return fullUsage();
  const usage = commandUsage(command);
  if (usage === undefined) throw unknownCommand(command);
  return usage;
}

/** Node's parseArgs refusals as usage errors, in the CLI's words (node's own suggest a `--` the CLI has no use for). */
function parseArgsError(err: Error & { code: string }): UsageError {
  const option = /'(-[^' ]*)/.exec(err.message)?.[1];
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) return new UsageError(`Unknown option ${option}`);
  return new UsageError(err.message);
}

export interface CliIo {
  /** What the --*-stdin options read. A function is called only when one of them asks: an operator's terminal
   * never ends its stdin, so the program must not wait for it otherwise. */
  stdin?: string | (() => string);
  /** The environment the CLI reads (configuration, BOT_TOKEN, OWNER_PASSWORD, EMAIL_MARKETING_API_KEY); default
   * process.env. Domain code that loads its own configuration (statement timeout, secrets key) still reads process.env. */
  env?: NodeJS.ProcessEnv;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** An open database to run on, left open; without one the configured database is opened and closed again. */
  database?: DatabaseHandle;
  /** What relative paths (seed --file) are relative to; default this process's. The server running a forwarded
   * command (src/ops/cli-channel.ts) gives the CLI's, so a path means what it meant where it was typed. */
  cwd?: string;
}

/** What a command may read besides its arguments. */
interface Context {
  env: NodeJS.ProcessEnv;
  readStdin: () => string;
  config: Config;
  cwd: string;
}

/** `bot create`'s Telegram token: stdin (--token-stdin) or BOT_TOKEN (never argv: ps shows it); none: undefined. */
function readBotToken(values: Record<string, unknown>, ctx: Context): string | undefined {
  if (values['token-stdin'] === true) {
    const token = ctx.readStdin().trim();
    if (!token) throw new UsageError('bot create: --token-stdin read no token from stdin');
    return token;
  }
  return ctx.env.BOT_TOKEN ? ctx.env.BOT_TOKEN.trim() : undefined;
}

/** `owner create`'s password: stdin (--password-stdin), OWNER_PASSWORD, or --password (visible in ps). */
function readOwnerPassword(values: Record<string, unknown>, ctx: Context): string {
  let password: string | undefined;
  if (values['password-stdin'] === true) password = ctx.readStdin().replace(/\r?\n$/, '');
  else if (ctx.env.OWNER_PASSWORD) password = ctx.env.OWNER_PASSWORD;
  else if (typeof values.password === 'string') password = values.password;
  if (!password)
    throw new UsageError('owner create: give the password on stdin with --password-stdin (or OWNER_PASSWORD)');
  return password;
}

function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

type Output = { json: unknown; text: string };

/** Columns padded to their widest cell, a header line first. */
function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** parseArgs, its refusals turned into usage errors. */
function parseOptions<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
      throw parseArgsError(err as Error & { code: string });
    throw err;
  }
}

async function run(
  argv: string[],
  ctx: Context,
  database: () => Promise<{ handle: DatabaseHandle; release: () => Promise<void> }>,
): Promise<Output> {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      name: { type: 'string' },
      plan: { type: 'string' },
      currency: { type: 'string' },
      id: { type: 'string' },
      shop: { type: 'string' },
      scopes: { type: 'string' },
      file: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      code: { type: 'string' },
      kind: { type: 'string' },
      coins: { type: 'string' },
      inactive: { type: 'boolean' },
      rate: { type: 'string' },
      inclusive: { type: 'boolean' },
      type: { type: 'string' },
      value: { type: 'string' },
      'max-uses': { type: 'string' },
      expires: { type: 'string' },
      products: { type: 'string' },
      email: { type: 'string' },
      items: { type: 'string' },
      coupon: { type: 'string' },
      quiet: { type: 'boolean' },
      commission: { type: 'string' },
      note: { type: 'string' },
      order: { type: 'string' },
      reason: { type: 'string' },
      outcome: { type: 'string' },
      rating: { type: 'string' },
      product: { type: 'string' },
      message: { type: 'string' },
      subject: { type: 'string' },
      priority: { type: 'string' },
      discount: { type: 'string' },
      revenue: { type: 'string' },
      orders: { type: 'string' },
      'requires-both': { type: 'boolean' },
      'sort-order': { type: 'string' },
      'report-format': { type: 'string' },
      default: { type: 'boolean' },
      provider: { type: 'string' },
      list: { type: 'string' },
      disabled: { type: 'boolean' },
      'double-opt-in': { type: 'boolean' },
      'no-sync': { type: 'boolean' },
      'api-key-stdin': { type: 'boolean' },
      username: { type: 'string' },
      bot: { type: 'string' },
      'telegram-id': { type: 'string' },
      off: { type: 'string' },
      'redirect-uris': { type: 'string' },
      public: { type: 'boolean' },
      'password-stdin': { type: 'boolean' },
      'token-stdin': { type: 'boolean' },
      password: { type: 'string' },
      mode: { type: 'string' },
      seconds: { type: 'string' },
      'secrets-stdin': { type: 'boolean' },
    },
  });
  const command = positionals.join(' ');
  if (!commands.includes(command)) throw unknownCommand(command);

  // Read and check arguments before touching the database, so a typo never opens (or locks) it.
  let fixtures: unknown;
  if (command === 'seed') {
    const file = required(values, 'file');
    try {
      fixtures = JSON.parse(readFileSync(resolve(ctx.cwd, file), 'utf8'));
    } catch (err) {
      throw new FixtureError(`Cannot read ${file} as JSON: ${(err as Error).message}`);
    }
  }
  const scopes = command === 'key create' ? admin.parseScopes(required(values, 'scopes')) : [];
  // `clock advance` acts on the test clock: test mode whatever --mode says.
  const mode = command === 'clock advance' ? 'test' : admin.parseMode(values.mode);
  // The listings cover both modes of the shop unless --mode names one.
  const listsBothModes = command === 'key list' || command === 'emails list';
  const listMode = values.mode === undefined ? undefined : mode;
  const seconds = command === 'clock advance' ? admin.parseSeconds(required(values, 'seconds')) : 0;
  const ownerPassword = command === 'owner create' ? readOwnerPassword(values, ctx) : '';
  const botToken = command === 'bot create' ? readBotToken(values, ctx) : undefined;
  const emailMarketingKey =
    command === 'email-marketing set'
      ? marketingAdmin.emailMarketingApiKeyFrom(values['api-key-stdin'] === true, ctx.env, ctx.readStdin)
      : undefined;

  const connecting = connectCommands[command];
  const gatewayFields = connecting
    ? connectFields(
        connecting,
        { secretsStdin: values['secrets-stdin'] === true, url: values.url },
        ctx.env,
        ctx.readStdin,
      )
    : {};

  const { handle, release } = await database();
  const { db } = handle;
  // Every command gets the operator its entry point built: this process's configuration and the wall clock.
  const op: Operator = { db, config: ctx.config, clock: systemClock };
  try {
    await migrateToLatest(db, ctx.config.databaseMigrationUrl);
    // --shop names the live shop; with --mode test every command acts in its test twin (made on first use). The
    // listings resolve their shops themselves (admin.shopsToList): both modes, and never a twin made by a read.
    if (typeof values.shop === 'string' && values.shop !== '' && !listsBothModes)
      values.shop = (await admin.shopForMode(db, values.shop, mode)).id;
    switch (command) {
      case 'shop create': {
        const shop = await admin.createShop(db, {
          name: required(values, 'name'),
          plan: values.plan,
          currency: values.currency,
        });
        return {
          json: { id: shop.id },
          text: `Created shop ${shop.id} (${shop.name}, ${shop.plan}, ${shop.currency})`,
        };
      }
      case 'shop suspend':
      case 'shop activate': {
        const shop = await admin.setShopStatus(
          db,
          required(values, 'id'),
          command === 'shop suspend' ? 'suspended' : 'active',
        );
        return { json: { id: shop.id, status: shop.status }, text: `Shop ${shop.id} is ${shop.status}` };
      }
      case 'key create': {
        const key = await admin.createApiKey(db, {
          shopId: required(values, 'shop'),
          scopes,
          name: values.name,
          mode,
        });
        return {
          json: { id: key.id, key: key.key, mode: key.mode, shop_id: key.shop_id },
          text: `Created ${key.mode} key ${key.id} with scopes ${key.scopes.join(' ')}\n${key.key}\n(shown only now: store it safely)`,
        };
      }
      case 'clock advance': {
        const clock = await admin.advanceClock(op, required(values, 'shop'), seconds);
        return {
          json: clock,
          text: `Test clock of ${values.shop}: ${clock.now} (advanced ${clock.advanced_seconds} s)`,
        };
      }
      case 'key revoke': {
        const r = await admin.revokeApiKey(db, required(values, 'id'));
        return { json: r, text: `Revoked key ${r.id}` };
      }
      case 'key list': {
        const keys = await admin.listApiKeys(db, required(values, 'shop'), { mode: listMode, now: op.clock.now() });
        return {
          json: keys,
          text: keys.length
            ? table(
                ['id', 'mode', 'state', 'kind', 'name', 'prefix', 'created_at', 'last_used_at', 'revoked_at', 'scopes'],
                keys.map((k) => [
                  k.id,
                  k.mode,
                  k.state,
                  k.kind,
                  k.name ?? '-',
                  `${k.prefix}…`,
                  k.created_at,
                  k.last_used_at ?? '-',
                  k.revoked_at ?? '-',
                  k.scopes.join(' '),
                ]),
              )
            : '(no keys)',
        };
      }
      case 'seed': {
        const created = await admin.seedShop(op, required(values, 'shop'), fixtures);
        return {
          json: created,
          text: `Created ${created.products.length} products, ${created.variants.length} variants, ${created.serials} serials, ${created.customers.length} customers`,
        };
      }
      case 'emails list': {
        const emails = await admin.listEmails(db, { shopId: values.shop, mode: listMode });
        return {
          json: emails,
          text: emails.length
            ? table(
                ['id', 'shop', 'mode', 'to', 'template', 'subject', 'status', 'created_at'],
                emails.map((e) => [e.id, e.shop_id, e.mode, e.to, e.template, e.subject, e.status, e.created_at]),
              )
            : '(no emails)',
        };
      }
      case 'webhook create': {
        const endpoint = await admin.createWebhookEndpoint(op, {
          shopId: required(values, 'shop'),
          url: required(values, 'url'),
          events: (values.events ?? '*')
            .split(',')
            .map((e) => e.trim())
            .filter(Boolean),
          description: values.description,
        });
        return {
          json: endpoint,
          text: `Created webhook endpoint ${endpoint.id} for ${endpoint.events.join(',')} -> ${endpoint.url}\nSigning secret (shown only now): ${endpoint.secret}`,
        };
      }
      case 'dynamic-secret': {
        const r = await admin.revealDynamicSecret(op, required(values, 'shop'));
        return { json: r, text: `Dynamic-delivery signing secret of ${r.shop_id}: ${r.secret}` };
      }
      case 'gateway set': {
        const gateway = await admin.setGateway(db, {
          shopId: required(values, 'shop'),
          code: required(values, 'code'),
          kind: required(values, 'kind'),
          coins: values.coins,
          inactive: values.inactive,
        });
        return {
          json: gateway,
          text: `Gateway ${gateway.code} (${gateway.kind}${gateway.coins.length ? `: ${gateway.coins.join(',')}` : ''}) is ${gateway.active ? 'active' : 'inactive'}`,
        };
      }
      case 'gateway connect stripe':
      case 'gateway connect paypal':
      case 'gateway connect btcpay': {
        const connection = await connectShopGateway(db, ctx.config, systemClock, {
          shopId: required(values, 'shop'),
          code: connecting!,
          fields: gatewayFields,
          coins: values.coins,
        });
        return {
          json: connection,
          text:
            `Connected ${connection.gateway} (${connection.mode} mode). Point the provider's webhooks at:\n` +
            `${connection.webhook_url}\n(the credentials are stored encrypted and never shown again)`,
        };
      }
      case 'gateway list': {
        const gateways = await admin.listGateways(db, required(values, 'shop'));
        return {
          json: gateways,
          text: gateways.length
            ? table(
                ['code', 'kind', 'active', 'coins'],
                gateways.map((g) => [g.code, g.kind, String(g.active), g.coins.join(',')]),
              )
            : '(no gateways)',
        };
      }
      case 'tax set': {
        const tax = await admin.setTax(db, {
          shopId: required(values, 'shop'),
          rate: required(values, 'rate'),
          inclusive: values.inclusive === true,
        });
        return {
          json: tax,
          text: `Shop ${tax.shop_id}: tax ${tax.rate}% ${tax.inclusive ? 'included in prices' : 'added on top'}`,
        };
      }
      case 'coupon create': {
        const coupon = await admin.createCoupon(db, {
          shopId: required(values, 'shop'),
          code: required(values, 'code'),
          type: required(values, 'type'),
          value: required(values, 'value'),
          currency: values.currency,
          maxUses: values['max-uses'],
          expires: values.expires,
          products: values.products,
        });
        return { json: coupon, text: `Created coupon ${coupon.code} (${coupon.id})` };
      }
      case 'blacklist add': {
        const entry = await admin.addBlacklistEntry(op, {
          shopId: required(values, 'shop'),
          type: required(values, 'type'),
          value: required(values, 'value'),
          note: values.note,
        });
        return { json: entry, text: `Blacklisted ${entry.type} ${entry.value} (${entry.id})` };
      }
      case 'order create': {
        const order = await admin.placeOrder(op, {
          shopId: required(values, 'shop'),
          email: required(values, 'email'),
          items: required(values, 'items'),
          coupon: values.coupon,
          title: values.name,
        });
        return {
          json: order,
          text: `Order ${order.id} PENDING, total ${JSON.stringify(order.total)} ${order.currency}\nCheckout: ${order.checkout_url}`,
        };
      }
      case 'order complete': {
        const order = await admin.completeOrderAsOperator(op, {
          shopId: required(values, 'shop'),
          orderId: required(values, 'id'),
          suppressEmails: values.quiet === true,
        });
        const lines = order.items.map((i) => `  ${i.product_title}: ${i.delivery_status}`);
        return { json: order, text: [`Order ${order.id} ${order.status}`, ...lines].join('\n') };
      }
      case 'affiliate apply': {
        const application = await applyAsOperator(
          db,
          {
            shopId: required(values, 'shop'),
            email: required(values, 'email'),
            code: values.code,
            commissionPercent: values.commission,
            note: values.note,
          },
          op.clock,
        );
        return {
          json: application,
          text: `Affiliate application ${application.id} of ${application.email} PENDING (${application.commission_percent}%)`,
        };
      }
      case 'dispute open': {
        const dispute = await support.openSandboxDispute(op, {
          shopId: required(values, 'shop'),
          orderId: required(values, 'order'),
          reason: values.reason,
        });
        return {
          json: dispute,
          text: `Dispute ${dispute.id} ${dispute.status} on order ${dispute.order_id} (${dispute.reason}); the order is DISPUTED`,
        };
      }
      case 'dispute close': {
        const dispute = await support.closeSandboxDispute(op, {
          shopId: required(values, 'shop'),
          disputeId: required(values, 'id'),
          outcome: required(values, 'outcome'),
        });
        return { json: dispute, text: `Dispute ${dispute.id} ${dispute.status} (order ${dispute.order_id})` };
      }
      case 'review create': {
        const review = await support.createStorefrontReview(op, {
          shopId: required(values, 'shop'),
          orderId: required(values, 'order'),
          rating: required(values, 'rating'),
          productId: values.product,
          message: values.message,
        });
        return { json: review, text: `Review ${review.id} (${review.rating}/5) of order ${review.order_id}` };
      }
      case 'report create': {
        const report = await analyticsAdmin.createReportAsOperator(op, {
          shopId: required(values, 'shop'),
          name: required(values, 'name'),
          type: required(values, 'type'),
          format: values['report-format'],
        });
        return { json: report, text: `Report ${report.id} ${report.name} (${report.type}, ${report.format})` };
      }
      case 'reseller tier create': {
        const tier = await resellerAdmin.createTierAsOperator(op, {
          shopId: required(values, 'shop'),
          name: required(values, 'name'),
          discount: required(values, 'discount'),
          revenue: values.revenue,
          orders: values.orders,
          requiresBoth: values['requires-both'] === true,
          sortOrder: values['sort-order'],
          isDefault: values.default === true,
        });
        return {
          json: tier,
          // discount_percent is an exact JSON number (JSON.rawJSON): only JSON.stringify reads it.
          text: `Reseller tier ${tier.id} ${tier.name} (${JSON.stringify(tier.discount_percent)}%)${tier.is_default ? ', the program default' : ''}`,
        };
      }
      case 'owner create': {
        const owner = await createOwner(op, {
          shopId: required(values, 'shop'),
          email: required(values, 'email'),
          password: ownerPassword,
        });
        return { json: owner, text: `Created owner ${owner.id} (${owner.email}) of shop ${owner.shop_id}` };
      }
      case 'reseller accept':
      case 'reseller approve':
      case 'reseller reject': {
        const move = command.split(' ')[1] as resellerAdmin.ResellerMove;
        const reseller = await resellerAdmin.moveResellerAsOperator(
          op,
          { shopId: required(values, 'shop'), email: required(values, 'email') },
          move,
        );
        return { json: reseller, text: `Reseller ${reseller.id} ${reseller.email} ${reseller.status}` };
      }
      case 'reseller apply': {
        const reseller = await resellerAdmin.applyResellerAsOperator(op, {
          shopId: required(values, 'shop'),
          email: required(values, 'email'),
          note: values.note,
        });
        return { json: reseller, text: `Reseller ${reseller.id} ${reseller.email} ${reseller.status}` };
      }
      case 'ticket create': {
        const ticket = await support.createStorefrontTicket(op, {
          shopId: required(values, 'shop'),
          email: required(values, 'email'),
          subject: required(values, 'subject'),
          message: required(values, 'message'),
          orderId: values.order,
          priority: values.priority,
        });
        return { json: ticket, text: `Ticket ${ticket.id} ${ticket.status} from ${ticket.customer_email}` };
      }
      case 'email-marketing set': {
        const setting = await marketingAdmin.setEmailMarketingAsOperator(op, {
          shopId: required(values, 'shop'),
          provider: required(values, 'provider'),
          list: values.list,
          disabled: values.disabled,
          doubleOptIn: values['double-opt-in'],
          noSync: values['no-sync'],
          apiKey: emailMarketingKey,
        });
        return {
          json: setting,
          text: `Email marketing ${setting.provider} (${setting.id}) ${setting.enabled ? 'enabled' : 'disabled'}, list ${setting.list_id ?? '(none)'}`,
        };
      }
      case 'bot create': {
        const bot = await marketingAdmin.createBotAsOperator(op, {
          shopId: required(values, 'shop'),
          username: required(values, 'username'),
          name: values.name,
          token: botToken,
        });
        return {
          json: bot,
          text: `Bot ${bot.id} @${bot.username}${bot.has_token ? ' (token stored)' : ' (no token)'}`,
        };
      }
      case 'bot user add': {
        const user = await marketingAdmin.addBotUserAsOperator(op, {
          shopId: required(values, 'shop'),
          botId: required(values, 'bot'),
          telegramId: required(values, 'telegram-id'),
          username: values.username,
          off: values.off,
        });
        const off = Object.entries(user.notifications).filter(([, on]) => !on);
        return {
          json: user,
          text: `Bot user ${user.id} (Telegram ${user.telegram_user_id}) of ${user.bot_id}; off: ${off.map(([k]) => k).join(',') || '(none)'}`,
        };
      }
      case 'app create': {
        const app = await oauthAdmin.createApp(db, {
          name: required(values, 'name'),
          redirectUris: required(values, 'redirect-uris'),
          scopes: required(values, 'scopes'),
          isPublic: values.public === true,
          shopId: values.shop,
        });
        return {
          json: app,
          text:
            `App ${app.name} (${app.type})\nclient_id: ${app.client_id}` +
            (app.client_secret ? `\nclient_secret (shown only now): ${app.client_secret}` : ''),
        };
      }
      case 'app list': {
        const apps = await oauthAdmin.listApps(db);
        return {
          json: apps,
          text: apps.length
            ? table(
                ['client_id', 'name', 'type', 'revoked_at', 'scopes'],
                apps.map((a) => [a.client_id, a.name, a.type, a.revoked_at ?? '-', a.scopes.join(' ')]),
              )
            : '(no apps)',
        };
      }
      case 'app revoke': {
        const app = await oauthAdmin.revokeApp(op, required(values, 'id'));
        return { json: app, text: `App ${app.client_id} revoked (${app.grants_revoked} grants revoked)` };
      }
      case 'app grants': {
        const grants = await oauthAdmin.listGrants(db, required(values, 'shop'));
        return {
          json: grants,
          text: grants.length
            ? table(
                ['id', 'client_id', 'created_at', 'revoked_at', 'scopes'],
                grants.map((g) => [g.id, g.client_id, g.created_at, g.revoked_at ?? '-', g.scopes.join(' ')]),
              )
            : '(no grants)',
        };
      }
      case 'app uninstall': {
        const out = await oauthAdmin.uninstallApp(op, {
          shopId: required(values, 'shop'),
          clientId: required(values, 'id'),
        });
        return {
          json: out,
          text: `App ${out.client_id} uninstalled from ${out.shop_id} (${out.grants_revoked} grants revoked)`,
        };
      }
      default: {
        const demo = await admin.createDemo(op, { checkoutBaseUrl: ctx.config.checkoutBaseUrl });
        return {
          json: demo,
          text:
            `Demo shop ${demo.shop_id} (test twin ${demo.test_shop_id}); full-access keys, shown only now:\n` +
            `Live key (live mode; a live shop never offers the SANDBOX gateway): ${demo.live_key}\n` +
            `Test key (use this to walk the README: create an order, pay on the sandbox page, receive the webhook): ${demo.test_key}\n` +
            `Pending order in TEST mode, to pay on the SANDBOX page: ${demo.test_checkout_url}`,
        };
      }
    }
  } finally {
    await release();
  }
}

/** The CLI on argv (without node and the script): what it prints goes to io, its exit code is returned. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  const env = io.env ?? process.env;
  const stdin = io.stdin;
  try {
    const help = helpAsked(argv);
    if (help !== undefined) {
      io.stdout(json ? `${JSON.stringify({ usage: help })}\n` : help);
      return 0;
    }
    const config = loadConfig(env);
    const ctx: Context = {
      env,
      readStdin: typeof stdin === 'function' ? stdin : () => stdin ?? '',
      config,
      cwd: io.cwd ?? process.cwd(),
    };
    const given = io.database;
    const out = await run(argv, ctx, async () => {
      if (given) return { handle: given, release: async () => undefined };
      const handle = await openDatabase(config);
      return { handle, release: () => handle.close() };
    });
    io.stdout(`${json ? JSON.stringify(out.json) : out.text}\n`);
    return 0;
  } catch (err) {
    const known =
      err instanceof UsageError ||
      err instanceof admin.AdminError ||
      err instanceof FixtureError ||
      err instanceof DatabaseBusyError ||
      err instanceof ConfigError ||
      err instanceof ApiError;
    const message = known ? (err as Error).message : `Unexpected failure: ${(err as Error).message}`;
    if (json) io.stdout(`${JSON.stringify({ error: { message } })}\n`);
    else io.stderr(`${message}\n${err instanceof UsageError ? usageAfterError(argv) : ''}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

/**
 * What follows a usage error's message: the usage of the command typed, when it is one (short enough to read at
 * once); every command's when none was typed; else a hint to `help` (a typo needs no 90-line list to scroll past).
 */
function usageAfterError(argv: string[]): string {
  const command = commandWords(argv);
  if (command === '') return `\n${fullUsage()}`;
  const usage = commandUsage(command);
  return usage === undefined ? `${helpHint()}\n` : `\n${usage}`;
}
