// The real server (`src/server.ts` under tsx), or the worker (`src/worker/main.ts`), as an OS process of its own, for fault tests that take its database,
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
  const { port, ...rest } = await startEntry(
    'server.ts',
    { PORT: '0', HOST: '127.0.0.1', SEED_DEMO: 'false', LOG_LEVEL: 'warn', ...env },
    /listening on http:\/\/localhost:(\d+)/,
    startTimeoutMs,
  );
  return { base: `http://127.0.0.1:${port}`, ...rest };
}

/**
 * `npm run worker` (src/worker/main.ts: every background job, no HTTP) as a process of its own; resolves once it
 * claims work. `base` is unused there (empty).
 */
export async function startWorkerProcess(env: Record<string, string>, startTimeoutMs = 60_000): Promise<ServerProcess> {
  // Its readiness is an info line, whatever LOG_LEVEL the caller wanted for the rest.
  const started = await startEntry(
    join('worker', 'main.ts'),
    { ...env, LOG_LEVEL: 'info' },
    /worker started/,
    startTimeoutMs,
  );
  return { base: '', child: started.child, output: started.output, alive: started.alive, kill: started.kill };
}

async function startEntry(
  entry: string,
  env: Record<string, string>,
  ready: RegExp,
  startTimeoutMs: number,
): Promise<Omit<ServerProcess, 'base'> & { port: string }> {
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'src', entry)], {
    cwd: root,
    detached: true,
    env: { ...process.env, ...env },
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
  let match: RegExpExecArray | null = null;
  while (!match && Date.now() - started < startTimeoutMs && alive()) {
    await sleep(50);
    match = ready.exec(output);
  }
  if (!match) {
    await kill();
    throw new Error(`${entry} did not start:\n${output}`);
  }
  return { port: match[1] ?? '', child, output: () => output, alive, kill };
}
