// The command line's part of OAuth (src/ops/cli.ts): registering apps (clients), listing them, revoking an app (every
// grant of it in every shop) and revoking an app's grants in one shop (uninstalling it). Apps are global rows: a
// third-party app is installed by any shop, unless `--shop` makes it private to one. A confidential app's secret
// `mcs_…` is printed once and stored as its SHA-256 (256 random bits: a password hash would add nothing).
import type { Operator } from './operator';
import type { Kysely } from 'kysely';
import type { Database, OAuthClientRow } from '../../db/tables';
import {
  allClients,
  clientById,
  grantsOfShop,
  insertClient,
  liveGrantsOfClient,
  revokeClientRow,
  revokeGrantFamily,
} from '../../db/queries/oauth';
import { shopById } from '../../db/queries/shops';
import { generateOAuthSecret } from '../auth/oauth-grants';
import { newId } from '../ids';
import { AdminError, operatorWrite, parseScopes } from './admin';

function clientView(row: OAuthClientRow) {
  return {
    client_id: row.id,
    name: row.name,
    type: row.is_public ? 'public' : 'confidential',
    redirect_uris: row.redirect_uris,
    scopes: row.scopes,
    shop_id: row.owner_shop_id,
    secret_prefix: row.secret_prefix,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

/**
 * A redirect URI: absolute, no fragment (RFC 6749 §3.1.2); https, or http only to a loopback host (native apps and
 * development, RFC 8252 §7.3); or a private-use scheme of a native app (`com.example.app:/callback`).
 */
export function parseRedirectUris(text: string): string[] {
  const uris = [
    ...new Set(
      text
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    ),
  ];
  if (uris.length === 0 || uris.length > 20) throw new AdminError('--redirect-uris must list 1 to 20 URIs');
  for (const uri of uris) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new AdminError(`--redirect-uris: "${uri}" is not an absolute URI`);
    }
    if (url.hash || uri.includes('#')) throw new AdminError(`--redirect-uris: "${uri}" must not have a fragment`);
    if (uri.length > 2048) throw new AdminError(`--redirect-uris: "${uri}" is longer than 2048 characters`);
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (url.protocol === 'http:' && !loopback) {
      throw new AdminError(`--redirect-uris: "${uri}" must use https (http only for localhost / 127.0.0.1 / [::1])`);
    }
    if (['javascript:', 'data:', 'file:', 'vbscript:'].includes(url.protocol)) {
      throw new AdminError(`--redirect-uris: "${uri}" has a forbidden scheme`);
    }
  }
  return uris;
}

/** `app create`: registers an app; a confidential app's secret is returned here only. */
export async function createApp(
  db: Kysely<Database>,
  input: { name: string; redirectUris: string; scopes: string; isPublic?: boolean; shopId?: string },
) {
  const name = input.name.trim();
  if (name.length < 1 || name.length > 100) throw new AdminError('--name must be 1 to 100 characters');
  const redirectUris = parseRedirectUris(input.redirectUris);
  const scopes = parseScopes(input.scopes);
  const shop = input.shopId !== undefined ? await shopById(db, input.shopId) : undefined;
  if (input.shopId !== undefined && !shop) throw new AdminError(`No shop with id ${input.shopId}`);
  // Private to the shop, in both its modes: named by its live id (`--shop … --mode test` names the test twin).
  const ownerShopId = shop ? (shop.livemode ? shop.id : shop.live_shop_id) : null;
  const secret = input.isPublic ? undefined : generateOAuthSecret('mcs');
  const row = await insertClient(db, {
    id: newId('app'),
    name,
    is_public: input.isPublic === true,
    secret_hash: secret?.hash ?? null,
    secret_prefix: secret?.displayPrefix ?? null,
    redirect_uris: redirectUris,
    scopes,
    owner_shop_id: ownerShopId,
  });
  return { ...clientView(row), client_secret: secret?.token ?? null };
}

export async function listApps(db: Kysely<Database>) {
  return (await allClients(db)).map(clientView);
}

/** `app revoke`: the app stops working everywhere: its client authentication and every grant in every shop. */
export async function revokeApp(op: Operator, clientId: string) {
  const { db } = op;
  const now = op.clock.now();
  const revoked = await db.transaction().execute(async (trx) => revokeClientRow(trx, clientId, now));
  if (!revoked) throw new AdminError(`No live app with client id ${clientId}`);
  // Listed once the revocation has committed: from then on the client cannot authenticate, so no grant can be
  // approved or exchanged after this list (one listed before would miss a code redeemed in between).
  const grants = await liveGrantsOfClient(db, clientId, undefined);
  // Each shop's grants in that shop's own unit of work, so each shop's audit trail records it.
  for (const g of grants) {
    await operatorWrite(op, g.shop_id, 'cli:app revoke', ({ trx }) =>
      revokeGrantFamily(trx, g.shop_id, g.id, 'app_revoked', now),
    );
  }
  return { ...clientView(revoked), grants_revoked: grants.length };
}

/** `app uninstall`: revokes every grant of the app in one shop (its tokens stop working on the next request). */
export async function uninstallApp(op: Operator, input: { shopId: string; clientId: string }) {
  const { db } = op;
  if (!(await shopById(db, input.shopId))) throw new AdminError(`No shop with id ${input.shopId}`);
  if (!(await clientById(db, input.clientId))) throw new AdminError(`No app with client id ${input.clientId}`);
  const now = op.clock.now();
  const count = await operatorWrite(op, input.shopId, 'cli:app uninstall', async ({ trx }) => {
    const grants = await liveGrantsOfClient(trx, input.clientId, input.shopId);
    for (const g of grants) await revokeGrantFamily(trx, input.shopId, g.id, 'revoked_by_operator', now);
    return grants.length;
  });
  return { shop_id: input.shopId, client_id: input.clientId, grants_revoked: count };
}

/** `app grants`: the shop's grants (installed apps), newest last. */
export async function listGrants(db: Kysely<Database>, shopId: string) {
  if (!(await shopById(db, shopId))) throw new AdminError(`No shop with id ${shopId}`);
  return (await grantsOfShop(db, shopId)).map((g) => ({
    id: g.id,
    client_id: g.client_id,
    scopes: g.scopes,
    granted_by: `${g.granted_by_kind}:${g.granted_by_id}`,
    created_at: g.created_at.toISOString(),
    revoked_at: g.revoked_at?.toISOString() ?? null,
    revoked_reason: g.revoked_reason,
  }));
}
