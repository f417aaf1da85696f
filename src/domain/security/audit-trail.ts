// The audit trail as a cursor list: what `GET /security/audit-trail` filters and sorts by (newest first), and its
// page with the actors' names. The entries themselves are written by src/platform/audit.ts.
import * as auditEntries from '../../../db/queries/audit-entries';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import { auditEntryView } from '../../views/audit-entry';

export type AuditEntryView = ReturnType<typeof auditEntryView>;

/** `GET /security/audit-trail`: what can be filtered (documented on the AuditTrailFilters parameter). */
export const auditTrailList: ListSpec = {
  name: 'audit_trail',
  filters: {
    operation_id: { column: 'operation_id', type: 'string', description: 'the operationId of the request' },
    status: { column: 'status', type: 'integer', description: 'the HTTP status it was answered with' },
    credential_id: { column: 'credential_id', type: 'id', description: 'the credential that made it' },
    occurred_after: { column: 'occurred_at', type: 'timestamp', op: '>=', description: 'at or after' },
    occurred_before: { column: 'occurred_at', type: 'timestamp', op: '<', description: 'before' },
  },
  sorts: {
    occurred_at: { column: 'occurred_at', cast: 'timestamptz' },
  },
  defaultSort: '-occurred_at',
};

/** `GET /security/audit-trail`: a page of entries, newest first, each with its credential's name. */
export const auditTrailCursorList: CursorList<auditEntries.AuditEntryPageRow, AuditEntryView> = {
  spec: auditTrailList,
  page: auditEntries.auditEntriesPage,
  view: async (rows, { db, shopId }) => {
    const ids = [...new Set(rows.map((r) => r.credential_id).filter((id): id is string => id !== null))];
    const names = await auditEntries.credentialNames(db, shopId, ids);
    return rows.map((row) =>
      auditEntryView(row, row.credential_id === null ? null : (names.get(row.credential_id) ?? null)),
    );
  },
};
