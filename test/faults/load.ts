// HTTP load for the fault tests: concurrent clients that each send one request after another, bounded in count and
// time, and a record of every outcome (status, latency, network error, contract check) for the test to judge.
import { assertMatchesContract } from '../helpers/contract';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RequestSpec {
  /** What the test calls this kind of request (e.g. `read`, `duplicate`, `order`). */
  kind: string;
  method: 'get' | 'post';
  path: string;
  key: string;
  idempotencyKey?: string;
  body?: unknown;
}

export interface Outcome {
  kind: string;
  path: string;
  started: number;
  ended: number;
  status?: number;
  /** Network failure (connection reset, refused, timeout): what must never happen while the process lives. */
  error?: string;
  code?: string;
  retryAfter?: string | null;
  idempotencyKey?: string;
  idempotencyStatus?: string | null;
  /** `data.id` of a 2xx answer. */
  id?: string;
  /** `data` of a 2xx answer. */
  data?: Record<string, unknown>;
  /** Why the answer does not match openapi.yaml, if it does not. */
  contract?: string;
}

/** One request; a network failure or a time-out is recorded, never thrown. */
export async function send(base: string, spec: RequestSpec, timeoutMs = 10_000): Promise<Outcome> {
  const outcome: Outcome = {
    kind: spec.kind,
    path: spec.path,
    started: Date.now(),
    ended: 0,
    idempotencyKey: spec.idempotencyKey,
  };
  try {
    const res = await fetch(base + spec.path, {
      method: spec.method.toUpperCase(),
      headers: {
        authorization: `Bearer ${spec.key}`,
        ...(spec.idempotencyKey ? { 'idempotency-key': spec.idempotencyKey } : {}),
        ...(spec.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: spec.body !== undefined ? JSON.stringify(spec.body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    outcome.status = res.status;
    outcome.retryAfter = res.headers.get('retry-after');
    outcome.idempotencyStatus = res.headers.get('idempotency-status');
    const body = text
      ? (JSON.parse(text) as { data?: { id?: string } & Record<string, unknown>; error?: { code?: string } })
      : undefined;
    outcome.code = body?.error?.code;
    if (res.status >= 200 && res.status < 300) {
      outcome.id = body?.data?.id;
      outcome.data = body?.data;
    }
    try {
      assertMatchesContract(spec.method, spec.path.split('?')[0]!, {
        status: res.status,
        headers: Object.fromEntries(res.headers),
        body,
        text,
      });
    } catch (err) {
      outcome.contract = (err as Error).message;
    }
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    outcome.error = `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}`;
  }
  outcome.ended = Date.now();
  return outcome;
}

export interface LoadOptions {
  clients: number;
  /** The request client `client` sends as its `i`-th. */
  next: (client: number, i: number) => RequestSpec;
  /** Pause between two requests of one client. */
  pauseMs: number;
  /** Per client, whatever happens. */
  maxRequests: number;
  hardDeadline: number;
  /** Checked before each request: false stops the client (e.g. the server process died). */
  keepGoing?: () => boolean;
}

/** Concurrent clients sending until `stop()` (or their bounds); `done` resolves when every client has stopped. */
export function startLoad(base: string, options: LoadOptions) {
  const outcomes: Outcome[] = [];
  let stopped = false;
  const client = async (c: number) => {
    for (
      let i = 0;
      i < options.maxRequests && !stopped && Date.now() < options.hardDeadline && (options.keepGoing?.() ?? true);
      i++
    ) {
      outcomes.push(await send(base, options.next(c, i)));
      await sleep(options.pauseMs);
    }
  };
  const done = Promise.all(Array.from({ length: options.clients }, (_, c) => client(c))).then(() => undefined);
  return {
    outcomes,
    done,
    stop: async () => {
      stopped = true;
      await done;
    },
    /** The end time of the first 2xx of `kind` that started at or after `since`, or undefined after `withinMs`. */
    async firstSuccessAfter(kind: string, since: number, withinMs: number): Promise<number | undefined> {
      const until = Date.now() + withinMs;
      while (Date.now() < until && !stopped) {
        const ok = outcomes.find((o) => o.kind === kind && o.started >= since && o.status && o.status < 300);
        if (ok) return ok.ended;
        await sleep(25);
      }
      return undefined;
    },
  };
}

export const latency = (o: Outcome) => o.ended - o.started;

/** Percentile (0..100) of the latencies, in ms. */
export function percentile(outcomes: readonly Outcome[], p: number): number {
  const sorted = outcomes.map(latency).sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A status histogram: { '200': n, '503': m, error: k }. */
export function statusCounts(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.error ? 'error' : String(o.status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
