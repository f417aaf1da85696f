// What the admin CLI says about itself: one entry per command, from which both `help` (every command) and
// `help <command>` / `<command> --help` (one) are printed, and the list of commands the CLI knows is read, so a
// command cannot be runnable yet missing from the help, or the other way round.

export const program = 'npm run -s cli --';

interface CommandUsage {
  /** The command's words, as typed: `key list`. */
  command: string;
  /** Its options, the first line after the command, any further ones indented under it. */
  options: string[];
  /** What it does; empty for a command whose name says it. */
  about: string[];
}

const entries: CommandUsage[] = [
  { command: 'shop create', options: ['--name NAME [--plan free|pro|business] [--currency USD]'], about: [] },
  { command: 'shop suspend', options: ['--id SHOP_ID'], about: [] },
  { command: 'shop activate', options: ['--id SHOP_ID'], about: [] },
  {
    command: 'key create',
    options: ['--shop SHOP_ID --scopes "orders.read products.read" [--name NAME] [--mode live|test]'],
    about: ["prints the key once; --mode test: a test key mdk_test_… of the shop's test mode"],
  },
  { command: 'key revoke', options: ['--id KEY_ID'], about: [] },
  {
    command: 'key list',
    options: ['--shop SHOP_ID [--mode live|test]'],
    about: [
      "the shop's keys, both modes unless --mode: mode, state (active|revoked|expired),",
      'name, prefix, times (ISO 8601), scopes; never the key itself',
    ],
  },
  { command: 'seed', options: ['--shop SHOP_ID --file fixtures.json'], about: [] },
  {
    command: 'emails list',
    options: ['[--shop SHOP_ID] [--mode live|test]'],
    about: [
      'the 100 newest queued, sent and recorded mails of the shop (without --shop: of',
      'every shop), both modes unless --mode; never their bodies',
    ],
  },
  {
    command: 'webhook create',
    options: ['--shop SHOP_ID --url URL [--events order:paid,order:created] [--description TEXT]'],
    about: ['(all events when --events is left out; prints the secret once)'],
  },
  {
    command: 'gateway set',
    options: ['--shop SHOP_ID --code CODE --kind HOSTED|CRYPTO|SESSION [--coins BTC,ETH] [--inactive]'],
    about: [],
  },
  { command: 'gateway list', options: ['--shop SHOP_ID'], about: [] },
  {
    command: 'gateway connect stripe',
    options: ['--shop SHOP_ID --mode live|test [--secrets-stdin]'],
    about: [
      'reads STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET from the environment (or a JSON object on stdin);',
      'a live shop takes sk_live_/rk_live_ keys only, a test shop sk_test_/rk_test_; checked with Stripe, then',
      "stored encrypted; prints the shop's webhook address",
    ],
  },
  {
    command: 'gateway connect paypal',
    options: ['--shop SHOP_ID --mode live|test [--secrets-stdin]'],
    about: [
      'reads PAYPAL_CLIENT_ID, PAYPAL_CLIENT_SECRET and PAYPAL_WEBHOOK_ID; a test shop connects at',
      "PayPal's sandbox, a live one at PayPal; the webhook PAYPAL_WEBHOOK_ID names must post to the shop's",
      'webhook address (a refusal prints it); prints that address',
    ],
  },
  {
    command: 'gateway connect btcpay',
    options: ['--shop SHOP_ID --mode live|test --url BTCPAY_SERVER_URL [--coins BTC-CHAIN,BTC-LN] [--secrets-stdin]'],
    about: ["reads BTCPAY_API_KEY, BTCPAY_STORE_ID and BTCPAY_WEBHOOK_SECRET; prints the shop's webhook address"],
  },
  { command: 'tax set', options: ['--shop SHOP_ID --rate 20 [--inclusive]'], about: [] },
  {
    command: 'coupon create',
    options: [
      '--shop SHOP_ID --code CODE --type PERCENTAGE|FIXED --value 10 [--currency USD]',
      '[--max-uses N] [--expires 2027-01-01T00:00:00Z] [--products PROD_ID,PROD_ID]',
    ],
    about: [],
  },
  {
    command: 'blacklist add',
    options: ['--shop SHOP_ID --type EMAIL|EMAIL_DOMAIN|IP|COUNTRY --value VALUE [--note TEXT]'],
    about: ['an entry POST /orders refuses buyers by (IP: an address or CIDR range)'],
  },
  {
    command: 'dynamic-secret',
    options: ['--shop SHOP_ID'],
    about: ["the secret signing the shop's dynamic-delivery requests"],
  },
  {
    command: 'order create',
    options: ['--shop SHOP_ID --email EMAIL --items PROD_ID[/VARIANT_ID][:QTY],… [--coupon CODE] [--name TITLE]'],
    about: ['a PENDING order, exactly as POST /orders; prints its checkout link'],
  },
  {
    command: 'order complete',
    options: ['--shop SHOP_ID --id ORDER_ID [--quiet]'],
    about: ['completes it through the pipeline (delivery, mail unless --quiet, events)'],
  },
  {
    command: 'affiliate apply',
    options: ['--shop SHOP_ID --email EMAIL [--code CODE] [--commission 10] [--note TEXT]'],
    about: ['an affiliate application of the customer (approve: POST /affiliates/applications/{id}/approve)'],
  },
  {
    command: 'dispute open',
    options: ['--shop SHOP_ID --order ORDER_ID [--reason FRAUDULENT|PRODUCT_NOT_RECEIVED|…|GENERAL]'],
    about: ['the SANDBOX gateway disputes an order it was paid for (the order becomes DISPUTED)'],
  },
  {
    command: 'dispute close',
    options: ['--shop SHOP_ID --id DISPUTE_ID --outcome WON|LOST|CLOSED'],
    about: ['the SANDBOX gateway decides it (LOST refunds what remains)'],
  },
  {
    command: 'review create',
    options: ['--shop SHOP_ID --order ORDER_ID --rating 1-5 [--product PROD_ID] [--message TEXT]'],
    about: ["a buyer's review of a COMPLETED order (as the storefront would write it)"],
  },
  {
    command: 'ticket create',
    options: [
      '--shop SHOP_ID --email EMAIL --subject TEXT --message TEXT [--order ORDER_ID] [--priority LOW|NORMAL|HIGH]',
    ],
    about: ['a support ticket of a customer of the shop'],
  },
  {
    command: 'reseller tier create',
    options: [
      '--shop SHOP_ID --name NAME --discount 10 [--revenue 1000.00] [--orders 10] [--requires-both]',
      '[--sort-order 1] [--default]',
    ],
    about: ["a reseller tier (read-only through the API); --default: the program's default tier"],
  },
  {
    command: 'report create',
    options: [
      '--shop SHOP_ID --name NAME --type SALES|PRODUCTS|CUSTOMERS|GATEWAYS|AFFILIATES [--report-format CSV|JSON]',
    ],
    about: ['an analytics report (generated through the API; not created by it)'],
  },
  {
    command: 'reseller accept',
    options: ['--shop SHOP_ID --email EMAIL'],
    about: ['the invited reseller accepts (INVITED -> ACTIVE, approved_at)'],
  },
  {
    command: 'reseller apply',
    options: ['--shop SHOP_ID --email EMAIL [--note TEXT]'],
    about: ['applies to the program: APPLIED (APPLICATION mode) or ACTIVE (OPEN mode)'],
  },
  {
    command: 'reseller approve',
    options: ['--shop SHOP_ID --email EMAIL'],
    about: ['the merchant approves an application (APPLIED -> ACTIVE, approved_at)'],
  },
  {
    command: 'reseller reject',
    options: ['--shop SHOP_ID --email EMAIL'],
    about: ['rejects an application or an invitation (APPLIED|INVITED -> REJECTED, rejected_at)'],
  },
  {
    command: 'email-marketing set',
    options: [
      '--shop SHOP_ID --provider MAILCHIMP|KLAVIYO|SENDGRID|BREVO [--list LIST_ID] [--disabled]',
      '[--double-opt-in] [--no-sync] [--api-key-stdin]',
    ],
    about: [
      "the shop's setting of that provider becomes exactly this (one per provider);",
      'the provider API key is read from stdin (--api-key-stdin) or from',
      'EMAIL_MARKETING_API_KEY, stored encrypted, never shown; without one the',
      'stored key stays. No key: new customers are not synced to the list',
    ],
  },
  {
    command: 'bot create',
    options: ['--shop SHOP_ID --username NAME_bot [--name TEXT] [--token-stdin]'],
    about: [
      'a Telegram bot of the shop (its id addresses PUT /telegram/bots/{botId}/…);',
      'its token from @BotFather is read from stdin (--token-stdin) or BOT_TOKEN,',
      'never from the command line; stored encrypted, never shown. Without a token',
      "the bot's users get no notifications",
    ],
  },
  {
    command: 'bot user add',
    options: ['--shop SHOP_ID --bot BOT_ID --telegram-id 123456789 [--username NAME] [--off order_paid,stock_low]'],
    about: ['a Telegram user of the bot; every notification switch on but those of --off'],
  },
  {
    command: 'app create',
    options: ['--name NAME --redirect-uris URI,URI --scopes "orders.read products.read" [--public] [--shop SHOP_ID]'],
    about: [
      'an OAuth app (client): prints its client id and, unless --public, its secret',
      'mcs_… once; --shop: only that shop may install it',
    ],
  },
  { command: 'app list', options: [], about: ['every OAuth app'] },
  {
    command: 'app revoke',
    options: ['--id CLIENT_ID'],
    about: ['the app stops working, and every token of it in every shop'],
  },
  { command: 'app grants', options: ['--shop SHOP_ID'], about: ["the shop's OAuth grants (installed apps)"] },
  {
    command: 'app uninstall',
    options: ['--shop SHOP_ID --id CLIENT_ID'],
    about: ["revokes the app's grants in the shop (its tokens stop working at once)"],
  },
  {
    command: 'owner create',
    options: ['--shop SHOP_ID --email EMAIL --password-stdin'],
    about: [
      'a shop owner account (signs in on the OAuth consent page); the password',
      '(12-256 characters) is read from stdin, or from OWNER_PASSWORD; --password',
      'PASSWORD works too but shows it to every user of the machine (ps): avoid it',
    ],
  },
  {
    command: 'clock advance',
    options: ['--shop SHOP_ID --seconds N'],
    about: ["moves the shop's test clock forward (test mode; what falls due runs in the worker)"],
  },
  {
    command: 'demo',
    options: [],
    about: ['a demo shop with sample products, its test mode, a live and a test full-access key (shown once)'],
  },
];

/** Every command the CLI runs, by its words. */
export const commands: readonly string[] = entries.map((e) => e.command);

const modeNote = [
  "Every command taking --shop takes --mode live|test (default live): test acts in the shop's test mode, whose data",
  'never meets live data (made on first use). key list and emails list show both modes unless --mode names one.',
];

/** Where an entry's about text starts when it fits beside the command. */
const aboutColumn = 38;

function entryLines({ command, options, about }: CommandUsage): string[] {
  const indent = ' '.repeat(command.length + 3);
  const lines = [`  ${[command, options[0]].filter(Boolean).join(' ')}`, ...options.slice(1).map((o) => indent + o)];
  const aboutLines = about.map((a) => ' '.repeat(aboutColumn) + a);
  const last = lines[lines.length - 1]!;
  if (aboutLines.length > 0 && lines.length === 1 && last.length < aboutColumn - 1)
    return [last.padEnd(aboutColumn) + about[0], ...aboutLines.slice(1)];
  return [...lines, ...aboutLines];
}

/** `help`: every command. */
export function fullUsage(): string {
  return [
    `Usage: ${program} <command> [options] [--json]`,
    '',
    ...entries.flatMap(entryLines),
    '',
    ...modeNote.map((l) => `  ${l}`),
    `  ${program} help <command> (or <command> --help) shows one command.`,
    '',
  ].join('\n');
}

/** `help <command>`: that command only; undefined for a command the CLI does not know. */
export function commandUsage(command: string): string | undefined {
  const entry = entries.find((e) => e.command === command);
  if (!entry) return undefined;
  const takesShop = entry.options.some((o) => o.includes('--shop'));
  return [
    `Usage: ${program} ${[entry.command, ...entry.options].join(' ')} [--json]`,
    ...(entry.about.length ? ['', ...entry.about.map((a) => `  ${a}`)] : []),
    ...(takesShop ? ['', ...modeNote.map((l) => `  ${l}`)] : []),
    '',
  ].join('\n');
}

/** The one-line hint a usage error ends with. */
export function helpHint(): string {
  return `Run "${program} help" to list the commands, "${program} help <command>" for one.`;
}
