// GET /security/session-trail/{session_id}: one consent-page session (`cs_…`) of the shop and everything done in it
// (sign-in, approvals, denials, sign-out), oldest first; and POST /security/sessions/{session_id}/revoke, which
// ends one. Another shop's session, or an unknown id: 404.
import {
  auditEntriesOfSession,
  endOwnerSession,
  ownerEmails,
  ownerSessionById,
  ownerSessionByIdForUpdate,
} from '../../../db/queries/owner-sessions';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { NotFoundError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { auditEntryView } from '../../views/audit-entry';

/** The contract's maximum of entries in one trail (SessionTrail.entries.maxItems). */
const maxEntries = 1000;

export async function sessionTrail(db: ReadDb, shopId: string, sessionId: string) {
  const session = await ownerSessionById(db, shopId, sessionId);
  if (!session) throw new NotFoundError('SESSION_NOT_FOUND');
  const rows = await auditEntriesOfSession(db, shopId, sessionId, maxEntries);
  const owners = [...new Set(rows.map((r) => r.owner_id).filter((id): id is string => id !== null))];
  const emails = await ownerEmails(db, shopId, owners);
  return {
    session_id: session.id,
    started_at: session.started_at.toISOString(),
    ip: session.ip,
    user_agent: session.user_agent,
    entries: rows.map((row) => auditEntryView(row, row.owner_id === null ? null : (emails.get(row.owner_id) ?? null))),
  };
}

/**
 * POST /security/sessions/{session_id}/revoke: the session ends now (its cookie is refused from the next request,
 * src/auth/consent.ts). One already ended (signed out, revoked) or expired is answered as it is: revoking is a
 * state to reach, so a retry or a second revocation is no error. The request's audit entry names the session.
 */
export async function revokeOwnerSession(w: ShopWrite, sessionId: string) {
  const { trx, shopId, effects, now } = w;
  const session = await ownerSessionByIdForUpdate(trx, shopId, sessionId);
  if (!session) throw new NotFoundError('SESSION_NOT_FOUND');
  const live = session.ended_at === null && session.expires_at > now;
  if (live) await endOwnerSession(trx, shopId, sessionId, now);
  effects.audit({
    action: 'security.session_revoke',
    resourceType: 'owner_session',
    resourceId: sessionId,
    detail: { was_live: live },
  });
  return {
    session_id: session.id,
    started_at: session.started_at.toISOString(),
    expires_at: session.expires_at.toISOString(),
    ended_at: live ? now.toISOString() : (session.ended_at?.toISOString() ?? null),
    ip: session.ip,
    user_agent: session.user_agent,
  };
}
