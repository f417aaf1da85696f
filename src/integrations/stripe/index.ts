// The Stripe adapter: Checkout Sessions for payments, Refunds, and Stripe-signed webhooks, through the official
// stripe-node client. `stripeProvider` is the one the server uses; tests make their own with a short timeout.
import {
  type GatewayProvider,
  type ProviderAccount,
  type ProviderNotice,
  ProviderError,
  WebhookRejected,
} from '../gateway-provider';
import type { StripeClientOptions } from './client';
import { stripeFields, stripeModeMismatch, verifyStripeCredentials } from './credentials';
import { stripeNotices } from './notices';
import { listStripeRefunds, stripeRefund } from './refund';
import { readStripeSession, startStripeSession } from './session';
import { verifyStripeEvent } from './webhook';

export type { StripeClientOptions } from './client';

export function createStripeProvider(options: StripeClientOptions = {}): GatewayProvider {
  return {
    code: 'STRIPE',
    defaultApiBase: () => 'https://api.stripe.com',
    fields: stripeFields,
    modeMismatch: stripeModeMismatch,
    verifyCredentials: (account, target) => verifyStripeCredentials(account, target, options),
    startSession: (account, input) => startStripeSession(account, input, options),
    readSession: (account, sessionId) => readStripeSession(account, sessionId, options),
    refund: (account, request) => stripeRefund(account, request, options),
    async parseWebhook(account: ProviderAccount, rawBody, headers): Promise<ProviderNotice[]> {
      const event = verifyStripeEvent(account, rawBody, headers);
      try {
        return await stripeNotices(event, (paymentIntent) => listStripeRefunds(account, paymentIntent, options));
      } catch (error) {
        // Stripe unreachable while completing a refund list: the delivery fails and Stripe sends it again.
        if (error instanceof ProviderError || error instanceof WebhookRejected) throw error;
        // A signed event whose object lacks what its type promises (an amount that is not a number...).
        throw new WebhookRejected(
          `Stripe webhook rejected: ${event.type} ${event.id} is not shaped as Stripe sends it.`,
        );
      }
    },
  };
}

export const stripeProvider: GatewayProvider = createStripeProvider();
