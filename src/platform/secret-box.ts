// Secrets the server must recover (webhook signing secrets: it signs with them) are stored encrypted, never in
// clear: AES-256-GCM with a random IV, the row's identity as authenticated data, so a ciphertext copied onto another
// row (or another shop's) does not decrypt. The key comes from WEBHOOK_SECRETS_KEY, or, when unset, is generated once
// and kept in the database (server_secrets), as the cursor key is.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { serverSecret } from '../../db/queries/server-secrets';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('a secret box key is 32 bytes');
  }

  /** iv | tag | ciphertext. `context` (e.g. `shop:endpoint`) must be given again to open it. */
  seal(plain: string, context: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Uint8Array, context: string): string {
    const buf = Buffer.from(sealed);
    const decipher = createDecipheriv('aes-256-gcm', this.key, buf.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(buf.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(buf.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** The box of this deployment: the configured key, or the one generated once and shared through the database. */
export async function loadSecretBox(db: Kysely<Database>, configuredKey: Buffer | undefined): Promise<SecretBox> {
  return new SecretBox(configuredKey ?? (await serverSecret(db, 'webhook-secrets')));
}

/** What a webhook endpoint's secret is sealed with: it opens only on that endpoint's row of that shop. */
export function endpointSecretContext(shopId: string, endpointId: string): string {
  return `webhook-endpoint:${shopId}:${endpointId}`;
}
