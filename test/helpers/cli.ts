// The admin CLI (src/ops/cli.ts) for tests, one shape two ways: in-process through runCli on the test's own open
// database (a child process costs seconds: tsx, then the database opened and migrated, and an embedded database
// has one owner, so a child could not open the test's anyway), or as a real child process (`tsx src/ops/cli-main.ts`) for
// the few tests that prove the program entry itself: argv, stdin, stdout/stderr and the exit code.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { format } from 'node:util';
import type { DatabaseHandle } from '../../db/database';
import { runCli } from '../../src/ops/cli';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The one JSON document a --json run prints on stdout (undefined for a failed run that printed none). */
  json: any;
}

export interface CliOptions {
  /** What the process reads on stdin (the --*-stdin options). */
  stdin?: string;
  /** Added to (or overriding) the runner's environment for this call. */
  env?: NodeJS.ProcessEnv;
  /** false: the human output, without --json. */
  json?: boolean;
}

type Runner = (...args: string[]) => Promise<CliResult>;
/** `cli('shop', 'create', …)` runs the command with --json; `cli.with({ stdin })(…)` with options. */
export type Cli = Runner & { with(options: CliOptions): Runner };

type Execute = (argv: string[], options: CliOptions) => Promise<{ code: number; stdout: string; stderr: string }>;

function cliOf(execute: Execute): Cli {
  const runner =
    (options: CliOptions): Runner =>
    async (...args) => {
      const json = options.json !== false;
      const out = await execute(json ? [...args, '--json'] : args, options);
      // A successful --json run must print exactly one document (JSON.parse refuses anything else, also nothing).
      const parsed: unknown = json && (out.code === 0 || out.stdout !== '') ? JSON.parse(out.stdout) : undefined;
      return { ...out, json: parsed };
    };
  return Object.assign(runner({}), { with: runner });
}

/**
 * The CLI in this process on an open database (left open). What the run prints through io, console or
 * process.stdout is what the result shows, as a child process's output would: a stray line breaks the --json
 * document, and a test asserting a secret is never printed sees it. (process.stderr stays jest's: an in-band run
 * reports there.)
 */
export function inProcessCli(database: DatabaseHandle, env: NodeJS.ProcessEnv = process.env): Cli {
  return cliOf(async (argv, options) => {
    let stdout = '';
    let stderr = '';
    const restore = captureOutput(
      (s) => (stdout += s),
      (s) => (stderr += s),
    );
    try {
      const code = await runCli(argv, {
        stdin: options.stdin ?? '',
        env: { ...env, ...options.env },
        stdout: (s) => (stdout += s),
        stderr: (s) => (stderr += s),
        database,
      });
      return { code, stdout, stderr };
    } finally {
      restore();
    }
  });
}

const root = join(__dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** The CLI as an operator runs it: a child process `tsx src/ops/cli-main.ts …` with env (it opens its own database). */
export function processCli(env: NodeJS.ProcessEnv): Cli {
  return cliOf(
    (argv, options) =>
      new Promise((resolve, reject) => {
        const child = spawn(tsx, [join(root, 'src', 'ops', 'cli-main.ts'), ...argv], {
          env: { ...env, ...options.env },
          cwd: root,
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += String(c)));
        child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
        child.stdin.end(options.stdin ?? '');
      }),
  );
}

/** Routes console and process.stdout writes to out/err until the returned function restores them. */
function captureOutput(out: (s: string) => void, err: (s: string) => void): () => void {
  const saved = {
    stdoutWrite: process.stdout.write,
    log: console.log,
    info: console.info,
    debug: console.debug,
    warn: console.warn,
    error: console.error,
  };
  const writer =
    (sink: (s: string) => void) =>
    (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      sink(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    };
  const line =
    (sink: (s: string) => void) =>
    (...args: unknown[]) =>
      sink(`${format(...args)}\n`);
  process.stdout.write = writer(out) as typeof process.stdout.write;
  console.log = console.info = console.debug = line(out);
  console.warn = console.error = line(err);
  return () => {
    process.stdout.write = saved.stdoutWrite;
    Object.assign(console, {
      log: saved.log,
      info: saved.info,
      debug: saved.debug,
      warn: saved.warn,
      error: saved.error,
    });
  };
}
