// The Procfile names the processes of a deployment beyond one machine (docs/deployment.md): API processes without the
// worker inside them, and workers apart. Each line must run an npm script that exists, with settings the server reads.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';

const root = join(__dirname, '..', '..');

test('each process of the Procfile runs an existing npm script with settings the server reads', () => {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts;
  const lines = readFileSync(join(root, 'Procfile'), 'utf8').trim().split('\n');
  const processes = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
  );
  expect(Object.keys(processes)).toEqual(['web', 'worker']);
  for (const command of Object.values(processes)) {
    const words = command.split(/\s+/);
    const env = Object.fromEntries(
      words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=') as [string, string]),
    );
    const [npm, ...rest] = words.filter((w) => !/^[A-Z_]+=/.test(w));
    expect(npm).toBe('npm');
    const script = rest[0] === 'run' ? rest[1]! : rest[0]!;
    expect(scripts[script]).toBeDefined();
    // The only setting a line carries: the API process leaves the worker to the worker processes.
    expect(Object.keys(env)).toEqual(script === 'start' ? ['WEBHOOK_WORKER'] : []);
    if (script === 'start') expect(loadConfig(env).webhookWorker).toBe(false);
  }
});
