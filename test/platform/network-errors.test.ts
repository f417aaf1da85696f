// classifyNetworkError (src/platform/outbound-http.ts), the one mapping of Node's and undici's network errors to the
// delivery log's codes, and attemptError (src/worker/webhook-delivery.ts), which turns an outbound outcome into a log
// entry's `error`. The errors are built as Node builds them (code, syscall, address, port, OpenSSL's text); the real
// sockets are in test/platform/outbound-http.test.ts and test/webhooks/webhook-attempt-errors.test.ts.
import { classifyNetworkError, type CallTarget, type OutboundOutcome } from '../../src/platform/outbound-http';
import { attemptError } from '../../src/worker/webhook-delivery';

const target: CallTarget = { host: 'hooks.example.com', port: '443' };

function nodeError(message: string, fields: Record<string, unknown>): NodeJS.ErrnoException {
  return Object.assign(new Error(message), fields);
}

describe('classifyNetworkError', () => {
  test.each<[string, NodeJS.ErrnoException, string, string]>([
    [
      'connection refused, with the address Node tried',
      nodeError('connect ECONNREFUSED 203.0.113.7:443', {
        code: 'ECONNREFUSED',
        syscall: 'connect',
        address: '203.0.113.7',
        port: 443,
      }),
      'CONNECTION_REFUSED',
      'connection refused by 203.0.113.7:443 (ECONNREFUSED)',
    ],
    [
      'every address refused (happy eyeballs: an AggregateError without a code of its own)',
      Object.assign(
        new AggregateError(
          [
            nodeError('connect ECONNREFUSED ::1:4010', {
              code: 'ECONNREFUSED',
              syscall: 'connect',
              address: '::1',
              port: 4010,
            }),
            nodeError('connect ECONNREFUSED 127.0.0.1:4010', {
              code: 'ECONNREFUSED',
              syscall: 'connect',
              address: '127.0.0.1',
              port: 4010,
            }),
          ],
          '',
        ),
      ),
      'CONNECTION_REFUSED',
      'connection refused by ::1:4010 (ECONNREFUSED)',
    ],
    [
      'a name that does not exist',
      nodeError('getaddrinfo ENOTFOUND hooks.example.com', {
        code: 'ENOTFOUND',
        syscall: 'getaddrinfo',
        hostname: 'hooks.example.com',
      }),
      'DNS_FAILURE',
      'the name hooks.example.com does not resolve (ENOTFOUND)',
    ],
    [
      'a resolver that failed for now',
      nodeError('getaddrinfo EAI_AGAIN hooks.example.com', { code: 'EAI_AGAIN', syscall: 'getaddrinfo' }),
      'DNS_FAILURE',
      'the name hooks.example.com could not be resolved now (temporary DNS failure) (EAI_AGAIN)',
    ],
    [
      'another resolver failure, without a syscall',
      nodeError('EAI_FAIL', { code: 'EAI_FAIL' }),
      'DNS_FAILURE',
      'the name hooks.example.com could not be resolved (EAI_FAIL)',
    ],
    [
      'a self-signed certificate (Node appends advice after a semicolon)',
      nodeError(
        'self-signed certificate; if the root CA is installed locally, try running Node.js with --use-system-ca',
        {
          code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
        },
      ),
      'TLS_ERROR',
      'TLS with hooks.example.com:443 failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
    ],
    [
      'an expired certificate',
      nodeError('certificate has expired', { code: 'CERT_HAS_EXPIRED' }),
      'TLS_ERROR',
      'TLS with hooks.example.com:443 failed: certificate has expired (CERT_HAS_EXPIRED)',
    ],
    [
      'a certificate for another name',
      nodeError("Hostname/IP does not match certificate's altnames", {
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
        reason: "Host: hooks.example.com. is not in the cert's altnames: DNS:other.example.com",
      }),
      'TLS_ERROR',
      "TLS with hooks.example.com:443 failed: Host: hooks.example.com. is not in the cert's altnames: DNS:other.example.com (ERR_TLS_CERT_ALTNAME_INVALID)",
    ],
    [
      'plain HTTP on the TLS port (OpenSSL text)',
      nodeError(
        'write EPROTO 40CD029D047F0000:error:0A00010B:SSL routines:tls_validate_record_header:wrong version number:../deps/openssl/openssl/ssl/record/methods/tlsany_meth.c:77:\n',
        { code: 'EPROTO', syscall: 'write' },
      ),
      'TLS_ERROR',
      'TLS with hooks.example.com:443 failed: wrong version number (EPROTO)',
    ],
    [
      'an OpenSSL error with its reason',
      nodeError('wrong version number', { code: 'ERR_SSL_WRONG_VERSION_NUMBER', reason: 'wrong version number' }),
      'TLS_ERROR',
      'TLS with hooks.example.com:443 failed: wrong version number (ERR_SSL_WRONG_VERSION_NUMBER)',
    ],
    [
      'a reset while reading',
      nodeError('read ECONNRESET', { code: 'ECONNRESET', syscall: 'read' }),
      'CONNECTION_RESET',
      'hooks.example.com:443 closed the connection before a complete answer (ECONNRESET)',
    ],
    [
      'a socket hang up (closed without an answer)',
      nodeError('socket hang up', { code: 'ECONNRESET' }),
      'CONNECTION_RESET',
      'hooks.example.com:443 closed the connection before a complete answer (ECONNRESET)',
    ],
    [
      'a broken pipe while sending',
      nodeError('write EPIPE', { code: 'EPIPE', syscall: 'write' }),
      'CONNECTION_RESET',
      'hooks.example.com:443 closed the connection before a complete answer (EPIPE)',
    ],
    [
      'undici: the socket closed',
      nodeError('other side closed', { code: 'UND_ERR_SOCKET' }),
      'CONNECTION_RESET',
      'hooks.example.com:443 closed the connection before a complete answer (UND_ERR_SOCKET)',
    ],
    [
      'no route to the host',
      nodeError('connect EHOSTUNREACH 203.0.113.7:443', {
        code: 'EHOSTUNREACH',
        syscall: 'connect',
        address: '203.0.113.7',
        port: 443,
      }),
      'HOST_UNREACHABLE',
      'no route to 203.0.113.7:443 (EHOSTUNREACH)',
    ],
    [
      'no route to the network',
      nodeError('connect ENETUNREACH 2001:db8::1:443', {
        code: 'ENETUNREACH',
        address: '2001:db8::1',
        port: 443,
      }),
      'HOST_UNREACHABLE',
      'no route to 2001:db8::1:443 (ENETUNREACH)',
    ],
    [
      'the kernel gave up connecting',
      nodeError('connect ETIMEDOUT 203.0.113.7:443', {
        code: 'ETIMEDOUT',
        syscall: 'connect',
        address: '203.0.113.7',
        port: 443,
      }),
      'CONNECT_TIMEOUT',
      'the connection to 203.0.113.7:443 timed out (ETIMEDOUT)',
    ],
    [
      'undici: connect timeout',
      nodeError('Connect Timeout Error', { code: 'UND_ERR_CONNECT_TIMEOUT' }),
      'CONNECT_TIMEOUT',
      'the connection to hooks.example.com:443 timed out (UND_ERR_CONNECT_TIMEOUT)',
    ],
    [
      'undici: no headers in time',
      nodeError('Headers Timeout Error', { code: 'UND_ERR_HEADERS_TIMEOUT' }),
      'TIMEOUT',
      'hooks.example.com:443 did not answer in time (UND_ERR_HEADERS_TIMEOUT)',
    ],
    [
      'an abort (AbortSignal.timeout)',
      Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError', code: 23 }) as never,
      'TIMEOUT',
      'the call to hooks.example.com:443 was aborted before a complete answer',
    ],
    [
      'an abort',
      nodeError('The operation was aborted', { name: 'AbortError', code: 'ABORT_ERR' }),
      'TIMEOUT',
      'the call to hooks.example.com:443 was aborted before a complete answer (ABORT_ERR)',
    ],
    [
      'an answer that is not HTTP',
      nodeError('Parse Error: Expected HTTP/, RTSP/ or ICE/', {
        code: 'HPE_INVALID_CONSTANT',
        reason: 'Expected HTTP/, RTSP/ or ICE/',
      }),
      'INVALID_RESPONSE',
      'the answer of hooks.example.com:443 is not valid HTTP: Expected HTTP/, RTSP/ or ICE/ (HPE_INVALID_CONSTANT)',
    ],
    [
      'anything else',
      nodeError('something odd happened\nwith a second line', { code: 'EWEIRD' }),
      'NETWORK_ERROR',
      'something odd happened (EWEIRD)',
    ],
  ])('%s', (_name, err, code, message) => {
    expect(classifyNetworkError(err, target)).toEqual({ code, message });
  });
});

describe('attemptError', () => {
  const response = (status: number, body = ''): OutboundOutcome => ({ kind: 'response', status, body, durationMs: 5 });

  test.each([200, 201, 204, 299])('%s is delivered: no error', (status) => {
    expect(attemptError(response(status))).toBeNull();
  });

  test.each<[number, string]>([
    [500, 'the endpoint answered 500 Internal Server Error; only a 2xx counts as delivered'],
    [404, 'the endpoint answered 404 Not Found; only a 2xx counts as delivered'],
    [302, 'the endpoint answered 302 Found; redirects are not followed: answer 2xx at the registered URL'],
    [599, 'the endpoint answered 599; only a 2xx counts as delivered'],
  ])('%s: HTTP_ERROR', (status, message) => {
    expect(attemptError(response(status, 'secret body stays in response_body'))).toEqual({
      code: 'HTTP_ERROR',
      message,
    });
  });

  test('a private target refused: the reason, and why', () => {
    expect(
      attemptError({
        kind: 'refused',
        code: 'PRIVATE_TARGET_REFUSED',
        reason: 'localhost resolves to 127.0.0.1, a loopback address',
        durationMs: 1,
      }),
    ).toEqual({
      code: 'PRIVATE_TARGET_REFUSED',
      message: 'refused: localhost resolves to 127.0.0.1, a loopback address; private targets are not allowed',
    });
  });

  test('a target no call can be made to', () => {
    expect(attemptError({ kind: 'refused', code: 'INVALID_TARGET', reason: 'not a valid URL', durationMs: 0 })).toEqual(
      { code: 'INVALID_TARGET', message: 'refused: not a valid URL' },
    );
  });

  test('a network error keeps its code and message, bounded to 500 characters', () => {
    expect(attemptError({ kind: 'error', code: 'TIMEOUT', message: 'm'.repeat(2000), durationMs: 10_000 })).toEqual({
      code: 'TIMEOUT',
      message: 'm'.repeat(500),
    });
  });
});
