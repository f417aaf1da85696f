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

export type OutboundOutcome =
  | { kind: 'response'; status: number; body: string; durationMs: number }
  | { kind: 'refused'; reason: string; durationMs: number }
  | {
      kind: 'error';
      code: 'TIMEOUT' | 'CONNECT_TIMEOUT' | 'CONNECTION_REFUSED' | 'DNS' | 'TLS' | 'NETWORK';
      message: string;
      durationMs: number;
    };

type ErrorCode = Extract<OutboundOutcome, { kind: 'error' }>['code'];

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

function notPublicReason(ip: string): string {
  const range = ipaddr.isValid(ip) ? ipaddr.process(ip).range() : 'invalid';
  return `${ip} is ${RANGE_NAMES[range] ?? 'a non-public'} address`;
}

class RefusedTarget extends Error {}

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
        return callback(new RefusedTarget(`${hostname} resolves to ${notPublicReason(blocked.address)}`), '');
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

function errorCodeOf(err: NodeJS.ErrnoException): ErrorCode {
  // With several addresses Node tries each (happy eyeballs) and reports an AggregateError of their failures.
  const inner = (err as { errors?: NodeJS.ErrnoException[] }).errors?.[0];
  const code = err.code ?? inner?.code ?? '';
  if (code === 'ECONNREFUSED') return 'CONNECTION_REFUSED';
  if (err.syscall === 'getaddrinfo' || code === 'ENOTFOUND' || code.startsWith('EAI_')) return 'DNS';
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_)|SELF_SIGNED|EPROTO/.test(code)) return 'TLS';
  return 'NETWORK';
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

export async function sendOutbound(req: OutboundRequest, options: OutboundOptions): Promise<OutboundOutcome> {
  const started = performance.now();
  const durationMs = () => Math.round(performance.now() - started);
  const refused = (reason: string): OutboundOutcome => ({ kind: 'refused', reason, durationMs: durationMs() });

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
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) return refused(notPublicReason(host));

  const timeoutMs = options.timeoutMs ?? 10_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  const maxBodyBytes = options.maxBodyBytes ?? 4096;

  return new Promise<OutboundOutcome>((resolve) => {
    let request: http.ClientRequest | undefined;
    let settled = false;
    const settle = (outcome: OutboundOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(totalTimer);
      clearTimeout(connectTimer);
      request?.destroy();
      resolve(outcome);
    };
    const fail = (code: ErrorCode, message: string) =>
      settle({ kind: 'error', code, message, durationMs: durationMs() });
    const totalTimer = setTimeout(() => fail('TIMEOUT', `no complete answer within ${timeoutMs} ms`), timeoutMs);
    const connectTimer = setTimeout(
      () => fail('CONNECT_TIMEOUT', `not connected within ${connectTimeoutMs} ms`),
      connectTimeoutMs,
    );

    try {
      // agent: false gives every call its own connection, so every call passes the address checks afresh.
      request = (url.protocol === 'https:' ? https : http).request({
        protocol: url.protocol,
        host,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: req.method ?? 'POST',
        headers: withDefaultHeaders(req.headers, req.body),
        agent: false,
        lookup: guardedLookup(options.lookup ?? dns.lookup, allowPrivate),
      });
    } catch (err) {
      // Node validates header names and values here, before anything is sent.
      return settle(refused(`invalid request: ${(err as Error).message}`));
    }

    request.on('socket', (socket: Socket) => {
      const onConnect = () => {
        clearTimeout(connectTimer);
        // Last line of defence should anything ever connect without passing the checks above; prepended so it runs
        // before the request bytes queued on this socket are written.
        const remote = socket.remoteAddress;
        if (!allowPrivate && (!remote || !isPublicAddress(remote))) {
          settle(refused(remote ? notPublicReason(remote) : 'the connected address is unknown'));
        }
      };
      if (socket.connecting) socket.prependOnceListener('connect', onConnect);
      else if (!socket.destroyed) onConnect();
    });

    request.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof RefusedTarget) settle(refused(err.message));
      else fail(errorCodeOf(err), messageOf(err));
    });

    request.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let kept = 0;
      const finish = () => {
        // StringDecoder.write holds back a trailing partial character instead of turning it into U+FFFD.
        const body = new StringDecoder('utf8').write(Buffer.concat(chunks).subarray(0, maxBodyBytes));
        settle({ kind: 'response', status, body, durationMs: durationMs() });
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        kept += chunk.length;
        if (kept >= maxBodyBytes) finish();
      });
      res.on('end', finish);
      // The status line arrived, so the receiver did answer; a body cut short does not change what it answered.
      res.on('error', finish);
      res.on('close', finish);
      if (maxBodyBytes <= 0) finish();
    });

    request.end(req.body);
  });
}
