// The connect-time check of a PayPal connection: a fresh token proves the client id and secret at the mode's host,
// then the webhook named by webhook_id is read (GET /v1/notifications/webhooks/{webhook_id}). A webhook id PayPal
// does not know, or one that posts somewhere else, verifies nothing later: every webhook of the shop would fail
// verification (or never arrive) and only the reconciler would save its payments. So both are refused now.
//
// A webhook posting elsewhere is refused rather than warned about: a warning printed once by a CLI is easily missed,
// and the failure it announces is silent; the operator fixes it at once (the webhook's URL in the PayPal app, or
// PUBLIC_URL) and connects again.
import { ProviderError, type ConnectTarget, type ProviderAccount } from '../gateway-provider';
import { sameUrl } from '../same-url';
import { describeError, type PayPalClientOptions, PayPalClient } from './client';
import { asWebhook } from './wire';

/** The field as the operator gives it, spelled as connect names a missing field: environment, then stdin. */
const webhookField = 'PAYPAL_WEBHOOK_ID ("webhook_id" on stdin)';

export async function verifyConnection(
  account: ProviderAccount,
  target: ConnectTarget,
  options: PayPalClientOptions,
): Promise<void> {
  const client = new PayPalClient(account, options);
  await client.verify();
  const webhookId = account.credentials.webhook_id;
  if (!webhookId) throw new ProviderError('refused', `PayPal needs the ${webhookField} its webhooks are signed for`);
  const answer = await client.call({
    method: 'GET',
    path: `/v1/notifications/webhooks/${encodeURIComponent(webhookId)}`,
  });
  if (answer.status === 404) {
    // RESOURCE_NOT_FOUND / INVALID_RESOURCE_ID: a typo, another app's webhook, or the other mode's.
    throw new ProviderError(
      'refused',
      `PayPal has no webhook ${webhookId} for this app: check ${webhookField}, the ID of a webhook of the ` +
        `PayPal app the client id belongs to, in this mode (${describeError(answer.body)})`,
    );
  }
  if (answer.status !== 200) {
    throw new ProviderError(
      'refused',
      `PayPal would not show the webhook ${webhookId} (${describeError(answer.body)})`,
    );
  }
  const webhook = asWebhook(answer.body);
  if (!sameUrl(webhook.url, target.webhookUrl)) {
    throw new ProviderError(
      'refused',
      `PayPal's webhook ${webhookId}, named by ${webhookField}, posts to ${webhook.url}, not to this shop's ` +
        `${target.webhookUrl}: set that URL on the webhook in the PayPal app (or fix PUBLIC_URL), then connect again`,
    );
  }
}
