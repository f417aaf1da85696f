// Plain fetch through a Prism proxy, recording every exchange: which operation it addressed, whether the answer came
// from the app (its X-Request-Id, and not one of Prism's own problem answers) and every violation Prism reported.
import type { PrismProxy } from './prism';

export interface Violation {
  /** `request.…` or `response.…`, as Prism locates it. */
  location: string;
  message: string;
  severity: string;
}

export interface Exchange {
  label: string;
  proxy: string;
  method: string;
  url: string;
  operationId: string | undefined;
  status: number;
  fromServer: boolean;
  /** Set when Prism answered itself (its problem type), e.g. a 422 for a request it found invalid. */
  prismAnswer?: string;
  violations: Violation[];
  /** Request violations of a deliberately invalid request sent through the proxy that does not validate requests. */
  expectedRequestViolations: Violation[];
}

export interface CallOptions {
  key?: string;
  /** A JSON body. */
  json?: unknown;
  /** An application/x-www-form-urlencoded body. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** The call is deliberately invalid: send it through the proxy that forwards without validating the request. */
  invalid?: boolean;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

const prismProblem = 'https://stoplight.io/prism/errors#';

export class ProxyClient {
  readonly exchanges: Exchange[] = [];
  private counter = 0;

  constructor(
    private readonly strict: PrismProxy,
    private readonly lenient: PrismProxy,
    private readonly operationOf: (method: string, url: string) => string | undefined,
    /** The server prefix of the contract's paths: Prism takes paths without it and adds it upstream. */
    private readonly basePath: string,
  ) {}

  async call(label: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const proxy = options.invalid ? this.lenient : this.strict;
    const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    if (method !== 'GET' && method !== 'DELETE' && !headers['Idempotency-Key'])
      headers['Idempotency-Key'] = `e2e-${process.pid}-${++this.counter}`;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    const res = await fetch(`${proxy.url}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }

    const reported = parseViolationHeader(res.headers.get('sl-violations'));
    const prismAnswer =
      typeof parsed?.type === 'string' && parsed.type.startsWith(prismProblem)
        ? parsed.type.slice(prismProblem.length)
        : undefined;
    // With --errors a response violation replaces the answer with Prism's VIOLATIONS problem, listing them.
    const fromProblem: Violation[] = Array.isArray(parsed?.validation)
      ? parsed.validation.map((v: any) => ({
          location: (v.location ?? []).join('.'),
          message: String(v.message),
          severity: String(v.severity),
        }))
      : [];
    const all = dedupe([...reported, ...fromProblem]);
    const expectedRequestViolations = options.invalid ? all.filter((v) => v.location.startsWith('request')) : [];
    const violations = options.invalid ? all.filter((v) => !v.location.startsWith('request')) : all;
    if (prismAnswer && violations.length === 0 && !options.invalid) {
      // Prism answered instead of forwarding (a request it found invalid, a path it does not know…): a violation too.
      violations.push({ location: 'request', message: `${prismAnswer}: ${parsed.detail ?? ''}`, severity: 'Error' });
    }
    this.exchanges.push({
      label,
      proxy: proxy.name,
      method,
      url: `${this.basePath}${path}`,
      operationId: this.operationOf(method, `${this.basePath}${path}`),
      status: res.status,
      fromServer: !prismAnswer && res.headers.has('x-request-id'),
      ...(prismAnswer ? { prismAnswer } : {}),
      violations,
      expectedRequestViolations,
    });
    return { status: res.status, headers: res.headers, body: parsed, text };
  }
}

function parseViolationHeader(value: string | null): Violation[] {
  if (!value) return [];
  try {
    const list = JSON.parse(value.replace(/^Too many violations! /, '')) as any[];
    return list.map((v) => ({
      location: (v.location ?? []).join('.'),
      message: String(v.message),
      severity: String(v.severity),
    }));
  } catch {
    return [{ location: 'response', message: `unreadable sl-violations header: ${value}`, severity: 'Error' }];
  }
}

function dedupe(list: Violation[]): Violation[] {
  const seen = new Set<string>();
  return list.filter((v) => {
    const key = `${v.location}|${v.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
