// Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is `whsec_<base64 key>`; each
// signature is `v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>`, several separated by spaces
// (during a rotation's grace period both the new and the previous secret sign). Receivers verify with any Standard
// Webhooks library; the tests use the `standardwebhooks` package, written by others, to keep this honest.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('not a webhook secret');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', keyOf(s)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`)
    .join(' ');
}
