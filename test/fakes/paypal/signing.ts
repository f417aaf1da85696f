// PayPal's webhook signature, done for real: PayPal signs `transmission_id|transmission_time|webhook_id|crc32(body)`
// with SHA256withRSA and publishes the certificate at PAYPAL-CERT-URL; verify-webhook-signature checks the same
// string. The fake holds a real RSA key pair (and a second one, to sign "with another key" for a tampered resend),
// so a changed body, header or webhook id fails verification as it would at PayPal.
import { createSign, createVerify, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const authAlgo = 'SHA256withRSA';

export interface SigningKeys {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export function newKeys(): SigningKeys {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

/** The string PayPal signs: the body enters as its CRC32 in decimal, as PayPal documents. */
export function signedString(transmissionId: string, time: string, webhookId: string, body: string): string {
  return `${transmissionId}|${time}|${webhookId}|${crc32(Buffer.from(body, 'utf8'))}`;
}

export function sign(keys: SigningKeys, message: string): string {
  return createSign('sha256').update(message).sign(keys.privateKey, 'base64');
}

export function verify(keys: SigningKeys, message: string, signature: string): boolean {
  try {
    return createVerify('sha256').update(message).verify(keys.publicKey, signature, 'base64');
  } catch {
    return false;
  }
}

export interface Transmission {
  transmissionId: string;
  time: string;
  signature: string;
}

/**
 * A signed transmission of `body`. PayPal's verify request holds transmission_id and transmission_sig to
 * `^(?!\d+$)\w+\S+`; base64 may begin with `+` or `/`, so a signature that would is made again under a new
 * transmission id (PayPal's own are hex, never so).
 */
export function transmit(keys: SigningKeys, webhookId: string, body: string, time: Date): Transmission {
  const iso = time.toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (;;) {
    const transmissionId = randomUUID();
    const signature = sign(keys, signedString(transmissionId, iso, webhookId, body));
    if (/^\w\S/.test(signature)) return { transmissionId, time: iso, signature };
  }
}
