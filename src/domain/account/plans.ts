// What each plan includes. Features are gated by plan only; a shop's own settings (payment methods) live on the shop.
// Every flag here is reported by GET /me/capabilities and refused where it is false (requireFeature): a flag that
// gated nothing would tell integrators something untrue, so none is listed that the server does not enforce
// (test/store/capabilities-gates.test.ts checks each one against its behaviour).
import { plans, type Plan } from '../../config';
import { ApiError } from '../../errors';

export interface PlanFeatures {
  /** POST /payments with `crypto_gateway`: a checkout `url` that opens directly on a coin (src/domain/payments/payments.ts). */
  nativeCryptoCheckout: boolean;
  /** POST /store/domains/additional (src/domain/store/domains.ts). */
  customDomains: boolean;
}

export type PlanFeature = keyof PlanFeatures;

export const planFeatures: Record<Plan, PlanFeatures> = {
  free: { nativeCryptoCheckout: false, customDomains: false },
  pro: { nativeCryptoCheckout: true, customDomains: true },
  business: { nativeCryptoCheckout: true, customDomains: true },
};

/** How the refusal names each feature to a person. */
const featureNames: Record<PlanFeature, string> = {
  nativeCryptoCheckout: 'native crypto checkout (`crypto_gateway`)',
  customDomains: 'additional domains',
};

/** 400 FEATURE_NOT_AVAILABLE unless the plan has the feature; the message names the feature and the plans that do. */
export function requireFeature(plan: Plan, feature: PlanFeature): void {
  if (planFeatures[plan][feature]) return;
  const having = plans.filter((p) => planFeatures[p][feature]);
  throw new ApiError(
    'FEATURE_NOT_AVAILABLE',
    `The ${plan} plan does not include ${featureNames[feature]} (feature ${feature}); the ${having.join(' and ')} ` +
      `plan${having.length === 1 ? '' : 's'} do${having.length === 1 ? 'es' : ''}.`,
  );
}
