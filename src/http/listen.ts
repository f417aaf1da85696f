// Binding the API's port. A port another process holds is an operator's mistake, not a crash: it is said in one
// line (the port and the PORT setting that chose it) instead of an unhandled 'error' event's stack trace.
import type { Server } from 'node:http';

export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is in use (PORT=${port})`);
  }
}

/** Resolves once the server listens on port/host; a port in use rejects with PortInUseError, any other error as is. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      server.off('listening', listening);
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(port) : err);
    };
    const listening = () => {
      server.off('error', failed);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', listening);
    server.listen(port, host);
  });
}
