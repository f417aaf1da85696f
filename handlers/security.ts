import { auditTrailCursorList } from '../src/domain/audit-trail';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listAuditTrail: OperationHandler<'listAuditTrail'> = listHandler(auditTrailCursorList, () => undefined);
