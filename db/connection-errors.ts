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

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && connectionErrorCodes.has(e.code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    e?.message ?? '',
  );
}
