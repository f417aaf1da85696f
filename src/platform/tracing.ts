// OpenTelemetry tracing (issue 28), off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. Off, nothing is registered: the
// API's no-op tracer stays in place, the request middleware is not installed, databases get Kysely's own dialect and
// no event stores a traceparent, so an untraced server does no tracing work at all. On, a TracerProvider batches
// spans to the OTLP/HTTP exporter (which reads the standard OTEL_EXPORTER_OTLP_* variables itself), and the
// async-hooks context manager carries the active span through each request's and each job's awaits.
import {
  context,
  propagation,
  trace,
  TraceFlags,
  type Context,
  type Link,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { traceQueries } from '../../db/query-spans';

export const TRACER_NAME = 'merchant-developer-api';

let tracer: Tracer | undefined;

/** The tracer while tracing is on; undefined while it is off (the callers then skip their spans entirely). */
export function activeTracer(): Tracer | undefined {
  return tracer;
}

export interface Tracing {
  tracer: Tracer;
  /** Exports what is buffered and unregisters everything (a process's shutdown; a test's end). */
  shutdown(): Promise<void>;
}

/**
 * Turns tracing on for this process: spans go to `processor` (tests: an in-memory exporter's), or by default to the
 * OTLP/HTTP endpoint of the environment in batches. Databases opened afterwards trace their statements.
 */
export function startTracing(options: { serviceName?: string; processor?: SpanProcessor } = {}): Tracing {
  if (tracer) throw new Error('tracing is already on');
  // The SDK is loaded only here: an untraced process neither loads nor keeps it (it is ~1 MB of the start's bundle).
  const { BatchSpanProcessor, TracerProvider } =
    require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { AsyncLocalStorageContextManager } =
    require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const processor =
    options.processor ??
    new BatchSpanProcessor({
      exporter: new (
        require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')
      ).OTLPTraceExporter(),
    });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? 'merchant-developer-api' }),
    spanProcessors: [processor],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  const current = provider.getTracer(TRACER_NAME);
  tracer = current;
  traceQueries(current);
  return {
    tracer: current,
    async shutdown() {
      tracer = undefined;
      traceQueries(undefined);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Tracing from the environment: on when OTEL_EXPORTER_OTLP_ENDPOINT is set (the entry points call it first). */
export function startTracingFromEnv(env: NodeJS.ProcessEnv, serviceName: string): Tracing | undefined {
  return env.OTEL_EXPORTER_OTLP_ENDPOINT ? startTracing({ serviceName }) : undefined;
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C traceparent of the span active now (what queued work stores to link back); null when there is none. */
export function currentTraceparent(): string | null {
  if (!tracer) return null;
  const span = trace.getSpan(context.active());
  if (!span) return null;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A stored or received traceparent as a span context; undefined when absent or malformed. */
export function parseTraceparent(value: string | null | undefined): SpanContext | undefined {
  const m = value ? traceparentPattern.exec(value) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The link from a job's span to the request that queued its work, when that request was traced. */
export function linkTo(traceparent: string | null | undefined): Link[] {
  const spanContext = parseTraceparent(traceparent);
  return spanContext ? [{ context: spanContext }] : [];
}

/** The context a request's span starts in: the caller's trace when it sent a valid traceparent, else a new one. */
export function incomingContext(traceparent: string | string[] | undefined): Context {
  const parent = parseTraceparent(typeof traceparent === 'string' ? traceparent : undefined);
  return parent ? trace.setSpanContext(context.active(), parent) : context.active();
}
