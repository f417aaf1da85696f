// GET /security/session-trail/{session_id}: one consent-page session (`cs_…`) of the shop and everything done in it
// (sign-in, approvals, denials, sign-out), oldest first. Another shop's session, or an unknown id: 404.
import { auditEntriesOfSession, ownerEmails, ownerSessionById } from '../../db/queries/owner-sessions';
import type { ReadDb } from '../../db/queries/shop-scope';
import { NotFoundError } from '../errors';
import { auditEntryView } from '../views/audit-entry';

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
