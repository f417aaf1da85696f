// One JSON line per event on stdout. Credentials never reach it: the access log records the shop and credential
// ids, never headers or bodies. While tracing is on, every line written inside a span carries its trace and span
// ids, so a log line leads to its trace and back.
import { context, trace } from '@opentelemetry/api';
import winston from 'winston';

export type Logger = winston.Logger;

/** Adds the active span's ids; with tracing off there is no active span and the line is left as it is. */
const traceIds = winston.format((info) => {
  const span = trace.getSpan(context.active());
  if (span) {
    const { traceId, spanId } = span.spanContext();
    info.trace_id = traceId;
    info.span_id = spanId;
  }
  return info;
});

/** The format of every log line: time, trace ids when traced, JSON. */
export function logLineFormat(): winston.Logform.Format {
  return winston.format.combine(winston.format.timestamp(), traceIds(), winston.format.json());
}

export function createLogger(level: string): Logger {
  return winston.createLogger({
    level,
    silent: level === 'silent',
    format: logLineFormat(),
    transports: [new winston.transports.Console()],
  });
}
