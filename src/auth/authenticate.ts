// Bearer credential -> credential + shop. Every failure is the same 401, so a caller learns nothing about which
// keys exist; a suspended shop is a 403 (the credential is valid, the shop may not act).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { liveCredentialWithShopByHash, touchCredential, type CredentialWithShop } from '../../db/queries/credentials';
import { hashCredential, looksLikeCredential } from './credentials';

/**
 * Who is calling: the credential (id, kind, scopes) and its shop (id, plan, status, currency), which is what every
 * request needs. It is read from the database on every request (no cache), so a revoked key or a suspended shop
 * takes effect on the next request; the account views load the rest (src/domain/account.ts).
 */
export type AuthContext = CredentialWithShop;

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match?.[1];
}

/** Returns the credential and its shop, or undefined when the header holds no live credential. */
export async function authenticate(
  db: Kysely<Database>,
  authorization: string | undefined,
  /** The injectable clock's time: an OAuth access token is refused from its expiry on. */
  now: Date = new Date(),
): Promise<AuthContext | undefined> {
  const token = bearerToken(authorization);
  if (!token || !looksLikeCredential(token)) return undefined;
  const found = await liveCredentialWithShopByHash(db, hashCredential(token), now);
  if (!found) return undefined;
  stampLastUsed(db, found.credential.id);
  return found;
}

// last_used_at is minute-grained: each process writes it at most once a minute per credential, so a busy key
// costs no extra database round trip per request.
const lastStamped = new Map<string, number>();
const stampIntervalMs = 60_000;

function stampLastUsed(db: Kysely<Database>, credentialId: string): void {
  const now = Date.now();
  if (now - (lastStamped.get(credentialId) ?? 0) < stampIntervalMs) return;
  if (lastStamped.size > 100_000) lastStamped.clear();
  lastStamped.set(credentialId, now);
  // Best effort: a failed last-used stamp must not fail the request.
  touchCredential(db, credentialId).catch(() => undefined);
}
