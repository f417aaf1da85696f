// The app with every response it sends kept (status, headers and body as written), whoever asked: the test's
// supertest client and the providers' fakes posting webhooks to the listening server alike. For tests that must
// know what the API ever answered (a secrets scan), not only what one assertion looked at.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express } from 'express';

export interface RecordedResponse {
  method: string;
  url: string;
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

type Chunk = string | Uint8Array;
const bytesOf = (chunk: Chunk, encoding?: BufferEncoding) =>
  typeof chunk === 'string' ? Buffer.from(chunk, encoding) : Buffer.from(chunk);

/** A request handler that serves `app` and pushes each finished response onto `sink`. */
export function recordedApp(app: Express, sink: RecordedResponse[]): Express {
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const { method = '', url = '' } = req;
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((chunk: Chunk, ...rest: unknown[]) => {
      chunks.push(bytesOf(chunk, typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined));
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: Chunk | (() => void), ...rest: unknown[]) => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
        chunks.push(bytesOf(chunk, typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined));
      }
      return end(chunk, ...rest);
    }) as typeof res.end;
    res.on('finish', () =>
      sink.push({
        method,
        url,
        status: res.statusCode,
        headers: res.getHeaders(),
        body: Buffer.concat(chunks).toString('utf8'),
      }),
    );
    app(req, res);
  };
  // supertest and http.createServer take any (req, res) handler; the type says Express so contractClient takes it.
  return handler as unknown as Express;
}
