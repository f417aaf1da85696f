// Operator actions behind the CLI (and the first-run demo): shops, API keys, fixtures.
import type { Kysely } from 'kysely';
import type { Database, Shop } from '../../db/tables';
import * as credentials from '../../db/queries/credentials';
import * as shops from '../../db/queries/shops';
import { generateCredential } from '../auth/credentials';
import { knownScopes, scopePattern } from '../auth/scopes';
import { loadConfig, plans, type Config, type Plan } from '../config';
import { ValidationError } from '../errors';
import { systemClock } from '../platform/clock';
import { loadSecretBox } from '../platform/secret-box';
import { createWebhook, webhookEventTypes, type WebhookDeps } from './webhooks';
import { newId } from '../ids';
import { parseFixtures, seedFixtures, type Fixtures } from './fixtures';

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

/** Creates an API key and returns it: the only time the key itself is available. */
export async function createApiKey(db: Kysely<Database>, input: { shopId: string; scopes: string[]; name?: string }) {
  if (!(await shops.shopById(db, input.shopId))) throw new AdminError(`No shop with id ${input.shopId}`);
  const { token, hash, displayPrefix } = generateCredential('api_key');
  const row = await credentials.insertCredential(db, {
    id: newId('key'),
    shop_id: input.shopId,
    kind: 'api_key',
    name: input.name ?? null,
    token_hash: hash,
    display_prefix: displayPrefix,
    scopes: input.scopes,
  });
  return { id: row.id, key: token, scopes: row.scopes, name: row.name };
}

export async function revokeApiKey(db: Kysely<Database>, id: string) {
  const row = await credentials.revokeCredential(db, id);
  if (!row) throw new AdminError(`No live key with id ${id}`);
  return { id: row.id, revoked_at: row.revoked_at?.toISOString() ?? null };
}

export async function listApiKeys(db: Kysely<Database>, shopId: string) {
  if (!(await shops.shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
  const rows = await credentials.credentialsOfShop(db, shopId);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    kind: r.kind,
    prefix: r.display_prefix,
    scopes: r.scopes,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  }));
}

export async function seedShop(db: Kysely<Database>, shopId: string, fixtures: unknown) {
  const parsed = parseFixtures(fixtures);
  const shop = await shops.shopById(db, shopId);
  if (!shop) throw new AdminError(`No shop with id ${shopId}`);
  const deps = parsed.webhooks?.length ? await webhookDeps(db, loadConfig()) : undefined;
  return db.transaction().execute((trx) => seedFixtures(trx, shop, parsed, deps));
}

async function webhookDeps(db: Kysely<Database>, config: Config): Promise<WebhookDeps> {
  return {
    clock: systemClock,
    secrets: await loadSecretBox(db, config.webhookSecretsKey),
    allowPrivateTargets: config.webhookAllowPrivateTargets,
  };
}

/** `webhook create`: an endpoint of the shop, with its signing secret (returned once). */
export async function createWebhookEndpoint(
  db: Kysely<Database>,
  config: Config,
  input: { shopId: string; url: string; events: string[]; description?: string },
) {
  const shop = await shops.shopById(db, input.shopId);
  if (!shop) throw new AdminError(`No shop with id ${input.shopId}`);
  const unknown = input.events.filter((e) => e !== '*' && !(webhookEventTypes as readonly string[]).includes(e));
  if (input.events.length === 0 || unknown.length > 0) {
    throw new AdminError(`--events must name events from: * ${webhookEventTypes.join(' ')}`);
  }
  const deps = await webhookDeps(db, config);
  try {
    return await db.transaction().execute((trx) => createWebhook(trx, shop.id, input, deps));
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
    { title: 'Design Assets Pack', type: 'FILE', price: '19.99', description: 'Icons and templates.' },
    { title: 'Setup Consultation', type: 'SERVICE', price: '120.00', description: 'A one-hour call.', stock: 10 },
  ],
};

/** A demo shop with sample products and a full-access key. */
export async function createDemo(db: Kysely<Database>) {
  return db.transaction().execute(async (trx) => {
    const shop = await createShop(trx, { name: 'Demo Shop', plan: 'business', currency: 'USD' });
    const seeded = await seedFixtures(trx, shop, demoFixtures);
    const key = await createApiKey(trx, { shopId: shop.id, scopes: ['*'], name: 'demo' });
    return { shop_id: shop.id, key: key.key, key_id: key.id, products: seeded.products };
  });
}
