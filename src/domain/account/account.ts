// The account and capabilities views of the authenticated credential. Authentication loads only what every
// request needs (src/auth/authenticate.ts); these two views read the rest of the account themselves.
import { accountOfCredential } from '../../../db/queries/credentials';
import { activeGateways } from '../../../db/queries/gateways';
import { clientOfCredential } from '../../../db/queries/oauth';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { AuthContext } from '../../auth/authenticate';
import { fullAccessScope, resourceGroups } from '../../auth/scopes';
import { UnauthorizedError } from '../../errors';
import { unixSeconds } from '../../views/time';
import { planFeatures } from './plans';

async function details(db: ReadDb, auth: AuthContext) {
  const found = await accountOfCredential(db, auth.shop.id, auth.credential.id);
  if (!found) throw new UnauthorizedError(); // deleted between authentication and now
  return found;
}

export async function accountOf(db: ReadDb, auth: AuthContext) {
  const { shop } = await details(db, auth);
  return {
    id: auth.shop.id,
    name: shop.name,
    currency: auth.shop.currency,
    livemode: auth.shop.livemode,
    live_account_id: shop.live_shop_id,
    created_at: unixSeconds(shop.created_at),
  };
}

export async function capabilitiesOf(db: ReadDb, auth: AuthContext) {
  const { credential, shop } = auth;
  const more = await details(db, auth);
  const gateways = await activeGateways(db, auth.shop.id);
  return {
    scopes: credential.scopes,
    full_access: credential.scopes.includes(fullAccessScope),
    readable_resources: resourceGroups(credential.scopes, 'read'),
    writable_resources: resourceGroups(credential.scopes, 'write'),
    enabledPaymentMethods: gateways.map((g) => g.code),
    features: planFeatures[shop.plan],
    credential: {
      id: credential.id,
      kind: credential.kind,
      name: more.credential.name,
      // An OAuth access token names the app (client) it was issued to.
      client:
        credential.kind === 'oauth_access_token'
          ? ((await clientOfCredential(db, auth.shop.id, credential.id)) ?? null)
          : null,
    },
    plan: shop.plan,
    livemode: shop.livemode,
  };
}
