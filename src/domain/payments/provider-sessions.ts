// Opening a session at a payment provider for an invoice: the provider is called outside any transaction, with an
// idempotency key derived from our attempt id (so the same attempt never opens two sessions), and the session
// carries that attempt id back in every webhook. The attempt row is what a webhook, the buyer's return and the
// reconciler settle (src/domain/payments/settlement.ts).
import { gatewayConnection } from '../../../db/queries/gateway-connections';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { ShopRow } from '../../../db/queries/shop-scope';
import { ApiError } from '../../errors';
import type { ProviderCode, ProviderSession, StartSessionInput } from '../../integrations/gateway-provider';
import { checkoutUrl } from '../../views/order';
import { providerApiError } from './provider-errors';
import type { Gateways } from '../../integrations/gateway-accounts';

/** The reconciler's first look at a session that no webhook has settled yet. */
export const FIRST_LOOK_MS = 3 * 60_000;

/** The shop's provider for this gateway code when the shop connected it; undefined for a gateway without one. */
export function providerCodeOf(gateways: Gateways, code: string): ProviderCode | undefined {
  return gateways.provider(code)?.code;
}

/**
 * The provider behind this gateway code when the shop has connected it; undefined otherwise (SANDBOX, a manual
 * gateway, or a code such as STRIPE the operator only declared with `gateway set` and never connected: it keeps the
 * kind it was declared with).
 */
export async function connectedProvider(
  gateways: Gateways,
  db: ReadDb,
  shop: { id: string; livemode: boolean },
  code: string,
): Promise<ProviderCode | undefined> {
  const provider = providerCodeOf(gateways, code);
  return provider && (await gatewayConnection(db, shop.id, provider)) ? provider : undefined;
}

/** Where the provider sends the buyer back: our return route reads the session and settles it at once. */
export function sessionReturnUrls(checkoutBaseUrl: string, uniqid: string, attemptId: string) {
  const page = checkoutUrl(checkoutBaseUrl, uniqid);
  return { successUrl: `${page}/return/${attemptId}`, cancelUrl: page };
}

/**
 * Opens the provider's session for one attempt. GATEWAY_NOT_AVAILABLE when the shop has not connected the provider,
 * GATEWAY_UNAVAILABLE / GATEWAY_REFUSED when the provider fails or says no.
 */
export async function openProviderSession(
  gateways: Gateways,
  db: ReadDb,
  shop: { id: string; livemode: boolean },
  code: ProviderCode,
  input: Omit<StartSessionInput, 'shopId'>,
): Promise<ProviderSession> {
  const account = await gateways.account(db, shop, code);
  if (!account)
    throw new ApiError(
      'GATEWAY_NOT_AVAILABLE',
      `The gateway ${code} is not connected for this shop's ${shop.livemode ? 'live' : 'test'} mode.`,
    );
  try {
    return await gateways.provider(code)!.startSession(account, { ...input, shopId: shop.id });
  } catch (err) {
    throw providerApiError(err, code);
  }
}

/** The attempt row of a session (opened or about to be): PENDING, first looked at by the reconciler in 3 minutes. */
export function sessionAttempt(input: {
  id: string;
  orderId: string;
  gateway: string;
  sessionId: string | null;
  amount: string;
  now: Date;
}): ShopRow<'payment_attempts'> {
  return {
    id: input.id,
    order_id: input.orderId,
    gateway: input.gateway,
    session_id: input.sessionId,
    status: 'PENDING',
    amount: input.amount,
    created_at: input.now,
    reconcile_at: new Date(input.now.getTime() + FIRST_LOOK_MS),
  };
}
