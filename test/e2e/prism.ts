// Stoplight Prism as a validating proxy in front of the app: one child process per proxy, in its own process group
// (so afterAll can take down the CLI and anything it forked), with everything it prints kept for the verdict.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const prismBin = join(root, 'node_modules', '.bin', 'prism');

export interface PrismProxy {
  name: string;
  url: string;
  /** Everything Prism printed so far (stdout and stderr, in arrival order). */
  output(): string;
  /**
   * The lines where Prism reported a violation: `Violation: request…|response…` where it forwards the answer, and
   * `Request terminated with error` where `--errors` replaced the answer with its own (VIOLATIONS, 401, 422…).
   */
  violationLines(): string[];
  stop(): Promise<void>;
}

/** Strips the colour codes Prism's pretty logger adds, so log lines can be matched. */
const colour = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const plain = (text: string) => text.replace(colour, '');

/**
 * Starts `prism proxy openapi.yaml <upstream> -p <port> [extra]` and resolves once it listens.
 */
export async function startPrism(
  name: string,
  upstream: string,
  port: number,
  extraArgs: string[] = [],
  timeoutMs = 60_000,
): Promise<PrismProxy> {
  const args = ['proxy', join(root, 'openapi.yaml'), upstream, '-p', String(port), '-h', '127.0.0.1', ...extraArgs];
  const child: ChildProcess = spawn(prismBin, args, {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
  });
  let text = '';
  const append = (chunk: Buffer) => {
    text += plain(chunk.toString('utf8'));
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const deadline = Date.now() + timeoutMs;
  while (!/Prism is listening/.test(text)) {
    if (child.exitCode !== null) throw new Error(`prism ${name} exited (${child.exitCode}):\n${text}`);
    if (Date.now() > deadline) {
      killGroup(child);
      throw new Error(`prism ${name} did not start within ${timeoutMs} ms:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    name,
    url: `http://127.0.0.1:${port}`,
    output: () => text,
    violationLines: () => text.split('\n').filter((l) => /Violation:|Request terminated with error/.test(l)),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killGroup(child);
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  try {
    // A negative pid addresses the process group the detached child leads: the CLI and any forked server.
    process.kill(-child.pid!, signal);
  } catch {
    /* already gone */
  }
}
