// HTTP/1.1 spoken by hand over a socket, for what a client library would refuse to send or would hide: a header
// over the parser's limit, bytes no URL may hold, a body that never comes, `100 Continue`.
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: unknown;
  /** The server closed the connection after answering. */
  closed: boolean;
  elapsedMs: number;
  /** A `100 Continue` came before the response. */
  continued: boolean;
}

/**
 * Writes `head` (and nothing more) on a fresh connection and reads one response: complete once its Content-Length
 * is in, or when the server closes. Fails when nothing complete arrived within `timeoutMs`. A `100 Continue` is
 * noted and skipped, and `bodyAfterContinue` is sent after it. A string is sent as UTF-8; bytes that are not, as a
 * Buffer.
 */
export function exchange(
  target: number,
  head: string | Buffer,
  timeoutMs = 3000,
  bodyAfterContinue?: string,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(target, '127.0.0.1');
    let data = Buffer.alloc(0);
    let settled = false;
    let continued = false;
    const parse = (closed: boolean): RawResponse | undefined => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const bodyText = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1')).toString('utf8');
      const length = Number(headers['content-length'] ?? NaN);
      if (!closed && !(bodyText.length >= length)) return undefined;
      let body: unknown;
      try {
        body = bodyText ? JSON.parse(bodyText) : undefined;
      } catch {
        body = undefined;
      }
      return {
        status: Number(statusLine!.split(' ')[1]),
        headers,
        text: bodyText,
        body,
        closed,
        elapsedMs: Date.now() - started,
        continued,
      };
    };
    const finish = (closed: boolean) => {
      if (settled) return;
      const res = parse(closed);
      if (!res && !closed) return;
      settled = true;
      clearTimeout(timer);
      if (res) {
        // Give a close right behind the response a moment to be seen.
        setTimeout(() => {
          res.closed = res.closed || socket.destroyed || socket.readableEnded;
          socket.destroy();
          resolve(res);
        }, 100);
      } else {
        reject(new Error(`connection closed without a response: ${JSON.stringify(data.toString('latin1'))}`));
      }
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      reject(new Error(`no complete response within ${timeoutMs} ms; received ${JSON.stringify(data.toString())}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (!continued && data.toString('latin1').startsWith('HTTP/1.1 100 ')) {
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) return;
        data = data.subarray(end + 4);
        continued = true;
        if (bodyAfterContinue !== undefined) socket.write(bodyAfterContinue);
      }
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.write(head);
  });
}
