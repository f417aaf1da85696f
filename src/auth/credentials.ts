// Credential strings: random, prefixed by kind, shown once and stored only as a SHA-256 hash.
// A hash (not a password KDF) is right here: the secret has 256 bits of entropy, so it cannot be guessed, and a
// fast hash lets every request look its credential up by an index.
import { createHash, randomBytes } from 'node:crypto';

export const credentialPrefixes = {
  api_key: 'mdk',
  oauth_access_token: 'mat',
} as const;

export type CredentialKind = keyof typeof credentialPrefixes;

/** base64url of 32 random bytes is 43 characters; a test-mode credential says so after its kind (`mdk_test_`). */
const credentialPattern = /^(mdk|mat)_(test_)?[A-Za-z0-9_-]{43}$/;

/** Which of a shop's two modes a credential acts in (src/domain/test-mode.ts). */
export type CredentialMode = 'live' | 'test';

export function generateCredential(
  kind: CredentialKind,
  mode: CredentialMode = 'live',
): { token: string; hash: string; displayPrefix: string } {
  const prefix = mode === 'test' ? `${credentialPrefixes[kind]}_test_` : `${credentialPrefixes[kind]}_`;
  let secret = randomBytes(32).toString('base64url');
  // A live key must never look like a test key at a glance (one draw in 2^30 would).
  while (mode === 'live' && secret.startsWith('test_')) secret = randomBytes(32).toString('base64url');
  const token = `${prefix}${secret}`;
  return { token, hash: hashCredential(token), displayPrefix: token.slice(0, prefix.length + 4) };
}

export function hashCredential(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Cheap shape check first, so garbage never costs a database round trip. */
export function looksLikeCredential(token: string): boolean {
  return credentialPattern.test(token);
}
