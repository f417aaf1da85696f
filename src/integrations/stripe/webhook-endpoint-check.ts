// The connect-time check of a Stripe connection's webhooks: one of the account's webhook endpoints must post to this
// shop's route, be enabled and send every event we act on (notices.ts). Without one, no payment, refund or dispute
// would ever be told to us, and only the reconciler's polling would complete orders, minutes late and never for
// refunds and disputes made in the Dashboard. So connect refuses, saying what to fix, as PayPal's check does
// (paypal/connect-check.ts). The signing secret cannot be checked here: Stripe shows it only in the Dashboard.
//
// Reading endpoints needs Read access to Webhook Endpoints: every secret key has it, a restricted key
// only when given it (its refusal says so).
import type Stripe from 'stripe';
import { type ConnectTarget, ProviderError } from '../gateway-provider';
import { sameUrl } from '../same-url';
import { defaultMaxNetworkRetries, stripeSdk, type StripeClientOptions } from './client';
import { asProviderError, undocumented } from './errors';
import { stripeEventTypes } from './notices';

const doing = 'listing the webhook endpoints';

/** The events of ours an endpoint does not send (none when it sends every event). */
function missingStripeEvents(enabledEvents: readonly string[]): string[] {
  if (enabledEvents.includes('*')) return [];
  return stripeEventTypes.filter((type) => !enabledEvents.includes(type));
}

async function endpointsPostingTo(
  stripe: Stripe,
  url: string,
  options: StripeClientOptions,
): Promise<Stripe.WebhookEndpoint[]> {
  const found: Stripe.WebhookEndpoint[] = [];
  try {
    const list = stripe.webhookEndpoints.list(
      { limit: 100 },
      { maxNetworkRetries: options.maxNetworkRetries ?? defaultMaxNetworkRetries },
    );
    for await (const endpoint of list) {
      if (endpoint?.object !== 'webhook_endpoint' || !Array.isArray(endpoint.enabled_events)) {
        throw undocumented(doing, 'something that is not a webhook endpoint');
      }
      if (sameUrl(endpoint.url, url)) found.push(endpoint);
    }
  } catch (error) {
    if (error instanceof stripeSdk().errors.StripePermissionError) {
      throw new ProviderError(
        'refused',
        'this restricted key cannot read webhook endpoints: give it Read access to Webhook Endpoints so connect can ' +
          "check that Stripe posts this shop's events to it, then connect again",
      );
    }
    throw asProviderError(error, doing);
  }
  return found;
}

export async function checkStripeWebhookEndpoint(
  stripe: Stripe,
  target: ConnectTarget,
  options: StripeClientOptions,
): Promise<void> {
  const url = target.webhookUrl;
  const endpoints = await endpointsPostingTo(stripe, url, options);
  const events = `${stripeEventTypes.join(', ')} (or all events)`;
  if (endpoints.length === 0) {
    throw new ProviderError(
      'refused',
      `this Stripe account has no webhook endpoint posting to ${url}: add one in the Dashboard (Developers, ` +
        `Webhooks) sending ${events}, give its signing secret as STRIPE_WEBHOOK_SECRET, then connect again`,
    );
  }
  const enabled = endpoints.filter((e) => e.status === 'enabled');
  if (enabled.length === 0) {
    throw new ProviderError(
      'refused',
      `Stripe's webhook endpoint ${endpoints[0]!.id} posting to ${url} is disabled: enable it in the Dashboard, ` +
        'then connect again',
    );
  }
  if (enabled.some((e) => missingStripeEvents(e.enabled_events).length === 0)) return;
  const endpoint = enabled[0]!;
  throw new ProviderError(
    'refused',
    `Stripe's webhook endpoint ${endpoint.id} posting to ${url} does not send ` +
      `${missingStripeEvents(endpoint.enabled_events).join(', ')}: add them (or all events) in the Dashboard, ` +
      'then connect again',
  );
}
