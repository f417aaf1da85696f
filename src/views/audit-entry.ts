// Audit entry rows -> the contract's AuditTrailEntry. The row holds nothing secret (src/platform/audit.ts); the
// path parameters and the error code stay internal, the contract shows the resource and the status.
import type { AuditEntryRow } from '../../db/tables';

const actorTypes: Readonly<Record<string, 'API_KEY' | 'OAUTH_TOKEN'>> = {
  api_key: 'API_KEY',
  oauth_access_token: 'OAUTH_TOKEN',
};

/** `credentialName`: the credential's name when it has one (the page looks the names up in one query). */
export function auditEntryView(row: AuditEntryRow, credentialName: string | null) {
  return {
    id: row.id,
    occurred_at: row.occurred_at.toISOString(),
    actor: {
      type: actorTypes[row.credential_kind] ?? ('SYSTEM' as const),
      id: row.credential_id,
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
    // Entries of dashboard sessions (signed-in users) are not written by this API.
    session_id: null,
  };
}
