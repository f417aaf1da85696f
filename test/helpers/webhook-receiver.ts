// The one webhook receiver of the tests: an HTTP server on 127.0.0.1 that keeps every request it got (duplicates
// included) and answers as its `answer` says. By default it answers 500 while `down`, 204 once up, which is what the
// tests that run the server or a worker as processes of their own need; the in-process webhook tests set `answer`.
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Hit {
  path: string;
  /** The `webhook-id` header: the same for every attempt of one delivery. */
  id: string;
  /** When the request had been read (Date.now()). */
  at: number;
  headers: IncomingMessage['headers'];
  body: string;
  /** The status it was (or, with a delay, will be) answered; null: never answered (a receiver that hangs). */
  answered: number | null;
}

export interface Answer {
  status: number;
  headers?: OutgoingHttpHeaders;
  body?: string;
  /** Answer only after this long: a slow receiver. */
  delayMs?: number;
}

/** What to answer one request; undefined leaves it unanswered until the client gives up or the receiver stops. */
export type Answerer = (hit: Readonly<Omit<Hit, 'answered'>>) => Answer | undefined;

export class Receiver {
  readonly hits: Hit[] = [];
  down = true;
  answer: Answerer = () => (this.down ? { status: 500, body: 'receiver down' } : { status: 204 });
  private server: Server | undefined;
  private listening = 0;

  constructor(options: { down?: boolean; answer?: Answerer } = {}) {
    if (options.down !== undefined) this.down = options.down;
    if (options.answer) this.answer = options.answer;
  }

  /** The port of the last start, kept after stop(): a test registers the URL of a receiver that is gone. */
  get port(): number {
    return this.listening;
  }

  url(path = '/hooks'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Distinct (path, webhook-id) pairs received: what was delivered, whatever the retries. */
  distinct(): Set<string> {
    return new Set(this.hits.map((h) => `${h.path} ${h.id}`));
  }

  /** `port` 0 takes a free one; a port given again restarts the receiver where endpoints already point. */
  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const hit = {
          path: req.url ?? '',
          id: String(req.headers['webhook-id']),
          at: Date.now(),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        const answer = this.answer(hit);
        this.hits.push({ ...hit, answered: answer?.status ?? null });
        if (!answer) return;
        const send = () => res.writeHead(answer.status, answer.headers).end(answer.body);
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', resolve);
    });
    this.listening = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
