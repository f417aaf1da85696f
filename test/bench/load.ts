// The load half of `npm run bench`, shared by its scenarios: a server on a free port, autocannon in a process of
// its own, and one measured run (req/s, latency, this process's CPU per request).
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import { median } from './cold-start';

const run = promisify(execFile);
export const seconds = Number(process.env.BENCH_SECONDS ?? 10);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
export const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

export function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

const autocannonBin = join(__dirname, '..', '..', 'node_modules', '.bin', 'autocannon');

/** autocannon in a process of its own, so the load generator does not take CPU from the server it measures. */
async function cannon(url: string, key: string, duration: number): Promise<autocannon.Result> {
  const { stdout } = await run(
    autocannonBin,
    ['-j', '-c', String(connections), '-d', String(duration), '-H', `authorization=Bearer ${key}`, url],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(stdout) as autocannon.Result;
}

export interface Load {
  rps: number;
  p50: number;
  p99: number;
  /** CPU time of this process (the server under test) per request served, in microseconds. */
  cpuUs: number;
}

export async function load(url: string, key: string): Promise<Load> {
  await cannon(url, key, 2); // warm-up
  const cpu = process.cpuUsage();
  const r = await cannon(url, key, seconds);
  const used = process.cpuUsage(cpu);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuUs: Math.round((used.user + used.system) / r.requests.total),
  };
}

/** The median run of a scenario (by req/s), with the medians of its measures. */
export function summary(runs: Load[]): Load {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    cpuUs: median(runs.map((r) => r.cpuUs)),
  };
}
