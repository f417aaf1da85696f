// The handler of every operation that is in the contract but not built yet: an honest 501, never a fake success.
import { ApiError } from '../src/errors';
import type { OperationResult } from '../src/http/handler';

export async function notImplemented(): Promise<OperationResult> {
  throw new ApiError('NOT_IMPLEMENTED');
}
