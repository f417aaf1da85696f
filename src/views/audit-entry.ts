// Audit entry rows -> the contract's AuditTrailEntry. The row holds nothing secret (src/platform/audit.ts); the
// path parameters and the error code stay internal, the contract shows the resource and the status.
import type { AuditEntryRow } from '../../db/tables';

const actorTypes: Readonly<Record<string, 'API_KEY' | 'OAUTH_TOKEN' | 'USER'>> = {
  api_key: 'API_KEY',
  oauth_access_token: 'OAUTH_TOKEN',
  // A shop owner on the hosted consent page (src/auth/consent.ts): the entry names the owner and the session.
  owner: 'USER',
};

/** `credentialName`: the credential's name (or the owner's email) when it has one (looked up in one query). */
export function auditEntryView(row: AuditEntryRow, credentialName: string | null) {
  return {
    id: row.id,
    occurred_at: row.occurred_at.toISOString(),
    actor: {
      type: actorTypes[row.credential_kind] ?? ('SYSTEM' as const),
      id: row.credential_id ?? row.owner_id,
      name: credentialName,
    },
    operation_id: row.operation_id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    status: row.status,
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    // The consent page's sign-in session (`cs_…`) for a signed-in owner's actions; null for API requests.
    session_id: row.session_id,
  };
}
