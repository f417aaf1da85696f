// Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is `whsec_<base64 key>`; each
// signature is `v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>`, several separated by spaces
// (during a rotation's grace period both the new and the previous secret sign). Receivers verify with any Standard
// Webhooks library; the tests use the `standardwebhooks` package, written by others, to keep this honest.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

/**
 * Each secret's key, imported once: createHmac with a Buffer imports the key again on every call (~40% of a
 * signature). Bounded as the delivery worker's cache of opened secrets is; the secrets are in this process anyway.
 */
const keys = new Map<string, KeyObject>();

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (!secret.startsWith(PREFIX)) throw new Error('not a webhook secret');
    if (keys.size >= 10_000) keys.clear();
    key = createSecretKey(Buffer.from(secret.slice(PREFIX.length), 'base64'));
    keys.set(secret, key);
  }
  return key;
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
