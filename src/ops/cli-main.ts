// The admin CLI as a program (`npm run cli` runs it from dist/ through codegen/start.mjs --cli). When a server holds
// the embedded database, the command runs inside that server (src/ops/cli-channel.ts); otherwise here, on the
// database the configuration names. This module loads nothing heavy: the CLI's own modules (kysely, pg, PGlite, the
// admin commands) are required only once it is known the command runs in this process.
import { readFileSync } from 'node:fs';
import { forwardToServer } from './cli-channel';

/**
 * The program: argv to the CLI, its output to this process, its exit code as the process's. Stdin is read only if
 * a command asks for it (see CliIo.stdin in src/ops/cli.ts).
 */
export async function main(argv: string[]): Promise<void> {
  const stdout = (s: string) => void process.stdout.write(s);
  const stderr = (s: string) => void process.stderr.write(s);
  const readStdin = () => readFileSync(0, 'utf8');
  const forwarded = await forwardToServer(argv, process.env, { stdout, stderr, readStdin });
  process.exitCode =
    forwarded ??
    (await (require('./cli') as typeof import('./cli')).runCli(argv, { stdin: readStdin, stdout, stderr }));
}

// `tsx src/ops/cli-main.ts …` runs the program from source, as `npm run cli` runs it from dist/.
if (require.main === module) void main(process.argv.slice(2));
