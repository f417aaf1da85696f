// The real server (`src/server.ts` under tsx) as an OS process of its own, for fault tests that take its database,
// Redis or webhook receivers away while it serves (test/faults/). It runs in a process group of its own: tsx runs the
// server in a child process, which a kill of tsx alone would orphan.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ServerProcess {
  /** http://127.0.0.1:<port> */
  base: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  alive(): boolean;
  /** SIGKILL to the whole process group; resolves once the process is gone. */
  kill(): Promise<void>;
}

/** Starts the server with PORT=0 on 127.0.0.1 and resolves once it listens. `env` is added to this process's own. */
export async function startServerProcess(env: Record<string, string>, startTimeoutMs = 60_000): Promise<ServerProcess> {
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'src', 'server.ts')], {
    cwd: root,
    detached: true,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SEED_DEMO: 'false', LOG_LEVEL: 'warn', ...env },
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const kill = async () => {
    if (!alive()) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await exited;
  };
  const started = Date.now();
  let port: string | undefined;
  while (!port && Date.now() - started < startTimeoutMs && alive()) {
    await sleep(50);
    port = /listening on http:\/\/localhost:(\d+)/.exec(output)?.[1];
  }
  if (!port) {
    await kill();
    throw new Error(`server did not start:\n${output}`);
  }
  return { base: `http://127.0.0.1:${port}`, child, output: () => output, alive, kill };
}
