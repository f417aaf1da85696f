// Credential strings: random, prefixed by kind, shown once and stored only as a SHA-256 hash.
// A hash (not a password KDF) is right here: the secret has 256 bits of entropy, so it cannot be guessed, and a
// fast hash lets every request look its credential up by an index.
import { createHash, randomBytes } from 'node:crypto';

export const credentialPrefixes = {
  api_key: 'mdk',
  oauth_access_token: 'mat',
} as const;

export type CredentialKind = keyof typeof credentialPrefixes;

/** base64url of 32 random bytes is 43 characters. */
const credentialPattern = /^(mdk|mat)_[A-Za-z0-9_-]{43}$/;

export function generateCredential(kind: CredentialKind): { token: string; hash: string; displayPrefix: string } {
  const token = `${credentialPrefixes[kind]}_${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashCredential(token), displayPrefix: token.slice(0, 8) };
}

export function hashCredential(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Cheap shape check first, so garbage never costs a database round trip. */
export function looksLikeCredential(token: string): boolean {
  return credentialPattern.test(token);
}
