import { auditTrailCursorList } from '../src/domain/security/audit-trail';
import { revokeOwnerSession as revokeSession, sessionTrail } from '../src/domain/security/session-trail';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listAuditTrail: OperationHandler<'listAuditTrail'> = listHandler(auditTrailCursorList, () => undefined);

export const getSessionTrail: OperationHandler<'getSessionTrail'> = async (ctx) => ({
  data: await sessionTrail(ctx.db, ctx.auth.shop.id, ctx.params.session_id),
});

export const revokeOwnerSession: OperationHandler<'revokeOwnerSession'> = async (ctx) => ({
  data: await revokeSession(ctx.write, ctx.params.session_id),
});
