// Whether an error means the database could not be reached (refused, reset, shut down, the pool gave up waiting),
// as opposed to a statement it refused: the API answers the first 503 (src/http/errors.ts), and a read that met it
// on a replica marks that replica down (src/platform/read-routing.ts).
const connectionErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

// PgBouncer's own refusals when it cannot lend a server connection (the primary restarting and its logins failing,
// no server free in time, its client limit reached) come as SQLSTATE 08P01 with these messages. PostgreSQL's own
// 08P01 (a real protocol violation, a bug of ours) does not match them and stays a 500.
const poolerUnavailable =
  /server_login_retry|cannot connect to server|query_wait_timeout|server_connect_timeout|server conn crashed|no more connections allowed|database shutting down|pgbouncer/i;

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && connectionErrorCodes.has(e.code)) return true;
  if (e?.code === '08P01' && poolerUnavailable.test(e.message ?? '')) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    e?.message ?? '',
  );
}
