// The one client for every call the product makes to an address a merchant chose (webhook deliveries,
// dynamic-delivery callbacks). Such an address is attacker-controlled input: without a check, a merchant could make
// our servers call the cloud metadata service or anything else inside our network (SSRF). The check is made on the
// address actually connected to, not on the name, so a name that resolves differently a second time (DNS
// rebinding) gains nothing.
import * as dns from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import ipaddr from 'ipaddr.js';

export interface OutboundRequest {
  url: string;
  method?: 'POST' | 'PUT';
  headers: Record<string, string>;
  body: string;
}

export interface OutboundOptions {
  /**
   * Default false. When false, targets resolving to loopback, private (RFC 1918, fc00::/7), link-local
   * (169.254/16 incl. the 169.254.169.254 metadata service, fe80::/10), unspecified, CGNAT 100.64/10, multicast,
   * broadcast, reserved, IPv4-mapped IPv6 of those, 0.0.0.0/8 and every other non-public range are refused.
   */
  allowPrivateTargets: boolean;
  /** DNS look-up plus TCP connect; default 5000. */
  connectTimeoutMs?: number;
  /** Everything: connect, send, response headers and the kept part of the body; default 10000. */
  timeoutMs?: number;
  /** How much of the response body is kept; the rest is never read (the socket is destroyed). Default 4096. */
  maxBodyBytes?: number;
  /** Injectable for tests (a name that resolves to 127.0.0.1). */
  lookup?: typeof dns.lookup;
}

/** Why no answer came back: the target's fault or the network's, never ours (see classifyNetworkError). */
export type NetworkErrorCode =
  | 'TIMEOUT'
  | 'CONNECT_TIMEOUT'
  | 'CONNECTION_REFUSED'
  | 'CONNECTION_RESET'
  | 'HOST_UNREACHABLE'
  | 'DNS_FAILURE'
  | 'TLS_ERROR'
  | 'INVALID_RESPONSE'
  | 'NETWORK_ERROR';

/** Why nothing was sent: a private address while those are not allowed, or a target no call can be made to. */
export type RefusalCode = 'PRIVATE_TARGET_REFUSED' | 'INVALID_TARGET';

export type OutboundOutcome =
  /** `body`: the kept part of the answer, with any NUL as U+FFFD (see below). */
  | { kind: 'response'; status: number; body: string; durationMs: number }
  | { kind: 'refused'; code: RefusalCode; reason: string; durationMs: number }
  | { kind: 'error'; code: NetworkErrorCode; message: string; durationMs: number };

const USER_AGENT = 'MerchantDeveloperAPI-Webhooks/1.0';

// Only global unicast IPv6 (2000::/3) is routed on the internet; ipaddr.js calls e.g. ::2 or 4000::1 'unicast' too.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  // process() turns ::ffff:a.b.c.d into a.b.c.d, so a mapped loopback is judged as the loopback it reaches.
  const address = ipaddr.process(ip);
  if (address.range() !== 'unicast') return false;
  return address instanceof ipaddr.IPv4 || address.match(GLOBAL_UNICAST_V6);
}

const RANGE_NAMES: Record<string, string> = {
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  multicast: 'a multicast',
  linkLocal: 'a link-local',
  loopback: 'a loopback',
  carrierGradeNat: 'a carrier-grade NAT',
  private: 'a private',
  uniqueLocal: 'a private (unique local)',
  reserved: 'a reserved',
};

function rangeName(ip: string): string {
  const range = ipaddr.isValid(ip) ? ipaddr.process(ip).range() : 'invalid';
  return `${RANGE_NAMES[range] ?? 'a non-public'} address`;
}

function notPublicReason(ip: string): string {
  return `${ip} is ${rangeName(ip)}`;
}

class RefusedTarget extends Error {}

/** Where a call went, for messages: the host and port only, never the path or query, which may carry a token. */
export interface CallTarget {
  host: string;
  port: string;
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

/** The reason in an OpenSSL error text ("…:SSL routines:<function>:wrong version number:<file>:<line>:"). */
function opensslReason(message: string): string | undefined {
  return /error:[0-9A-F]+:[^:]*:[^:]*:([^:]+):/.exec(message)?.[1];
}

/** The first line of a message, without Node's advice after a semicolon, bounded. */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').split(';')[0]!.trim().slice(0, 200);
}

/**
 * The one mapping of a Node (or undici) network error to a code and a message fit for a merchant's delivery log:
 * what happened, to which host and port, and the system's own error code in parentheses. Never the URL's path or
 * query, a header or the body (the message goes to the merchant and the logs; a webhook's signature must not).
 */
export function classifyNetworkError(
  err: NodeJS.ErrnoException & { reason?: string },
  target: CallTarget,
): { code: NetworkErrorCode; message: string } {
  // With several addresses Node tries each (happy eyeballs) and reports an AggregateError of their failures.
  const inner = (err as { errors?: NodeJS.ErrnoException[] }).errors?.[0];
  const e = (err.code ? err : (inner ?? err)) as NodeJS.ErrnoException & {
    address?: string;
    port?: number;
    reason?: string;
  };
  // DOMException (AbortError, TimeoutError) has a numeric code.
  const code = typeof e.code === 'string' ? e.code : '';
  const where = e.address ? (e.port ? `${e.address}:${e.port}` : e.address) : `${target.host}:${target.port}`;
  const tag = code ? ` (${code})` : '';
  if (code === 'ECONNREFUSED') return { code: 'CONNECTION_REFUSED', message: `connection refused by ${where}${tag}` };
  if (e.syscall === 'getaddrinfo' || e.syscall?.startsWith('query') || code === 'ENOTFOUND' || code === 'ENODATA') {
    const why = code === 'EAI_AGAIN' ? 'could not be resolved now (temporary DNS failure)' : 'does not resolve';
    return { code: 'DNS_FAILURE', message: `the name ${target.host} ${why}${tag}` };
  }
  if (code.startsWith('EAI_')) {
    return { code: 'DNS_FAILURE', message: `the name ${target.host} could not be resolved${tag}` };
  }
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|ERR_OSSL_)|SELF_SIGNED|^EPROTO$|HOSTNAME_MISMATCH/.test(code)) {
    const reason = e.reason ?? opensslReason(e.message) ?? firstLine(e.message);
    return { code: 'TLS_ERROR', message: `TLS with ${target.host}:${target.port} failed: ${reason}${tag}` };
  }
  if (['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'].includes(code)) {
    return { code: 'CONNECTION_RESET', message: `${where} closed the connection before a complete answer${tag}` };
  }
  if (['EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL'].includes(code)) {
    return { code: 'HOST_UNREACHABLE', message: `no route to ${where}${tag}` };
  }
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { code: 'CONNECT_TIMEOUT', message: `the connection to ${where} timed out${tag}` };
  }
  if (['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ESOCKETTIMEDOUT'].includes(code)) {
    return { code: 'TIMEOUT', message: `${where} did not answer in time${tag}` };
  }
  if (e.name === 'AbortError' || e.name === 'TimeoutError' || code === 'ABORT_ERR') {
    return { code: 'TIMEOUT', message: `the call to ${where} was aborted before a complete answer${tag}` };
  }
  if (code.startsWith('HPE_') || code === 'UND_ERR_INFO' || code === 'ERR_INVALID_HTTP_RESPONSE') {
    const reason = e.reason ?? firstLine(e.message);
    return { code: 'INVALID_RESPONSE', message: `the answer of ${where} is not valid HTTP: ${reason}${tag}` };
  }
  return { code: 'NETWORK_ERROR', message: `${firstLine(messageOf(err)) || 'network error'}${tag}` };
}

// Node connects to whatever this callback returns, so refusing here covers every address of the name, and the
// answer cannot change between the check and the connect.
function guardedLookup(base: typeof dns.lookup, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    base(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      const blocked = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
      // One private address is enough to refuse: a name mixing public and private addresses is a rebinding attempt.
      if (blocked)
        return callback(
          new RefusedTarget(`${hostname} resolves to ${blocked.address}, ${rangeName(blocked.address)}`),
          '',
        );
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

function messageOf(err: Error): string {
  const inner = (err as { errors?: Error[] }).errors;
  return err.message || (inner ?? []).map((e) => e.message).join('; ') || String(err);
}

function withDefaultHeaders(given: Record<string, string>, body: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    if (name.toLowerCase() !== 'content-length') headers[name] = value;
  }
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('content-type')) headers['content-type'] = 'application/json';
  if (!has('user-agent')) headers['user-agent'] = USER_AGENT;
  headers['content-length'] = String(Buffer.byteLength(body));
  return headers;
}

// Connections are kept alive and reused (a TCP handshake per call cost more than the call to a fast receiver). A
// pooled socket passed the address checks when it connected, and the check after connect runs again on every reuse;
// sockets are pooled per look-up and per private-target setting, so a call never reuses a connection that was
// opened under weaker checks than its own.
const agents = new WeakMap<typeof dns.lookup, Map<string, http.Agent>>();

function agentFor(protocol: string, lookup: typeof dns.lookup, allowPrivate: boolean): http.Agent {
  let byKind = agents.get(lookup);
  if (!byKind) agents.set(lookup, (byKind = new Map()));
  const kind = `${protocol}${allowPrivate ? 'private' : 'public'}`;
  let agent = byKind.get(kind);
  if (!agent) {
    // Node closes an idle socket a second before the receiver's Keep-Alive hint; without a hint, after 4 s (a
    // receiver built on Node closes after 5 s).
    const options = { keepAlive: true, timeout: 4000, scheduling: 'lifo' as const };
    agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    byKind.set(kind, agent);
  }
  return agent;
}

// A reused connection that the receiver closed while it sat idle fails before anything was answered: that call is
// made again on a fresh connection, as browsers do, rather than logged as the receiver's failure.
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

export async function sendOutbound(req: OutboundRequest, options: OutboundOptions): Promise<OutboundOutcome> {
  const started = performance.now();
  const durationMs = () => Math.round(performance.now() - started);
  const refused = (reason: string, code: RefusalCode = 'INVALID_TARGET'): OutboundOutcome => ({
    kind: 'refused',
    code,
    reason,
    durationMs: durationMs(),
  });
  const privateTarget = (reason: string) => refused(reason, 'PRIVATE_TARGET_REFUSED');

  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return refused('not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return refused(`the ${url.protocol} scheme is not allowed; only http and https are`);
  }
  if (url.username || url.password) return refused('URLs with credentials are not allowed');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const allowPrivate = options.allowPrivateTargets;
  // Node calls no lookup for an IP literal, so the guarded lookup alone would let http://127.0.0.1/ through.
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) return privateTarget(notPublicReason(host));
  const target: CallTarget = { host, port: url.port || (url.protocol === 'https:' ? '443' : '80') };

  const timeoutMs = options.timeoutMs ?? 10_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  const maxBodyBytes = options.maxBodyBytes ?? 4096;
  const baseLookup = options.lookup ?? dns.lookup;
  const agent = agentFor(url.protocol, baseLookup, allowPrivate);
  const lookup = guardedLookup(baseLookup, allowPrivate);
  const headers = withDefaultHeaders(req.headers, req.body);

  return new Promise<OutboundOutcome>((resolve) => {
    let request: http.ClientRequest | undefined;
    let settled = false;
    /** `reuse`: the answer was read to its end, so the connection may carry the next call. */
    const settle = (outcome: OutboundOutcome, reuse = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(totalTimer);
      clearTimeout(connectTimer);
      if (!reuse) request?.destroy();
      resolve(outcome);
    };
    const fail = (code: NetworkErrorCode, message: string) =>
      settle({ kind: 'error', code, message, durationMs: durationMs() });
    const totalTimer = setTimeout(
      () => fail('TIMEOUT', `no complete answer from ${target.host}:${target.port} within ${seconds(timeoutMs)}`),
      timeoutMs,
    );
    const connectTimer = setTimeout(
      () =>
        fail(
          'CONNECT_TIMEOUT',
          `no connection to ${target.host}:${target.port} within ${seconds(connectTimeoutMs)} (DNS look-up and connect)`,
        ),
      connectTimeoutMs,
    );

    const send = (fresh: boolean) => {
      let answered = false;
      try {
        request = (url.protocol === 'https:' ? https : http).request({
          protocol: url.protocol,
          host,
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method: req.method ?? 'POST',
          headers,
          // The retry of a stale pooled connection opens one of its own.
          agent: fresh ? false : agent,
          lookup,
        });
      } catch (err) {
        // Node validates header names and values here, before anything is sent.
        return settle(refused(`invalid request: ${(err as Error).message}`));
      }
      const current = request;

      current.on('socket', (socket: Socket) => {
        const onConnect = () => {
          clearTimeout(connectTimer);
          // Last line of defence should anything ever connect without passing the checks above; prepended so it
          // runs before the request bytes queued on this socket are written. A reused socket is checked again.
          const remote = socket.remoteAddress;
          if (!allowPrivate && (!remote || !isPublicAddress(remote))) {
            settle(privateTarget(remote ? notPublicReason(remote) : 'the connected address is unknown'));
          }
        };
        if (socket.connecting) socket.prependOnceListener('connect', onConnect);
        else if (!socket.destroyed) onConnect();
      });

      current.on('error', (err: NodeJS.ErrnoException) => {
        if (settled || current !== request) return;
        if (err instanceof RefusedTarget) return settle(privateTarget(err.message));
        if (!fresh && !answered && current.reusedSocket && STALE_SOCKET_CODES.has(err.code ?? '')) return send(true);
        const { code, message } = classifyNetworkError(err, target);
        fail(code, message);
      });

      current.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        const finish = (complete: boolean) => {
          // StringDecoder.write holds back a trailing partial character instead of turning it into U+FFFD.
          // NUL becomes U+FFFD: PostgreSQL text and jsonb cannot hold it, and an answer kept for the log must be
          // recordable, else the attempt's outcome could never be written.
          const body = new StringDecoder('utf8')
            .write(Buffer.concat(chunks).subarray(0, maxBodyBytes))
            .replaceAll('\u0000', '\uFFFD');
          settle({ kind: 'response', status, body, durationMs: durationMs() }, complete);
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          kept += chunk.length;
          if (kept >= maxBodyBytes) finish(false);
        });
        res.on('end', () => finish(kept < maxBodyBytes));
        // The status line arrived, so the receiver did answer; a body cut short does not change what it answered.
        res.on('error', () => finish(false));
        res.on('close', () => finish(false));
        if (maxBodyBytes <= 0) finish(false);
      });

      current.end(req.body);
    };
    send(false);
  });
}
