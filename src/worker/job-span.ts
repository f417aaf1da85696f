// A worker job's span (tracing, issue 28): each item a job works on (a webhook attempt, a queued call) gets a span
// in a trace of its own, linked to the span of the request that queued it when that request stored its traceparent.
// A new trace rather than a child: a delivery retried for hours would otherwise stretch the request's trace with it.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Attributes } from '@opentelemetry/api';
import { activeTracer, linkTo } from '../platform/tracing';

export interface JobSpan {
  /** Runs `work` with this span active: the statements it sends are its children. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Ends the span with the item's outcome ("delivered", an error code…); an outcome other than "delivered"/"sent"/"ok" marks it failed. */
  end(outcome: string): void;
  /** Ends the span as failed by an exception. */
  fail(err: unknown): void;
}

const succeeded = new Set(['delivered', 'sent', 'ok']);

/** Undefined while tracing is off: the job does no tracing work at all. */
export function jobSpan(
  name: string,
  traceparent: string | null | undefined,
  attributes: Attributes,
): JobSpan | undefined {
  const tracer = activeTracer();
  if (!tracer) return undefined;
  const span = tracer.startSpan(
    name,
    { kind: SpanKind.CONSUMER, links: linkTo(traceparent), attributes },
    ROOT_CONTEXT,
  );
  return {
    run: (work) => context.with(trace.setSpan(ROOT_CONTEXT, span), work),
    end(outcome) {
      span.setAttribute('job.outcome', outcome);
      if (!succeeded.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
      span.end();
    },
    fail(err) {
      // The error's kind only: a message can quote what the job was sending.
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name ?? 'error' });
      span.end();
    },
  };
}
