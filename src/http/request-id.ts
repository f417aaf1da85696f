// X-Request-Id: the caller's value when it is 1-128 visible ASCII characters, otherwise a fresh UUID.
// Set before anything else so that every response, error or not, carries it.
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const validRequestId = /^[\x21-\x7E]{1,128}$/;

export function requestIdFor(given: string | string[] | undefined): string {
  return typeof given === 'string' && validRequestId.test(given) ? given : randomUUID();
}

export const requestId: RequestHandler = (req, res, next) => {
  const id = requestIdFor(req.headers['x-request-id']);
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};
