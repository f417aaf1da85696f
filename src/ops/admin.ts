// Operator actions behind the CLI (and the first-run demo): shops, API keys, fixtures, gateways, tax, coupons.
import type { Operator } from './operator';
import Decimal from 'decimal.js';
import type { Kysely } from 'kysely';
import type { Database, GatewayKind, GatewayRow, OutboundEmailRow, Shop } from '../../db/tables';
import { allEmails, emailsOfShop } from '../../db/queries/outbound-emails';
import { couponByCode, insertCoupon } from '../../db/queries/coupons';
import { gatewaysOfShop, upsertGateway } from '../../db/queries/gateways';
import { productById } from '../../db/queries/products';
import * as credentials from '../../db/queries/credentials';
import * as shops from '../../db/queries/shops';
import { generateCredential, type CredentialMode } from '../auth/credentials';
import { credentialModes, maxAdvanceSeconds, moveTestClock, shopInMode, testClockView } from '../domain/test-mode';
import { fullAccessScope, knownScopes, scopePattern } from '../auth/scopes';
import { plans, type Config, type Plan } from '../config';
import { ValidationError } from '../errors';
import { parseAmount } from '../platform/money';
import { loadSecretBox } from '../platform/secret-box';
import { createWebhook, webhookEventTypes, type WebhookDeps } from '../domain/webhooks/webhooks';
import { assertGatewayOfferedIn } from '../domain/payments/gateways';
import { newId } from '../ids';
import { parseFixtures, seedFixtures, type Fixtures } from './fixtures/fixtures';

import { createOrder } from '../domain/orders/create-order';
import { addBlacklistEntries, blacklistEntryTypes, normaliseEntry } from '../domain/customers/blacklist';
import { blacklistEntryView } from '../views/blacklist-entry';
import type { BlacklistEntryType } from '../../db/tables';
import { UnitOfWork, writeWithin, type ShopWrite } from '../platform/unit-of-work';
import { defaultEffectSinks } from '../domain/effects';
import { completeInvoice } from '../domain/orders/completion';
import { shopDynamicSecret } from '../domain/orders/dynamic-delivery';

export class AdminError extends Error {}

export async function createShop(
  db: Kysely<Database>,
  input: { name: string; plan?: string; currency?: string },
): Promise<Shop> {
  const plan = (input.plan ?? 'free') as Plan;
  if (!plans.includes(plan)) throw new AdminError(`--plan must be one of ${plans.join(', ')}`);
  const currency = (input.currency ?? 'USD').toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) throw new AdminError('--currency must be a three-letter ISO 4217 code');
  if (!input.name.trim()) throw new AdminError('--name must not be empty');
  // A live shop: no SANDBOX gateway (test mode has it, src/domain/test-mode.ts).
  return shops.insertShop(db, { id: newId('shop'), name: input.name.trim(), plan, currency });
}

export async function setShopStatus(db: Kysely<Database>, id: string, status: Shop['status']): Promise<Shop> {
  const shop = await shops.updateShopStatus(db, id, status);
  if (!shop) throw new AdminError(`No shop with id ${id}`);
  return shop;
}

export function parseScopes(text: string): string[] {
  const scopes = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  if (scopes.length === 0) throw new AdminError('--scopes must name at least one scope (or "*")');
  for (const s of scopes) {
    if (!scopePattern.test(s)) throw new AdminError(`"${s}" is not a scope: use resource.read, resource.write or *`);
    if (s !== '*' && !knownScopes.includes(s))
      throw new AdminError(`Unknown scope "${s}". Known scopes: ${knownScopes.join(' ')}`);
  }
  return scopes;
}

/** The `--mode` of a command (live when absent). */
export function parseMode(text: string | undefined): CredentialMode {
  const mode = text ?? 'live';
  if (!(credentialModes as readonly string[]).includes(mode))
    throw new AdminError(`--mode must be one of ${credentialModes.join(', ')}`);
  return mode as CredentialMode;
}

/**
 * The shop a command acts in: `--shop` in `--mode live` (the default), or its test twin in `--mode test` (made on
 * first use). Every shop command resolves its shop here, so `--mode` means the same everywhere.
 */
export async function shopForMode(db: Kysely<Database>, shopId: string, mode: CredentialMode = 'live'): Promise<Shop> {
  const shop = await shopInMode(db, shopId, mode);
  if (!shop) {
    const exists = await shops.shopById(db, shopId);
    throw new AdminError(exists ? `Shop ${shopId} is a test shop: use --mode test` : `No shop with id ${shopId}`);
  }
  return shop;
}

/** `clock advance --seconds`: whole seconds, 0 to ten years (as `POST /me/test-clock/advance`). */
export function parseSeconds(text: string): number {
  if (!/^[0-9]{1,10}$/.test(text) || Number(text) > maxAdvanceSeconds)
    throw new AdminError(`--seconds must be a whole number of seconds from 0 to ${maxAdvanceSeconds}`);
  return Number(text);
}

/** `clock advance`: the test shop's clock moves forward, as `POST /me/test-clock/advance` moves it (same bound). */
export async function advanceClock(op: Operator, testShopId: string, seconds: number) {
  const shop = await moveTestClock(op.db, testShopId, seconds);
  if (!shop) throw new AdminError(`No test shop with id ${testShopId}`);
  return testClockView(op.clock.now(), Number(shop.clock_offset_ms));
}

/** Creates an API key and returns it: the only time the key itself is available. */
export async function createApiKey(
  db: Kysely<Database>,
  input: { shopId: string; scopes: string[]; name?: string; mode?: CredentialMode },
) {
  // Without a mode, the key acts in the mode of the shop named (a test twin's id: test).
  const mode = input.mode ?? ((await shops.shopById(db, input.shopId))?.livemode === false ? 'test' : 'live');
  const shop = await shopForMode(db, input.shopId, mode);
  const { token, hash, displayPrefix } = generateCredential('api_key', mode);
  const row = await credentials.insertCredential(db, {
    id: newId('key'),
    shop_id: shop.id,
    kind: 'api_key',
    name: input.name ?? null,
    token_hash: hash,
    display_prefix: displayPrefix,
    scopes: input.scopes,
  });
  return { id: row.id, key: token, scopes: row.scopes, name: row.name, mode, shop_id: shop.id };
}

export async function revokeApiKey(db: Kysely<Database>, id: string) {
  const row = await credentials.revokeCredential(db, id);
  // Not "live": that names a mode here, and a test key is revoked the same way.
  if (!row) throw new AdminError(`No active key with id ${id} (unknown, or already revoked)`);
  return { id: row.id, revoked_at: row.revoked_at?.toISOString() ?? null };
}

/** A shop's mode, as `--mode` names it. */
function modeOf(shop: Shop): CredentialMode {
  return shop.livemode ? 'live' : 'test';
}

/**
 * The shops a listing of `--shop` covers: the live shop and its test twin, or the one `mode` names. A listing never
 * makes a twin (a read writes nothing): a shop never used in test mode has nothing to list there. A twin's own id
 * covers the twin alone.
 */
export async function shopsToList(db: Kysely<Database>, shopId: string, mode?: CredentialMode): Promise<Shop[]> {
  const shop = await shopOrFail(db, shopId);
  if (!shop.livemode) {
    if (mode === 'live') throw new AdminError(`Shop ${shopId} is a test shop: use --mode test`);
    return [shop];
  }
  const twin = mode === 'live' ? undefined : await shops.existingTestTwinOf(db, shop.id);
  return [...(mode === 'test' ? [] : [shop]), ...(twin ? [twin] : [])];
}

/**
 * `key list`: the credentials of the shop's modes (live first, each oldest first), never the credential itself.
 * `mode` is the mode the key acts in (its shop's), `state` whether it works now: `revoked`, `expired` (an access
 * token past its expiry), or `active`.
 */
export async function listApiKeys(db: Kysely<Database>, shopId: string, options: { mode?: CredentialMode; now: Date }) {
  const keys = [];
  for (const shop of await shopsToList(db, shopId, options.mode)) {
    for (const r of await credentials.credentialsOfShop(db, shop.id)) {
      keys.push({
        id: r.id,
        shop_id: shop.id,
        mode: modeOf(shop),
        state: r.revoked_at ? 'revoked' : r.expires_at && r.expires_at <= options.now ? 'expired' : 'active',
        name: r.name,
        kind: r.kind,
        prefix: r.display_prefix,
        scopes: r.scopes,
        created_at: r.created_at.toISOString(),
        last_used_at: r.last_used_at?.toISOString() ?? null,
        revoked_at: r.revoked_at?.toISOString() ?? null,
      });
    }
  }
  return keys;
}

/**
 * `emails list`: the 100 newest messages of the shop's modes (without a shop: of every shop), each with its mode;
 * what was sent to whom, never the bodies (a delivery mail carries the goods, serials and keys, themselves).
 */
export async function listEmails(db: Kysely<Database>, options: { shopId?: string; mode?: CredentialMode }) {
  const limit = 100;
  let rows: (OutboundEmailRow & { livemode: boolean })[];
  if (options.shopId === undefined) {
    rows = await allEmails(db, { livemode: options.mode === undefined ? undefined : options.mode === 'live', limit });
  } else {
    rows = [];
    for (const shop of await shopsToList(db, options.shopId, options.mode))
      rows.push(...(await emailsOfShop(db, shop.id, limit)).map((r) => ({ ...r, livemode: shop.livemode })));
    // Newest first across the modes, as each mode's own list is ordered (created_at, then id).
    rows.sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    rows = rows.slice(0, limit);
  }
  return rows.map((r) => ({
    id: r.id,
    shop_id: r.shop_id,
    mode: r.livemode ? 'live' : 'test',
    to: r.to_address,
    template: r.template,
    subject: r.subject,
    status: r.status,
    attempts: r.attempts,
    last_error: r.last_error,
    created_at: r.created_at.toISOString(),
    sent_at: r.sent_at?.toISOString() ?? null,
  }));
}

export async function seedShop(op: Operator, shopId: string, fixtures: unknown) {
  const { db } = op;
  const parsed = parseFixtures(fixtures, op.clock.now());
  const shop = await shops.shopById(db, shopId);
  if (!shop) throw new AdminError(`No shop with id ${shopId}`);
  const deps = parsed.webhooks?.length ? await webhookDeps(db, op.config) : undefined;
  return db.transaction().execute((trx) => seedFixtures(trx, shop, parsed, op.clock, deps));
}

async function webhookDeps(db: Kysely<Database>, config: Config): Promise<WebhookDeps> {
  return {
    secrets: await loadSecretBox(db, config.webhookSecretsKey),
    allowPrivateTargets: config.webhookAllowPrivateTargets,
  };
}

/** `webhook create`: an endpoint of the shop, with its signing secret (returned once). */
export async function createWebhookEndpoint(
  op: Operator,
  input: { shopId: string; url: string; events: string[]; description?: string },
) {
  const { db } = op;
  const shop = await shops.shopById(db, input.shopId);
  if (!shop) throw new AdminError(`No shop with id ${input.shopId}`);
  const unknown = input.events.filter((e) => e !== '*' && !(webhookEventTypes as readonly string[]).includes(e));
  if (input.events.length === 0 || unknown.length > 0) {
    throw new AdminError(`--events must name events from: * ${webhookEventTypes.join(' ')}`);
  }
  const deps = await webhookDeps(db, op.config);
  try {
    return await operatorWrite(op, shop.id, 'cli:webhook create', (w) => createWebhook(w, input, deps));
  } catch (err) {
    if (err instanceof ValidationError) {
      throw new AdminError(`--url ${(err.details ?? []).map((d) => d.message).join('; ')}`);
    }
    throw err;
  }
}

export const demoFixtures: Fixtures = {
  products: [
    {
      title: 'Pro License',
      type: 'SERIALS',
      price: '49.00',
      description: 'A lifetime license key.',
      stock: 0,
      variants: [
        { title: 'Personal', price: '49.00' },
        { title: 'Team (5 seats)', price: '199.00' },
      ],
    },
    {
      title: 'Game Key',
      type: 'SERIALS',
      price: '14.99',
      description: 'A key for the demo game, delivered at once.',
      serials: Array.from({ length: 25 }, (_, i) => `DEMO-GAME-${String(i + 1).padStart(4, '0')}`),
    },
    { title: 'Design Assets Pack', type: 'FILE', price: '19.99', description: 'Icons and templates.' },
    { title: 'Setup Consultation', type: 'SERVICE', price: '120.00', description: 'A one-hour call.', stock: 10 },
  ],
};

/**
 * A demo shop with sample products and a live full-access key, and its test twin with the same products, a test
 * full-access key (`mdk_test_...`) and one pending order of the Game Key in TEST mode: a newcomer walks the README
 * with the test key and pays that order's checkout link with the SANDBOX gateway, which only test mode offers (a
 * live shop never does). The order waits a week instead of ORDER_TTL_MINUTES.
 */
export async function createDemo(op: Operator, options: { checkoutBaseUrl?: string } = {}) {
  const { db } = op;
  return db.transaction().execute(async (trx) => {
    const shop = await createShop(trx, { name: 'Demo Shop', plan: 'business', currency: 'USD' });
    const seeded = await seedFixtures(trx, shop, demoFixtures, op.clock);
    const liveKey = await createApiKey(trx, { shopId: shop.id, scopes: ['*'], name: 'demo', mode: 'live' });
    const testShop = await shopForMode(trx, shop.id, 'test');
    const testSeeded = await seedFixtures(trx, testShop, demoFixtures, op.clock);
    const testKey = await createApiKey(trx, { shopId: shop.id, scopes: ['*'], name: 'demo', mode: 'test' });
    const gameKey = testSeeded.products[demoFixtures.products!.findIndex((p) => p.title === 'Game Key')]!;
    // The order is a write of the test twin like any other: its events (order:created, customer:created) and audit
    // line are written through the default sinks in this transaction, as the command line's writes are.
    const origin = { shopId: testShop.id, credentialId: undefined, operationId: 'cli:demo', requestId: newId('req') };
    const order = await writeWithin(trx, origin, op.clock, defaultEffectSinks(op.clock), (w) =>
      createOrder(
        w,
        { email: 'buyer@example.com', title: 'Demo order', items: [{ product_id: gameKey, quantity: 1 }] },
        { checkoutBaseUrl: options.checkoutBaseUrl ?? '', orderTtlMinutes: 7 * 24 * 60 },
      ),
    );
    return {
      shop_id: shop.id,
      live_key: liveKey.key,
      live_key_id: liveKey.id,
      products: seeded.products,
      test_shop_id: testShop.id,
      test_key: testKey.key,
      test_key_id: testKey.id,
      test_products: testSeeded.products,
      /** The pending sample order, in test mode: its checkout link is paid on the SANDBOX page. */
      test_order_id: order.id,
      test_checkout_url: order.checkout_url,
    };
  });
}

async function shopOrFail(db: Kysely<Database>, shopId: string): Promise<Shop> {
  const shop = await shops.shopById(db, shopId);
  if (!shop) throw new AdminError(`No shop with id ${shopId}`);
  return shop;
}

const gatewayKinds = ['HOSTED', 'CRYPTO', 'SESSION'] as const;
const identifier = /^[A-Z][A-Z0-9_]{0,63}$/;

/** `gateway set`: adds the shop's gateway or replaces its kind, coins and active flag. */
export async function setGateway(
  db: Kysely<Database>,
  input: { shopId: string; code: string; kind?: string; coins?: string; inactive?: boolean },
) {
  const code = input.code.toUpperCase();
  if (!identifier.test(code)) throw new AdminError('CODE must be letters, digits and _ (e.g. SANDBOX, STRIPE)');
  const kind = input.kind?.toUpperCase() as GatewayKind | undefined;
  if (!kind || !gatewayKinds.includes(kind)) throw new AdminError(`--kind must be one of ${gatewayKinds.join(', ')}`);
  const coins = (input.coins ?? '')
    .split(',')
    .map((c) => c.trim().toUpperCase())
    .filter(Boolean);
  if (coins.some((c) => !identifier.test(c)))
    throw new AdminError('--coins must be identifiers such as BTC,USDT_TRC20');
  if (coins.length > 0 && kind !== 'CRYPTO') throw new AdminError('--coins is only for a CRYPTO gateway');
  const shop = await shopOrFail(db, input.shopId);
  try {
    assertGatewayOfferedIn(code, shop.livemode);
  } catch (err) {
    throw new AdminError(`${(err as Error).message.replace('a test key, mdk_test_...', '--mode test')}`);
  }
  const row = await db.transaction().execute((trx) =>
    upsertGateway(trx, input.shopId, {
      id: newId('gw'),
      code,
      kind,
      coins: [...new Set(coins)],
      active: !input.inactive,
    }),
  );
  return gatewayJson(row);
}

function gatewayJson(row: GatewayRow) {
  return { code: row.code, kind: row.kind, active: row.active, coins: row.coins };
}

/** `gateway list`: all of the shop's gateways, active or not. */
export async function listGateways(db: Kysely<Database>, shopId: string) {
  await shopOrFail(db, shopId);
  return (await gatewaysOfShop(db, shopId)).map(gatewayJson);
}

/** `tax set`: the shop's tax rate (percent, up to 4 decimals) and whether prices contain it. */
export async function setTax(db: Kysely<Database>, input: { shopId: string; rate: string; inclusive: boolean }) {
  if (!/^(100(\.0{1,4})?|[0-9]{1,2}(\.[0-9]{1,4})?)$/.test(input.rate)) {
    throw new AdminError('--rate must be a percentage from 0 to 100 with at most 4 decimals, e.g. 20 or 7.5');
  }
  const shop = await shops.updateShopTax(db, input.shopId, { rate: input.rate, inclusive: input.inclusive });
  if (!shop) throw new AdminError(`No shop with id ${input.shopId}`);
  return { shop_id: shop.id, rate: input.rate, inclusive: shop.tax_inclusive };
}

/** `coupon create`: a coupon of the shop, optionally limited to some of its products. */
export async function createCoupon(
  db: Kysely<Database>,
  input: {
    shopId: string;
    code: string;
    type?: string;
    value?: string;
    currency?: string;
    maxUses?: string;
    expires?: string;
    products?: string;
  },
) {
  const shop = await shopOrFail(db, input.shopId);
  const code = input.code.toLowerCase();
  if (!/^[a-z0-9_-]{1,64}$/.test(code)) throw new AdminError('the code must be 1 to 64 letters, digits, _ or -');
  const type = input.type?.toUpperCase();
  if (type !== 'PERCENTAGE' && type !== 'FIXED') throw new AdminError('--type must be PERCENTAGE or FIXED');
  if (type === 'PERCENTAGE' && input.currency) throw new AdminError('--currency is only for a FIXED coupon');
  const currency = type === 'FIXED' ? (input.currency ?? shop.currency).toUpperCase() : null;
  let value: string;
  try {
    value = parseAmount(input.value ?? '', 'value', {
      ...(currency ? { currency } : {}),
      exclusiveMin: true,
    });
  } catch (err) {
    if (err instanceof ValidationError) throw new AdminError(`--value ${err.details?.[0]?.message ?? 'is invalid'}`);
    throw err;
  }
  if (type === 'PERCENTAGE' && new Decimal(value).gt(100))
    throw new AdminError('--value of a PERCENTAGE coupon is at most 100');
  const maxUses = input.maxUses === undefined ? null : Number(input.maxUses);
  if (maxUses !== null && !(Number.isInteger(maxUses) && maxUses >= 1 && maxUses <= 2147483647)) {
    throw new AdminError('--max-uses must be a whole number of at least 1');
  }
  const expires = input.expires === undefined ? null : new Date(input.expires);
  if (expires !== null && Number.isNaN(expires.getTime())) throw new AdminError('--expires must be an ISO 8601 time');
  const productIds = (input.products ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const id of productIds) {
    if (!(await productById(db, shop.id, id))) throw new AdminError(`No product ${id} in shop ${shop.id}`);
  }
  if (await couponByCode(db, shop.id, code)) throw new AdminError(`The shop already has a coupon ${code}`);
  const row = await db
    .transaction()
    .execute((trx) =>
      insertCoupon(
        trx,
        shop.id,
        { id: newId('cpn'), code, type, value, currency, max_uses: maxUses, expires_at: expires },
        productIds,
      ),
    );
  return {
    id: row.id,
    code: row.code,
    type: row.type,
    value,
    currency: row.currency,
    max_uses: row.max_uses,
    expires_at: row.expires_at?.toISOString() ?? null,
    products: [...new Set(productIds)],
  };
}

/** `blacklist add`: an entry of the shop's blacklist (see src/domain/customers/blacklist.ts); an existing one is kept. */
export async function addBlacklistEntry(
  op: Operator,
  input: { shopId: string; type?: string; value?: string; note?: string },
) {
  const { db } = op;
  const shop = await shopOrFail(db, input.shopId);
  const type = (input.type ?? '').toUpperCase();
  if (!blacklistEntryTypes.includes(type as BlacklistEntryType))
    throw new AdminError(`--type must be one of ${blacklistEntryTypes.join(', ')}`);
  const normalised = normaliseEntry(type, input.value ?? '');
  if (typeof normalised === 'string') throw new AdminError(`--value ${normalised}`);
  if (input.note !== undefined && input.note.length > 1000)
    throw new AdminError('--note must be at most 1000 characters');
  const [row] = await operatorWrite(op, shop.id, 'cli:blacklist add', (w) =>
    addBlacklistEntries(w, [{ type, value: normalised.value, note: input.note ?? null }]),
  );
  if (!row) throw new AdminError(`The shop already has the ${type} entry ${normalised.value}`);
  return blacklistEntryView(row);
}

/** A write of the command line: one unit of work with every side effect (events, webhooks, mail, audit). */
export function operatorWrite<T>(
  op: Operator,
  shopId: string,
  operationId: string,
  work: (w: ShopWrite) => Promise<T>,
): Promise<T> {
  const config = op.config;
  return new UnitOfWork(op.db, {
    clock: op.clock,
    statementTimeoutMs: config.statementTimeoutMs,
    sinks: defaultEffectSinks(op.clock),
  }).write({ shopId, credentialId: undefined, operationId, requestId: newId('req') }, work);
}

/** `--items PROD_ID:2,PROD_ID[/VARIANT_ID]:1` -> order items. */
export function parseOrderItems(text: string): { product_id: string; variant_id?: string; quantity: number }[] {
  return text.split(',').map((part) => {
    const m = /^([^:/\s]+)(?:\/([^:\s]+))?(?::([1-9][0-9]{0,5}))?$/.exec(part.trim());
    if (!m) throw new AdminError(`--items: "${part}" is not PRODUCT_ID[/VARIANT_ID][:QUANTITY]`);
    return { product_id: m[1]!, ...(m[2] ? { variant_id: m[2] } : {}), quantity: Number(m[3] ?? 1) };
  });
}

/** `order create`: the same rules and effects as POST /orders (for demos and support). */
export async function placeOrder(
  op: Operator,
  input: { shopId: string; email: string; items: string; coupon?: string; title?: string },
) {
  const { db } = op;
  await shopOrFail(db, input.shopId);
  const config = op.config;
  const body = {
    email: input.email,
    items: parseOrderItems(input.items),
    ...(input.coupon ? { coupon_code: input.coupon } : {}),
    ...(input.title ? { title: input.title } : {}),
  };
  return operatorWrite(op, input.shopId, 'cli:order create', (w) =>
    createOrder(w, body, { checkoutBaseUrl: config.checkoutBaseUrl, orderTtlMinutes: config.orderTtlMinutes }),
  );
}

/** `order complete`: runs the completion pipeline, as POST /orders/{id}/complete does. */
export async function completeOrderAsOperator(
  op: Operator,
  input: { shopId: string; orderId: string; suppressEmails?: boolean },
) {
  const { db } = op;
  await shopOrFail(db, input.shopId);
  const config = op.config;
  return operatorWrite(op, input.shopId, 'cli:order complete', (w) =>
    completeInvoice(
      w,
      input.orderId,
      { suppressEmails: input.suppressEmails === true },
      {
        checkoutBaseUrl: config.checkoutBaseUrl,
        // The operator at the console may read everything, the license keys the order issued too.
        readerScopes: [fullAccessScope],
      },
    ),
  );
}

/** `npm run cli -- dynamic-secret --shop SHOP_ID`: the shop's secret, created if it has none yet. */
export async function revealDynamicSecret(op: Operator, shopId: string): Promise<{ shop_id: string; secret: string }> {
  const { db } = op;
  if (!(await shops.shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
  const secret = await shopDynamicSecret(
    db,
    await loadSecretBox(db, op.config.webhookSecretsKey),
    shopId,
    op.clock.now(),
  );
  return { shop_id: shopId, secret };
}
