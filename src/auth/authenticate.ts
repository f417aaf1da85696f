// Bearer credential -> credential + shop. A request without a live credential is told which of three cases it is
// (none sent, not a Bearer credential, or an unknown, revoked, expired or malformed token), never which keys exist:
// every well-formed token takes the same single look-up whatever becomes of it. A suspended shop is a 403 (the
// credential is valid, the shop may not act).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { liveCredentialWithShopByHash, touchCredential, type CredentialWithShop } from '../../db/queries/credentials';
import type { CredentialProblem } from '../errors';
import { hashCredential, looksLikeCredential } from './credentials';

/**
 * Who is calling: the credential (id, kind, scopes) and its shop (id, plan, status, currency), which is what every
 * request needs. It is read from the database on every request (no cache), so a revoked key or a suspended shop
 * takes effect on the next request; the account views load the rest (src/domain/account/account.ts).
 */
export type AuthContext = CredentialWithShop;

// RFC 6750 §2.1: "Bearer" 1*SP b64token. Anything else after the scheme is not a bearer credential at all.
const bearerCredential = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  return bearerCredential.exec(header)?.[1];
}

/** Returns the credential and its shop, or why the header holds no live credential. */
export async function authenticate(
  db: Kysely<Database>,
  authorization: string | undefined,
  /** The injectable clock's time: an OAuth access token is refused from its expiry on. */
  now: Date,
): Promise<AuthContext | CredentialProblem> {
  if (authorization === undefined || authorization.trim() === '') return 'missing';
  const token = bearerToken(authorization);
  if (token === undefined) return 'not_bearer';
  // Not shaped like any credential this server issues: no such key can exist, so no look-up can tell anything.
  if (!looksLikeCredential(token)) return 'invalid_token';
  const found = await liveCredentialWithShopByHash(db, hashCredential(token), now);
  if (!found) return 'invalid_token';
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
