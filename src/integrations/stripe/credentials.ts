// What `gateway connect stripe` asks for and how it is checked: the key's own prefix says its mode (Stripe's
// sk_live_/sk_test_, and rk_ for restricted keys), so a live key can never serve a test shop nor a test key a live one.
import { type ConnectField, type ConnectTarget, type ProviderAccount, ProviderError } from '../gateway-provider';
import { stripeClient, type StripeClientOptions, defaultMaxNetworkRetries } from './client';
import { asProviderError, undocumented } from './errors';
import { checkStripeWebhookEndpoint } from './webhook-endpoint-check';

export const stripeFields: readonly ConnectField[] = [
  { name: 'secret_key', env: 'STRIPE_SECRET_KEY', secret: true },
  { name: 'webhook_secret', env: 'STRIPE_WEBHOOK_SECRET', secret: true },
];

export function stripeModeMismatch(credentials: Readonly<Record<string, string>>, livemode: boolean): string | null {
  const key = credentials.secret_key ?? '';
  const keyMode = /^(?:sk|rk)_live_/.test(key) ? 'live' : /^(?:sk|rk)_test_/.test(key) ? 'test' : undefined;
  if (keyMode === undefined) {
    return 'secret_key must be a Stripe secret or restricted key (sk_live_, sk_test_, rk_live_ or rk_test_).';
  }
  if (livemode && keyMode === 'test')
    return 'A live shop needs a live Stripe key (sk_live_ or rk_live_), not a test key.';
  if (!livemode && keyMode === 'live')
    return 'A test shop needs a test Stripe key (sk_test_ or rk_test_), not a live key.';
  const webhookSecret = credentials.webhook_secret ?? '';
  if (!webhookSecret.startsWith('whsec_')) return "webhook_secret must be the endpoint's signing secret (whsec_...).";
  return null;
}

/**
 * GET /v1/balance: the cheapest authenticated read; it also proves the key's mode is what the shop expects. Then the
 * account's webhook endpoints: one must post this shop's events to `target` (webhook-endpoint-check.ts).
 */
export async function verifyStripeCredentials(
  account: ProviderAccount,
  target: ConnectTarget,
  options: StripeClientOptions,
): Promise<void> {
  const stripe = stripeClient(account, options);
  let balance;
  try {
    balance = await stripe.balance.retrieve(
      {},
      { maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries },
    );
  } catch (error) {
    throw asProviderError(error, 'checking the API key');
  }
  if (balance?.object !== 'balance' || typeof balance.livemode !== 'boolean') {
    throw undocumented('checking the API key', 'something that is not a balance');
  }
  if (balance.livemode !== account.livemode) {
    const keyMode = balance.livemode ? 'live' : 'test';
    throw new ProviderError(
      'refused',
      `Stripe says this is a ${keyMode}-mode key; the shop is not in ${keyMode} mode.`,
    );
  }
  await checkStripeWebhookEndpoint(stripe, target, options);
}
