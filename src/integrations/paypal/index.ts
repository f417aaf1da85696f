// The PayPal adapter: Orders v2 checkout (capture on read), capture refunds, webhooks verified by PayPal's own
// verify-webhook-signature call. PayPal tells sandbox from live by host, so a connection's mode is checked by its
// credentials working at that mode's host (verifyCredentials, which also reads the webhook_id's webhook), never
// locally.
import type { GatewayProvider } from '../gateway-provider';
import type { PayPalClientOptions } from './client';
import { verifyConnection } from './connect-check';
import { readSession, startSession } from './orders';
import { refund } from './refunds';
import { translateEvent } from './webhook-translate';
import { verifyWebhook } from './webhook-verify';

export function createPayPalProvider(options: PayPalClientOptions = {}): GatewayProvider {
  return {
    code: 'PAYPAL',
    defaultApiBase: (livemode) => (livemode ? 'https://api-m.paypal.com' : 'https://api-m.sandbox.paypal.com'),
    fields: [
      { name: 'client_id', env: 'PAYPAL_CLIENT_ID', secret: false },
      { name: 'client_secret', env: 'PAYPAL_CLIENT_SECRET', secret: true },
      { name: 'webhook_id', env: 'PAYPAL_WEBHOOK_ID', secret: false },
    ],
    // A PayPal client id does not say its mode; a sandbox client gets 401 at the live host, which is the check.
    modeMismatch: () => null,
    verifyCredentials: (account, target) => verifyConnection(account, target, options),
    startSession: (account, input) => startSession(account, input, options),
    readSession: (account, sessionId) => readSession(account, sessionId, options),
    refund: (account, request) => refund(account, request, options),
    parseWebhook: async (account, rawBody, headers) =>
      translateEvent(await verifyWebhook(account, rawBody, headers, options)),
  };
}

export const paypalProvider: GatewayProvider = createPayPalProvider();
export type { PayPalClientOptions } from './client';
export { requestIdFor } from './request-ids';
