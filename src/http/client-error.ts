// The HTTP server's own edges, below express: what Node's HTTP parser refuses (431 headers too large, 400 malformed,
// 408 too slow) never reaches the app, and Node answers it with a bare status line. Here it gets the API's error
// envelope and an X-Request-Id like every other answer. The keep-alive and request timeouts are set here too, so
// the server and the tests configure a Server the same way, and so is when `100 Continue` is sent.
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Config } from '../config';
import { ApiError, type ErrorCode } from '../errors';
import type { Logger } from '../logger';
import { countParserRefusal } from '../platform/metrics';
import { deferContinue } from './body';
import { errorBody } from './errors';

function codeOf(err: NodeJS.ErrnoException): ErrorCode {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'REQUEST_HEADER_FIELDS_TOO_LARGE';
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'PAYLOAD_TOO_LARGE';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'REQUEST_TIMEOUT';
    default:
      return 'BAD_REQUEST';
  }
}

/** The complete HTTP/1.1 response for a parser error: the envelope, a fresh request id, and the connection closed. */
export function clientErrorResponse(
  err: NodeJS.ErrnoException,
  publicUrl: string,
): { status: number; code: ErrorCode; raw: string } {
  const apiError = new ApiError(codeOf(err));
  const body = JSON.stringify(errorBody(apiError, publicUrl));
  const head = [
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    // The request's own id is unreadable here (its headers are what failed), so the answer carries a fresh one.
    `X-Request-Id: ${randomUUID()}`,
    'Connection: close',
  ];
  // RFC 9110 §9.3.2: no body in the answer to HEAD (a client reading one would take it for the next response). The
  // parser got past the method before it failed, and the bytes it read are on the error.
  const isHead = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  return { status: apiError.status, code: apiError.code, raw: `${head.join('\r\n')}\r\n\r\n${isHead ? '' : body}` };
}

/** Answers Node's HTTP parser errors with the error envelope instead of Node's bare status line. */
export function answerClientErrors(server: Server, options: { publicUrl: string; logger?: Logger }): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset connection has nobody to answer.
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // Bytes of a response already on the wire (a pipelined request before this one) must not be interleaved with
    // another response: as Node does, answer only when no response has started on this socket.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const { status, code, raw } = clientErrorResponse(err, options.publicUrl);
    options.logger?.info('http parser refused a request', { status, code: err.code });
    // Counted like every other answer (what is cut above was never answered): a fuzzer's or an attacker's malformed
    // requests would otherwise be missing from the request and error rates.
    countParserRefusal(status, code);
    socket.end(raw);
    // end() leaves the socket half open until the client closes its side; a client that never does is cut.
    setTimeout(() => socket.destroy(), 2000).unref();
  });
}

export type HttpServerConfig = Pick<
  Config,
  'publicUrl' | 'httpKeepAliveTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs'
>;

/** Timeouts and parser-error answers of an http.Server; call it before listen(). */
export function configureHttpServer(server: Server, config: HttpServerConfig, logger?: Logger): Server {
  server.keepAliveTimeout = config.httpKeepAliveTimeoutMs;
  server.headersTimeout = config.httpHeadersTimeoutMs;
  server.requestTimeout = config.httpRequestTimeoutMs;
  answerClientErrors(server, { publicUrl: config.publicUrl, logger });
  // `100 Continue` is given by the body reader, once the request got that far (src/http/body.ts).
  server.on('checkContinue', (req, res) => {
    deferContinue(req);
    server.emit('request', req, res);
  });
  return server;
}

/** The API's http.Server: configured as above, and with the timeouts checked every second. */
export function createHttpServer(handler: RequestListener, config: HttpServerConfig, logger?: Logger): Server {
  // Node checks the headers and request timeouts only every connectionsCheckingInterval (30 s by default), so a
  // timeout would fire up to 30 s late; every second keeps them what the configuration says, for a negligible cost.
  return configureHttpServer(createServer({ connectionsCheckingInterval: 1000 }, handler), config, logger);
}
