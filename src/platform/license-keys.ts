// License keys: how they are made, looked up and shown again.
//
// - Made from 125 bits of crypto.randomBytes, written in Crockford's base32 (no I, L, O, U) as five groups of five:
//   `7Q2KD-M4XNA-9PZRT-H3C8V-BW6YE`. A merchant may bring its own keys (createLicense `key`): any 1-256 visible
//   ASCII characters, matched exactly.
// - Looked up by a keyed hash: HMAC-SHA256 under a subkey of the server secret `license-keys` (server_secrets, made
//   once, shared by every process). The look-up is one unique index probe on (shop_id, key_hash); a copy of the
//   licenses table alone (a leaked export, a backup of that table) lets nobody test guesses offline. The secret
//   lives in the same database (as the cursor key does, and the webhook key when WEBHOOK_SECRETS_KEY is unset): a
//   copy of the whole database opens the keys, which must be recoverable to be shown again.
// - Shown again (on the license and on the order it was issued for) from `key_sealed`: AES-256-GCM under another
//   subkey, sealed to the row (shop and license id as authenticated data), so a sealed key copied onto another row
//   does not open.
import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { existingServerSecret, serverSecret } from '../../db/queries/server-secrets';
import { SecretBox } from './secret-box';

const SECRET_NAME = 'license-keys';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const GROUPS = 5;
const GROUP_LENGTH = 5;

/** The shape of a key this server accepts at all: 1-256 visible ASCII characters. Anything else is malformed. */
export const licenseKeyPattern = /^[\x21-\x7E]{1,256}$/;

/** A new key: 25 base32 digits (125 random bits) in five dash-separated groups. */
export function generateLicenseKey(): string {
  const bytes = randomBytes(16);
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let digits = '';
  for (let i = 0; i < GROUPS * GROUP_LENGTH; i++) {
    digits += CROCKFORD[Number(bits & 31n)];
    bits >>= 5n;
  }
  return digits.match(new RegExp(`.{${GROUP_LENGTH}}`, 'g'))!.join('-');
}

export class LicenseKeyring {
  /** A KeyObject, made once: createHmac with a Buffer key imports it again on every call (~40% of a hash). */
  private readonly hmacKey: KeyObject;
  private readonly box: SecretBox;

  constructor(secret: Buffer) {
    if (secret.length < 32) throw new Error('the license secret is at least 32 bytes');
    const derive = (label: string) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), label, 32));
    this.hmacKey = createSecretKey(derive('license-key-hash'));
    this.box = new SecretBox(derive('license-key-seal'));
  }

  /** What a key is looked up by (32 bytes). */
  hash(key: string): Buffer {
    return createHmac('sha256', this.hmacKey).update(key, 'utf8').digest();
  }

  seal(key: string, shopId: string, licenseId: string): Buffer {
    return this.box.seal(key, sealContext(shopId, licenseId));
  }

  open(sealed: Uint8Array, shopId: string, licenseId: string): string {
    return this.box.open(sealed, sealContext(shopId, licenseId));
  }
}

function sealContext(shopId: string, licenseId: string): string {
  return `license:${shopId}:${licenseId}`;
}

/**
 * The keyring of this database. Reads the secret first, so it works on a read-only connection once a license was
 * ever made (there is nothing to open before that); creates it on first use otherwise.
 */
export async function loadLicenseKeyring(db: Pick<Kysely<Database>, 'selectFrom'>): Promise<LicenseKeyring> {
  const existing = await existingServerSecret(db, SECRET_NAME);
  return new LicenseKeyring(existing ?? (await serverSecret(db as Kysely<Database>, SECRET_NAME)));
}

const cached = new WeakMap<object, LicenseKeyring>();

/**
 * The keyring, kept per owner (the API's services object: one per app and database), so the hot path (validation)
 * reads no secret from the database. Only a secret read back as already there is kept: one this call creates may
 * be in a transaction that rolls back.
 */
export async function cachedLicenseKeyring(
  owner: object,
  db: Pick<Kysely<Database>, 'selectFrom'>,
): Promise<LicenseKeyring> {
  const hit = cached.get(owner);
  if (hit) return hit;
  const existing = await existingServerSecret(db, SECRET_NAME);
  if (!existing) return new LicenseKeyring(await serverSecret(db as Kysely<Database>, SECRET_NAME));
  const keyring = new LicenseKeyring(existing);
  cached.set(owner, keyring);
  return keyring;
}
