// The account and capabilities views of the authenticated credential.
import type { AuthContext } from '../auth/authenticate';
import { fullAccessScope, resourceGroups } from '../auth/scopes';
import { unixSeconds } from '../views/time';
import { planFeatures } from './plans';

export function accountOf(auth: AuthContext) {
  const { shop } = auth;
  return { id: shop.id, name: shop.name, currency: shop.currency, created_at: unixSeconds(shop.created_at) };
}

export function capabilitiesOf(auth: AuthContext) {
  const { credential, shop } = auth;
  return {
    scopes: credential.scopes,
    full_access: credential.scopes.includes(fullAccessScope),
    readable_resources: resourceGroups(credential.scopes, 'read'),
    writable_resources: resourceGroups(credential.scopes, 'write'),
    enabledPaymentMethods: shop.enabled_payment_methods,
    features: planFeatures[shop.plan],
    credential: { id: credential.id, kind: credential.kind, name: credential.name, client: null },
    plan: shop.plan,
  };
}
