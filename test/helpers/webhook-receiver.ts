// A webhook receiver on 127.0.0.1 for tests that run the server or a worker as processes of their own: it keeps
// every request it got and answers 500 while `down`, 204 once up.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Hit {
  path: string;
  id: string;
  headers: IncomingMessage['headers'];
  body: string;
  answered: number;
}

/** A receiver on 127.0.0.1 that keeps every request it got and answers 500 while `down`, 204 once up. */
export class Receiver {
  readonly hits: Hit[] = [];
  down = true;
  private server: Server | undefined;

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  async start(port: number): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answered = this.down ? 500 : 204;
        this.hits.push({
          path: req.url ?? '',
          id: String(req.headers['webhook-id']),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          answered,
        });
        res.writeHead(answered).end(answered === 500 ? 'receiver down' : undefined);
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', resolve);
    });
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
