// A PayPal webhook is verified by PayPal itself: we hand its transmission headers, our webhook id and the event to
// POST /v1/notifications/verify-webhook-signature, and only SUCCESS lets it in. PayPal signs
// `transmission_id|transmission_time|webhook_id|crc32(body)`, so a changed body, header or time fails there. PayPal
// documents no age limit on transmission_time and we add none: a replay of the exact bytes verifies, and carries
// the same event id, which the core's event dedupe absorbs.
import { ProviderError, WebhookRejected, type ProviderAccount } from '../gateway-provider';
import { type PayPalClientOptions, PayPalClient } from './client';
import { isRecord, type WebhookEvent } from './wire';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

function header(headers: Headers, name: string): string {
  const lower = name.toLowerCase();
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === lower)?.[1];
  const value = Array.isArray(entry) ? entry[0] : entry;
  if (typeof value !== 'string' || value.length === 0) throw new WebhookRejected(`missing ${name} header`);
  return value;
}

/** The body as PayPal's event envelope, or a rejection: nothing is sent to PayPal for what is not one. */
export function parseEvent(rawBody: Buffer): WebhookEvent {
  let event: unknown;
  try {
    event = JSON.parse(rawBody.toString('utf8')) as unknown;
  } catch {
    throw new WebhookRejected('body is not JSON');
  }
  if (
    !isRecord(event) ||
    typeof event.id !== 'string' ||
    typeof event.event_type !== 'string' ||
    !isRecord(event.resource)
  ) {
    throw new WebhookRejected('body is not a PayPal event');
  }
  return event as unknown as WebhookEvent;
}

export async function verifyWebhook(
  account: ProviderAccount,
  rawBody: Buffer,
  headers: Headers,
  options: PayPalClientOptions,
): Promise<WebhookEvent> {
  const webhookId = account.credentials.webhook_id;
  if (!webhookId) throw new WebhookRejected('this PayPal connection has no webhook_id to verify against');
  const verification = {
    auth_algo: header(headers, 'PAYPAL-AUTH-ALGO'),
    cert_url: header(headers, 'PAYPAL-CERT-URL'),
    transmission_id: header(headers, 'PAYPAL-TRANSMISSION-ID'),
    transmission_sig: header(headers, 'PAYPAL-TRANSMISSION-SIG'),
    transmission_time: header(headers, 'PAYPAL-TRANSMISSION-TIME'),
    webhook_id: webhookId,
  };
  const event = parseEvent(rawBody);
  // PayPal unreachable or refusing our token is ProviderError, not a rejection: the route answers 5xx and PayPal
  // sends the event again later.
  const answer = await new PayPalClient(account, options).call({
    method: 'POST',
    path: '/v1/notifications/verify-webhook-signature',
    body: { ...verification, webhook_event: event },
  });
  if (answer.status >= 400) {
    throw new WebhookRejected(`PayPal would not verify the webhook (HTTP ${answer.status})`);
  }
  const status = isRecord(answer.body) ? answer.body.verification_status : undefined;
  if (status === 'SUCCESS') return event;
  if (status === 'FAILURE') throw new WebhookRejected('PayPal says the webhook signature is not its own');
  throw new ProviderError('unavailable', 'PayPal answered the signature verification with no verification_status');
}
