// What each plan includes. Features are gated by plan only; a shop's own settings (payment methods) live on the shop.
import type { Plan } from '../config';

export interface PlanFeatures {
  nativeCryptoCheckout: boolean;
  customDomains: boolean;
  resellers: boolean;
  themes: boolean;
}

export const planFeatures: Record<Plan, PlanFeatures> = {
  free: { nativeCryptoCheckout: false, customDomains: false, resellers: false, themes: true },
  pro: { nativeCryptoCheckout: true, customDomains: true, resellers: false, themes: true },
  business: { nativeCryptoCheckout: true, customDomains: true, resellers: true, themes: true },
};
