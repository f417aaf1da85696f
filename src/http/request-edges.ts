// HTTP semantics the contract leaves to the server: HEAD on every GET route, and a request that names more than
// one caller.
import { ApiError, UnauthorizedError } from '../errors';

/**
 * RFC 9110: HEAD is GET without the body, and the contract lists only GET, so a HEAD request is routed, checked and
 * answered as the GET (same status and headers, Content-Length included); Node sends no body for HEAD.
 */
export function routingMethod(method: string): string {
  return method === 'HEAD' ? 'GET' : method;
}

/** A 405's `Allow` names HEAD wherever it names GET, since HEAD is served wherever GET is. */
export function withHeadAllowed(err: unknown): unknown {
  if (err instanceof ApiError && err.code === 'METHOD_NOT_ALLOWED') {
    const allow = err.headers.Allow?.split(', ');
    if (allow?.includes('GET') && !allow.includes('HEAD')) {
      allow.splice(allow.indexOf('GET') + 1, 0, 'HEAD');
      err.headers.Allow = allow.join(', ');
    }
  }
  return err;
}

/**
 * Refuses (401) a request carrying more than one Authorization header. Node keeps the first and silently drops
 * the others, while a proxy in front may have checked another one: the proxy and the API would disagree on who is
 * calling. Only rawHeaders still shows the duplicates.
 */
export function refuseRepeatedAuthorization(rawHeaders: readonly string[]): void {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization' && ++seen > 1) {
      throw new UnauthorizedError(
        'The request has more than one Authorization header; send exactly one credential.',
        'not_bearer',
      );
    }
  }
}
