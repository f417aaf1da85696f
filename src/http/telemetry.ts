// A request's metrics and span (issue 28). The metrics middleware observes every request once its response is
// finished, by operation id and status class, and the idempotency outcome its response states; the span middleware is installed only while tracing is on, and makes
// the request's span the active one for everything the request does (its statements, the events it queues).
import { SpanKind, SpanStatusCode, context, trace, type Tracer } from '@opentelemetry/api';
import type { Request, RequestHandler, Response } from 'express';
import { countIdempotencyOutcome, observeRequest } from '../platform/metrics';
import { IDEMPOTENCY_STATUS_HEADER } from './idempotency';
import { incomingContext } from '../platform/tracing';

/** The operation a request is counted under: its operationId, "unmatched" under the API's root, "none" elsewhere. */
function operationOf(req: Request, res: Response): string {
  const id = res.locals.operationId as string | undefined;
  if (id) return id;
  return req.originalUrl.startsWith('/dev/v1') ? 'unmatched' : 'none';
}

export function requestMetrics(): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      observeRequest(operationOf(req, res), res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
      // What idempotency did is what the response told the client (every state-changing operation's carries it).
      const idempotency = res.getHeader(IDEMPOTENCY_STATUS_HEADER);
      if (idempotency !== undefined) countIdempotencyOutcome(String(idempotency));
    });
    next();
  };
}

/**
 * A server span per request, named by its operation id once routing found it ("GET" etc. until then, and for routes
 * outside the API: the method and the express route, never the raw path). A caller's valid `traceparent` is
 * continued.
 */
export function requestSpans(tracer: Tracer): RequestHandler {
  return (req, res, next) => {
    const span = tracer.startSpan(
      req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } },
      incomingContext(req.headers.traceparent),
    );
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const operation = res.locals.operationId as string | undefined;
      if (operation) span.updateName(operation);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.locals.route) span.setAttribute('http.route', res.locals.route as string);
      if (res.locals.requestId) span.setAttribute('request.id', res.locals.requestId as string);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!res.writableFinished) span.setAttribute('http.aborted', true);
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(trace.setSpan(context.active(), span), next);
  };
}
